"""A watch that keeps going: list, then watch from the list's resourceVersion, for as long as
the caller iterates, surviving server timeouts, silent stalls, lost connections and
compaction.

What it does (reference: python-operator-stack.md §3):

1. Without a starting ``resource_version``, LIST (in pages) and yield one ``SYNC`` event whose
   object is the whole list; the caller replaces what it knew with those items.
2. WATCH from the last resourceVersion seen, with ``allowWatchBookmarks=true`` and a server
   ``timeoutSeconds`` (jittered, so many watches do not reconnect together).
3. Every ADDED, MODIFIED, DELETED and BOOKMARK advances the resourceVersion; bookmarks are not
   yielded. A stream that ends normally is re-opened from that version at once.
4. 410 Gone (an HTTP answer, or an ERROR event with code 410): log, LIST again and yield a new
   ``SYNC``, so the caller can diff and notice what was deleted meanwhile.
5. A watchdog for half-dead connections, which can stall forever: a connection the server
   has not ended ``grace`` seconds after the ``timeoutSeconds`` it was asked for is
   abandoned and the watch re-opened from the last version. A quiet watch is normal: a real
   kube-apiserver may send nothing at all, bookmarks included, on a connection that sees no
   change, until it ends it at ``timeoutSeconds``. So silence is never taken for a fault
   before the server had to end the connection, and its reconnect is no warning. (An
   ``inactivity`` bound, when set, also re-opens a watch silent that long, quietly.)
6. Connection failures, 5xx and 429 back off exponentially with jitter, then resume; other
   errors (401, 403, 404 — e.g. the resource type was removed) end the iteration by raising.

Owns: that loop and the resourceVersion it has reached. Must not: cache objects, diff lists
(callers do, from ``SYNC``), or swallow cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, Protocol

from kubetrain import _aio
from kubetrain.kube import errors
from kubetrain.kube.resource import Resource

log = logging.getLogger(__name__)

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"
SYNC: Final = "SYNC"  # synthetic: the object is a whole List, from a (re-)list
BOOKMARK: Final = "BOOKMARK"
ERROR: Final = "ERROR"

RETRYABLE: Final = (errors.Unavailable, errors.ServerError, errors.TooManyRequests)


class Source(Protocol):
    """What a watch needs of a client (:class:`kubetrain.kube.Client` is one): a list of
    every page, and a streaming GET. A protocol, so that this module needs no client and the
    client can hand out watches without a cycle."""

    async def list_all(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = ...,
    ) -> dict[str, Any]: ...

    def stream(
        self, path: str, *, query: Mapping[str, Any] | None = None
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]: ...


class Event(NamedTuple):
    """``(type, object)``: ADDED / MODIFIED / DELETED with the object, or SYNC with a List."""

    type: str
    object: dict[str, Any]


@dataclass(frozen=True)
class Settings:
    """Timing of a watch; the defaults suit a controller, tests shrink them."""

    timeout_seconds: int = 300  # asked of the server per connection, jittered down by 20%
    # Watchdog: seconds past the connection's timeoutSeconds without its end before the
    # connection is taken for half-dead. Covers the request's way to the server and the
    # server's timer running late on a busy machine.
    grace: float = 30.0
    # Seconds without a line before reconnecting, on top of the watchdog; None: none. Only
    # for a server known to send bookmarks often: a real kube-apiserver does not.
    inactivity: float | None = None
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    jitter: float = 0.2  # fraction by which timeouts and delays are randomly shortened
    page_size: int = 500  # items per LIST page


class Watch:
    """Iterate (``async for event in client.watch(resource): ...``) to receive events.

    ``resource_version`` is where the watch has got to; pass it to a new Watch to resume
    without a list. ``restarts`` counts reconnects and ``relists`` the lists made because
    the server no longer had the version reached (410 Gone), a resumed watch's first included,
    for metrics and tests. Close an abandoned iteration with ``contextlib.aclosing``.
    """

    def __init__(
        self,
        client: Source,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        settings: Settings | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resource_version = resource_version
        self.settings = settings or Settings()
        self.restarts = 0
        self.relists = 0
        self._sleep = sleep
        self._rng = rng or random.Random()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    @property
    def _what(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.resource.group_resource}{where}"

    async def _events(self) -> AsyncIterator[Event]:
        failures = 0
        while True:
            try:
                if self.resource_version is None:
                    yield Event(SYNC, await self._list())
                async with contextlib.aclosing(self._stream()) as stream:
                    async for event in stream:
                        failures = 0
                        yield event
                failures = 0
            except errors.Gone as exc:
                log.info("watch %s: %s; listing again", self._what, exc.message)
                self.resource_version = None
                self.relists += 1
            except RETRYABLE as exc:
                delay = self._delay(failures, exc)
                failures += 1
                log.warning("watch %s: %s; retrying in %.1fs", self._what, exc, delay)
                await self._sleep(delay)
            self.restarts += 1

    async def _list(self) -> dict[str, Any]:
        listed = await self.client.list_all(
            self.resource,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.settings.page_size,
        )
        version = (listed.get("metadata") or {}).get("resourceVersion")
        self.resource_version = str(version) if version else None
        if self.resource_version is None:
            raise errors.ServerError(f"list of {self._what} has no resourceVersion")
        return listed

    async def _stream(self) -> AsyncIterator[Event]:
        settings = self.settings
        seconds = max(
            1, round(settings.timeout_seconds * (1 - settings.jitter * self._rng.random()))
        )
        query = {
            "watch": "true",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": seconds,
            "labelSelector": self.label_selector,
            "fieldSelector": self.field_selector,
        }
        loop = asyncio.get_running_loop()
        # The server ends the connection ``seconds`` after it received the request; the
        # watchdog allows it ``grace`` more before giving the connection up as half-dead.
        deadline = loop.time() + seconds + settings.grace
        async with self.client.stream(self.resource.path(self.namespace), query=query) as lines:
            while True:
                wait = deadline - loop.time()
                if settings.inactivity is not None:
                    wait = min(wait, settings.inactivity)
                try:
                    async with _aio.timeout(max(0.0, wait)):
                        line = await anext(lines, None)
                except TimeoutError:
                    self._abandon(seconds, deadline - loop.time())
                    return
                if line is None:
                    log.debug("watch %s: stream ended at %s", self._what, self.resource_version)
                    return
                event = _decode(line, self._what)
                if event.type == ERROR:
                    raise errors.from_status(event.object)
                version = (event.object.get("metadata") or {}).get("resourceVersion")
                if version:
                    self.resource_version = str(version)
                if event.type == BOOKMARK:
                    continue
                yield event

    def _abandon(self, seconds: int, left: float) -> None:
        """Log why the watchdog gives a connection up: never a warning, since the watch goes
        on from where it was and nothing is lost (should the new connection fail, that
        failure is warned of)."""
        if left <= 0:
            log.info(
                "watch %s: the server did not end the connection %.0fs after the %ds asked "
                "for; taking it for dead and reconnecting from %s",
                self._what,
                self.settings.grace,
                seconds,
                self.resource_version,
            )
        else:
            log.debug(
                "watch %s: nothing received for %.0fs; reconnecting from %s",
                self._what,
                self.settings.inactivity,
                self.resource_version,
            )

    def _delay(self, failures: int, exc: errors.ApiError) -> float:
        settings = self.settings
        delay = min(settings.backoff_max, settings.backoff_initial * 2**failures)
        delay *= 1 - settings.jitter * self._rng.random()
        asked = exc.retry_after
        return max(delay, asked) if asked is not None else delay


def _decode(line: bytes, what: str) -> Event:
    try:
        doc = json.loads(line)
    except ValueError as exc:
        raise errors.Unavailable(f"watch {what}: undecodable event") from exc
    kind = doc.get("type") if isinstance(doc, dict) else None
    obj = doc.get("object") if isinstance(doc, dict) else None
    if not isinstance(kind, str) or not isinstance(obj, dict):
        raise errors.Unavailable(f"watch {what}: malformed event")
    return Event(kind, obj)
