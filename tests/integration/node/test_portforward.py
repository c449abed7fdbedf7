"""Port-forward as the node serves it over SPDY, on a loopback port: streams paired by
``requestID``, bytes copied both ways to a real local echo server, and the kubelet's message
on the error stream for a port nothing listens on."""

from __future__ import annotations

import asyncio
import socket
import struct
import zlib
from collections.abc import Callable, Mapping

from kubetrain import _aio
from kubetrain.local.node import portforward, spdy
from tests.unit.local.node.test_spdy import control, data, frames

UID = "uid-1"


class Client:
    """spdystream's side: streams opened with any headers, frames written to the session."""

    def __init__(self, session: spdy.Session) -> None:
        self.session = session
        self.deflate = zlib.compressobj(zdict=spdy.DICTIONARY)
        self.next_id = 1

    def open(self, headers: Mapping[str, str], *, fin: bool = False) -> int:
        stream_id, self.next_id = self.next_id, self.next_id + 2
        block = spdy.header_block(dict(headers))
        packed = self.deflate.compress(block) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        body = struct.pack(">IIBB", stream_id, 0, 0, 0) + packed
        self.session.feed_data(control(spdy.SYN_STREAM, 1 if fin else 0, body))
        return stream_id

    def send(self, stream_id: int, body: bytes, *, fin: bool = False) -> None:
        self.session.feed_data(data(stream_id, body, fin=fin))


class Wire:
    """What the node wrote: each stream's bytes, which streams it ended, which it reset."""

    def __init__(self) -> None:
        self.raw = b""
        self.changed = asyncio.Event()

    async def write(self, frame: bytes) -> None:
        self.raw += frame
        self.changed.set()

    def received(self, stream_id: int) -> bytes:
        return b"".join(b for c, t, _, b in frames(self.raw) if not c and t == stream_id)

    def ended(self, stream_id: int) -> bool:
        return any(
            not c and t == stream_id and f & spdy.FLAG_FIN for c, t, f, _ in frames(self.raw)
        )

    def reset(self) -> list[int]:
        return [
            struct.unpack_from(">I", b)[0]
            for c, t, _, b in frames(self.raw)
            if c and t == spdy.RST_STREAM
        ]

    async def until(self, check: Callable[[], bool], timeout: float = 10.0) -> None:
        async with _aio.timeout(timeout):
            while not check():
                self.changed.clear()
                await self.changed.wait()


async def echo_server() -> tuple[asyncio.AbstractServer, int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(1024):
            writer.write(chunk)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_pairs_are_forwarded_to_the_pods_port_and_an_unreachable_one_says_why() -> None:
    async def main() -> None:
        server, port = await echo_server()
        closed = closed_port()
        session, wire = spdy.Session(), Wire()
        client = Client(session)
        pump = asyncio.create_task(session.pump(wire.write))
        serving = asyncio.create_task(portforward.serve_spdy(session, portforward.dialer(UID)))
        try:
            # two connections by requestID, their streams interleaved
            e1 = client.open({"streamType": "error", "port": str(port), "requestID": "1"})
            e2 = client.open({"streamType": "error", "port": str(port), "requestID": "2"})
            d2 = client.open({"streamType": "data", "port": str(port), "requestID": "2"})
            d1 = client.open({"streamType": "data", "port": str(port), "requestID": "1"})
            client.send(d1, b"one")
            client.send(d2, b"two")
            await wire.until(lambda: wire.received(d1) == b"one" and wire.received(d2) == b"two")
            client.send(d1, b"", fin=True)  # the client's end: the pod's side closes, then ours
            await wire.until(lambda: wire.ended(d1) and wire.ended(e1))
            assert not wire.ended(d2)
            # an old client: no requestID, paired by stream id (error n, data n+2)
            e3 = client.open({"streamType": "error", "port": str(port)})
            d3 = client.open({"streamType": "data", "port": str(port)})
            client.send(d3, b"old")
            await wire.until(lambda: wire.received(d3) == b"old")
            # nothing listens: the kubelet's message on the error stream, both streams end
            e4 = client.open({"streamType": "error", "port": str(closed), "requestID": "4"})
            d4 = client.open({"streamType": "data", "port": str(closed), "requestID": "4"})
            await wire.until(lambda: wire.ended(e4) and wire.ended(d4))
            message = wire.received(e4).decode()
            assert message.startswith(
                f"error forwarding port {closed} to pod {UID}, uid : failed to connect to "
                f'localhost:{closed} inside namespace "{UID}", IPv4: dial tcp4 '
                f"127.0.0.1:{closed}: connect: connection refused IPv6 dial tcp6 [::1]:{closed}"
            )
            assert wire.received(d4) == b""
            # a stream without a port is refused
            bad = client.open({"streamType": "data", "requestID": "5"})
            await wire.until(lambda: bad in wire.reset())
            assert e2 not in wire.reset()
            assert e3 not in wire.reset()
        finally:
            session.feed_eof()
            await asyncio.wait_for(serving, 10)
            await spdy.close_quietly(session, pump)
            server.close()

    asyncio.run(main())
