"""Watch fan-out: every committed event, to every watcher it concerns, in order.

A :class:`Hub` listens to the store and hands each event to the watchers of its resource,
synchronously, on the event loop, as the commit completes; a watcher only queues it, so one
slow client never delays the others. Opening a watch is atomic with respect to commits (no
``await`` between reading the history or the current state and registering), so no event
falls between the replay and the live stream.

Semantics follow kube-apiserver's watch cache:

- ``since=None``: synthetic ADDED events for the current state (kube: ``resourceVersion``
  unset or ``"0"``), then live events.
- ``since=N``: every event after N from the event log, then live events; :class:`store.TooOld`
  when N was compacted (the server answers with an ERROR event carrying a 410 Status).
- With a selector, an object that stops matching arrives as DELETED and one that starts
  matching as ADDED, as kube's cacheWatcher does; the DELETED carries the object as it was
  before the change (still matching), with the change's resourceVersion.
- Bookmarks (``allowWatchBookmarks``) carry only a resourceVersion; :func:`stream` sends one
  periodically while the watcher is idle, and one before a watch ends at ``timeoutSeconds``.

At shutdown :meth:`Hub.close_all` ends every watch and refuses new ones. A watch whose
consumer (the task iterating :func:`stream`) is waiting for events ends at once; one whose
consumer is busy delivering (its client reads slower than events come, or not at all) may never
come back for more, so that consumer is cancelled: no client can hold the server open.

What it must not do: encode responses or know about HTTP; :mod:`server` does that.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kubetrain import _aio
from kubetrain.local.apiserver import store

Predicate = Callable[[Mapping[str, Any]], bool]

DEFAULT_BUFFER = 50_000  # events a watcher may fall behind before it is closed


@dataclass(frozen=True, slots=True)
class Change:
    """An event as one watcher sees it (its type may differ from the stored event's)."""

    type: Literal["ADDED", "MODIFIED", "DELETED"]
    item: store.Item


@dataclass(frozen=True, slots=True)
class Bookmark:
    """Everything up to ``rv`` has been delivered; ``initial_end`` marks the end of the
    initial events of a ``sendInitialEvents`` watch."""

    rv: int
    initial_end: bool = False


class Watcher:
    """One open watch: a buffer the hub fills and the server drains."""

    def __init__(
        self,
        hub: Hub,
        resource: str,
        namespace: str | None,
        predicate: Predicate | None,
        buffer: int,
    ) -> None:
        self.hub = hub
        self.resource = resource
        self.namespace = namespace
        self.predicate = predicate
        self.buffer = buffer
        self.overflowed = False
        self.closed = False
        self.consumer: asyncio.Task[Any] | None = None  # the task in stream(), once it runs
        self._waiting = False  # the consumer awaits next(), not something of its own
        self._queue: collections.deque[Change | Bookmark] = collections.deque()
        self._ready = asyncio.Event()

    def offer(self, event: store.Event) -> None:
        """Queue ``event`` if this watcher sees it (called by the hub, never awaits)."""
        key = event.key
        if self.namespace is not None and key.namespace != self.namespace:
            return
        change = self._translate(event)
        if change is None:
            return
        self.push(change)

    def push(self, change: Change | Bookmark) -> None:
        if self.closed:
            return
        if len(self._queue) >= self.buffer:
            self.overflowed = True
            self.close()
            return
        self._queue.append(change)
        self._ready.set()

    def _translate(self, event: store.Event) -> Change | None:
        if self.predicate is None:
            return Change(event.type, event.item)
        now = self.predicate(event.item.obj)
        if event.type == store.ADDED:
            return Change(store.ADDED, event.item) if now else None
        if event.type == store.DELETED:
            return Change(store.DELETED, event.item) if now else None
        before = True if event.prev is None else self.predicate(event.prev.obj)
        if now and before:
            return Change(store.MODIFIED, event.item)
        if now:
            return Change(store.ADDED, event.item)
        if before:  # as kube's cacheWatcher: the object as it was, at the change's version
            gone = event.item if event.prev is None else store.retagged(event.prev, event.rv)
            return Change(store.DELETED, gone)
        return None

    async def next(self, timeout: float | None) -> Change | Bookmark | None:
        """The next change; None after ``timeout`` seconds idle or once the watch is closed."""
        while not self._queue:
            if self.closed:
                return None
            self._ready.clear()
            self._waiting = True
            try:
                async with _aio.timeout(timeout):
                    await self._ready.wait()
            except TimeoutError:
                return None
            finally:
                self._waiting = False
        return self._queue.popleft()

    def pending(self) -> int:
        return len(self._queue)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.hub.remove(self)
            self._ready.set()

    def abandon(self) -> None:
        """Close, and cancel the consumer if it is busy elsewhere than in :meth:`next` (it
        is delivering to a client that does not keep up, and may never return)."""
        self.close()
        consumer = self.consumer
        busy = consumer is not None and not self._waiting and not consumer.done()
        if busy and consumer is not asyncio.current_task():
            consumer.cancel()


class Hub:
    """Fans the store's committed events out to the open watchers."""

    def __init__(self, db: store.Store, *, buffer: int = DEFAULT_BUFFER) -> None:
        self.store = db
        self.buffer = buffer
        self.closed = False
        self._watchers: dict[str, set[Watcher]] = {}
        db.subscribe(self._on_commit)

    def _on_commit(self, events: Any) -> None:
        for event in events:
            watchers = self._watchers.get(event.key.resource)
            if watchers:
                for watcher in tuple(watchers):
                    watcher.offer(event)

    def count(self) -> int:
        return sum(len(w) for w in self._watchers.values())

    def open(
        self,
        resource: str,
        namespace: str | None,
        predicate: Predicate | None = None,
        *,
        since: int | None,
        initial_end_bookmark: bool = False,
    ) -> Watcher:
        """Register a watch and queue what it must see first (see the module docstring).

        Raises :class:`store.TooOld` if ``since`` has been compacted. Once the hub is closed
        the watcher comes back closed and empty: the watch ends at once.
        """
        watcher = Watcher(self, resource, namespace, predicate, self.buffer)
        if self.closed:
            watcher.closed = True
            return watcher
        if since is None:
            backlog: list[Change | Bookmark] = [
                Change(store.ADDED, item)
                for item in self.store.list(resource, namespace)
                if predicate is None or predicate(item.obj)
            ]
            if initial_end_bookmark:
                backlog.append(Bookmark(self.store.resource_version, initial_end=True))
            watcher.buffer = max(self.buffer, len(backlog) + self.buffer)
            for change in backlog:
                watcher.push(change)
        else:
            history = self.store.events_since(since)
            watcher.buffer = max(self.buffer, len(history) + self.buffer)
            for event in history:
                if event.key.resource == resource:
                    watcher.offer(event)
            if initial_end_bookmark:
                watcher.push(Bookmark(self.store.resource_version, initial_end=True))
        self._watchers.setdefault(resource, set()).add(watcher)
        return watcher

    def close_all(self) -> None:
        """End every open watch and refuse new ones (the server is shutting down); see the
        module docstring for consumers that are busy delivering."""
        self.closed = True
        for watchers in list(self._watchers.values()):
            for watcher in list(watchers):
                watcher.abandon()

    def remove(self, watcher: Watcher) -> None:
        watchers = self._watchers.get(watcher.resource)
        if watchers is not None:
            watchers.discard(watcher)
            if not watchers:
                del self._watchers[watcher.resource]


async def stream(
    watcher: Watcher,
    *,
    timeout: float,
    bookmarks: bool,
    bookmark_interval: float = 60.0,
    tick: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[Change | Bookmark | None]:
    """The watch as the client sees it: changes, bookmarks while idle, a bookmark at the end
    (when bookmarks are allowed) once ``timeout`` seconds have passed. With ``tick``, ``None``
    comes every ``tick`` idle seconds, so the caller can check its connection. Closes the
    watcher. The task iterating is the watcher's consumer (see :meth:`Hub.close_all`)."""
    watcher.consumer = asyncio.current_task()
    deadline = clock() + timeout
    next_bookmark = clock() + bookmark_interval
    try:
        while True:
            now = clock()
            if now >= deadline:
                break
            wait = deadline - now
            if bookmarks:
                wait = min(wait, max(0.0, next_bookmark - now))
            if tick is not None:
                wait = min(wait, tick)
            change = await watcher.next(wait)
            if change is None:
                if watcher.closed:
                    return
                if bookmarks and clock() >= next_bookmark and clock() < deadline:
                    next_bookmark = clock() + bookmark_interval
                    yield Bookmark(watcher.hub.store.resource_version)
                elif tick is not None:
                    yield None
                continue
            yield change
        if bookmarks and watcher.pending() == 0:
            yield Bookmark(watcher.hub.store.resource_version)
    finally:
        watcher.close()
