"""Watch fan-out: replay from a version, synthetic initial state, selector transitions, bookmarks,
timeouts, slow watchers, and 410 after compaction."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from kubetrain import _aio
from kubetrain.local.apiserver import store, watch

T = TypeVar("T")


def run(body: Callable[[store.Store, watch.Hub], Awaitable[T]], **kw: Any) -> T:
    async def main() -> T:
        async with store.opened(None, **kw) as db:
            return await body(db, watch.Hub(db))

    return asyncio.run(main(), debug=True)


def key(name: str, namespace: str = "ns") -> store.Key:
    return store.Key("configmaps", namespace, name)


def obj(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}}


async def drain(watcher: watch.Watcher, wait: float = 0.05) -> list[tuple[str, str]]:
    out = []
    while True:
        change = await watcher.next(wait)
        if change is None:
            return out
        assert isinstance(change, watch.Change)
        out.append((change.type, change.item.key.name))


def test_a_watch_from_a_version_replays_then_streams() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> list[tuple[str, str]]:
        start = db.resource_version
        await db.create(key("a"), obj("a"))
        watcher = hub.open("configmaps", "ns", since=start)
        await db.create(key("b"), obj("b"))
        await db.delete(key("a"), None)
        return await drain(watcher)

    assert run(body) == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]


def test_a_watch_without_a_version_starts_with_the_current_state() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> list[tuple[str, str]]:
        await db.create(key("a"), obj("a"))
        await db.create(key("b"), obj("b"))
        await db.delete(key("a"), None)
        watcher = hub.open("configmaps", None, since=None)
        await db.create(key("c"), obj("c"))
        return await drain(watcher)

    assert run(body) == [("ADDED", "b"), ("ADDED", "c")]


def test_a_watch_sees_only_its_resource_and_namespace() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> list[tuple[str, str]]:
        watcher = hub.open("configmaps", "ns", since=db.resource_version)
        await db.create(key("other-ns", "elsewhere"), obj("x"))
        await db.create(store.Key("secrets", "ns", "secret"), obj("s"))
        await db.create(key("mine"), obj("mine"))
        return await drain(watcher)

    assert run(body) == [("ADDED", "mine")]


def test_selector_transitions_become_added_and_deleted() -> None:
    def picked(o: Any) -> bool:
        return (o.get("metadata") or {}).get("labels", {}).get("pick") == "yes"

    async def body(db: store.Store, hub: watch.Hub) -> list[tuple[str, str]]:
        watcher = hub.open("configmaps", "ns", picked, since=db.resource_version)
        a = await db.create(key("a"), obj("a"))
        a = await db.update(key("a"), obj("a", {"pick": "yes"}), a.rv)
        a = await db.update(key("a"), obj("a", {"pick": "yes", "x": "1"}), a.rv)
        a = await db.update(key("a"), obj("a"), a.rv)
        await db.delete(key("a"), a.rv)
        return await drain(watcher)

    assert run(body) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_leaving_the_selection_shows_the_object_as_it_was_at_the_changes_version() -> None:
    """As kube's cacheWatcher: the last state the watcher was shown, still matching."""

    def picked(o: Any) -> bool:
        return (o.get("metadata") or {}).get("labels", {}).get("pick") == "yes"

    async def body(db: store.Store, hub: watch.Hub) -> tuple[store.Item, int]:
        a = await db.create(key("a"), obj("a", {"pick": "yes"}))
        watcher = hub.open("configmaps", "ns", picked, since=db.resource_version)
        a = await db.update(key("a"), obj("a", {"pick": "no"}), a.rv)
        change = await watcher.next(1.0)
        assert isinstance(change, watch.Change)
        assert change.type == "DELETED"
        return change.item, a.rv

    shown, changed_at = run(body)
    assert shown.obj["metadata"]["labels"] == {"pick": "yes"}
    assert shown.rv == changed_at
    assert shown.obj["metadata"]["resourceVersion"] == str(changed_at)


def test_a_compacted_version_is_too_old() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> None:
        for i in range(200):
            await db.create(key(f"o{i}"), obj(f"o{i}"))
        hub.open("configmaps", None, since=1)

    with pytest.raises(store.TooOld):
        run(body, window=20)


def test_many_watchers_each_get_every_event_as_it_is_written() -> None:
    # Each write is awaited by every watcher before the next is made: an event is handed to
    # all of them as it is committed, not held for a later write. (How fast is the
    # benchmark's question, bench/: a wall-clock bound here fails on a busy machine.)
    async def body(db: store.Store, hub: watch.Hub) -> list[list[str]]:
        watchers = [hub.open("configmaps", None, since=db.resource_version) for _ in range(20)]
        seen: list[list[str]] = [[] for _ in watchers]
        for i in range(100):
            await db.create(key(f"o{i}"), obj(f"o{i}"))
            for w, names in zip(watchers, seen, strict=True):
                change = await w.next(5)
                assert isinstance(change, watch.Change), f"o{i} did not reach a watcher"
                names.append(change.item.key.name)
        return seen

    seen = run(body)
    assert seen == [[f"o{i}" for i in range(100)]] * 20


def test_a_watcher_that_falls_too_far_behind_is_closed() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> tuple[bool, int]:
        hub.buffer = 5
        watcher = hub.open("configmaps", None, since=db.resource_version)
        for i in range(10):
            await db.create(key(f"o{i}"), obj(f"o{i}"))
        return watcher.overflowed, hub.count()

    overflowed, open_watchers = run(body)
    assert overflowed
    assert open_watchers == 0


def test_stream_sends_bookmarks_while_idle_and_one_at_the_end() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> list[str]:
        await db.create(key("a"), obj("a"))
        watcher = hub.open("configmaps", None, since=None)
        out = []
        async for change in watch.stream(
            watcher, timeout=0.35, bookmarks=True, bookmark_interval=0.1
        ):
            out.append("BOOKMARK" if isinstance(change, watch.Bookmark) else change.type)
        assert hub.count() == 0
        return out

    got = run(body)
    assert got[0] == "ADDED"
    assert got.count("BOOKMARK") >= 2
    assert got[-1] == "BOOKMARK"


def test_stream_without_bookmarks_ends_at_the_timeout() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> tuple[list[Any], float]:
        watcher = hub.open("configmaps", None, since=None)
        started = time.monotonic()
        out = [c async for c in watch.stream(watcher, timeout=0.2, bookmarks=False)]
        return out, time.monotonic() - started

    out, elapsed = run(body)
    assert out == []
    assert 0.15 < elapsed < 10  # not before the timeout; the bound only catches a hang


def test_the_initial_events_end_bookmark_follows_the_initial_state() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> list[Any]:
        await db.create(key("a"), obj("a"))
        watcher = hub.open("configmaps", None, since=None, initial_end_bookmark=True)
        first = await watcher.next(0.1)
        second = await watcher.next(0.1)
        return [first, second]

    first, second = run(body)
    assert isinstance(first, watch.Change)
    assert first.type == "ADDED"
    assert isinstance(second, watch.Bookmark)
    assert second.initial_end


async def _consume(watcher: watch.Watcher, delivering: asyncio.Event) -> str:
    """A server's watch handler whose client stopped reading: the first delivery starts
    (``delivering`` is set) and never completes."""
    never = asyncio.Event()
    try:
        async for _ in watch.stream(watcher, timeout=60, bookmarks=False):
            delivering.set()
            await never.wait()
    except asyncio.CancelledError:
        return "cancelled"
    return "ended"


def test_closing_the_hub_ends_idle_watches_and_cancels_stuck_deliveries() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> tuple[list[str], bool]:
        idle_delivering, stuck_delivering = asyncio.Event(), asyncio.Event()
        idle = asyncio.create_task(_consume(hub.open("secrets", None, since=None), idle_delivering))
        stuck = asyncio.create_task(
            _consume(hub.open("configmaps", None, since=None), stuck_delivering)
        )
        await db.create(key("a"), obj("a"))
        async with _aio.timeout(5):
            await stuck_delivering.wait()
        hub.close_all()
        async with _aio.timeout(5):  # at once, not after some grace: a busy machine's margin
            outcomes = await asyncio.gather(idle, stuck)
        return outcomes, idle_delivering.is_set()

    outcomes, idle_delivered = run(body)
    assert outcomes == ["ended", "cancelled"]
    assert not idle_delivered


def test_a_closed_hub_opens_only_watches_that_have_ended() -> None:
    async def body(db: store.Store, hub: watch.Hub) -> tuple[list[Any], int]:
        await db.create(key("a"), obj("a"))
        hub.close_all()
        watcher = hub.open("configmaps", None, since=None)
        out = [c async for c in watch.stream(watcher, timeout=60, bookmarks=True)]
        return out, hub.count()

    assert run(body) == ([], 0)
