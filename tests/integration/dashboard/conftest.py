"""Fixtures for the dashboard's tests against a real API server: each test runs on both of
the session's servers, the local control plane and a real kube-apiserver (``[local]`` and
``[kube-apiserver]`` in its id, as in tests/apiserver), with a fresh namespace, and the
dashboard itself served in the test's event loop (:func:`dashboard`), its hub limited to the
test's namespace.

No operator, scheduler or node runs: a test does through the API what they would (patches a
job's status, creates its pods), so it decides exactly what the dashboard sees. Logs come from
the fake kubelet-shaped node of tests/apiserver/test_pod_log_exec.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from kubetrain import _aio, kube
from kubetrain.dashboard import access, server
from tests.apiserver import test_pod_log_exec as fake_nodes
from tests.fixtures import cluster

# Found by name: the fake node (module-scoped) and its Node object.
local_home = fake_nodes.local_home
fake_node = fake_nodes.fake_node
node = fake_nodes.node

TOKEN = "test-token-" + "x" * 20


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The server's tests on both servers, as the API tests run (where a real one can
    start); the command's mistakes need one."""
    if metafunc.module.__name__.endswith(".test_server"):
        cluster.parametrize_targets(metafunc)


EVENT_TIMEOUT = 20.0  # seconds to wait for the next server-sent event


@dataclass
class Dashboard:
    url: str  # http://127.0.0.1:PORT (no path, no token)
    client: kube.Client  # the test's own client, for setting the scene
    http: aiohttp.ClientSession

    def address(self, path: str, **query: str) -> str:
        params = "&".join(f"{k}={v}" for k, v in {**query, "token": TOKEN}.items())
        return f"{self.url}{path}?{params}"

    @contextlib.asynccontextmanager
    async def stream(self, path: str, **query: str) -> AsyncIterator[Events]:
        async with self.http.get(self.address(path, **query)) as response:
            assert response.status == 200, await response.text()
            assert response.headers["Content-Type"].startswith("text/event-stream")
            yield Events(response)

    async def act(self, namespace: str, kind: str, name: str, action: str) -> tuple[int, Any]:
        async with self.http.post(
            self.address(f"/api/jobs/{namespace}/{kind}/{name}/{action}"),
            headers={access.TOKEN_HEADER: TOKEN},
        ) as response:
            return response.status, await response.json()


class Events:
    """The events of one server-sent event stream, read one at a time."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self, timeout: float = EVENT_TIMEOUT) -> tuple[str, Any]:
        name, data = "message", []
        async with _aio.timeout(timeout):
            while True:
                raw = await self.response.content.readline()
                if not raw:
                    raise AssertionError("the stream ended")
                line = raw.decode().rstrip("\n")
                if line == "":
                    if data:
                        return name, json.loads("\n".join(data))
                    name = "message"
                elif line.startswith(":") or line.startswith("retry:"):
                    continue
                elif line.startswith("event: "):
                    name = line[len("event: ") :]
                elif line.startswith("data: "):
                    data.append(line[len("data: ") :])

    async def until(self, wanted: Any, what: str, timeout: float = EVENT_TIMEOUT) -> Any:
        """The data of the first event for which ``wanted(name, data)`` is truthy."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"within {timeout:.0f}s: {what}")
            try:
                name, data = await self.next(left)
            except TimeoutError as exc:
                raise AssertionError(f"within {timeout:.0f}s: {what}") from exc
            if wanted(name, data):
                return data


@contextlib.asynccontextmanager
async def dashboard(
    kubeconfig: str, namespace: str, *, everywhere: bool = False, own: str | None = None
) -> AsyncIterator[Dashboard]:
    """The dashboard, serving on a free port until the block ends: reading ``namespace``, or
    with ``everywhere`` every namespace (``namespace`` the fallback), with the credentials of
    ``kubeconfig``; the test's own client has ``own``'s (default: the same)."""
    async with (
        await kube.Client.from_kubeconfig(kubeconfig) as client,
        await kube.Client.from_kubeconfig(own or kubeconfig) as mine,
        aiohttp.ClientSession() as http,
    ):
        ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        serving = asyncio.create_task(
            server.serve(
                client,
                address="127.0.0.1",
                port=0,
                token=TOKEN,
                namespace=None if everywhere else namespace,
                fallback_namespace=namespace,
                on_ready=ready.set_result,
            ),
            name="test: dashboard",
        )
        try:
            await asyncio.wait({ready, serving}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
            if serving.done():
                serving.result()  # its error
            url = ready.result()
            yield Dashboard(url.split("/?")[0], mine, http)
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
