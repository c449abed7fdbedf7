"""SPDY/3.1, the server side, as far as a kubelet speaks it: the protocol kube-apiserver uses
towards a kubelet for ``exec`` (it passes a ``kubectl`` 1.29-or-older SPDY upgrade through
unchanged, and from 1.30 translates kubectl's WebSocket into SPDY towards the kubelet).

The client (``k8s.io/apimachinery``'s spdystream) opens one stream per channel (``SYN_STREAM``
with a ``streamType`` header: ``error``, ``stdin``, ``stdout``, ``stderr``, ``resize``); the
server answers each with a ``SYN_REPLY``, and both sides send ``DATA`` frames, a ``FIN`` flag
ending one direction of a stream. Header blocks are zlib-compressed with one stream-wide
context per direction, primed with the SPDY/3 dictionary (:data:`DICTIONARY`). ``PING`` is
echoed; ``SETTINGS`` and ``WINDOW_UPDATE`` are read and ignored, as spdystream does: it keeps
no flow-control windows, so neither does this side.

:class:`Session` is fed the bytes after the HTTP upgrade (it has aiohttp's payload-parser
interface: ``feed_data``, ``feed_eof``) and writes its frames through one writer
(:meth:`Session.pump`), so that frames never interleave and header blocks are compressed in
the order they are sent.

Owns: framing, header compression, the streams. Must not: know what a stream carries (the
node's exec handler in :mod:`.server` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Final

log = logging.getLogger(__name__)

UPGRADE: Final = "SPDY/3.1"
VERSION: Final = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = (
    1,
    2,
    3,
    4,
    6,
    7,
    8,
    9,
)
FLAG_FIN: Final = 0x01
MAX_FRAME: Final = 0xFFFFFF  # 24 bits of length
MAX_HEADERS: Final = 256 * 1024  # bytes a decompressed header block may hold
CHUNK: Final = 32 * 1024  # the largest DATA frame this side writes (as the kubelet's copy)
CANCEL: Final = 5  # RST_STREAM status

_TOKENS: Final = (
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
)
_TAIL: Final = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
# The SPDY/3 header-compression dictionary (draft-mbelshe-httpbis-spdy-00, 2.6.10.1): the
# tokens, each after its 32-bit length, then the tail as it is. 1,423 bytes, Adler-32
# 0xe3c6a7c2 (the dictionary id a peer's zlib stream names).
DICTIONARY: Final = (
    b"".join(struct.pack(">I", len(t)) + t.encode() for t in _TOKENS) + _TAIL.encode()
)


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3: the session ends."""


def requested(headers: Mapping[str, str]) -> bool:
    """Whether an HTTP request asks to upgrade to SPDY/3.1 (``Connection: Upgrade`` and
    ``Upgrade: SPDY/3.1``, as ``spdy.ResponseUpgrader`` checks)."""
    connection = {t.strip().lower() for t in headers.get("Connection", "").split(",")}
    return "upgrade" in connection and headers.get("Upgrade", "").strip().lower() == "spdy/3.1"


def negotiate(offered: Iterable[str], served: Sequence[str]) -> str:
    """The first protocol the client offers (``X-Stream-Protocol-Version``, repeated or
    comma-separated) that the server serves, or ``""`` (``httpstream.Handshake``)."""
    for header in offered:
        for protocol in header.split(","):
            if protocol.strip() in served:
                return protocol.strip()
    return ""


def _control(kind: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(body)) + body


def _data(stream_id: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, (flags << 24) | len(body)) + body


def header_block(headers: Mapping[str, str]) -> bytes:
    """An uncompressed name/value block: a 32-bit count, then each name and value after its
    32-bit length; names in lower case."""
    out = [struct.pack(">I", len(headers))]
    for name, value in headers.items():
        for text in (name.lower(), value):
            raw = text.encode()
            out.append(struct.pack(">I", len(raw)) + raw)
    return b"".join(out)


def parse_header_block(block: bytes) -> dict[str, str]:
    """The names (lower case) and values of an uncompressed block; several values of one
    name come NUL-separated, as SPDY sends them."""
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        at = 4
        out: dict[str, str] = {}
        for _ in range(count):
            fields = []
            for _ in range(2):
                (size,) = struct.unpack_from(">I", block, at)
                at += 4
                if at + size > len(block):
                    raise ProtocolError("a header runs past its block")
                fields.append(block[at : at + size].decode("utf-8", "replace"))
                at += size
            out[fields[0].lower()] = fields[1]
    except struct.error as exc:
        raise ProtocolError(f"a header block is cut short: {exc}") from exc
    return out


class Stream:
    """One SPDY stream the client opened: its headers, what it sends (:meth:`read`), and
    this side's writes (:meth:`write`, :meth:`close`)."""

    def __init__(self, session: Session, stream_id: int, headers: Mapping[str, str]) -> None:
        self.session = session
        self.id = stream_id
        self.headers = dict(headers)
        self._incoming: asyncio.Queue[bytes] = asyncio.Queue()
        self.remote_closed = False  # FIN or reset received: read() drains, then b""
        self.local_closed = False  # FIN sent, or reset: no more writes

    @property
    def kind(self) -> str:
        """The ``streamType`` header: ``error``, ``stdin``, ``stdout``, ``stderr``, ``resize``."""
        return self.headers.get("streamtype", "")

    def _feed(self, data: bytes) -> None:
        if data and not self.remote_closed:
            self._incoming.put_nowait(data)

    def _end(self) -> None:
        if not self.remote_closed:
            self.remote_closed = True
            self._incoming.put_nowait(b"")

    async def read(self) -> bytes:
        """The next bytes the client sent on this stream; ``b""`` once it closed its side."""
        if self.remote_closed and self._incoming.empty():
            return b""
        return await self._incoming.get()

    async def write(self, data: bytes) -> None:
        """Send ``data`` in DATA frames; waits until they are handed to the connection."""
        if self.local_closed:
            return
        for start in range(0, len(data), CHUNK):
            await self.session.send(_data(self.id, 0, data[start : start + CHUNK]))

    async def close(self) -> None:
        """End this side of the stream (an empty DATA frame with FIN)."""
        if self.local_closed:
            return
        self.local_closed = True
        await self.session.send(_data(self.id, FLAG_FIN, b""))


class Session:
    """The server side of one SPDY connection. Feed it the connection's bytes (``feed_data``,
    ``feed_eof``: aiohttp's payload-parser interface) and run :meth:`pump` to write; new
    streams come from :meth:`accept`."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)
        self.streams: dict[int, Stream] = {}
        self._new: asyncio.Queue[Stream | None] = asyncio.Queue()
        self._outgoing: asyncio.Queue[tuple[bytes, asyncio.Future[None] | None] | None] = (
            asyncio.Queue()
        )
        self.ended = asyncio.Event()  # the connection is gone (or broken): nothing more comes
        self.error: ProtocolError | None = None
        self._last_id = 0

    # -- reading ------------------------------------------------------------------------

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        """Take the connection's next bytes; handle every whole frame among them."""
        if self.ended.is_set():
            return True, b""
        self._buffer += data
        try:
            while len(self._buffer) >= 8:
                (length,) = struct.unpack_from(">I", self._buffer, 4)
                length &= MAX_FRAME
                if len(self._buffer) < 8 + length:
                    break
                frame = bytes(self._buffer[: 8 + length])
                del self._buffer[: 8 + length]
                self._frame(frame)
        except ProtocolError as exc:
            log.warning("SPDY session ended: %s", exc)
            self.error = exc
            self.feed_eof()
            return True, b""
        return False, b""

    def feed_eof(self) -> None:
        """The connection is gone: every stream's reader sees its end."""
        if self.ended.is_set():
            return
        self.ended.set()
        for stream in self.streams.values():
            stream._end()
            stream.local_closed = True
        self._new.put_nowait(None)
        self._outgoing.put_nowait(None)

    def _frame(self, frame: bytes) -> None:
        first, second = struct.unpack_from(">II", frame, 0)
        flags = second >> 24
        body = frame[8:]
        if not first & 0x80000000:  # DATA
            stream = self.streams.get(first & 0x7FFFFFFF)
            if stream is None:
                return  # a stream this side never saw or already forgot: nothing to feed
            stream._feed(body)
            if flags & FLAG_FIN:
                stream._end()
            return
        version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise ProtocolError(f"SPDY version {version} is not served (3 is)")
        if kind == SYN_STREAM:
            if len(body) < 10:
                raise ProtocolError("SYN_STREAM too short")
            (stream_id,) = struct.unpack_from(">I", body, 0)
            stream_id &= 0x7FFFFFFF
            headers = parse_header_block(self._decompress(body[10:]))
            if stream_id in self.streams or stream_id <= self._last_id:
                raise ProtocolError(f"stream {stream_id} opened twice or out of order")
            self._last_id = stream_id
            stream = Stream(self, stream_id, headers)
            self.streams[stream_id] = stream
            if flags & FLAG_FIN:
                stream._end()
            self._new.put_nowait(stream)
        elif kind in (SYN_REPLY, HEADERS):
            self._decompress(body[4:])  # keeps the shared zlib context in step
        elif kind == RST_STREAM:
            (stream_id,) = struct.unpack_from(">I", body, 0)
            stream = self.streams.get(stream_id & 0x7FFFFFFF)
            if stream is not None:
                stream._end()
                stream.local_closed = True
        elif kind == PING:
            self._outgoing.put_nowait((frame, None))  # echoed as it came
        elif kind == GOAWAY:
            log.debug("SPDY peer said GOAWAY")
        # SETTINGS, WINDOW_UPDATE and unknown control frames: read, ignored

    def _decompress(self, block: bytes) -> bytes:
        try:
            out = self._inflate.decompress(block, MAX_HEADERS)
        except zlib.error as exc:
            raise ProtocolError(f"a header block does not decompress: {exc}") from exc
        if self._inflate.unconsumed_tail:
            raise ProtocolError(f"a header block is larger than {MAX_HEADERS} bytes")
        return out

    async def accept(self) -> Stream | None:
        """The next stream the client opens; None once the connection is gone."""
        if self.ended.is_set() and self._new.empty():
            return None
        return await self._new.get()

    # -- writing ------------------------------------------------------------------------

    def reply(self, stream: Stream) -> None:
        """Accept a stream: a SYN_REPLY with no headers (sent before any later frame)."""
        block = self._deflate.compress(header_block({})) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        body = struct.pack(">I", stream.id & 0x7FFFFFFF) + block
        self._outgoing.put_nowait((_control(SYN_REPLY, 0, body), None))

    def reset(self, stream: Stream, status: int = CANCEL) -> None:
        """Refuse or cancel a stream (RST_STREAM)."""
        stream.local_closed = True
        body = struct.pack(">II", stream.id & 0x7FFFFFFF, status)
        self._outgoing.put_nowait((_control(RST_STREAM, 0, body), None))

    def goaway(self) -> None:
        """Say this side opens nothing more and is about to close (GOAWAY, status OK)."""
        body = struct.pack(">II", self._last_id, 0)
        self._outgoing.put_nowait((_control(GOAWAY, 0, body), None))

    async def send(self, frame: bytes) -> None:
        """Queue a frame and wait until the writer has handed it to the connection."""
        if self.ended.is_set():
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outgoing.put_nowait((frame, done))
        ended = asyncio.ensure_future(self.ended.wait())
        try:
            await asyncio.wait({done, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()

    async def flush(self) -> None:
        """Wait until everything queued so far is written (or the connection is gone)."""
        await self.send(b"")

    async def pump(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        """Write queued frames in order until the connection ends; run it as a task."""
        while True:
            item = await self._outgoing.get()
            if item is None:
                return
            frame, done = item
            try:
                if frame:
                    await write(frame)
            except (ConnectionError, RuntimeError) as exc:
                log.debug("SPDY connection gone while writing: %s", exc)
                self.feed_eof()
            finally:
                if done is not None and not done.done():
                    done.set_result(None)
            if self.ended.is_set():
                while not self._outgoing.empty():  # release every waiting writer
                    rest = self._outgoing.get_nowait()
                    if rest is not None and rest[1] is not None and not rest[1].done():
                        rest[1].set_result(None)
                return


async def close_quietly(session: Session, pump: asyncio.Task[None]) -> None:
    """End the writer: what is queued is written, then the pump stops."""
    with contextlib.suppress(Exception):
        await session.flush()
    session.feed_eof()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await pump
