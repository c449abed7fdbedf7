"""SPDY/3.1 as the node speaks it to kube-apiserver for exec: the framing and header
compression (a client here plays spdystream: it opens one stream per channel with a
``streamType`` header). Exec over it end to end, with real processes, is tested in
tests/integration/node/test_spdy.py."""

from __future__ import annotations

import asyncio
import struct
import zlib

import pytest

from kubetrain.local.node import spdy

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
