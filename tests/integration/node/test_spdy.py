"""Exec over SPDY/3.1 end to end against the node's endpoint on a loopback port, with real
(tiny) processes: output on the stdout and stderr streams, stdin passed on until its stream
ends, the exit as a ``metav1.Status`` on the error stream, and the process group killed when
the client goes. The framing is tested in tests/unit/local/node/test_spdy.py."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from aiohttp import test_utils

from kubetrain.local.node import runtime, server, spdy
from tests.unit.local.node.test_spdy import Client, data, frames

TOKEN = "s3cret"


UID = "uid-1"


class Runtime:
    """Runs exec'd commands as real processes and keeps them, so a test can see them end."""

    def __init__(self) -> None:
        self.processes: list[asyncio.subprocess.Process] = []
        self.started = asyncio.Event()

    def containers(self, uid: str | None = None) -> list[runtime.ContainerState]:
        return []

    async def exec(
        self, uid: str, container: str, argv: Sequence[str], *, stdin: bool, tty: bool
    ) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.processes.append(process)
        self.started.set()
        return process


class Pods:
    def pod_by_name(self, namespace: str, name: str) -> dict[str, Any] | None:
        if (namespace, name) != ("ns", "p"):
            return None
        return {
            "metadata": {"name": "p", "namespace": "ns", "uid": UID},
            "spec": {"containers": [{"name": "main"}]},
        }


async def node(fake: Runtime) -> AsyncIterator[test_utils.TestServer]:
    endpoint = server.NodeServer(
        fake,  # type: ignore[arg-type]
        Pods(),
        token=TOKEN,
        clock=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc),
    )
    async with test_utils.TestServer(endpoint.app()) as site:
        yield site


async def upgrade(
    site: test_utils.TestServer, query: list[tuple[str, str]], *, pod: str = "p"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    """POST the kubelet's exec with an SPDY upgrade, as kube-apiserver forwards kubectl's."""
    reader, writer = await asyncio.open_connection(site.host, site.port)
    path = f"/exec/ns/{pod}/main?{urlencode(query)}"
    writer.write(
        (
            f"POST {path} HTTP/1.1\r\nHost: node\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
            "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
            "X-Stream-Protocol-Version: v3.channel.k8s.io\r\nContent-Length: 0\r\n\r\n"
        ).encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    return reader, writer, head


def exec_query(command: Sequence[str], **streams: bool) -> list[tuple[str, str]]:
    names = {"stdin": "input", "stdout": "output", "stderr": "error"}
    return [("command", c) for c in command] + [(names[k], "1") for k, on in streams.items() if on]


async def run(
    site: test_utils.TestServer, command: Sequence[str], stdin: bytes | None = None
) -> tuple[dict[str, bytes], dict[str, int], list[int]]:
    """Exec ``command``; what each stream got, the flags of each stream's last frame, and
    the control frame types the node sent."""
    query = exec_query(command, stdin=stdin is not None, stdout=True, stderr=True)
    reader, writer, head = await upgrade(site, query)
    assert head.startswith(b"HTTP/1.1 101 ")
    assert b"X-Stream-Protocol-Version: v4.channel.k8s.io" in head
    assert b"Upgrade: SPDY/3.1" in head
    client = Client()
    ids = {}
    for kind in (
        ("error", "stdin", "stdout", "stderr")
        if stdin is not None
        else (
            "error",
            "stdout",
            "stderr",
        )
    ):
        ids[kind], frame = client.syn_stream(kind)
        writer.write(frame)
    if stdin is not None:
        writer.write(data(ids["stdin"], stdin) + data(ids["stdin"], b"", fin=True))
    raw = await asyncio.wait_for(reader.read(), 30)  # until the node closes
    writer.close()
    by_id = {v: k for k, v in ids.items()}
    got: dict[str, bytes] = {k: b"" for k in ids}
    last: dict[str, int] = {}
    controls = []
    for is_control, kind, flags, body in frames(raw):
        if is_control:
            controls.append(kind)
            if kind == spdy.SYN_REPLY:
                client.inflate.decompress(body[4:])
            continue
        got[by_id[kind]] += body
        last[by_id[kind]] = flags
    return got, last, controls


def serve_and(body: Any) -> Runtime:
    fake = Runtime()

    async def main() -> None:
        async for site in node(fake):
            await body(site)

    asyncio.run(main())
    return fake


def test_exec_over_spdy_streams_output_and_reports_the_exit_code() -> None:
    async def body(site: test_utils.TestServer) -> None:
        got, last, controls = await run(site, ["sh", "-c", "echo hi; echo oops >&2; exit 3"])
        assert got["stdout"] == b"hi\n"
        assert got["stderr"] == b"oops\n"
        status = json.loads(got["error"])
        assert status["reason"] == "NonZeroExitCode"
        assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
        assert last == {"error": 1, "stdout": 1, "stderr": 1}  # every stream ended with FIN
        assert controls.count(spdy.SYN_REPLY) == 3
        assert controls[-1] == spdy.GOAWAY

        got, _, _ = await run(site, ["true"])
        assert json.loads(got["error"]) == {"metadata": {}, "status": "Success"}

    serve_and(body)


def test_exec_over_spdy_passes_stdin_until_its_stream_ends() -> None:
    async def body(site: test_utils.TestServer) -> None:
        got, _, _ = await run(site, ["cat"], stdin=b"one\ntwo\n")
        assert got["stdout"] == b"one\ntwo\n"
        assert json.loads(got["error"])["status"] == "Success"

    serve_and(body)


def test_exec_over_spdy_of_a_command_that_cannot_start_says_why() -> None:
    async def body(site: test_utils.TestServer) -> None:
        got, _, _ = await run(site, ["/nonexistent/command"])
        status = json.loads(got["error"])
        assert (status["status"], status["code"]) == ("Failure", 500)

    class Refusing(Runtime):
        async def exec(self, *args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
            raise runtime.StartError("ContainerCannotRun", 'exec: "x": not found')

    async def main() -> None:
        async for site in node(Refusing()):
            await body(site)

    asyncio.run(main())


def test_exec_over_spdy_of_an_unknown_pod_is_refused_before_the_upgrade() -> None:
    async def body(site: test_utils.TestServer) -> None:
        _, writer, head = await upgrade(site, exec_query(["true"]), pod="nope")
        writer.close()
        assert head.startswith(b"HTTP/1.1 404 ")

    serve_and(body)


def test_a_client_that_goes_away_ends_the_command() -> None:
    fake = Runtime()

    async def body(site: test_utils.TestServer) -> None:
        _, writer, _ = await upgrade(site, exec_query(["sleep", "60"], stdout=True))
        client = Client()
        for kind in ("error", "stdout"):
            writer.write(client.syn_stream(kind)[1])
        await asyncio.wait_for(fake.started.wait(), 10)
        writer.close()
        returncode = await asyncio.wait_for(fake.processes[0].wait(), 10)
        assert returncode == -9  # its group was killed, not left to run out its minute

    async def main() -> None:
        async for site in node(fake):
            await body(site)

    asyncio.run(main())
