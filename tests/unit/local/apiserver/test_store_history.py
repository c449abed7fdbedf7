"""The store's event log is bounded by count, bytes and age, so the memory a burst of writes
took comes back once it is over, while watches still resume across a restart."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kubetrain.local.apiserver import store
from tests.fixtures import waits

T = TypeVar("T")


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(body: Callable[[store.Store], Awaitable[T]], path: str | None = None, **kw: Any) -> T:
    async def main() -> T:
        async with store.opened(path, **kw) as db:
            return await body(db)

    return asyncio.run(main(), debug=True)


def key(name: str) -> store.Key:
    return store.Key("configmaps", "ns", name)


def obj(name: str, size: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"v": "x" * size}}


async def create(db: store.Store, count: int, size: int = 0, prefix: str = "o") -> None:
    for i in range(count):
        await db.create(key(f"{prefix}{i}"), obj(f"{prefix}{i}", size))


def logged_bytes(db: store.Store) -> int:
    return sum(len(e.item.raw) for e in db.events_since(db.oldest_resumable))


def test_the_log_holds_at_most_window_bytes_of_objects_and_resumes_within_them() -> None:
    async def body(db: store.Store) -> tuple[Any, ...]:
        await create(db, 200, size=1000)
        events, size = db.history
        with pytest.raises(store.TooOld):
            db.events_since(1)
        recent = db.events_since(db.resource_version - 5)
        return events, size, logged_bytes(db), len(recent)

    events, size, counted, recent = run(body, window_bytes=20_000)
    assert size <= 20_000
    assert size == counted  # the running total matches what the log holds
    assert 10 <= events < 200
    assert recent == 5


def test_events_older_than_the_window_age_go_on_the_next_write_except_the_newest_keep() -> None:
    clock = Clock()

    async def body(db: store.Store) -> tuple[Any, ...]:
        await create(db, store.KEEP * 3)
        before = db.history[0]
        clock.now += 10.0  # still fresh
        await create(db, 1, prefix="fresh")
        fresh = db.history[0]
        clock.now += 100.0  # everything so far is older than the age
        await create(db, 1, prefix="late")
        return before, fresh, db.history[0], db.oldest_resumable, db.resource_version

    before, fresh, after, oldest, current = run(body, window_age=60.0, clock=clock)
    assert before == fresh - 1 == store.KEEP * 3
    assert after == store.KEEP
    assert oldest == current - store.KEEP


def test_history_expires_while_no_writes_come(monkeypatch: pytest.MonkeyPatch) -> None:
    # The store's clock is the test's: nothing ages while the burst is written, however slow
    # the machine; the idle writer's own wake-up (EXPIRY_TICK, shortened) is what drops it.
    monkeypatch.setattr(store, "EXPIRY_TICK", 0.02)
    clock = Clock()

    async def body(db: store.Store) -> tuple[int, int]:
        await create(db, store.KEEP + 50, size=500)
        full = db.history[0]
        clock.now += 1.0  # past the window's age; no write comes after this
        await waits.until(lambda: db.history[0] <= store.KEEP, timeout=10)
        return full, db.history[1]

    full, size = run(body, window_age=0.05, clock=clock)
    assert full == store.KEEP + 50, "no event expired before its age ran out"
    assert 0 < size <= store.KEEP * 600


def test_a_watch_resumes_across_a_restart_even_after_memory_dropped_the_events(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "state.db")
    clock = Clock()

    async def first(db: store.Store) -> tuple[int, int]:
        start = db.resource_version
        await create(db, store.KEEP + 20)
        clock.now += 1000.0
        await create(db, 1, prefix="late")
        with pytest.raises(store.TooOld):
            db.events_since(start)  # memory let the old events go
        return start, db.resource_version

    async def second(db: store.Store) -> int:
        clock.now += 1000.0  # what was loaded counts as fresh from the load on
        return len(db.events_since(start))

    start, current = run(first, path, window_age=60.0, clock=clock)
    assert run(second, path, window_age=60.0, clock=clock) == current - start


def test_the_database_keeps_the_newest_window_events_whatever_memory_holds(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "state.db")

    async def body(db: store.Store) -> None:
        await create(db, 400)

    run(body, path, window=50, window_age=0.0)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    assert 50 <= rows <= 50 + 100  # the window, plus the slack compaction is batched by


def test_the_log_keeps_replaced_versions_encoded_only_and_still_serves_them() -> None:
    async def body(db: store.Store) -> None:
        start = db.resource_version
        first = await db.create(key("a"), obj("a"))
        second = await db.update(key("a"), {"metadata": {"name": "a"}, "data": {"v": "2"}}, None)
        await db.create(key("b"), obj("b"))
        await db.delete(key("b"), None)
        logged = db.events_since(start)
        assert [(e.type, e.item.rv) for e in logged] == [
            ("ADDED", first.rv),
            ("MODIFIED", second.rv),
            ("ADDED", second.rv + 1),
            ("DELETED", second.rv + 2),
        ]
        # what is current stays decoded, and is the very object the index serves
        assert logged[1].item is db.get(key("a"))
        # what was replaced or deleted is kept as its encoding alone ...
        replaced, deleted = logged[1].prev, logged[3].prev
        assert replaced is not None
        assert deleted is not None
        assert [i.decoded for i in (logged[0].item, replaced, logged[2].item)] == [None] * 3
        assert [i.decoded for i in (logged[3].item, deleted)] == [None] * 2
        # ... and reads back as it was written
        assert logged[0].item.obj["data"] == {"v": ""}
        assert replaced.obj == logged[0].item.obj
        assert logged[3].item.obj["metadata"]["resourceVersion"] == str(second.rv + 2)
        assert [i.obj["data"] for i in db.snapshot("configmaps", "ns", first.rv)] == [{"v": ""}]

    run(body)


def test_versions_written_in_one_commit_are_archived_as_the_next_replaces_them() -> None:
    async def body(db: store.Store) -> None:
        start = db.resource_version
        await db.create(key("a"), obj("a"))
        # one batch: both writes wait for the same commit
        await asyncio.gather(
            db.update(key("a"), {"metadata": {"name": "a"}, "data": {"v": "1"}}, None),
            db.update(key("a"), {"metadata": {"name": "a"}, "data": {"v": "2"}}, None),
        )
        logged = db.events_since(start)
        assert [e.item.obj["data"]["v"] for e in logged] == ["", "1", "2"]
        assert [e.item.decoded is None for e in logged] == [True, True, False]
        assert [e.prev.obj["data"]["v"] for e in logged[1:] if e.prev] == ["", "1"]

    run(body)


def test_a_resource_kept_encoded_is_decoded_on_each_read_and_whole_for_watchers(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "state.db")
    events = store.Key("events", "ns", "e")
    seen: list[store.Event] = []

    async def body(db: store.Store) -> None:
        db.subscribe(seen.extend)
        await db.create(events, obj("e"))
        await db.create(key("c"), obj("c"))
        await db.update(events, {"metadata": {"name": "e"}, "data": {"count": "2"}}, None)
        current = db.get(events)
        assert current is not None
        assert current.decoded is None
        assert current.obj["data"] == {"count": "2"}
        assert current.obj is not current.obj  # a fresh copy each time: nothing shared
        other = db.get(key("c"))
        assert other is not None
        assert other.decoded is not None  # other resources stay decoded
        # the listeners (the watch hub) get every version decoded, as written
        assert [e.item.decoded is not None for e in seen] == [True, True, True]

    async def reopened(db: store.Store) -> None:
        current = db.get(events)
        assert current is not None
        assert current.decoded is None
        assert current.obj["data"] == {"count": "2"}

    run(body, path, encoded=["events"])
    run(reopened, path, encoded=["events"])
