"""SPDY/3.1 as the node speaks it to kube-apiserver for exec: the framing and header
compression (a client here plays spdystream: it opens one stream per channel with a
``streamType`` header), and exec over it end to end against the node's endpoint, with real
(tiny) processes: output on the stdout and stderr streams, stdin passed on until its stream
ends, the exit as a ``metav1.Status`` on the error stream, and the process group killed when
the client goes."""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import zlib
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp import test_utils

from kubetrain.local.node import runtime, server, spdy

TOKEN = "s3cret"
UID = "uid-1"


# -- the protocol -------------------------------------------------------------------------


def test_the_dictionary_is_the_spdy3_one() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2


def test_a_header_block_round_trips_with_lower_case_names() -> None:
    block = spdy.header_block({"streamType": "stdout", "port": "80"})
    assert spdy.parse_header_block(block) == {"streamtype": "stdout", "port": "80"}
    with pytest.raises(spdy.ProtocolError):
        spdy.parse_header_block(block[:-1])
    with pytest.raises(spdy.ProtocolError):
        spdy.parse_header_block(b"\x00\x00")


def test_the_upgrade_and_the_protocol_are_negotiated_as_kube_does() -> None:
    assert spdy.requested({"Connection": "keep-alive, Upgrade", "Upgrade": "SPDY/3.1"})
    assert not spdy.requested({"Connection": "Upgrade", "Upgrade": "websocket"})
    assert not spdy.requested({"Upgrade": "SPDY/3.1"})
    served = ("v5.channel.k8s.io", "v4.channel.k8s.io")
    offered = ["v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"]
    assert spdy.negotiate(offered, served) == "v4.channel.k8s.io"  # the client's order
    assert spdy.negotiate(["v5.channel.k8s.io, v4.channel.k8s.io"], served) == ("v5.channel.k8s.io")
    assert spdy.negotiate(["v3.channel.k8s.io"], served) == ""


class Client:
    """The client side of the framing: header blocks compressed with a context of its own."""

    def __init__(self) -> None:
        self.deflate = zlib.compressobj(zdict=spdy.DICTIONARY)
        self.inflate = zlib.decompressobj(zdict=spdy.DICTIONARY)
        self.next_id = 1

    def syn_stream(self, kind: str, *, fin: bool = False) -> tuple[int, bytes]:
        stream_id, self.next_id = self.next_id, self.next_id + 2
        block = spdy.header_block({"streamType": kind})
        packed = self.deflate.compress(block) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        body = struct.pack(">IIBB", stream_id, 0, 0, 0) + packed
        return stream_id, control(spdy.SYN_STREAM, 1 if fin else 0, body)


def control(kind: int, flags: int, body: bytes, version: int = 3) -> bytes:
    return struct.pack(">HHI", 0x8000 | version, kind, (flags << 24) | len(body)) + body


def data(stream_id: int, body: bytes, *, fin: bool = False) -> bytes:
    return struct.pack(">II", stream_id, ((1 if fin else 0) << 24) | len(body)) + body


def frames(raw: bytes) -> list[tuple[bool, int, int, bytes]]:
    """(control?, type or stream id, flags, body) of every frame in ``raw``."""
    out = []
    while raw:
        first, second = struct.unpack_from(">II", raw, 0)
        length = second & 0xFFFFFF
        body, raw = raw[8 : 8 + length], raw[8 + length :]
        if first & 0x80000000:
            out.append((True, first & 0xFFFF, second >> 24, body))
        else:
            out.append((False, first, second >> 24, body))
    return out


def test_a_session_takes_streams_data_and_pings() -> None:
    async def main() -> None:
        session, client = spdy.Session(), Client()
        written: list[bytes] = []

        async def write(frame: bytes) -> None:
            written.append(frame)

        pump = asyncio.create_task(session.pump(write))
        error_id, opening = client.syn_stream("error", fin=True)
        stdin_id, opening2 = client.syn_stream("stdin")
        ping = control(spdy.PING, 0, struct.pack(">I", 7))
        # one read may hold several frames, and a frame may be split across reads
        wire = opening + opening2 + data(stdin_id, b"hello") + ping + data(stdin_id, b"", fin=True)
        for cut in (3, 40):
            session.feed_data(wire[:cut])
            wire = wire[cut:]
        session.feed_data(wire)
        error = await session.accept()
        stdin = await session.accept()
        assert error is not None
        assert stdin is not None
        assert (error.id, error.kind, error.remote_closed) == (error_id, "error", True)
        assert stdin.kind == "stdin"
        assert await stdin.read() == b"hello"
        assert await stdin.read() == b""
        session.reply(stdin)
        await stdin.write(b"x" * (spdy.CHUNK + 1))
        await stdin.close()
        await spdy.close_quietly(session, pump)
        kinds = [(c, t, f) for c, t, f, _ in frames(b"".join(written))]
        assert kinds == [
            (True, spdy.PING, 0),
            (True, spdy.SYN_REPLY, 0),
            (False, stdin_id, 0),
            (False, stdin_id, 0),
            (False, stdin_id, spdy.FLAG_FIN),
        ]
        assert frames(b"".join(written))[0][3] == struct.pack(">I", 7)  # echoed as it came
        reply = frames(b"".join(written))[1][3]
        assert struct.unpack_from(">I", reply)[0] == stdin_id
        assert spdy.parse_header_block(client.inflate.decompress(reply[4:])) == {}

    asyncio.run(main())


def test_a_frame_of_another_version_ends_the_session() -> None:
    async def main() -> None:
        session = spdy.Session()
        eof, _ = session.feed_data(control(spdy.PING, 0, b"\x00\x00\x00\x01", version=2))
        assert eof
        assert session.ended.is_set()
        assert await session.accept() is None

    asyncio.run(main())


def test_a_header_block_that_does_not_decompress_ends_the_session() -> None:
    session = spdy.Session()
    body = struct.pack(">IIBB", 1, 0, 0, 0) + b"not zlib at all"
    eof, _ = session.feed_data(control(spdy.SYN_STREAM, 0, body))
    assert eof
    assert session.error is not None


# -- exec over SPDY against the node's endpoint --------------------------------------------


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
