"""The WebSocket channel protocol of ``exec`` (``v5.channel.k8s.io``, ``v4.channel.k8s.io``),
as the API server relays it between a client and a node, and as the node speaks it.

Every message is binary and starts with its channel: :data:`STDIN` 0, :data:`STDOUT` 1,
:data:`STDERR` 2, :data:`STATUS` 3, :data:`RESIZE` 4. In v5, ``[255, n]`` closes channel
``n``. When the command ends, the node sends one ``metav1.Status`` on channel 3
(:func:`exit_status`) and closes. The node contract as a whole is in
:mod:`kubetrain.local.apiserver.nodeproxy`'s docstring.

Owns: the channel numbers, the exit Status, and relaying messages between two sockets. Must
not: find pods or nodes, or dial anything (:mod:`.nodeproxy` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Final

import aiohttp
from aiohttp import web

from kubetrain.local import errors

log = logging.getLogger(__name__)

SUBPROTOCOLS: Final = ("v5.channel.k8s.io", "v4.channel.k8s.io")  # preferred first
STDIN, STDOUT, STDERR, STATUS, RESIZE = 0, 1, 2, 3, 4
CLOSE_CHANNEL: Final = 255  # v5: [255, n] closes channel n
NON_ZERO_EXIT_CODE: Final = "NonZeroExitCode"
EXIT_CODE_CAUSE: Final = "ExitCode"

Socket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse


def exit_status(code: int, message: str = "") -> dict[str, Any]:
    """The Status the node sends on channel 3 when the process exits with ``code`` (the
    kubelet's; client-go turns a non-zero one into kubectl's exit code)."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": message or f"command terminated with non-zero exit code: exit status {code}",
        "reason": NON_ZERO_EXIT_CODE,
        "details": {"causes": [{"reason": EXIT_CODE_CAUSE, "message": str(code)}]},
    }


def status_message(error: errors.ApiError) -> bytes:
    """A Status as one channel-3 message."""
    return bytes([STATUS]) + error.body()


async def finish(client: web.WebSocketResponse, error: errors.ApiError) -> None:
    """Report ``error`` on the status channel and close."""
    with contextlib.suppress(ConnectionError):
        await client.send_bytes(status_message(error))
    await client.close()


async def forward(source: Socket, sink: Socket) -> bool:
    """Copy messages until ``source`` closes; True when one of them was on the status
    channel."""
    saw_status = False
    try:
        async for message in source:
            if message.type is aiohttp.WSMsgType.BINARY:
                saw_status = saw_status or message.data[:1] == bytes([STATUS])
                await sink.send_bytes(message.data)
            elif message.type is aiohttp.WSMsgType.TEXT:
                await sink.send_str(message.data)
            elif message.type is aiohttp.WSMsgType.ERROR:
                log.debug("stream error: %s", source.exception())
                break
    except (ConnectionError, aiohttp.ClientError) as exc:
        log.debug("stream ended: %s", exc)
    return saw_status


async def relay(
    client: web.WebSocketResponse,
    node: aiohttp.ClientWebSocketResponse,
    node_name: str,
    *,
    needs_status: bool = True,
) -> None:
    """Relay both ways until one side ends. With ``needs_status`` (exec), a node that ends
    without an exit status (it died, or the connection broke) is reported to the client on
    the status channel: client-go reads an empty status channel as success."""
    to_node = asyncio.ensure_future(forward(client, node))
    to_client = asyncio.ensure_future(forward(node, client))
    try:
        done, _ = await asyncio.wait({to_node, to_client}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        to_node.cancel()
        to_client.cancel()
    await asyncio.wait({to_node, to_client})
    await node.close()
    if needs_status and to_client in done and not to_client.result() and not client.closed:
        error = errors.internal(
            f"the connection to node {node_name} ended before the command's exit status arrived"
        )
        await finish(client, error)
    await client.close()
