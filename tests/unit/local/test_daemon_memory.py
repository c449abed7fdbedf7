"""The daemon gives freed memory back once a burst of writes is over: not during the burst,
not before the store has let the burst's history go, and not again until another burst."""

from __future__ import annotations

import asyncio
import os

from kubetrain.local import daemon
from kubetrain.local.apiserver import store


def key(name: str) -> store.Key:
    return store.Key("configmaps", "ns", name)


async def burst(db: store.Store, count: int, prefix: str) -> None:
    for i in range(count):
        await db.create(key(f"{prefix}{i}"), {"metadata": {"name": f"{prefix}{i}"}})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def settled(db: store.Store, clock: Clock) -> None:
    """Time passes beyond the window age; the next write lets the old history go."""
    clock.now += 3600.0
    await burst(db, 1, f"later{clock.now}-")


def test_memory_is_given_back_once_per_burst_after_its_history_is_gone() -> None:
    trims: list[int] = []
    clock = Clock()

    async def main() -> list[tuple[str, bool]]:
        async with store.opened(None, window_age=60.0, clock=clock) as db:
            memory = daemon.MemoryRelease(db, lambda: trims.append(1), after=150)
            seen = [("at rest", memory.due())]
            await burst(db, 120, "a")
            seen.append(("after fewer writes than after=", memory.due()))
            await burst(db, 80, "b")
            seen.append(("while the burst's history is held", memory.due()))
            await settled(db, clock)
            seen.append(("once the history is gone", memory.due()))
            memory.release()
            seen.append(("right after a release", memory.due()))
            await burst(db, 200, "c")
            await settled(db, clock)
            seen.append(("after the next burst", memory.due()))
            return seen

    seen = asyncio.run(main(), debug=True)
    assert seen == [
        ("at rest", False),
        ("after fewer writes than after=", False),
        ("while the burst's history is held", False),
        ("once the history is gone", True),
        ("right after a release", False),
        ("after the next burst", True),
    ]
    assert trims == [1]


def test_glibc_trim_is_found_on_glibc_and_runs() -> None:
    trim = daemon.glibc_trim()
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # not a name this platform knows
        libc = ""
    if libc.startswith("glibc"):
        assert trim is not None
        trim()  # returns whether memory was released; either is fine
    else:
        assert trim is None
