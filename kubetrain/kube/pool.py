"""The client's connection pool: aiohttp's, handing out the most recently used idle
connection first.

aiohttp reuses the *oldest* idle connection first since 3.11 (aio-libs/aiohttp#9672). Then
any steady trickle of requests keeps every pooled connection in use: the operator renews its
leader lease every 2 s, so each of the connections a burst of reconciles opened is used again
before it has been idle for ``keepalive_timeout`` (15 s), and none is ever closed. A client's
pool stays at the largest size any burst needed, and a long-running daemon holds descriptors
(both ends, when the API server is in the same process) that nothing uses
(``bench/soak.py``). Handed out newest first, as Go's transport under client-go hands them
out, the connections beyond what the steady load needs sit idle and close.

Owns: the order in which idle connections are reused. Must not: change aiohttp's limits,
timeouts or its checks of a connection before reuse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp

if TYPE_CHECKING:
    from aiohttp.client_reqrep import ConnectionKey
    from aiohttp.connector import Connection


class NewestFirstConnector(aiohttp.TCPConnector):
    """A TCPConnector that reuses the idle connection released last.

    aiohttp keeps each host's idle connections in release order and takes the oldest
    (``popleft``); turning the newest to the front first makes that take the newest, and
    leaves the rest in release order, oldest first, for its keep-alive cleanup."""

    async def _get(self, key: ConnectionKey, traces: list[Any]) -> Connection | None:
        idle = self._conns.get(key)
        if idle:
            idle.rotate(1)
        return await super()._get(key, traces)
