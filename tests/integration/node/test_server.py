"""The node's endpoint, the kubelet's way (kubetrain.local.apiserver.nodeproxy's contract): the
token, the kubelet's refusals, which attempt a log request reads and with which options, exec
over the v5 and v4 channel protocols, and the certificate. A fake runtime and log reader stand
in for the runtime; exec runs real (tiny) processes. Served on the loopback by aiohttp's test
server."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import test_utils
from cryptography import x509

from kubetrain.local import tls
from kubetrain.local.node import runtime, server, settings

TOKEN = "s3cret"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
UID = "uid-1"
V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"


def cid(name: str, attempt: int) -> str:
    return f"kubetrain://{UID}/{name}/{attempt}"


def pod(statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": UID},
        "spec": {"containers": [{"name": "main"}], "initContainers": [{"name": "setup"}]},
        "status": {"containerStatuses": statuses or []},
    }


class FakeRuntime:
    def __init__(self, states: Sequence[runtime.ContainerState] = ()) -> None:
        self.states = list(states)
        self.execs: list[tuple[str, str, tuple[str, ...], bool, bool]] = []
        self.refuse = ""

    def containers(self, uid: str | None = None) -> list[runtime.ContainerState]:
        return [s for s in self.states if uid is None or s.id.pod_uid == uid]

    def state(self, id: runtime.ContainerId) -> runtime.ContainerState | None:
        return next((s for s in self.states if s.id == id), None)

    def log_path(self, id: runtime.ContainerId) -> str:
        return f"/logs/{id.name}/{id.attempt}"

    def processes(self, id: runtime.ContainerId) -> runtime.Processes | None:
        return None  # nothing to sample: the node server's usage sampler skips it

    async def exec(
        self, uid: str, container: str, argv: Sequence[str], *, stdin: bool, tty: bool
    ) -> asyncio.subprocess.Process:
        self.execs.append((uid, container, tuple(argv), stdin, tty))
        if self.refuse:
            raise runtime.StartError("ContainerCannotRun", self.refuse)
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )


class Pods:
    def __init__(self, *pods: dict[str, Any]) -> None:
        self.pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}

    def pod_by_name(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pods.get((namespace, name))


class Reader:
    """Records what it was asked and yields a fixed text."""

    def __init__(self, text: bytes = b"line 1\nline 2\n") -> None:
        self.text = text
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, paths: Sequence[str], **options: Any) -> AsyncIterator[bytes]:
        self.calls.append({"paths": list(paths), **options})
        yield self.text


def running_state(name: str = "main", attempt: int = 0) -> runtime.ContainerState:
    return runtime.ContainerState(runtime.ContainerId(UID, name, attempt), 10, NOW, None, None)


Body = Callable[[aiohttp.ClientSession, test_utils.TestServer], Awaitable[None]]


def serve(body: Body, node_runtime: FakeRuntime, pods: Pods, reader: Reader | None = None) -> None:
    async def main() -> None:
        endpoint = server.NodeServer(
            node_runtime,  # type: ignore[arg-type]
            pods,
            token=TOKEN,
            read=reader or Reader(),
            clock=lambda: NOW,
        )
        async with (
            test_utils.TestServer(endpoint.app()) as site,
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as session,
        ):
            await body(session, site)

    asyncio.run(main())


# -- authentication and refusals ---------------------------------------------------------------


def test_a_request_without_the_token_is_refused() -> None:
    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        url = site.make_url("/containerLogs/ns/p/main")
        async with aiohttp.ClientSession() as anonymous, anonymous.get(url) as response:
            assert response.status == 401
        wrong = {"Authorization": "Bearer nope"}
        async with aiohttp.ClientSession(headers=wrong) as other, other.get(url) as response:
            assert response.status == 401
        async with session.get(url) as response:
            assert response.status == 200

    serve(body, FakeRuntime([running_state()]), Pods(pod()))


def client_context(ca: str, cert: tuple[bytes, bytes] | None, where: Path) -> ssl.SSLContext:
    """A client that trusts ``ca`` and shows ``cert`` (PEM certificate and key), if any."""
    context = ssl.create_default_context(cafile=ca)
    if cert is not None:
        (where / "client.crt").write_bytes(cert[0])
        (where / "client.key").write_bytes(cert[1])
        context.load_cert_chain(str(where / "client.crt"), str(where / "client.key"))
    return context


def test_a_client_certificate_from_the_client_ca_authenticates(tmp_path: Path) -> None:
    """kube-apiserver shows its --kubelet-client-certificate and no token: the kubelet's x509
    authentication accepts it when the client CA issued it; the local token still works."""
    plane = tls.ensure(str(tmp_path / "plane"))
    other = tls.ensure(str(tmp_path / "other"))
    cert, key = tls.issue_certificate(plane.directory, "node-a", ["localhost"], ["127.0.0.1"])
    (tmp_path / "node.crt").write_bytes(cert)
    (tmp_path / "node.key").write_bytes(key)
    config = settings.Settings(
        root=str(tmp_path / "node"),
        tls_cert_file=str(tmp_path / "node.crt"),
        tls_key_file=str(tmp_path / "node.key"),
        client_ca_file=plane.ca_cert,
    )
    apiserver = tls.issue_client_certificate(plane.directory, "kube-apiserver-kubelet-client")
    stranger = tls.issue_client_certificate(other.directory, "kube-apiserver-kubelet-client")

    async def main() -> None:
        endpoint = server.NodeServer(
            FakeRuntime([running_state()]),  # type: ignore[arg-type]
            Pods(pod()),
            token=TOKEN,
            read=Reader(),
            clock=lambda: NOW,
        )
        port = await endpoint.start("127.0.0.1", 0, server.tls_context(config, "node-a"))
        url = f"https://127.0.0.1:{port}/containerLogs/ns/p/main"

        async def status(cert: tuple[bytes, bytes] | None, token: str = "") -> int:
            where = tmp_path / secrets.token_hex(4)
            where.mkdir()
            context = client_context(plane.ca_cert, cert, where)
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with (
                aiohttp.ClientSession(headers=headers) as session,
                session.get(url, ssl=context) as response,
            ):
                return response.status

        try:
            assert await status(apiserver) == 200
            assert await status(None) == 401
            assert await status(None, TOKEN) == 200
            with pytest.raises(aiohttp.ClientError):  # the handshake itself fails
                await status(stranger)
        finally:
            await endpoint.close()

    asyncio.run(main())


def test_a_given_serving_certificate_is_served_as_it_is(tmp_path: Path) -> None:
    plane = tls.ensure(str(tmp_path / "plane"))
    cert, key = tls.issue_certificate(plane.directory, "mine", ["mine.example"], [])
    (tmp_path / "node.crt").write_bytes(cert)
    (tmp_path / "node.key").write_bytes(key)
    config = settings.Settings(
        root=str(tmp_path / "node"),
        tls_cert_file=str(tmp_path / "node.crt"),
        tls_key_file=str(tmp_path / "node.key"),
    )
    server.tls_context(config, "node-a")
    assert server.certificate_file(config) == str(tmp_path / "node.crt")
    assert not (tmp_path / "node" / "agent" / "pki").exists()  # nothing issued


REFUSALS = {
    "an unknown pod": ("/containerLogs/ns/ghost/main", 404, 'pod "ghost" does not exist'),
    "an unknown container": (
        "/containerLogs/ns/p/nope",
        404,
        'container "nope" not found in pod "p"',
    ),
    "a container waiting to start": (
        "/containerLogs/ns/p/main",
        400,
        'container "main" in pod "p" is waiting to start: ContainerCreating',
    ),
    "no previous attempt": (
        "/containerLogs/ns/p/main?previous=true",
        400,
        'previous terminated container "main" in pod "p" not found',
    ),
    "a bad option": ("/containerLogs/ns/p/main?tailLines=-1", 422, "tailLines"),
    "an unknown path": ("/nothing/here", 404, "Not Found"),
}


@pytest.mark.parametrize(("path", "code", "text"), REFUSALS.values(), ids=REFUSALS.keys())
def test_refusals_are_the_kubelets_plain_text(path: str, code: int, text: str) -> None:
    waiting = {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}

    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        async with session.get(site.make_url(path)) as response:
            assert response.status == code
            assert text in await response.text()

    serve(body, FakeRuntime(), Pods(pod([waiting])))


# -- logs ----------------------------------------------------------------------------------------


def test_the_log_read_follows_the_status_and_passes_the_options() -> None:
    statuses = [
        {
            "name": "main",
            "containerID": cid("main", 2),
            "state": {"running": {}},
            "lastState": {"terminated": {"containerID": cid("main", 1), "exitCode": 1}},
        }
    ]
    reader = Reader(b"hello\n")

    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        async with session.get(site.make_url("/containerLogs/ns/p/main")) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            assert await response.read() == b"hello\n"
        query = "previous=true&timestamps=true&tailLines=5&limitBytes=100&sinceSeconds=60"
        async with session.get(site.make_url(f"/containerLogs/ns/p/main?{query}")) as response:
            assert response.status == 200
        async with session.get(site.make_url("/containerLogs/ns/p/main?follow=true")) as response:
            assert response.status == 200

    serve(body, FakeRuntime([running_state(attempt=2)]), Pods(pod(statuses)), reader)
    plain, previous, follow = reader.calls
    assert plain["paths"] == ["/logs/main/2"]
    assert (plain["follow"], plain["timestamps"], plain["tail_lines"]) == (False, False, None)
    assert previous["paths"] == ["/logs/main/1"]
    assert (previous["timestamps"], previous["tail_lines"], previous["limit_bytes"]) == (
        True,
        5,
        100,
    )
    assert previous["since"] == NOW - timedelta(seconds=60)
    assert follow["follow"] is True
    assert follow["running"]() is True  # attempt 2 runs


def test_a_container_the_status_has_not_caught_up_with_is_read_from_disk() -> None:
    reader = Reader()

    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        async with session.get(site.make_url("/containerLogs/ns/p/setup")) as response:
            assert response.status == 200

    serve(body, FakeRuntime([running_state("setup")]), Pods(pod()), reader)
    assert reader.calls[0]["paths"] == ["/logs/setup/0"]


# -- exec ----------------------------------------------------------------------------------------


async def collect(ws: aiohttp.ClientWebSocketResponse) -> list[bytes]:
    messages = []
    async for message in ws:
        if message.type is aiohttp.WSMsgType.BINARY:
            messages.append(message.data)
    return messages


def channel(messages: list[bytes], number: int) -> bytes:
    return b"".join(m[1:] for m in messages if m[0] == number)


def status_of(messages: list[bytes]) -> dict[str, Any]:
    (status,) = [m for m in messages if m[0] == 3]
    return json.loads(status[1:])


EXEC = "/exec/ns/p/main?command=sh&command=-c&command={}&output=1&error=1"  # the kubelet's names


def test_exec_streams_output_and_reports_the_exit_code() -> None:
    script = "echo%20out%3B%20echo%20err%20%3E%262%3B%20exit%203"  # echo out; echo err >&2; exit 3
    fake = FakeRuntime([running_state()])

    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        async with session.ws_connect(site.make_url(EXEC.format(script)), protocols=(V5,)) as ws:
            assert ws.protocol == V5
            messages = await collect(ws)
            assert ws.close_code == 1000
        assert channel(messages, 1) == b"out\n"
        assert channel(messages, 2) == b"err\n"
        status = status_of(messages)
        assert status["reason"] == "NonZeroExitCode"
        assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]

    serve(body, fake, Pods(pod()))
    assert fake.execs == [
        (UID, "main", ("sh", "-c", "echo out; echo err >&2; exit 3"), False, False)
    ]


@pytest.mark.parametrize("protocol", [V5, V4])
def test_exec_passes_stdin(protocol: str) -> None:
    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        url = "/exec/ns/p/main?command=head&command=-n&command=2&input=1&output=1"
        async with session.ws_connect(site.make_url(url), protocols=(protocol,)) as ws:
            await ws.send_bytes(b"\x00one\ntwo\n")
            if protocol == V5:
                await ws.send_bytes(b"\xff\x00")  # end of stdin
            messages = await collect(ws)
        assert channel(messages, 1) == b"one\ntwo\n"
        assert status_of(messages) == {"metadata": {}, "status": "Success"}

    serve(body, FakeRuntime([running_state()]), Pods(pod()))


def test_a_failure_after_the_upgrade_is_a_status() -> None:
    fake = FakeRuntime([running_state()])
    fake.refuse = 'command "nosuch" not found'

    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        async with session.ws_connect(
            site.make_url("/exec/ns/p/main?command=nosuch&output=1"), protocols=(V5,)
        ) as ws:
            messages = await collect(ws)
        status = status_of(messages)
        assert (status["status"], status["code"]) == ("Failure", 500)
        assert status["message"] == 'command "nosuch" not found'
        async with session.ws_connect(
            site.make_url("/exec/ns/ghost/main?command=x"), protocols=(V5,)
        ) as ws:
            messages = await collect(ws)
        assert status_of(messages)["message"] == 'pod "ghost" does not exist'

    serve(body, fake, Pods(pod()))


def test_exec_without_an_upgrade_is_refused() -> None:
    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        async with session.get(site.make_url("/exec/ns/p/main?command=true")) as response:
            assert response.status == 400
            assert await response.text() == "Upgrade request required"

    serve(body, FakeRuntime([running_state()]), Pods(pod()))


def test_a_client_that_goes_away_ends_the_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    script = f"sleep 60 & echo $! > {marker}; wait"

    async def body(session: aiohttp.ClientSession, site: test_utils.TestServer) -> None:
        url = site.make_url("/exec/ns/p/main").with_query(
            [("command", "sh"), ("command", "-c"), ("command", script), ("stdout", "1")]
        )
        async with session.ws_connect(url, protocols=(V5,)) as ws:
            for _ in range(200):
                if marker.exists() and marker.read_text().strip():
                    break
                await asyncio.sleep(0.01)
            await ws.close()
        child = int(marker.read_text())
        for _ in range(200):
            if not alive(child):
                return
            await asyncio.sleep(0.01)
        os.kill(child, signal.SIGKILL)
        raise AssertionError("the exec's process group outlived its client")

    serve(body, FakeRuntime([running_state()]), Pods(pod()))


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# -- the certificate -----------------------------------------------------------------------------


def san(path: Path) -> tuple[list[str], list[str]]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return (
        names.get_values_for_type(x509.DNSName),
        [str(ip) for ip in names.get_values_for_type(x509.IPAddress)],
    )


def test_the_certificate_comes_from_the_control_planes_ca(tmp_path: Path) -> None:
    credentials = tls.ensure(str(tmp_path / "pki"))
    config = settings.Settings(
        root=str(tmp_path / "node"),
        address="10.1.2.3",
        ca_cert=credentials.ca_cert,
        ca_key=os.path.join(credentials.directory, tls.CA_KEY),
    )
    server.tls_context(config, "node-a")
    cert_path = tmp_path / "node" / "agent" / "pki" / "node.crt"
    names, ips = san(cert_path)
    assert "node-a" in names
    assert {"127.0.0.1", "10.1.2.3"} <= set(ips)
    issuer = x509.load_pem_x509_certificate(cert_path.read_bytes()).issuer
    ca = x509.load_pem_x509_certificate(Path(credentials.ca_cert).read_bytes())
    assert issuer == ca.subject


def test_without_a_ca_the_node_makes_its_own(tmp_path: Path) -> None:
    config = settings.Settings(root=str(tmp_path))
    context = server.tls_context(config, "node-b")
    assert context is not None
    assert (tmp_path / "agent" / "pki" / "own-ca" / "ca.crt").exists()
