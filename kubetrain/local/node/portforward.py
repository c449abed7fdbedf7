"""Port forwarding into a pod, as the kubelet serves ``/portForward/{namespace}/{pod}``.

Every pod of a kubetrain node shares the host's network, so "a port of the pod" is a port of
the host's loopback: a forwarded connection is a TCP connection to ``localhost:<port>``
(IPv4 first, then IPv6), as the kubelet's runtime dials inside the pod's network namespace.
The port a client names is the pod's own: on the host network the operator writes the port a
pod really listens on into its ``containerPort`` (and a Service's ``targetPort``), so the
number in the pod's spec is the number dialled, and nothing here translates it.

Two protocols, both the kubelet's:

- **SPDY/3.1**, protocol ``portforward.k8s.io`` (what kubectl speaks, passed through by an API
  server): for each forwarded connection the client opens an ``error`` stream and a ``data``
  stream, both with headers ``port`` and ``requestID``. The pair's data stream carries the
  connection's bytes both ways; when the pod's port cannot be reached, the error stream gets
  the kubelet's message (:func:`failure`) and both streams end. A stream without a
  ``requestID`` (an old client) is paired by stream id, as the kubelet pairs them.
- **WebSocket**, subprotocol ``v4.channel.k8s.io`` or ``portforward.k8s.io``, with the ports
  in the query (``port=6006``, repeatable): one connection to each port for the socket's
  life. Port ``i`` has data channel ``2i`` and error channel ``2i+1``; the first message on
  each channel is the port as two bytes, little-endian; then every binary message is its
  channel byte followed by bytes. The socket closes when every connection to the pod ended.

Owns: pairing streams, dialling the pod's port, copying bytes, the error text. Must not: look
pods up or authenticate (:mod:`.server` does), nor frame SPDY (:mod:`.spdy` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
from collections.abc import Awaitable, Callable
from typing import Final

import aiohttp
from aiohttp import web

from kubetrain import _aio
from kubetrain.local.node import spdy

log = logging.getLogger(__name__)

PROTOCOL: Final = "portforward.k8s.io"  # the SPDY protocol (X-Stream-Protocol-Version)
WEBSOCKET_PROTOCOLS: Final = ("v4.channel.k8s.io", "portforward.k8s.io")
PORT_HEADER: Final = "port"
REQUEST_ID_HEADER: Final = "requestid"  # SPDY header names arrive in lower case
STREAM_CREATION_TIMEOUT: Final = 30.0  # the kubelet's: the second stream of a pair must come
READ_SIZE: Final = 32 * 1024

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Dial = Callable[[int], Awaitable[Connection]]


class Unreachable(Exception):
    """The pod's port could not be dialled; the message is the kubelet's."""


def parse_port(text: str) -> int:
    """A port header or query value: 1-65535 (the kubelet's ``strconv.ParseUint(.., 16)``
    and its check that the port is not 0). Raises ValueError with the kubelet's words."""
    try:
        port = int(text, 10)
    except ValueError:
        raise ValueError(f'unable to parse "{text}" as a port: invalid syntax') from None
    if not 0 < port <= 65535:
        raise ValueError(f'unable to parse "{text}" as a port: value out of range')
    return port


def _refused(family: str, host: str, port: int, exc: OSError) -> str:
    """Go's text for a failed dial (``dial tcp4 127.0.0.1:6006: connect: connection
    refused``), which is what the kubelet's message quotes."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return f"dial {family} {host}:{port}: connect: {reason.lower()}"


def failure(port: int, pod: str, reasons: str) -> str:
    """The kubelet's error-stream message for a port it could not reach (its runtime names
    the pod's sandbox; here that is the pod's uid)."""
    return (
        f"error forwarding port {port} to pod {pod}, uid : failed to connect to "
        f'localhost:{port} inside namespace "{pod}", {reasons} '
    )


def dialer(pod: str, *, timeout: float = STREAM_CREATION_TIMEOUT) -> Dial:
    """Dial ``localhost:<port>`` on the host network, IPv4 then IPv6; :class:`Unreachable`
    with the kubelet's message when neither answers. ``pod`` names the pod in it."""

    async def dial(port: int) -> Connection:
        failures = []
        for family, host, shown in (("tcp4", "127.0.0.1", "127.0.0.1"), ("tcp6", "::1", "[::1]")):
            try:
                async with _aio.timeout(timeout):
                    return await asyncio.open_connection(host, port)
            except OSError as exc:
                label = "IPv4:" if family == "tcp4" else "IPv6"  # sic: the kubelet's words
                failures.append(f"{label} {_refused(family, shown, port, exc)}")
            except _aio.TIMEOUT_ERRORS:
                label = "IPv4:" if family == "tcp4" else "IPv6"
                failures.append(f"{label} dial {family} {shown}:{port}: i/o timeout")
        raise Unreachable(failure(port, pod, " ".join(failures)))

    return dial


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


# -- SPDY ------------------------------------------------------------------------------------


def request_id(stream: spdy.Stream) -> str:
    """The stream's pair: its ``requestID``, or for an old client that sends none, its
    stream id (error) or its id less two (data), as the kubelet guesses."""
    given = stream.headers.get(REQUEST_ID_HEADER, "")
    if given:
        return given
    return str(stream.id if stream.kind == "error" else stream.id - 2)


async def serve_spdy(session: spdy.Session, dial: Dial) -> None:
    """Accept the client's streams until the connection ends, forwarding each complete pair;
    every forwarded connection ends with the session."""
    pending: dict[str, dict[str, spdy.Stream]] = {}
    forwards: set[asyncio.Task[None]] = set()
    try:
        while True:
            stream = await session.accept()
            if stream is None:
                return
            if stream.kind not in ("error", "data") or PORT_HEADER not in stream.headers:
                log.info(
                    "port-forward: refused a stream of type %r with headers %s",
                    stream.kind,
                    sorted(stream.headers),
                )
                session.reset(stream)
                continue
            session.reply(stream)
            key = request_id(stream)
            pair = pending.setdefault(key, {})
            if stream.kind in pair:
                session.reset(stream)
                continue
            pair[stream.kind] = stream
            if len(pair) == 2:
                del pending[key]
                task = asyncio.create_task(_forward_pair(session, pair, dial))
                forwards.add(task)
                task.add_done_callback(forwards.discard)
    finally:
        for task in list(forwards):
            task.cancel()
        await asyncio.gather(*forwards, return_exceptions=True)


async def _forward_pair(session: spdy.Session, pair: dict[str, spdy.Stream], dial: Dial) -> None:
    data, error = pair["data"], pair["error"]
    try:
        try:
            port = parse_port(data.headers.get(PORT_HEADER, ""))
            reader, writer = await dial(port)
        except (ValueError, Unreachable) as exc:
            await error.write(str(exc).encode())
            return
        try:
            await _copy_spdy(data, reader, writer)
        finally:
            await _close(writer)
    finally:
        await error.close()
        await data.close()


async def _copy_spdy(
    data: spdy.Stream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Both ways: the client's end half-closes the pod's connection; the pod's end (or a
    broken connection) ends the forward."""

    async def inward() -> None:
        while chunk := await data.read():
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.Event().wait()  # the pod's side decides when this connection ends

    async def outward() -> None:
        while chunk := await reader.read(READ_SIZE):
            await data.write(chunk)

    await _first_of(inward(), outward())


async def _first_of(*work: Awaitable[None]) -> None:
    """Run ``work`` until one ends (a connection error ends it too); cancel the rest."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    for result in results:
        if isinstance(result, (ConnectionError, OSError)):
            log.debug("port-forward connection ended: %s", result)


# -- WebSocket -------------------------------------------------------------------------------


def websocket_ports(query: object) -> list[int]:
    """The ``port`` values of a WebSocket request (``query`` is a multi-dict); ValueError
    with the kubelet's words when there is none or one is not a port."""
    values = query.getall(PORT_HEADER, [])  # type: ignore[attr-defined]
    if not values:
        raise ValueError('query parameter "port" is required')
    return [parse_port(v) for v in values]


async def serve_websocket(ws: web.WebSocketResponse, ports: list[int], dial: Dial) -> None:
    """One connection per port for the socket's life (channels ``2i``, ``2i+1``)."""
    for index, port in enumerate(ports):
        prefix = struct.pack("<H", port)
        await ws.send_bytes(bytes([2 * index]) + prefix)
        await ws.send_bytes(bytes([2 * index + 1]) + prefix)
    writers: dict[int, asyncio.StreamWriter] = {}
    pumps = []
    for index, port in enumerate(ports):
        try:
            reader, writer = await dial(port)
        except Unreachable as exc:
            await ws.send_bytes(bytes([2 * index + 1]) + str(exc).encode())
            continue
        writers[2 * index] = writer
        pumps.append(asyncio.ensure_future(_outward_ws(ws, reader, 2 * index)))
    inward = asyncio.ensure_future(_inward_ws(ws, writers))
    try:
        if pumps:  # until the client goes or every connection to the pod ended
            outward = asyncio.ensure_future(asyncio.wait(pumps))
            await asyncio.wait({inward, outward}, return_when=asyncio.FIRST_COMPLETED)
            outward.cancel()
    finally:
        inward.cancel()
        for task in pumps:
            task.cancel()
        await asyncio.gather(inward, *pumps, return_exceptions=True)
        for writer in writers.values():
            await _close(writer)
        await ws.close()


async def _outward_ws(
    ws: web.WebSocketResponse, reader: asyncio.StreamReader, channel: int
) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while chunk := await reader.read(READ_SIZE):
            await ws.send_bytes(bytes([channel]) + chunk)


async def _inward_ws(ws: web.WebSocketResponse, writers: dict[int, asyncio.StreamWriter]) -> None:
    async for message in ws:
        if message.type is not aiohttp.WSMsgType.BINARY or not message.data:
            continue
        writer = writers.get(message.data[0])
        if writer is None or writer.is_closing():
            continue
        try:
            writer.write(message.data[1:])
            await writer.drain()
        except (ConnectionError, OSError):
            continue
