"""A proxy that stands between Kubernetes API clients and an API server and makes the
connection between them unreliable, on purpose, so that tests can show the clients converge
anyway.

Clients get a kubeconfig that points at the proxy (:meth:`FaultProxy.write_kubeconfig`: the
same credentials, another URL); the proxy forwards each request to the API server over TLS
and, for a share of them (``Faults.rate``), does something else instead:

=============  =======================================================================
``delay``      waits a while (``Faults.delay``), then forwards
``conflict``   answers 409 Conflict, as for a stale update (PUT and PATCH only: to a create
               a real server answers 409 only when the object exists, and an invented
               "exists" would be a lie no client can be expected to survive)
``throttle``   answers 429 with ``Retry-After``, as API Priority and Fairness does
``error``      answers 500
``unavailable`` answers 503
``cut``        closes the connection without forwarding: nothing happened
``lost``       forwards, then closes the connection without answering: the write happened
               and the client cannot know (non-watch requests only)
``gone``       answers a watch with 410 Gone: the client must list again
=============  =======================================================================

Besides, a share of the watch streams it forwards (``Faults.watch_drop``) is cut after a
random lifetime (``Faults.watch_lifetime``): ``drop`` in :attr:`FaultProxy.counts`.

The draws come from one ``random.Random(seed)``: the sequence of faults is fixed by the seed,
though which request gets which depends on the order in which requests arrive.

Owns: the forwarding and the faults, and counting them (:attr:`FaultProxy.counts`, per client
in :attr:`FaultProxy.by_client`; the requests per client and method in
:attr:`FaultProxy.methods`). Must not: change what it forwards (bodies and headers pass
through as they are, compressed or not), or be used anywhere but in tests.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import random
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import aiohttp
import yaml
from aiohttp import web

from kubetrain import _aio

log = logging.getLogger(__name__)

DELAY: Final = "delay"
CONFLICT: Final = "conflict"
THROTTLE: Final = "throttle"
ERROR: Final = "error"
UNAVAILABLE: Final = "unavailable"
CUT: Final = "cut"
LOST: Final = "lost"
GONE: Final = "gone"
DROP: Final = "drop"

DEFAULT_WEIGHTS: Final[Mapping[str, float]] = {
    DELAY: 3.0,
    CONFLICT: 1.0,
    THROTTLE: 1.0,
    ERROR: 1.0,
    UNAVAILABLE: 1.0,
    CUT: 1.0,
    LOST: 1.0,
    GONE: 1.0,
}
# What each fault answers, when it answers at all: status, reason, message.
ANSWERS: Final[Mapping[str, tuple[int, str, str]]] = {
    CONFLICT: (
        409,
        "Conflict",
        "Operation cannot be fulfilled: the object has been modified; please apply your "
        "changes to the latest version and try again",
    ),
    THROTTLE: (429, "TooManyRequests", "the server has received too many requests"),
    ERROR: (500, "InternalError", "an error on the server (injected) has prevented the request"),
    UNAVAILABLE: (503, "ServiceUnavailable", "the server is currently unable to handle it"),
    GONE: (410, "Expired", "too old resource version (injected)"),
}
# Headers that describe one hop's connection, not the message (RFC 9110 §7.6.1), plus Host.
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
    }
)
CHUNK: Final = 1 << 16
FORWARD_TIMEOUT: Final = 60.0  # seconds for a request that is not a watch


@dataclass(frozen=True)
class Faults:
    """How unreliable the proxy is. ``rate`` 0 and ``watch_drop`` 0: a plain proxy."""

    rate: float = 0.1  # share of requests that get one of ``weights``' faults
    seed: int = 0
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    delay: tuple[float, float] = (0.05, 0.5)  # seconds a delayed request waits
    watch_drop: float = 0.3  # share of forwarded watches that are cut after a while
    watch_lifetime: tuple[float, float] = (0.2, 4.0)  # seconds such a watch lives
    retry_after: int = 1  # seconds a 429 asks the client to wait


def is_watch(request: web.Request) -> bool:
    return request.method == "GET" and request.query.get("watch", "") in ("true", "1")


def client_of(request: web.Request) -> str:
    """Who sent the request, by its User-Agent up to the first slash (kubectl/v1.32 ...)."""
    return request.headers.get("User-Agent", "").split("/", 1)[0] or "unknown"


class FaultProxy:
    """An HTTP(S) server on loopback forwarding to ``upstream`` (the API server's URL),
    verified with ``upstream_tls``. ``serving_tls`` None serves plain HTTP."""

    def __init__(
        self,
        upstream: str,
        upstream_tls: ssl.SSLContext,
        faults: Faults,
        *,
        serving_tls: ssl.SSLContext | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults = faults
        self.counts: collections.Counter[str] = collections.Counter()
        self.by_client: collections.Counter[tuple[str, str]] = collections.Counter()
        self.requests = 0
        self.methods: collections.Counter[tuple[str, str]] = collections.Counter()
        self.url = ""
        self._upstream_tls = upstream_tls
        self._serving_tls = serving_tls
        self._rng = random.Random(faults.seed)
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None

    # -- life -------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0: a free port); returns the proxy's URL."""
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._upstream_tls, limit=0),
            auto_decompress=False,  # bytes pass through as the server sent them
            trust_env=False,
        )
        app = web.Application(client_max_size=64 << 20)
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=self._serving_tls)
        await site.start()
        bound = self._runner.addresses[0][1]
        scheme = "https" if self._serving_tls is not None else "http"
        self.url = f"{scheme}://{host}:{bound}"
        return self.url

    async def close(self) -> None:
        if self._runner is not None:  # open watches are cancelled with their handlers
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def __aenter__(self) -> FaultProxy:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def write_kubeconfig(
        self, source: str | os.PathLike[str], target: str | os.PathLike[str]
    ) -> str:
        """A copy of the kubeconfig at ``source`` whose clusters point at this proxy; with
        plain HTTP their CA is dropped (a client would refuse a CA for an http URL)."""
        with open(source, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        for cluster in doc.get("clusters") or []:
            details = cluster["cluster"]
            details["server"] = self.url
            if self._serving_tls is None:
                details.pop("certificate-authority-data", None)
                details.pop("certificate-authority", None)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        return os.fspath(target)

    # -- faults -----------------------------------------------------------------------------

    def _choose(self, request: web.Request) -> str:
        """The fault for this request, or "" to forward it as it is."""
        if self._rng.random() >= self.faults.rate:
            return ""
        watch = is_watch(request)
        allowed = {
            kind: weight
            for kind, weight in self.faults.weights.items()
            if weight > 0
            and not (kind == GONE and not watch)
            and not (kind == LOST and watch)
            and not (kind == CONFLICT and request.method not in ("PUT", "PATCH"))
        }
        if not allowed:
            return ""
        kinds = sorted(allowed)
        return self._rng.choices(kinds, weights=[allowed[k] for k in kinds])[0]

    def _count(self, request: web.Request, kind: str) -> None:
        self.counts[kind] += 1
        self.by_client[(client_of(request), kind)] += 1

    def _answer(self, kind: str) -> web.Response:
        code, reason, message = ANSWERS[kind]
        details: dict[str, Any] = {}
        headers = {}
        if kind == THROTTLE:
            details["retryAfterSeconds"] = self.faults.retry_after
            headers["Retry-After"] = str(self.faults.retry_after)
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": details,
            "code": code,
        }
        return web.Response(
            status=code, body=json.dumps(status).encode(), headers=headers,
            content_type="application/json",
        )  # fmt: skip

    # -- forwarding -------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        self.methods[(client_of(request), request.method)] += 1
        kind = self._choose(request)
        if kind:
            self._count(request, kind)
        if kind == DELAY:
            await asyncio.sleep(self._rng.uniform(*self.faults.delay))
        elif kind in ANSWERS:
            return self._answer(kind)
        elif kind == CUT:
            return _abort(request)
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        watch = is_watch(request)
        timeout = aiohttp.ClientTimeout(total=None if watch else FORWARD_TIMEOUT)
        lifetime = None
        if watch and self._rng.random() < self.faults.watch_drop:
            lifetime = self._rng.uniform(*self.faults.watch_lifetime)
        assert self._session is not None
        try:
            async with self._session.request(
                request.method, self.upstream + request.raw_path, headers=headers,
                data=body or None, allow_redirects=False, timeout=timeout,
            ) as upstream:  # fmt: skip
                if kind == LOST:
                    await upstream.read()  # the server did it; the client never hears
                    return _abort(request)
                return await self._relay(request, upstream, lifetime)
        except (aiohttp.ClientError, OSError, *_aio.TIMEOUT_ERRORS) as exc:
            # The API server itself is gone (restarting): the client sees what it would see
            # without a proxy, a connection that fails.
            log.debug("fault proxy: %s %s: upstream failed: %s", request.method, request.path, exc)
            return _abort(request)

    async def _relay(
        self, request: web.Request, upstream: aiohttp.ClientResponse, lifetime: float | None
    ) -> web.StreamResponse:
        headers = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        response.headers.update(headers)
        await response.prepare(request)
        try:
            if lifetime is None:
                await self._copy(upstream, response)
            else:
                try:
                    async with _aio.timeout(lifetime):
                        await self._copy(upstream, response)
                except TimeoutError:
                    self._count(request, DROP)
                    return _abort(request, response)
        except (aiohttp.ClientError, ConnectionError) as exc:
            log.debug("fault proxy: %s %s: relay broken: %s", request.method, request.path, exc)
            return _abort(request, response)
        await response.write_eof()
        return response

    @staticmethod
    async def _copy(upstream: aiohttp.ClientResponse, response: web.StreamResponse) -> None:
        async for chunk in upstream.content.iter_chunked(CHUNK):
            await response.write(chunk)


def _abort(request: web.Request, response: web.StreamResponse | None = None) -> web.StreamResponse:
    """Close the client's connection at once, mid-answer or before any."""
    transport = request.transport
    if transport is not None:
        transport.abort()
    return response if response is not None else web.Response()


@contextlib.asynccontextmanager
async def running(
    upstream: str,
    upstream_tls: ssl.SSLContext,
    faults: Faults,
    *,
    serving_tls: ssl.SSLContext | None = None,
) -> AsyncIterator[FaultProxy]:
    """A started :class:`FaultProxy`, closed on exit."""
    proxy = FaultProxy(upstream, upstream_tls, faults, serving_tls=serving_tls)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
