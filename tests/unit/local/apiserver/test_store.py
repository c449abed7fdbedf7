"""The store: one resourceVersion sequence, compare-and-swap, the event log and its compaction,
consistent snapshots, and durability across reopening (SQLite) — in memory and on disk."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kubetrain.local.apiserver import store

T = TypeVar("T")


def run(body: Callable[[store.Store], Awaitable[T]], path: str | None = None, **kw: Any) -> T:
    async def main() -> T:
        async with store.opened(path, **kw) as db:
            return await body(db)

    return asyncio.run(main(), debug=True)


def key(name: str, namespace: str = "ns", resource: str = "configmaps") -> store.Key:
    return store.Key(resource, namespace, name)


def obj(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


@pytest.fixture(params=["memory", "sqlite"])
def path(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    return None if request.param == "memory" else str(tmp_path / "state.db")


def test_create_assigns_increasing_resource_versions(path: str | None) -> None:
    async def body(db: store.Store) -> list[int]:
        a = await db.create(key("a"), obj("a"))
        b = await db.create(key("b", resource="secrets"), obj("b"))
        return [a.rv, b.rv, int(a.obj["metadata"]["resourceVersion"]), db.resource_version]

    a, b, a_meta, current = run(body, path)
    assert 0 < a < b == current
    assert a_meta == a


def test_get_and_list_see_committed_objects_in_key_order(path: str | None) -> None:
    async def body(db: store.Store) -> tuple[Any, ...]:
        for name, ns in (("b", "x"), ("a", "y"), ("a", "x")):
            await db.create(key(name, ns), obj(name))
        return (
            [(i.key.namespace, i.key.name) for i in db.list("configmaps")],
            [i.key.name for i in db.list("configmaps", "x")],
            db.get(key("a", "y")) is not None,
            db.get(key("zzz")),
            db.list("pods"),
        )

    everything, in_x, found, missing, pods = run(body, path)
    assert everything == [("x", "a"), ("x", "b"), ("y", "a")]
    assert in_x == ["a", "b"]
    assert found
    assert missing is None
    assert pods == []


def test_creating_an_existing_key_fails(path: str | None) -> None:
    async def body(db: store.Store) -> None:
        await db.create(key("a"), obj("a"))
        await db.create(key("a"), obj("a"))

    with pytest.raises(store.AlreadyExists):
        run(body, path)


def test_update_is_a_compare_and_swap_on_the_resource_version(path: str | None) -> None:
    async def body(db: store.Store) -> tuple[int, str]:
        first = await db.create(key("a"), obj("a", v="1"))
        second = await db.update(key("a"), obj("a", v="2"), first.rv)
        try:
            await db.update(key("a"), obj("a", v="stale"), first.rv)
        except store.Conflict:
            pass
        else:
            raise AssertionError("a stale update won")
        current = db.get(key("a"))
        assert current is not None
        return second.rv, current.obj["data"]["v"]

    rv, value = run(body, path)
    assert value == "2"
    assert rv > 0


def test_an_unconditional_update_and_a_delete(path: str | None) -> None:
    async def body(db: store.Store) -> tuple[Any, ...]:
        await db.create(key("a"), obj("a"))
        updated = await db.update(key("a"), obj("a", v="x"), None)
        gone = await db.delete(key("a"), updated.rv)
        return gone.rv > updated.rv, gone.obj["data"], db.get(key("a"))

    later, data, after = run(body, path)
    assert later
    assert data == {"v": "x"}
    assert after is None


def test_writes_to_missing_keys_fail(path: str | None) -> None:
    async def update(db: store.Store) -> None:
        await db.update(key("nope"), obj("nope"), None)

    async def delete(db: store.Store) -> None:
        await db.delete(key("nope"), None)

    with pytest.raises(store.NotFound):
        run(update, path)
    with pytest.raises(store.NotFound):
        run(delete, path)


def test_concurrent_conditional_updates_let_exactly_one_win(path: str | None) -> None:
    async def body(db: store.Store) -> list[str]:
        created = await db.create(key("a"), obj("a"))
        results = await asyncio.gather(
            *(db.update(key("a"), obj("a", w=str(i)), created.rv) for i in range(10)),
            return_exceptions=True,
        )
        return [type(r).__name__ for r in results]

    outcomes = run(body, path)
    assert outcomes.count("Item") == 1
    assert outcomes.count("Conflict") == 9


def test_concurrent_writes_are_all_committed_with_distinct_versions(path: str | None) -> None:
    async def body(db: store.Store) -> tuple[list[int], int]:
        items = await asyncio.gather(*(db.create(key(f"o{i}"), obj(f"o{i}")) for i in range(200)))
        return sorted(i.rv for i in items), len(db.list("configmaps"))

    versions, count = run(body, path)
    assert count == 200
    assert len(set(versions)) == 200


def test_the_event_log_replays_every_change_after_a_version(path: str | None) -> None:
    async def body(db: store.Store) -> list[tuple[str, str]]:
        start = db.resource_version
        a = await db.create(key("a"), obj("a"))
        await db.update(key("a"), obj("a", v="2"), a.rv)
        await db.create(key("b"), obj("b"))
        await db.delete(key("a"), None)
        return [(e.type, e.key.name) for e in db.events_since(start)]

    assert run(body, path) == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]


def test_events_after_the_window_are_compacted_and_too_old(path: str | None) -> None:
    async def body(db: store.Store) -> tuple[int, int]:
        for i in range(300):
            await db.create(key(f"o{i}"), obj(f"o{i}"))
        with pytest.raises(store.TooOld) as info:
            db.events_since(1)
        recent = db.events_since(db.resource_version - 10)
        return info.value.oldest, len(recent)

    oldest, recent = run(body, path, window=50)
    assert oldest > 1
    assert recent == 10


def test_compact_drops_all_history(path: str | None) -> None:
    async def body(db: store.Store) -> int:
        await db.create(key("a"), obj("a"))
        await db.compact()
        with pytest.raises(store.TooOld):
            db.events_since(0)
        assert db.events_since(db.resource_version) == []
        return db.oldest_resumable

    assert run(body, path) > 0


def test_snapshot_shows_the_objects_as_they_were_at_a_version(path: str | None) -> None:
    async def body(db: store.Store) -> tuple[list[tuple[str, str]], list[str]]:
        a = await db.create(key("a"), obj("a", v="old"))
        await db.create(key("b"), obj("b"))
        at = db.resource_version
        await db.update(key("a"), obj("a", v="new"), a.rv)
        await db.delete(key("b"), None)
        await db.create(key("c"), obj("c"))
        then = db.snapshot("configmaps", "ns", at)
        now = db.list("configmaps", "ns")
        return [(i.key.name, i.obj["data"].get("v", "")) for i in then], [i.key.name for i in now]

    then, now = run(body, path)
    assert then == [("a", "old"), ("b", "")]
    assert now == ["a", "c"]


def test_listeners_get_each_committed_batch_in_order(path: str | None) -> None:
    async def body(db: store.Store) -> list[int]:
        seen: list[int] = []
        db.subscribe(lambda events: seen.extend(e.rv for e in events))
        await asyncio.gather(*(db.create(key(f"o{i}"), obj(f"o{i}")) for i in range(20)))
        await db.delete(key("o0"), None)
        return seen

    seen = run(body, path)
    assert len(seen) == 21
    assert seen == sorted(seen)


def test_everything_survives_reopening_and_versions_keep_increasing(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")

    async def first(db: store.Store) -> int:
        a = await db.create(key("a"), obj("a", v="1"))
        await db.update(key("a"), obj("a", v="2"), a.rv)
        await db.create(key("b"), obj("b"))
        await db.delete(key("b"), None)
        return db.resource_version

    async def second(db: store.Store) -> tuple[Any, ...]:
        item = db.get(key("a"))
        replay = [(e.type, e.key.name) for e in db.events_since(0)]
        new = await db.create(key("c"), obj("c"))
        return (
            item.obj["data"] if item else None,
            db.get(key("b")),
            replay,
            new.rv,
            db.resource_version,
        )

    last = run(first, path)
    data, b, replay, new_rv, current = run(second, path)
    assert data == {"v": "2"}
    assert b is None
    assert replay == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "b")]
    assert new_rv == last + 1 == current


def test_a_snapshot_older_than_a_restart_is_too_old(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")

    async def first(db: store.Store) -> int:
        await db.create(key("a"), obj("a"))
        return db.resource_version

    async def second(db: store.Store) -> None:
        db.snapshot("configmaps", "ns", at - 1)

    at = run(first, path)
    with pytest.raises(store.TooOld):
        run(second, path)


def test_the_database_is_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    path = str(tmp_path / "state.db")

    async def body(db: store.Store) -> None:
        await db.create(key("a"), obj("a"))

    run(body, path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM objects").fetchone()[0] == 1
    finally:
        conn.close()


def test_an_object_that_is_not_json_is_refused_and_the_store_goes_on(path: str | None) -> None:
    async def body(db: store.Store) -> int:
        with pytest.raises(store.Unavailable):
            await db.create(key("bad"), {"metadata": {}, "x": {1, 2}})
        await db.create(key("good"), obj("good"))
        return len(db.list("configmaps"))

    assert run(body, path) == 1
