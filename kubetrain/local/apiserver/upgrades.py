"""Upgraded connections to a node, relayed as bytes: what kube-apiserver's
``UpgradeAwareHandler`` does for ``exec`` and ``portforward`` over SPDY/3.1, and its stream
tunnel for ``portforward`` over WebSocket.

- **Pass-through.** A client's ``Upgrade: SPDY/3.1`` request goes to the node as the same
  upgrade (the kubelet's path and query, the client's ``X-Stream-Protocol-Version`` offers,
  the API server's credentials). A refusal comes back as the node sent it; after the node's
  101, the client gets a 101 with the protocol the node chose, and the bytes go both ways
  unchanged until either side closes.
- **Tunnel.** kubectl 1.31 and later first ask for ``portforward`` as a WebSocket with the
  subprotocol ``SPDY/3.1+portforward.k8s.io``: the same SPDY session, carried in binary
  messages. The API server upgrades the node's connection to SPDY itself and copies each
  message's bytes to it, and the node's bytes back as messages.

Owns: dialling a node for an upgrade, reading its answer's head, and both relays. Must not:
find pods or nodes, or know what the bytes mean (:mod:`.nodeproxy` and the node do).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import aiohttp
import yarl
from aiohttp import web

from kubetrain import _aio
from kubetrain.local.apiserver import errors

log = logging.getLogger(__name__)

SPDY_UPGRADE: Final = "SPDY/3.1"
STREAM_PROTOCOL_HEADER: Final = "X-Stream-Protocol-Version"
TUNNEL_PREFIX: Final = "SPDY/3.1+"  # a WebSocket subprotocol carrying SPDY: SPDY/3.1+<protocol>
MAX_HEAD: Final = 64 * 1024  # bytes of a node's response head to an upgrade
MAX_ERROR_BODY: Final = 50_000  # bytes of a node's refusal kept (kube's maxReadLength)
READ_SIZE: Final = 64 * 1024
RELAY_BUFFER: Final = 1 << 20  # bytes waiting to go to a node before its client is paused
HEARTBEAT: Final = 30.0  # seconds between WebSocket pings to a tunnel's client
TEXT: Final = "text/plain"
_TIMEOUTS: Final = (TimeoutError, asyncio.TimeoutError)


def spdy_requested(request: web.BaseRequest) -> bool:
    """``Connection: Upgrade`` and ``Upgrade: SPDY/3.1`` (kubectl's SPDY requests)."""
    connection = {t.strip().lower() for t in request.headers.get("Connection", "").split(",")}
    upgrade = request.headers.get("Upgrade", "").strip().lower()
    return "upgrade" in connection and upgrade == SPDY_UPGRADE.lower()


@dataclass
class Answer:
    """A node's answer to an upgrade: its status, its headers (names in lower case), and the
    connection, its reader left at what follows the head."""

    status: int
    headers: dict[str, str]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def refusal(self, timeout: float) -> web.Response:
        """A non-101 answer as the client gets it: the node's status, type and body (up to
        :data:`MAX_ERROR_BODY` bytes)."""
        size = self.headers.get("content-length", "")
        body = b""
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, *_TIMEOUTS):
            async with _aio.timeout(timeout):
                if size.isdigit():
                    body = await self.reader.readexactly(min(int(size), MAX_ERROR_BODY))
                else:
                    body = await self.reader.read(MAX_ERROR_BODY)
        content_type = self.headers.get("content-type", TEXT).split(";")[0].strip()
        return web.Response(status=self.status, body=body, content_type=content_type)


async def dial(
    url: yarl.URL,
    *,
    method: str,
    token: str,
    protocols: Sequence[str],
    ssl_context: ssl.SSLContext | None,
    timeout: float,
) -> Answer:
    """Dial the node, send it a SPDY/3.1 upgrade offering ``protocols``, and read the head of
    its answer. Failing to get one is kube's 500 ``error dialing backend``."""
    host = url.host or ""
    lines = [
        f"{method} {url.raw_path_qs} HTTP/1.1",
        f"Host: {url.raw_authority}",
        f"Authorization: Bearer {token}",
        "Connection: Upgrade",
        f"Upgrade: {SPDY_UPGRADE}",
        *(f"{STREAM_PROTOCOL_HEADER}: {p}" for p in protocols),
        "Content-Length: 0",
    ]
    context = ssl_context or ssl.create_default_context()
    try:
        async with _aio.timeout(timeout):
            reader, writer = await asyncio.open_connection(
                host, url.port, ssl=context, server_hostname=host, limit=MAX_HEAD
            )
            try:
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
                head = await reader.readuntil(b"\r\n\r\n")
            except BaseException:
                writer.close()
                raise
    except (OSError, ValueError, asyncio.IncompleteReadError, *_TIMEOUTS) as exc:
        raise errors.internal(f"error dialing backend: {describe(exc, timeout)}") from exc
    first, *rest = head.decode("latin-1").split("\r\n")
    parts = first.split(" ", 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        writer.close()
        raise errors.internal(f"node answered the upgrade with {first!r}") from None
    headers = {}
    for line in rest:
        key, sep, value = line.partition(":")
        if sep:
            headers[key.strip().lower()] = value.strip()
    return Answer(status, headers, reader, writer)


def describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, _TIMEOUTS) and not str(exc):
        return f"no answer within {timeout:.0f}s"
    return str(exc) or type(exc).__name__


async def pass_through(
    request: web.Request, answer: Answer, relays: set[asyncio.StreamWriter], what: str
) -> web.StreamResponse:
    """The node's 101 to the client, then bytes both ways until either side closes;
    ``relays`` holds the node's connection meanwhile (the API server aborts those when it
    shuts down)."""
    writer, reader = answer.writer, answer.reader
    response = web.StreamResponse(
        status=101, headers={"Connection": "Upgrade", "Upgrade": SPDY_UPGRADE}
    )
    chosen = answer.headers.get(STREAM_PROTOCOL_HEADER.lower())
    if chosen:
        response.headers[STREAM_PROTOCOL_HEADER] = chosen
    response.force_close()
    await response.prepare(request)
    transport = request.transport
    assert transport is not None
    forward = _Forward(writer, transport)
    request.protocol.set_parser(forward)  # type: ignore[arg-type]  # feed_data/feed_eof
    relays.add(writer)
    try:
        while not writer.is_closing():
            data = await reader.read(READ_SIZE)
            if not data:
                break
            await response.write(data)
    except (ConnectionError, OSError) as exc:
        log.debug("%s over SPDY ended: %s", what, exc)
    finally:
        relays.discard(writer)
        forward.cancel()
    return response


async def tunnel(
    client: web.WebSocketResponse, answer: Answer, relays: set[asyncio.StreamWriter], what: str
) -> None:
    """Relay an upgraded client WebSocket and the node's SPDY connection: each binary
    message's bytes to the node, the node's bytes back as binary messages."""
    writer, reader = answer.writer, answer.reader
    relays.add(writer)

    async def to_node() -> None:
        async for message in client:
            if message.type is aiohttp.WSMsgType.BINARY:
                writer.write(message.data)
                await writer.drain()
            elif message.type is aiohttp.WSMsgType.ERROR:
                return

    async def to_client() -> None:
        while data := await reader.read(READ_SIZE):
            await client.send_bytes(data)

    tasks = [asyncio.ensure_future(to_node()), asyncio.ensure_future(to_client())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for result in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(result, (ConnectionError, OSError, aiohttp.ClientError)):
                log.debug("%s tunnel ended: %s", what, result)
        relays.discard(writer)
        writer.close()
        await client.close()


class _Forward:
    """What a client sends after an upgrade, to the node as it comes (aiohttp's
    payload-parser interface); the client is paused while :data:`RELAY_BUFFER` bytes wait to
    go to the node."""

    def __init__(self, node: asyncio.StreamWriter, client: asyncio.BaseTransport) -> None:
        self.node = node
        self.client = client
        self._resuming: asyncio.Task[None] | None = None

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        if self.node.is_closing():
            return True, b""
        self.node.write(data)
        transport = self.node.transport
        if self._resuming is None and transport.get_write_buffer_size() > RELAY_BUFFER:
            if isinstance(self.client, asyncio.ReadTransport):
                self.client.pause_reading()
            self._resuming = asyncio.ensure_future(self._resume())
        return False, b""

    async def _resume(self) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            await self.node.drain()
        self._resuming = None
        if isinstance(self.client, asyncio.ReadTransport) and not self.client.is_closing():
            self.client.resume_reading()

    def feed_eof(self) -> None:
        """The client went: so does the node's connection (the node then ends the command)."""
        self.node.close()

    def cancel(self) -> None:
        if self._resuming is not None:
            self._resuming.cancel()
