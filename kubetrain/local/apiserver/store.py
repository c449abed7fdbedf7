"""Storage for the local API server: the only module that touches SQLite.

What it owns:

- **One resourceVersion sequence** for every object of every resource, an integer that only
  grows, also across restarts (kept in the ``meta`` table, written in the same transaction as
  the objects it numbers).
- **Objects**, keyed by :class:`Key` (resource such as ``pods`` or ``pytorchjobs.kubeflow.org``,
  namespace or ``""``, name), each stored as the JSON the registry handed over.
- **The event log** (ADDED / MODIFIED / DELETED, in resourceVersion order) for watch resume and
  for consistent ``continue`` pages; asking for history older than it holds raises
  :class:`TooOld`, which the API answers with 410 (clients list again). What it keeps is
  bounded three ways, as kube-apiserver bounds its watch cache (a capacity, and events
  fresher than 75 s kept; etcd's history is compacted every 5 minutes):

  - **count**: the newest ``window`` events (10,000);
  - **bytes**: the newest events whose encoded objects add up to at most ``window_bytes``
    (16 MiB; a version the log alone holds is kept encoded, see :class:`Item`);
  - **age**: an event older than ``window_age`` seconds (75, kube's eventFreshDuration:
    a bookmark interval of 60 s plus 15) goes, except the newest :data:`KEEP`, also while
    no writes come. So once a burst of writes is over, the memory its history took is given
    back within ``window_age`` seconds; a watcher that was away longer, and was sent no
    bookmark meanwhile, relists.

  The database keeps the newest ``window`` events (on disk they cost no memory); after a
  restart they count as fresh, so watches resume across it.
- **Compare-and-swap** on resourceVersion: a write names the version it read, and loses with
  :class:`Conflict` if another write came first.
- **A size limit per object**, etcd's: a write whose encoded object is larger than
  ``max_object`` bytes (default 1.5 MiB, etcd's ``--max-request-bytes``) fails with
  :class:`TooLarge` and changes nothing, so what the store holds is what a cluster could hold.

Durability: SQLite in WAL mode with ``synchronous=FULL``, so a commit has reached the disk
(the WAL is fsynced) before any caller is told its write succeeded; that holds against kill -9
and against power loss. Writes are *group-committed*: every write waiting when the writer
becomes free goes into one transaction, each write inside it all-or-nothing, so a burst of
concurrent writes costs one fsync. Nothing is visible to readers or watchers before its
transaction has committed.

Reads come from an in-memory copy of the objects, kept in step with the database by the single
writer task, so the event loop never waits for SQLite on a read; SQLite runs on one dedicated
thread (house rule 11). ``path=None`` keeps the database in memory: the same code, no files,
for fast tests.

What it must not do: know about Kubernetes semantics (names, generation, finalizers, status);
those belong to the registry. Stored objects are shared and must never be mutated: callers copy
before they change anything.
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kubetrain import _aio

ADDED: Literal["ADDED"] = "ADDED"
MODIFIED: Literal["MODIFIED"] = "MODIFIED"
DELETED: Literal["DELETED"] = "DELETED"
EventType = Literal["ADDED", "MODIFIED", "DELETED"]

log = logging.getLogger(__name__)

DEFAULT_WINDOW = 10_000  # events kept for watch resume and consistent continue pages
DEFAULT_WINDOW_BYTES = 16 * 1024 * 1024  # ... and at most this many bytes of encoded objects
DEFAULT_WINDOW_AGE = 75.0  # seconds an event is kept (beyond the newest KEEP)
KEEP = 100  # events kept whatever their age (kube's watch cache lowerBoundCapacity)
EXPIRY_TICK = 1.0  # seconds: expired events are dropped at most this often while idle
MAX_OBJECT = 1536 * 1024  # bytes: etcd's default --max-request-bytes, 1.5 MiB


class StoreError(Exception):
    """Base of the storage errors; the registry turns each into a kube Status."""


class NotFound(StoreError):
    """The key holds no object."""


class AlreadyExists(StoreError):
    """A create found an object under the key."""


class Conflict(StoreError):
    """A compare-and-swap lost: the object is no longer at the version the writer read."""


class TooOld(StoreError):
    """Asked for history that compaction already dropped (kube: 410 Gone / Expired)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class Unavailable(StoreError):
    """The database refused the write (disk full, I/O error); nothing was changed."""


class TooLarge(StoreError):
    """The object, encoded, is larger than the store holds; nothing was changed."""

    def __init__(self, key: Key, size: int, limit: int) -> None:
        super().__init__(f"{key.resource} {key.name!r} is {size} bytes; limit is {limit}")
        self.key = key
        self.size = size
        self.limit = limit


@dataclass(frozen=True, slots=True, order=True)
class Key:
    """Where an object lives: resource (``pods``, ``jobs.batch``), namespace (``""`` if
    cluster-scoped) and name. Orders the way kube lists: by namespace, then name."""

    resource: str
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Item:
    """One stored version of an object: ``raw`` is its JSON encoding, ready to be sent, and
    ``obj`` the decoded object, shared, never to be mutated.

    A version that only the event log still holds (one replaced or deleted since), and
    every version of a resource the store keeps encoded (``Store(encoded=...)``), keeps
    ``raw`` alone (:meth:`archived`), and ``obj`` decodes it on each use: a decoded object
    takes about 3.5 times its encoding in small Python objects, and a burst of writes
    leaves thousands of versions, whose memory Python's allocator keeps after they are let
    go (docs/reliability.md). Only a watch that resumes from an older version and a
    ``continue`` page read the log's; the other reads of an encoded resource decode."""

    key: Key
    rv: int
    decoded: dict[str, Any] | None
    raw: bytes

    @property
    def obj(self) -> dict[str, Any]:
        decoded = self.decoded
        return decoded if decoded is not None else json.loads(self.raw)

    def archived(self) -> Item:
        """This version as the event log keeps it once it is no longer current."""
        return self if self.decoded is None else Item(self.key, self.rv, None, self.raw)


@dataclass(frozen=True, slots=True)
class Event:
    """One committed change. For DELETED, ``item`` is the last state with the deletion's
    resourceVersion, as kube sends it. ``prev`` is the version before the change when it is
    known (always, except for events reloaded from disk after a restart)."""

    type: EventType
    item: Item
    prev: Item | None

    @property
    def rv(self) -> int:
        return self.item.rv

    @property
    def key(self) -> Key:
        return self.item.key


Listener = Callable[[Sequence[Event]], None]


def encode(obj: dict[str, Any]) -> bytes:
    """The one JSON encoding of stored objects: compact, UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _with_rv(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    """``obj`` (which the store now owns) with metadata.resourceVersion set to ``rv``."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    meta["resourceVersion"] = str(rv)
    return obj


def retagged(item: Item, rv: int) -> Item:
    """A copy of ``item`` carrying another resourceVersion (a deletion's, or that of the
    change that took an object out of a watch's selection)."""
    obj = dict(item.obj)
    obj["metadata"] = {**item.obj.get("metadata", {}), "resourceVersion": str(rv)}
    return Item(item.key, rv, obj, encode(obj))


@dataclass(slots=True)
class _Write:
    op: Literal["create", "update", "delete"]
    key: Key
    obj: dict[str, Any] | None
    expect_rv: int | None
    future: asyncio.Future[Event]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL,
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL
);
"""


class _Database:
    """The SQLite connection. Every method runs on the store's one database thread."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("PRAGMA foreign_keys=OFF")
        self.conn.executescript(_SCHEMA)

    def load(self, window: int) -> tuple[int, int, list[tuple], list[tuple]]:
        meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        objects = self.conn.execute(
            "SELECT resource, namespace, name, rv, data FROM objects"
        ).fetchall()
        events = self.conn.execute(
            "SELECT rv, type, resource, namespace, name, data FROM events ORDER BY rv DESC LIMIT ?",
            (window,),
        ).fetchall()
        events.reverse()
        return meta.get("rv", 0), meta.get("compacted", 0), objects, events

    def commit(
        self,
        upserts: list[tuple[str, str, str, int, bytes]],
        deletes: list[tuple[str, str, str]],
        events: list[tuple[int, str, str, str, str, bytes]],
        rv: int,
        compacted: int | None,
    ) -> None:
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            if deletes:
                cur.executemany(
                    "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", deletes
                )
            if upserts:
                cur.executemany("INSERT OR REPLACE INTO objects VALUES (?,?,?,?,?)", upserts)
            if events:
                cur.executemany("INSERT INTO events VALUES (?,?,?,?,?,?)", events)
            cur.execute("INSERT OR REPLACE INTO meta VALUES ('rv', ?)", (rv,))
            if compacted is not None:
                cur.execute("DELETE FROM events WHERE rv <= ?", (compacted,))
                cur.execute("INSERT OR REPLACE INTO meta VALUES ('compacted', ?)", (compacted,))
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()


class Store:
    """Objects, the resourceVersion sequence and the event log. Use :func:`opened`.

    Reads (:meth:`get`, :meth:`list`, :meth:`events_since`, :meth:`snapshot`) are synchronous
    and answer from memory; writes (:meth:`create`, :meth:`update`, :meth:`delete`) are
    coroutines that return once their transaction has committed.
    """

    def __init__(
        self,
        path: str | None,
        *,
        window: int = DEFAULT_WINDOW,
        window_bytes: int = DEFAULT_WINDOW_BYTES,
        window_age: float = DEFAULT_WINDOW_AGE,
        max_object: int = MAX_OBJECT,
        clock: Callable[[], float] = time.monotonic,
        encoded: Collection[str] = (),
    ) -> None:
        self.path = path
        # resources whose objects memory keeps encoded only: many, and seldom read
        self.encoded = frozenset(encoded)
        self.window = max(1, window)
        self.window_bytes = max(0, window_bytes)
        self.window_age = max(0.0, window_age)
        self.max_object = max_object
        self._clock = clock
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="store-db")
        self._db: _Database | None = None
        self._rv = 0
        self._compacted = 0  # events with rv <= this are gone (from memory)
        self._db_compacted = 0  # ... and from the database
        self._exact_floor = 0  # snapshots older than this lack the versions to rebuild them
        self._index: dict[str, dict[str, dict[str, Item]]] = {}
        self._log: list[Event] = []
        self._log_rvs: list[int] = []
        self._log_at: list[float] = []  # when each event joined the log (the clock's seconds)
        self._log_bytes = 0  # encoded size of the log's objects
        self._pending: list[_Write] = []
        self._wakeup = asyncio.Event()
        self._closing = False
        self._listeners: list[Listener] = []

    # -- lifecycle -------------------------------------------------------------------------

    async def _load(self) -> None:
        def open_and_load() -> tuple[_Database, tuple[int, int, list[tuple], list[tuple]]]:
            db = _Database(self.path or ":memory:")
            return db, db.load(self.window)

        loop = asyncio.get_running_loop()
        self._db, (rv, compacted, objects, events) = await loop.run_in_executor(
            self._executor, open_and_load
        )
        for resource, namespace, name, item_rv, data in objects:
            key = Key(resource, namespace, name)
            decoded = None if resource in self.encoded else json.loads(data)
            self._put(Item(key, item_rv, decoded, bytes(data)))
        loaded = []
        for ev_rv, ev_type, resource, namespace, name, data in events:
            item = Item(Key(resource, namespace, name), ev_rv, None, bytes(data))
            loaded.append(Event(ev_type, item, None))
        self._append(loaded, self._clock())  # fresh: watches resume across a restart
        self._rv = rv
        self._compacted = max(compacted, self._log_rvs[0] - 1 if self._log_rvs else rv)
        self._db_compacted = compacted
        self._exact_floor = rv
        self._expire()

    async def _writer(self) -> None:
        """The one task that orders writes, assigns versions and commits."""
        while True:
            delay = self._next_expiry()
            if delay is None:
                await self._wakeup.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    async with _aio.timeout(delay):
                        await self._wakeup.wait()
            self._wakeup.clear()
            self._expire()  # also while idle: a burst's history is given back
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await self._commit(batch)
                except Exception as exc:  # a bug: fail this batch, keep serving the next
                    log.exception("store: commit failed")
                    for write in batch:
                        if not write.future.done():
                            write.future.set_exception(Unavailable(f"storage failure: {exc}"))
            if self._closing:
                return

    async def _shutdown(self) -> None:
        self._closing = True
        self._wakeup.set()

    async def _close_db(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._executor, db.close)
        self._executor.shutdown(wait=True)

    # -- reads -----------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The newest committed resourceVersion."""
        return self._rv

    @property
    def oldest_resumable(self) -> int:
        """The oldest resourceVersion a watch can resume from (events after it are kept)."""
        return self._compacted

    @property
    def history(self) -> tuple[int, int]:
        """The event log's size: events, and bytes of their encoded objects."""
        return len(self._log), self._log_bytes

    def get(self, key: Key) -> Item | None:
        by_ns = self._index.get(key.resource)
        if by_ns is None:
            return None
        names = by_ns.get(key.namespace)
        return None if names is None else names.get(key.name)

    def list(self, resource: str, namespace: str | None = None) -> list[Item]:
        """Every object of ``resource`` (in ``namespace`` if given), in key order."""
        by_ns = self._index.get(resource)
        if not by_ns:
            return []
        if namespace is not None:
            names = by_ns.get(namespace)
            return [names[n] for n in sorted(names)] if names else []
        out: list[Item] = []
        for ns in sorted(by_ns):
            names = by_ns[ns]
            out.extend(names[n] for n in sorted(names))
        return out

    def resources(self) -> list[str]:
        """Every resource key that holds at least one object."""
        return [r for r, by_ns in self._index.items() if by_ns]

    def count(self, resource: str) -> int:
        return sum(len(names) for names in self._index.get(resource, {}).values())

    def events_since(self, rv: int) -> list[Event]:
        """Every event after ``rv``, oldest first; :class:`TooOld` if compacted away."""
        if rv < self._compacted:
            raise TooOld(rv, self._compacted + 1)
        start = bisect.bisect_right(self._log_rvs, rv)
        return self._log[start:]

    def snapshot(self, resource: str, namespace: str | None, rv: int) -> list[Item]:
        """The objects of ``resource`` as they were at ``rv``, in key order.

        Built from the current state by undoing newer events; :class:`TooOld` when the log
        no longer reaches back that far (compaction, or a restart since).
        """
        floor = max(self._compacted, self._exact_floor)
        if rv < floor:
            raise TooOld(rv, floor + 1)
        now = self.list(resource, namespace)
        start = bisect.bisect_right(self._log_rvs, rv)
        newer = [
            event
            for event in self._log[start:]
            if event.key.resource == resource
            and (namespace is None or event.key.namespace == namespace)
        ]
        if not newer:
            # Nothing of it changed since: it is as it is now. The common case, a paged list
            # read while nobody writes to it, so each page costs a sort of the names, not a
            # copy of every object into a map and a sort of their keys.
            return now
        current = {item.key: item for item in now}
        for event in reversed(newer):
            if event.prev is None:
                current.pop(event.key, None)
            else:
                current[event.key] = event.prev
        # One resource's keys, ordered by (namespace, name) as tuples: comparing the keys
        # themselves goes through the dataclass's generated methods, several times slower.
        return [current[k] for k in sorted(current, key=lambda k: (k.namespace, k.name))]

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` with each committed batch of events, in order, on the loop."""
        self._listeners.append(listener)

    # -- writes ----------------------------------------------------------------------------

    async def create(self, key: Key, obj: dict[str, Any]) -> Item:
        """Store a new object; :class:`AlreadyExists` if the key is taken.

        The store takes ownership of ``obj`` and sets its metadata.resourceVersion.
        """
        return (await self._submit("create", key, obj, None)).item

    async def update(self, key: Key, obj: dict[str, Any], expect_rv: int | None) -> Item:
        """Replace an object if it is still at ``expect_rv`` (None: whatever version)."""
        return (await self._submit("update", key, obj, expect_rv)).item

    async def delete(self, key: Key, expect_rv: int | None) -> Item:
        """Remove an object if it is still at ``expect_rv``; returns its last state, carrying
        the deletion's resourceVersion."""
        return (await self._submit("delete", key, None, expect_rv)).item

    async def compact(self, upto: int | None = None) -> None:
        """Drop the event history up to ``upto`` (default: all of it)."""
        target = self._rv if upto is None else min(upto, self._rv)
        if target > self._db_compacted:
            loop = asyncio.get_running_loop()
            assert self._db is not None
            await loop.run_in_executor(
                self._executor, self._db.commit, [], [], [], self._rv, target
            )
            self._db_compacted = target
        self._trim_log(target)

    async def _submit(
        self, op: Literal["create", "update", "delete"], key: Key, obj: Any, expect: int | None
    ) -> Event:
        if self._closing:
            raise Unavailable("the store is shutting down")
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._pending.append(_Write(op, key, obj, expect, future))
        self._wakeup.set()
        return await future

    async def _commit(self, batch: list[_Write]) -> None:
        staged: dict[Key, Item | None] = {}
        events: list[Event] = []
        done: list[tuple[_Write, Event]] = []
        rv = self._rv
        for write in batch:
            if write.future.done():  # the caller gave up before anything happened
                continue
            current = staged[write.key] if write.key in staged else self.get(write.key)
            problem = _check(write, current)
            if problem is not None:
                write.future.set_exception(problem)
                continue
            rv += 1
            if write.op == "delete":
                assert current is not None
                event = Event(DELETED, retagged(current, rv), current)
                staged[write.key] = None
            else:
                obj = _with_rv(write.obj or {}, rv)
                try:
                    raw = encode(obj)
                except (TypeError, ValueError) as exc:  # not JSON: refuse this write only
                    rv -= 1
                    write.future.set_exception(Unavailable(f"object cannot be stored: {exc}"))
                    continue
                if len(raw) > self.max_object:  # etcd's limit: refuse this write only
                    rv -= 1
                    write.future.set_exception(TooLarge(write.key, len(raw), self.max_object))
                    continue
                item = Item(write.key, rv, obj, raw)
                event = Event(ADDED if current is None else MODIFIED, item, current)
                staged[write.key] = item
            events.append(event)
            done.append((write, event))
        if not events:
            return
        compacted = None  # the database keeps ``window`` events (versions are dense)
        if rv - self._db_compacted > self.window + max(100, self.window // 10):
            compacted = rv - self.window
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._executor, self._persist, staged, events, rv, compacted
            )
        except Exception as exc:  # the database refused: nothing changed, tell every writer
            for write, _ in done:
                if not write.future.done():
                    write.future.set_exception(Unavailable(f"storage write failed: {exc}"))
            return
        self._rv = rv
        for key, item in staged.items():
            if item is None:
                self._remove(key)
            else:
                self._put(item)
        self._append(events, self._clock())
        if compacted is not None:
            self._db_compacted = compacted
            self._trim_log(compacted)
        self._expire()
        for listener in self._listeners:
            listener(events)
        for write, event in done:
            if not write.future.done():
                write.future.set_result(event)

    def _persist(
        self,
        staged: dict[Key, Item | None],
        events: list[Event],
        rv: int,
        compacted: int | None,
    ) -> None:
        assert self._db is not None
        upserts = []
        deletes = []
        for key, item in staged.items():
            if item is None:
                deletes.append((key.resource, key.namespace, key.name))
            else:
                upserts.append((key.resource, key.namespace, key.name, item.rv, item.raw))
        rows = [
            (e.rv, e.type, e.key.resource, e.key.namespace, e.key.name, e.item.raw) for e in events
        ]
        self._db.commit(upserts, deletes, rows, rv, compacted)

    # -- memory ----------------------------------------------------------------------------

    def _put(self, item: Item) -> None:
        key = item.key
        if key.resource in self.encoded:
            item = item.archived()
        self._index.setdefault(key.resource, {}).setdefault(key.namespace, {})[key.name] = item

    def _remove(self, key: Key) -> None:
        by_ns = self._index.get(key.resource)
        if by_ns is None:
            return
        names = by_ns.get(key.namespace)
        if names is None:
            return
        names.pop(key.name, None)
        if not names:
            del by_ns[key.namespace]

    def _append(self, events: Sequence[Event], at: float) -> None:
        """Log ``events``, keeping every version they replace or delete archived (see
        :class:`Item`); the listeners were handed the events as they are."""
        for event in events:
            archive = event.type == DELETED or event.key.resource in self.encoded
            if event.prev is not None or archive:
                prev = None if event.prev is None else self._archive(event.prev)
                item = event.item.archived() if archive else event.item
                event = Event(event.type, item, prev)
            self._log.append(event)
            self._log_rvs.append(event.rv)
            self._log_at.append(at)
            self._log_bytes += len(event.item.raw)

    def _archive(self, replaced: Item) -> Item:
        """``replaced`` archived, also in the log's event that wrote it, if still there."""
        archived = replaced.archived()
        at = bisect.bisect_left(self._log_rvs, replaced.rv)
        if at < len(self._log_rvs) and self._log_rvs[at] == replaced.rv:
            logged = self._log[at]
            if logged.item.decoded is not None:
                self._log[at] = Event(logged.type, archived, logged.prev)
        return archived

    def _trim_log(self, upto: int) -> None:
        cut = bisect.bisect_right(self._log_rvs, upto)
        self._log_bytes -= sum(len(e.item.raw) for e in self._log[:cut])
        del self._log[:cut]
        del self._log_rvs[:cut]
        del self._log_at[:cut]
        self._compacted = max(self._compacted, upto)

    def _expire(self) -> None:
        """Drop the oldest events beyond the log's count, bytes or age (module docstring).

        Memory only: the database drops events by count, in the commit that adds them."""
        log, size, count = self._log, self._log_bytes, len(self._log)
        cut = max(0, count - self.window)
        size -= sum(len(e.item.raw) for e in log[:cut])
        while cut < count and size > self.window_bytes:
            size -= len(log[cut].item.raw)
            cut += 1
        horizon = self._clock() - self.window_age
        while cut < count - KEEP and self._log_at[cut] <= horizon:
            cut += 1
        if cut:
            self._trim_log(self._log_rvs[cut - 1])

    def _next_expiry(self) -> float | None:
        """Seconds until the oldest event's age runs out; None if age drops nothing more."""
        if len(self._log) <= KEEP:
            return None
        left = self._log_at[0] + self.window_age - self._clock()
        return max(EXPIRY_TICK, left)


def _check(write: _Write, current: Item | None) -> StoreError | None:
    if write.op == "create":
        return AlreadyExists(write.key) if current is not None else None
    if current is None:
        return NotFound(write.key)
    if write.expect_rv is not None and write.expect_rv != current.rv:
        return Conflict(write.key)
    return None


@contextlib.asynccontextmanager
async def opened(
    path: str | None,
    *,
    window: int = DEFAULT_WINDOW,
    window_bytes: int = DEFAULT_WINDOW_BYTES,
    window_age: float = DEFAULT_WINDOW_AGE,
    max_object: int = MAX_OBJECT,
    clock: Callable[[], float] = time.monotonic,
    encoded: Collection[str] = (),
) -> AsyncIterator[Store]:
    """Open (or create) the store at ``path`` (None: in memory) with its writer running.

    On exit the writer finishes every write already submitted, then the database closes.
    """
    store = Store(
        path,
        window=window,
        window_bytes=window_bytes,
        window_age=window_age,
        max_object=max_object,
        clock=clock,
        encoded=encoded,
    )
    try:
        await store._load()
        writer = asyncio.create_task(store._writer(), name="store-writer")
        try:
            yield store
        finally:
            await store._shutdown()
            try:
                async with _aio.timeout(30):
                    await asyncio.shield(writer)
            finally:
                if not writer.done():
                    writer.cancel()
    finally:
        await store._close_db()
