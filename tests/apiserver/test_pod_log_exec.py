"""``pods/log`` and ``pods/exec`` through the API server, which forwards them to the pod's node.

The node here is a fake, kubelet-shaped endpoint started by the test: ``/containerLogs/...``
streams a scripted log in chunks, ``/exec/...`` runs a tiny scripted command over the
``channel.k8s.io`` WebSocket protocol or over SPDY/3.1 (kube-apiserver 1.28 passes kubectl's
SPDY upgrade through to the node). It must be reachable from the API server and serve a
certificate from the API server's CA, and it authenticates the API server as a kubelet does:
the local API server by its token, kube-apiserver by its ``--kubelet-client-certificate``. Both
servers under test keep their CA beside their kubeconfig; a server named by
``KUBETRAIN_TEST_KUBECONFIG`` may not, so the node tests skip there. What needs no node
(choosing a container, a pod with no node) runs against any API server. Expected behaviour is
kube-apiserver's (``pkg/registry/core/pod/strategy.go``, ``rest/log.go``,
``rest/subresources.go``) and kubectl's (``kubectl/pkg/cmd/exec``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import websocket
import yaml
from aiohttp import web
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

from kubetrain.local.node import spdy
from tests.fixtures.cluster import Kubectl, local_only
from tests.fixtures.waits import wait_for

LINES = 5  # lines in every fake container log
HELD_BACK = 2  # lines a follow gets only once the test releases the log
NO_SCHEDULER = "kubetrain-test-nobody"  # no scheduler binds pods that name it


# -- the fake node ------------------------------------------------------------------------


def log_lines(container: str) -> list[bytes]:
    return [f"{container} line {i}\n".encode() for i in range(1, LINES + 1)]


def success() -> bytes:
    return json.dumps({"metadata": {}, "status": "Success"}).encode()


def exited(code: int) -> bytes:
    """The Status the kubelet writes for a non-zero exit."""
    return json.dumps(
        {
            "metadata": {},
            "status": "Failure",
            "message": f"command terminated with non-zero exit code: exit status {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
        }
    ).encode()


class FakeNode:
    """A kubelet-shaped endpoint on 127.0.0.1 in a thread with its own event loop.

    ``requests`` records (path, query items) of every authorized request; ``events`` what the
    node saw happen (``("log closed", "ns/pod")`` when a follow's reader went away).
    """

    def __init__(self, token: str, certfile: Path, keyfile: Path, client_ca: Path) -> None:
        self.token = token
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(str(certfile), str(keyfile))
        self.context.load_verify_locations(cafile=str(client_ca))
        self.context.verify_mode = ssl.CERT_OPTIONAL  # a client certificate, when shown
        self.requests: list[tuple[str, list[tuple[str, str]]]] = []
        self.events: list[tuple[str, str]] = []
        self.arrivals = 0  # requests that reached a handler, authorized or not
        self.port = 0
        self._gates: dict[str, asyncio.Event] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-node")
        self._runner: web.AppRunner | None = None

    def start(self) -> None:
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(10)

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def release(self, namespace: str, pod: str) -> None:
        """Let a follow of ``namespace/pod`` write the rest of its log and end."""
        self._loop.call_soon_threadsafe(lambda: self._gate(f"{namespace}/{pod}").set())

    def seen(self, path: str) -> dict[str, list[str]]:
        """The query of the last request to ``path``."""
        for seen_path, items in reversed(self.requests):
            if seen_path == path:
                out: dict[str, list[str]] = {}
                for k, v in items:
                    out.setdefault(k, []).append(v)
                return out
        raise AssertionError(f"the node saw no request to {path}: {self.requests}")

    def _gate(self, key: str) -> asyncio.Event:
        return self._gates.setdefault(key, asyncio.Event())

    async def _serve(self) -> int:
        app = web.Application()
        app.router.add_get("/containerLogs/{ns}/{pod}/{container}", self._logs)
        app.router.add_get("/exec/{ns}/{pod}/{container}", self._exec)
        app.router.add_post("/exec/{ns}/{pod}/{container}", self._exec)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.context)
        await site.start()
        return self._runner.addresses[0][1]

    def _authorized(self, request: web.Request) -> bool:
        """The local API server's token, or a client certificate the CA issued (verified in
        the handshake): what kube-apiserver shows."""
        self.arrivals += 1
        transport = request.transport
        certified = bool(transport and transport.get_extra_info("peercert"))
        ok = certified or request.headers.get("Authorization") == f"Bearer {self.token}"
        if ok:
            self.requests.append((request.path, list(request.query.items())))
        return ok

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return web.Response(status=401, text="Unauthorized")
        pod, container = request.match_info["pod"], request.match_info["container"]
        key = f"{request.match_info['ns']}/{pod}"
        if container == "sleepy":
            return web.Response(
                status=400,
                text=f'container "{container}" in pod "{pod}" is waiting to start: '
                "ContainerCreating",
            )
        lines = log_lines(container)
        follow = request.query.get("follow") == "true"
        available = lines[:-HELD_BACK] if follow else lines
        if "tailLines" in request.query:
            tail = int(request.query["tailLines"])
            available = available[len(available) - tail :] if tail else []
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        try:
            for line in available:  # one chunk per line, with a pause between
                await response.write(line)
                await asyncio.sleep(0.01)
            if follow:
                await asyncio.wait_for(self._gate(key).wait(), 60)
                for line in lines[-HELD_BACK:]:
                    await response.write(line)
                    await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.events.append(("log closed", key))
            raise
        await response.write_eof()
        return response

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return web.Response(status=401, text="Unauthorized")
        where = "/".join(request.match_info[k] for k in ("ns", "pod", "container"))
        command = request.query.getall("command", [])
        if spdy.requested(request.headers):
            return await self._exec_spdy(request, command, where)
        ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"))
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text="Upgrade request required")
        await ws.prepare(request)
        status = await run_script(WebSocketChannels(ws), command, where)
        await ws.send_bytes(b"\x03" + status)
        await ws.close()
        return ws

    async def _exec_spdy(
        self, request: web.Request, command: list[str], where: str
    ) -> web.StreamResponse:
        """The kubelet's SPDY exec: a stream per channel, the Status on the error stream."""
        offered = request.headers.getall("X-Stream-Protocol-Version", [])
        protocol = spdy.negotiate(offered, ("v4.channel.k8s.io",))
        if not protocol:
            return web.Response(status=403, text="unable to negotiate protocol")
        response = web.StreamResponse(
            status=101,
            headers={
                "Connection": "Upgrade",
                "Upgrade": spdy.UPGRADE,
                "X-Stream-Protocol-Version": protocol,
            },
        )
        response.force_close()
        session = spdy.Session()
        await response.prepare(request)
        request.protocol.set_parser(session)  # type: ignore[arg-type]
        pump = asyncio.create_task(session.pump(response.write))
        wanted = {"error"} | {
            kind
            for kind, name in (("stdin", "input"), ("stdout", "output"), ("stderr", "error"))
            if request.query.get(name) == "1"
        }
        streams: dict[str, spdy.Stream] = {}
        try:
            while not wanted <= set(streams):
                stream = await session.accept()
                if stream is None:
                    return response
                session.reply(stream)
                streams[stream.kind] = stream
            status = await run_script(SpdyChannels(streams), command, where)
            await streams["error"].write(status)
            for stream in streams.values():
                await stream.close()
            session.goaway()
        finally:
            await spdy.close_quietly(session, pump)
        return response


class WebSocketChannels:
    """A script's stdin and output over the channel.k8s.io WebSocket protocol."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws

    async def send(self, channel: int, data: bytes) -> None:
        await self.ws.send_bytes(bytes([channel]) + data)

    async def stdin(self) -> AsyncIterator[bytes]:
        async for message in self.ws:
            data = message.data
            if data[:2] == b"\xff\x00":  # v5: stdin closed
                return
            if data[:1] == b"\x00":
                yield data[1:]


class SpdyChannels:
    """The same over SPDY streams."""

    def __init__(self, streams: dict[str, spdy.Stream]) -> None:
        self.streams = streams

    async def send(self, channel: int, data: bytes) -> None:
        await self.streams[{1: "stdout", 2: "stderr"}[channel]].write(data)

    async def stdin(self) -> AsyncIterator[bytes]:
        stream = self.streams.get("stdin")
        while stream is not None:
            data = await stream.read()
            if not data:
                return
            yield data


async def run_script(
    channels: WebSocketChannels | SpdyChannels, command: list[str], where: str
) -> bytes:
    """The fake node's commands: ``echo WORDS``, ``cat`` (stdin to stdout until stdin ends),
    ``fail CODE WORDS`` (WORDS to stderr, exit CODE), ``whoami`` (namespace/pod/container)."""
    name, args = (command[0], command[1:]) if command else ("", [])
    if name == "echo":
        await channels.send(1, (" ".join(args) + "\n").encode())
        return success()
    if name == "whoami":
        await channels.send(1, (where + "\n").encode())
        return success()
    if name == "fail":
        await channels.send(2, (" ".join(args[1:]) + "\n").encode())
        return exited(int(args[0]))
    if name == "cat":
        async for data in channels.stdin():
            await channels.send(1, data)
        return success()
    return json.dumps(
        {
            "metadata": {},
            "status": "Failure",
            "message": f'exec: "{name}": executable file not found in $PATH',
            "reason": "InternalError",
            "code": 500,
        }
    ).encode()


# -- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_home(kubeconfig: str) -> Path:
    """The directory of the control plane under test: both servers the tests start keep their
    CA beside their kubeconfig (``pki/ca.crt``, ``ca.key``), which issues the fake node's
    serving certificate (and kube-apiserver's client certificate to nodes)."""
    if os.environ.get("KUBETRAIN_TEST_KUBECONFIG"):
        pytest.skip(
            "the fake node must be reachable from the API server and serve a certificate "
            "from its CA: only the control planes started by the tests are set up for that"
        )
    return Path(kubeconfig).parent


def start_fake_node(kubeconfig: str, issuer: Path, client_ca: Path, where: Path) -> FakeNode:
    """A fake node serving a certificate for 127.0.0.1 from the CA in ``issuer``, taking the
    kubeconfig's token or a client certificate from ``client_ca``."""
    from kubetrain.local import tls  # test infrastructure: issuing, not the API

    cert, key = tls.issue_certificate(str(issuer), "kt-fake-node", ["localhost"], ["127.0.0.1"])
    (where / "node.crt").write_bytes(cert)
    (where / "node.key").write_bytes(key)
    token = yaml.safe_load(Path(kubeconfig).read_text())["users"][0]["user"]["token"]
    node = FakeNode(token, where / "node.crt", where / "node.key", client_ca)
    node.start()
    return node


@pytest.fixture(scope="module")
def fake_node(
    local_home: Path, kubeconfig: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FakeNode]:
    directory = tmp_path_factory.mktemp("fake-node")
    pki = local_home / "pki"
    node = start_fake_node(kubeconfig, pki, pki / "ca.crt", directory)
    try:
        yield node
    finally:
        node.stop()


def register_node(core: client.CoreV1Api, port: int) -> str:
    name = "kt-node-" + secrets.token_hex(4)
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    # Only the address it listens on: kube-apiserver prefers a Hostname, and this one's name
    # resolves nowhere.
    status = {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
    }
    core.patch_node_status(name, {"status": status})
    return name


@pytest.fixture(scope="module")
def node(core: client.CoreV1Api, fake_node: FakeNode) -> Iterator[str]:
    """A Node object whose endpoint is the fake node."""
    name = register_node(core, fake_node.port)
    try:
        yield name
    finally:
        with contextlib.suppress(ApiException):
            core.delete_node(name)


def make_pod(
    core: client.CoreV1Api,
    namespace: str,
    name: str,
    *,
    containers: tuple[str, ...] = ("main",),
    node: str | None = None,
    init: tuple[str, ...] = (),
) -> str:
    spec: dict[str, Any] = {
        "containers": [{"name": c, "image": "example/app:1"} for c in containers],
    }
    if init:
        spec["initContainers"] = [{"name": c, "image": "example/app:1"} for c in init]
    if node:
        spec["nodeName"] = node
    else:
        spec["schedulerName"] = NO_SCHEDULER
    core.create_namespaced_pod(
        namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    )
    return name


def status_of(exc: ApiException) -> dict[str, Any]:
    return json.loads(exc.body)


@pytest.fixture(scope="module")
def kubectl_binary() -> str:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed (it is on CI and on our machines)")
    return binary


class Output:
    """A child's stdout read on a thread, so a test can wait for text with a deadline."""

    def __init__(self, pipe: Any) -> None:
        self.text = ""
        self._chunks: queue.Queue[bytes] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: Any) -> None:
        for chunk in iter(lambda: os.read(pipe.fileno(), 4096), b""):
            self._chunks.put(chunk)
        self._chunks.put(b"")

    def wait_for(self, text: str | tuple[str, ...], timeout: float = 30.0) -> str:
        """Wait until ``text`` (or one of several) has been written."""
        wanted = (text,) if isinstance(text, str) else text
        deadline = time.monotonic() + timeout
        while not any(t in self.text for t in wanted):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"{text!r} did not arrive within {timeout}s; got {self.text!r}")
            try:
                chunk = self._chunks.get(timeout=remaining)
            except queue.Empty:
                continue
            if not chunk:
                pytest.fail(f"the output ended without {text!r}; got {self.text!r}")
            self.text += chunk.decode()
        return self.text


@contextlib.contextmanager
def following(argv: list[str]) -> Iterator[tuple[subprocess.Popen[bytes], Output]]:
    """``argv`` (a ``kubectl logs -f``) running, its stdout read as :class:`Output`; killed
    if it is still running when the block ends."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        yield process, Output(process.stdout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# -- no node needed -----------------------------------------------------------------------


def test_log_names_the_containers_when_a_pod_has_several(
    core: client.CoreV1Api, namespace: str
) -> None:
    make_pod(core, namespace, "two", containers=("a", "b"), init=("setup",))
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod_log("two", namespace)
    assert caught.value.status == 400
    body = status_of(caught.value)
    assert body["reason"] == "BadRequest"
    assert body["message"] == (
        "a container name must be specified for pod two, choose one of: [setup a b]"
    )


def test_log_of_an_unknown_container_is_refused(core: client.CoreV1Api, namespace: str) -> None:
    make_pod(core, namespace, "one")
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod_log("one", namespace, container="nope")
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == "container nope is not valid for pod one"


def test_log_of_a_missing_pod_is_not_found(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod_log("ghost", namespace)
    assert caught.value.status == 404
    assert status_of(caught.value)["message"] == 'pods "ghost" not found'


def test_log_options_are_validated(core: client.CoreV1Api, namespace: str) -> None:
    make_pod(core, namespace, "one")
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod_log("one", namespace, tail_lines=-1)
    assert caught.value.status == 422
    body = status_of(caught.value)
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "tailLines"


def test_log_of_a_pod_without_a_node_is_empty(
    core: client.CoreV1Api, kubectl: Kubectl, namespace: str
) -> None:
    """kube-apiserver has no log location for a pod no node runs: 204 No Content."""
    make_pod(core, namespace, "waiting")
    response = core.read_namespaced_pod_log("waiting", namespace, _preload_content=False)
    assert (response.status, response.data) == (204, b"")
    out = kubectl("logs", "-n", namespace, "waiting")
    assert out.stdout == ""


def test_exec_on_a_pod_without_a_node_is_refused(core: client.CoreV1Api, namespace: str) -> None:
    make_pod(core, namespace, "waiting")
    with pytest.raises(ApiException) as caught:
        core.connect_get_namespaced_pod_exec("waiting", namespace, command=["echo"], stdout=True)
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == "pod waiting does not have a host assigned"


def test_kubectl_exec_on_a_pod_without_a_node_says_why(
    core: client.CoreV1Api, kubectl: Kubectl, namespace: str
) -> None:
    make_pod(core, namespace, "waiting")
    out = kubectl("exec", "-n", namespace, "waiting", "--", "echo", "hi", check=False)
    assert out.returncode != 0
    assert "pod waiting does not have a host assigned" in out.stderr


def test_exec_names_the_containers_when_a_pod_has_several(
    core: client.CoreV1Api, namespace: str
) -> None:
    make_pod(core, namespace, "two", containers=("a", "b"))
    with pytest.raises(ApiException) as caught:
        core.connect_get_namespaced_pod_exec("two", namespace, command=["echo"], stdout=True)
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == (
        "a container name must be specified for pod two, choose one of: [a b]"
    )


# -- logs through the node ----------------------------------------------------------------


def test_log_is_read_from_the_node(
    core: client.CoreV1Api, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    text = core.read_namespaced_pod_log("app", namespace)
    assert text == b"".join(log_lines("main")).decode()
    assert fake_node.seen(f"/containerLogs/{namespace}/app/main") == {}


def test_log_honours_tail_lines(
    core: client.CoreV1Api, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    text = core.read_namespaced_pod_log("app", namespace, tail_lines=2)
    assert text == "main line 4\nmain line 5\n"


def test_log_options_reach_the_node_as_the_kubelet_reads_them(
    core: client.CoreV1Api, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "two", containers=("a", "b"), node=node)
    core.read_namespaced_pod_log(
        "two",
        namespace,
        container="b",
        timestamps=True,
        previous=True,
        limit_bytes=1000,
        since_seconds=60,
    )
    assert fake_node.seen(f"/containerLogs/{namespace}/two/b") == {
        "limitBytes": ["1000"],
        "previous": ["true"],
        "sinceSeconds": ["60"],
        "timestamps": ["true"],
    }


def test_a_node_error_becomes_a_status(
    core: client.CoreV1Api, fake_node: FakeNode, node: str, namespace: str
) -> None:
    """kube-apiserver passes the kubelet's 400 text on as a BadRequest message."""
    make_pod(core, namespace, "slow", containers=("sleepy",), node=node)
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod_log("slow", namespace)
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == (
        'container "sleepy" in pod "slow" is waiting to start: ContainerCreating'
    )


def test_kubectl_logs_prints_the_log(
    core: client.CoreV1Api, kubectl: Kubectl, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    assert kubectl("logs", "-n", namespace, "app").stdout == b"".join(log_lines("main")).decode()
    assert kubectl("logs", "-n", namespace, "app", "--tail=1").stdout == "main line 5\n"


def test_kubectl_logs_follow_streams(
    core: client.CoreV1Api,
    kubeconfig: str,
    kubectl_binary: str,
    fake_node: FakeNode,
    node: str,
    namespace: str,
) -> None:
    """The first lines arrive while the log is still open; the rest when the node writes it."""
    make_pod(core, namespace, "app", node=node)
    argv = [kubectl_binary, "--kubeconfig", kubeconfig, "logs", "-f", "-n", namespace, "app"]
    with following(argv) as (process, output):
        output.wait_for("main line 3\n")
        assert process.poll() is None, "the follow ended before the log did"
        assert "main line 4" not in output.text
        fake_node.release(namespace, "app")
        output.wait_for("main line 5\n")
        assert process.wait(timeout=30) == 0
        assert output.text == b"".join(log_lines("main")).decode()


def test_a_client_leaving_a_follow_closes_the_node_stream(
    core: client.CoreV1Api,
    kubeconfig: str,
    kubectl_binary: str,
    fake_node: FakeNode,
    node: str,
    namespace: str,
) -> None:
    pod = make_pod(core, namespace, "left-" + secrets.token_hex(3), node=node)
    process = subprocess.Popen(
        [kubectl_binary, "--kubeconfig", kubeconfig, "logs", "-f", "-n", namespace, pod],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        Output(process.stdout).wait_for("main line 3\n")
    finally:
        process.kill()
        process.wait()
    wait_for(lambda: ("log closed", f"{namespace}/{pod}") in fake_node.events)


# -- exec through the node ----------------------------------------------------------------


def test_kubectl_exec_prints_stdout(
    core: client.CoreV1Api, kubectl: Kubectl, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    out = kubectl("exec", "-n", namespace, "app", "--", "echo", "hello", "world")
    assert out.stdout == "hello world\n"
    assert fake_node.seen(f"/exec/{namespace}/app/main") == {  # the kubelet's names
        "command": ["echo", "hello", "world"],
        "error": ["1"],
        "output": ["1"],
    }


def test_kubectl_exec_exits_with_the_command_exit_code(
    core: client.CoreV1Api, kubectl: Kubectl, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    out = kubectl("exec", "-n", namespace, "app", "--", "fail", "3", "oops", check=False)
    assert out.returncode == 3
    assert out.stdout == ""
    assert "oops\n" in out.stderr
    assert "command terminated with exit code 3" in out.stderr


def test_kubectl_exec_passes_stdin(
    core: client.CoreV1Api, kubectl: Kubectl, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    out = kubectl("exec", "-i", "-n", namespace, "app", "--", "cat", input="one\ntwo\n")
    assert out.stdout == "one\ntwo\n"
    assert fake_node.seen(f"/exec/{namespace}/app/main")["input"] == ["1"]


def test_kubectl_exec_runs_in_the_named_container(
    core: client.CoreV1Api, kubectl: Kubectl, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "two", containers=("a", "b"), node=node)
    out = kubectl("exec", "-n", namespace, "two", "-c", "b", "--", "whoami")
    assert out.stdout == f"{namespace}/two/b\n"


def test_kubectl_exec_reports_a_failure_the_node_reports(
    core: client.CoreV1Api, kubectl: Kubectl, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    out = kubectl("exec", "-n", namespace, "app", "--", "nosuch", check=False)
    assert out.returncode != 0
    assert 'exec: "nosuch": executable file not found in $PATH' in out.stderr


def kubectl_over_spdy(
    kubectl_binary: str, kubeconfig: str, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """kubectl with WebSockets turned off: it upgrades to SPDY/3.1, as kubectl 1.29 and older
    always do."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBECTL_REMOTE_COMMAND_WEBSOCKETS"] = "false"
    return subprocess.run(
        [kubectl_binary, "--kubeconfig", kubeconfig, *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_kubectl_exec_over_spdy_reaches_the_node(
    core: client.CoreV1Api,
    kubeconfig: str,
    kubectl_binary: str,
    fake_node: FakeNode,
    node: str,
    namespace: str,
) -> None:
    """An API server passes kubectl's SPDY upgrade to the node unchanged (POST, with the
    kubelet's query), as kube-apiserver 1.28 does; the node answers it as the kubelet does."""
    make_pod(core, namespace, "app", node=node)
    args = ("exec", "-i", "-n", namespace, "app", "--", "cat")
    out = kubectl_over_spdy(kubectl_binary, kubeconfig, *args, input="over spdy\n")
    assert out.stdout == "over spdy\n", out.stderr
    assert out.returncode == 0
    failed = kubectl_over_spdy(
        kubectl_binary, kubeconfig, "exec", "-n", namespace, "app", "--", "fail", "4", "no"
    )
    assert failed.returncode == 4
    assert "no\n" in failed.stderr


def test_exec_without_an_upgrade_is_refused(
    core: client.CoreV1Api, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    with pytest.raises(ApiException) as caught:
        core.connect_get_namespaced_pod_exec("app", namespace, command=["echo"], stdout=True)
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == "Upgrade request required"


def test_exec_with_the_python_client(
    core: client.CoreV1Api, fake_node: FakeNode, node: str, namespace: str
) -> None:
    make_pod(core, namespace, "app", node=node)
    out = stream(
        core.connect_get_namespaced_pod_exec,
        "app",
        namespace,
        command=["echo", "from", "python"],
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
    )
    assert out == "from python\n"


def test_exec_over_the_v4_protocol(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    fake_node: FakeNode,
    node: str,
    namespace: str,
) -> None:
    """Older clients speak v4.channel.k8s.io; messages and the exit Status pass unchanged."""
    make_pod(core, namespace, "app", node=node)
    config = api_client.configuration
    url = config.host.replace("https://", "wss://") + (
        f"/api/v1/namespaces/{namespace}/pods/app/exec?command=fail&command=7&command=bad"
        "&stdout=true&stderr=true"
    )
    ws = websocket.create_connection(
        url,
        header=[f"Authorization: {config.auth_settings()['BearerToken']['value']}"],
        subprotocols=["v4.channel.k8s.io"],
        sslopt={"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": config.ssl_ca_cert},
        timeout=30,
    )
    try:
        assert ws.subprotocol == "v4.channel.k8s.io"
        messages = []
        while True:
            opcode, data = ws.recv_data()
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                break
            messages.append(data)
    finally:
        ws.close()
    assert messages[0] == b"\x02bad\n"
    status = json.loads(messages[1][1:])
    assert messages[1][:1] == b"\x03"
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "7"}]


def test_exec_on_an_unreachable_node_says_so(
    core: client.CoreV1Api, kubectl: Kubectl, fake_node: FakeNode, namespace: str
) -> None:
    """Nothing listens on the node's port: the client learns it from the status channel."""
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    gone = register_node(core, closed_port)
    try:
        make_pod(core, namespace, "app", node=gone)
        out = kubectl("exec", "-n", namespace, "app", "--", "echo", "hi", check=False)
        assert out.returncode != 0
        assert "error dialing backend" in out.stderr
    finally:
        core.delete_node(gone)


def test_a_node_with_a_certificate_from_another_ca_gets_nothing(
    core: client.CoreV1Api,
    kubeconfig: str,
    local_home: Path,
    tmp_path_factory: pytest.TempPathFactory,
    namespace: str,
) -> None:
    """The API server sends its credentials only to nodes whose certificate its own CA (the
    kubelet certificate authority) issued."""
    from kubetrain.local import tls

    other = tmp_path_factory.mktemp("other-ca")
    tls.ensure(str(other))
    impostor = start_fake_node(kubeconfig, other, local_home / "pki" / "ca.crt", other)
    name = register_node(core, impostor.port)
    try:
        make_pod(core, namespace, "app", node=name)
        with pytest.raises(ApiException) as caught:
            core.read_namespaced_pod_log("app", namespace)
        assert caught.value.status == 500
        message = status_of(caught.value)["message"]
        # OpenSSL's words (local) or Go's (kube-apiserver: "x509: certificate signed by
        # unknown authority")
        assert "certificate verify failed" in message or "unknown authority" in message
        assert impostor.arrivals == 0
    finally:
        core.delete_node(name)
        impostor.stop()


def test_stopping_the_control_plane_ends_open_follows_and_execs(
    target: str, kubectl_binary: str, tmp_path: Path
) -> None:
    """A ``logs -f`` and an exec in progress end when the control plane is told to stop, so
    ``kubetrain down`` never waits out its grace period for them."""
    local_only(target, "it starts and stops a local control plane of its own")
    from kubetrain.local import daemon

    home = tmp_path / "kubetrain"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = str(home)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "kubetrain", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=90, env=env)

    assert cli("up").returncode == 0
    kubeconfig = str(home / "kubeconfig")
    own_pki = Path(daemon.Paths(str(home)).pki)
    fake = start_fake_node(kubeconfig, own_pki, own_pki / "ca.crt", tmp_path)
    children: list[subprocess.Popen[bytes]] = []
    try:
        core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        make_pod(core, "default", "app", node=register_node(core, fake.port))
        kubectl = [kubectl_binary, "--kubeconfig", kubeconfig]
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        follow = subprocess.Popen([*kubectl, "logs", "-f", "app"], **pipes)
        children.append(follow)
        shell = subprocess.Popen(
            [*kubectl, "exec", "-i", "app", "--", "cat"], stdin=subprocess.PIPE, **pipes
        )
        children.append(shell)
        Output(follow.stdout).wait_for("main line 3\n")
        assert shell.stdin is not None
        shell.stdin.write(b"still here\n")
        shell.stdin.flush()
        Output(shell.stdout).wait_for("still here\n")
        grace = daemon.STOP_GRACE
        started = time.monotonic()
        down = cli("down", "--grace", str(grace))
        elapsed = time.monotonic() - started
        assert down.returncode == 0, down.stderr
        assert elapsed < grace, f"down took {elapsed:.1f}s, its whole grace period"
        assert follow.wait(timeout=10) is not None
        assert shell.wait(timeout=10) != 0
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        fake.stop()
        cli("down", "--grace", "5")
