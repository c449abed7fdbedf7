"""The operator's own HTTP endpoints, as upstream serves them: Prometheus metrics on
``:8080/metrics``, ``/healthz`` (liveness) and ``/readyz`` (readiness) on ``:8081``, and the
admission webhook's HTTPS site (its routes come from :mod:`kubetrain.operator.webhook`).

Liveness means the event loop answers. Readiness means every informer cache has synced
(python-operator-stack.md §9): until then a reconciler would act on a partial view, and a
rollout should not proceed. With the webhook on, it also means the webhook serves with its
certificate, as upstream's readyz waits for both. It is not tied to leadership, so standbys
are ready too.

Addresses are Go-style ``host:port``: ``:8080`` listens on every interface, port 0 picks a
free port (tests), and ``""`` or ``"0"`` turns the endpoint off, as controller-runtime's
``--metrics-bind-address 0`` does.

Owns: parsing bind addresses and the aiohttp sites. Must not: compute metrics or readiness
(it is handed functions that do), or block the loop.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Sequence

from aiohttp import web

from kubetrain.operator.runtime import metrics as metrics_

log = logging.getLogger(__name__)


def parse_address(address: str) -> tuple[str | None, int] | None:
    """``host:port`` → (host, or None for every interface; port); None when disabled."""
    address = address.strip()
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"bind address {address!r}: expected host:port, e.g. :8080")
    host = host.strip("[]")  # [::1]:8080
    return (host or None, int(port))


def metrics_routes(registry: metrics_.Registry) -> list[web.RouteDef]:
    async def handle(request: web.Request) -> web.Response:
        body = registry.exposition().encode()
        return web.Response(body=body, headers={"Content-Type": metrics_.CONTENT_TYPE})

    return [web.get("/metrics", handle)]


def probe_routes(unready: Callable[[], Sequence[str]]) -> list[web.RouteDef]:
    """/healthz, and /readyz that fails while ``unready()`` says what is not ready yet (one
    line each, e.g. ``pods not synced``)."""

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        waiting = unready()
        if waiting:
            lines = "".join(f"[-]{reason}\n" for reason in waiting)
            return web.Response(status=500, text=f"{lines}readyz check failed\n")
        return web.Response(text="ok")

    return [web.get("/healthz", healthz), web.get("/readyz", readyz)]


class Endpoint:
    """One aiohttp site on ``address``; :attr:`port` is the bound port once started. With
    ``ssl_context`` it serves HTTPS (the context may be given new certificates while it
    serves; new connections use them). ``client_max_size`` bounds a request body."""

    def __init__(
        self,
        name: str,
        address: str,
        routes: Sequence[web.RouteDef],
        *,
        ssl_context: ssl.SSLContext | None = None,
        client_max_size: int = 1024**2,
    ) -> None:
        self.name = name
        self.bind = parse_address(address)
        self.routes = list(routes)
        self.ssl_context = ssl_context
        self.client_max_size = client_max_size
        self.port: int | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        if self.bind is None:
            return
        app = web.Application(client_max_size=self.client_max_size)
        app.add_routes(self.routes)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            host, port = self.bind
            await web.TCPSite(runner, host, port, ssl_context=self.ssl_context).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = runner.addresses[0][1]
        log.info("serving %s on port %d", self.name, self.port)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
