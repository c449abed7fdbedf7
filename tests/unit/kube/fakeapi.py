"""A scripted stand-in for an API server, served in-process by aiohttp's TestServer, for
testing the client layer's wire behaviour: every request is recorded, and each route answers
from a script the test writes (plain JSON, a Status error, or a watch stream made of events,
pauses and a stall).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes.aio.client import Configuration

from kubetrain import kube

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

STALL = "stall"  # a watch script step: send nothing more, keep the connection open


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any
    headers: dict[str, str]
    query_string: str = ""  # as sent, still percent-encoded


@dataclass
class FakeApi:
    """Routes by (method, path), where a GET with ``watch=true`` has the method ``WATCH``; a
    route's handlers answer one request each, in order, and the last one repeats."""

    routes: dict[tuple[str, str], Handler | list[Handler]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)

    def on(self, method: str, path: str, *handlers: Handler) -> None:
        self.routes[(method, path)] = list(handlers)

    def seen(self, method: str | None = None, path: str | None = None) -> list[Recorded]:
        return [
            r
            for r in self.requests
            if (method is None or r.method == method) and (path is None or r.path == path)
        ]

    def watches(self, path: str) -> list[Recorded]:
        return self.seen("WATCH", path)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        method = request.method
        if method == "GET" and request.query.get("watch") == "true":
            method = "WATCH"
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        self.requests.append(
            Recorded(
                method,
                request.path,
                dict(request.query),
                request.headers.get("Content-Type", ""),
                body,
                dict(request.headers),
                request.raw_path.partition("?")[2],
            )
        )
        route = self.routes.get((method, request.path))
        if route is None:
            return status(404, "NotFound", f"no route for {method} {request.path}")
        if isinstance(route, list):
            handler = route.pop(0) if len(route) > 1 else route[0]
        else:
            handler = route
        return await handler(request)


def status(code: int, reason: str, message: str, **details: Any) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return web.json_response(body, status=code)


def answer(doc: Any, code: int = 200) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response(doc, status=code)

    return handler


def fail(code: int, reason: str, message: str = "failed", **details: Any) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return status(code, reason, message, **details)

    return handler


def stream(*steps: Any) -> Handler:
    """A watch response: each step is an event dict (sent as one line), a float (pause that
    many seconds) or STALL (hold the connection open, silent, until the client leaves)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        for step in steps:
            if step == STALL:
                await _until_disconnected(request)
            elif isinstance(step, int | float):
                await asyncio.sleep(step)
            else:
                await response.write(json.dumps(step).encode() + b"\n")
        return response

    return handler


async def _until_disconnected(request: web.Request) -> None:
    """Hold a response open until the client goes away (aiohttp does not cancel handlers)."""
    while request.transport is not None and not request.transport.is_closing():  # noqa: ASYNC110
        await asyncio.sleep(0.02)


def event(kind: str, name: str, rv: int, **extra: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv), **extra},
    }
    return {"type": kind, "object": obj}


def bookmark(rv: int) -> dict[str, Any]:
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(rv)},
        },
    }


def gone_event() -> dict[str, Any]:
    return {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": "too old resource version: 1 (5)",
            "reason": "Expired",
            "code": 410,
        },
    }


def configmap_list(rv: int, *names: str, continue_token: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": metadata,
        "items": [{"metadata": {"name": n, "namespace": "ns"}} for n in names],
    }


@contextlib.asynccontextmanager
async def serving(
    fake: FakeApi,
    configure: Callable[[Configuration], None] | None = None,
    **client_options: Any,
) -> AsyncIterator[kube.Client]:
    """A kube.Client talking to ``fake`` over a local socket; ``configure`` may add to its
    configuration (credentials, say) before the client is made."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    server = TestServer(app)
    await server.start_server()
    try:
        configuration = Configuration(host=str(server.make_url("")).rstrip("/"))
        if configure is not None:
            configure(configuration)
        async with kube.Client(configuration, **client_options) as client:
            yield client
    finally:
        await server.close()


def run(coro: Awaitable[Any]) -> Any:
    """Run a test coroutine with asyncio debug on, as the house rules ask."""

    async def main() -> Any:
        return await coro

    return asyncio.run(main(), debug=True)
