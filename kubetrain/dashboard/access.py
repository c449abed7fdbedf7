"""Who may use a running dashboard: whoever holds its token, from a page of its own.

The dashboard acts with the credentials of the user who started it, so anything that can
reach its port must not act for them. Three rules, all in :func:`guard`:

1. **A per-run token on every request and stream.** ``kubetrain dashboard`` prints
   ``http://127.0.0.1:PORT/?token=...`` (as Jupyter does); the page passes the token on in
   each request's query (``EventSource`` cannot send headers) or the
   :data:`TOKEN_HEADER` header. A request without it gets 403, compared in constant time.
2. **Actions only from the dashboard's own page.** A request that changes something (POST:
   delete, suspend, resume) must carry the token in the :data:`TOKEN_HEADER` header, which a
   cross-site form or image cannot set and a cross-site script cannot send without a CORS
   preflight that the dashboard never answers; and when the browser says where it comes from
   (``Origin``, ``Sec-Fetch-Site``), that must be this dashboard.
3. **Nothing leaks the token or runs a foreign script.** Every answer says
   ``Referrer-Policy: no-referrer`` (the token is in the address), is not cached, may not be
   framed, and carries a Content-Security-Policy that runs the dashboard's own script only.

Owns: the token and those rules. Must not: know about pages or jobs.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web

TOKEN_HEADER: Final = "X-Kubetrain-Token"
TOKEN_QUERY: Final = "token"
SAFE_METHODS: Final = frozenset({"GET", "HEAD"})
HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
NEEDS_TOKEN: Final = (
    "this dashboard needs its access token: open the address `kubetrain dashboard` printed "
    "(it ends in ?token=...)"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def guard(token: str) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """The aiohttp middleware that applies the rules above."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = refusal(request, token)
        if refused is not None:
            response: web.StreamResponse = web.Response(
                status=403, text=refused + "\n", headers=HEADERS
            )
            return response
        response = await handler(request)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    return middleware


def refusal(request: web.Request, token: str) -> str | None:
    """Why ``request`` is refused, or None when it may go ahead."""
    header = request.headers.get(TOKEN_HEADER)
    if not (same(request.query.get(TOKEN_QUERY), token) or same(header, token)):
        return NEEDS_TOKEN
    if request.method in SAFE_METHODS:
        return None
    if not same(header, token):
        return f"an action needs the token in the {TOKEN_HEADER} header, from the dashboard's page"
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return f"an action from another site ({site}) is refused"
    origin = request.headers.get("Origin")
    if origin is not None and origin != own_origin(request):
        return f"an action from another origin ({origin}) is refused"
    return None


def own_origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"
