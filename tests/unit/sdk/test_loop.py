"""The private event loop of an SDK client: results, errors, streams handed over item by
item, timeouts, no waiting on itself, closing (kubetrain.sdk._loop)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from kubetrain.sdk import SdkError
from kubetrain.sdk._loop import Loop


@pytest.fixture
def loop() -> Iterator[Loop]:
    made = Loop("test-loop")
    try:
        yield made
    finally:
        made.close()


def test_a_coroutine_runs_on_the_loops_thread_and_returns(loop: Loop) -> None:
    async def where() -> str:
        await asyncio.sleep(0)
        return threading.current_thread().name

    assert loop.run(where()) == "test-loop"


def test_an_error_comes_back_as_it_was_raised(loop: Loop) -> None:
    async def fail() -> None:
        raise KeyError("k")

    with pytest.raises(KeyError, match="k"):
        loop.run(fail())


def test_stream_items_are_handed_over_as_they_are_produced(loop: Loop) -> None:
    gate = threading.Event()
    produced: list[int] = []

    async def numbers() -> AsyncIterator[int]:
        for i in range(3):
            produced.append(i)
            yield i
            await asyncio.to_thread(gate.wait, 5)

    items = loop.iterate(numbers())
    assert next(items) == 0
    assert produced == [0]  # the next item is not made before it is asked for
    gate.set()
    assert list(items) == [1, 2]


def test_leaving_a_stream_early_closes_it_on_the_loop(loop: Loop) -> None:
    closed = threading.Event()

    async def endless() -> AsyncIterator[int]:
        try:
            while True:
                yield 1
                await asyncio.sleep(0)
        finally:
            closed.set()

    for _ in loop.iterate(endless()):
        break
    assert closed.wait(5)


def test_a_timeout_cancels_the_work(loop: Loop) -> None:
    cancelled = threading.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        loop.run(slow(), timeout=0.05)
    assert cancelled.wait(5)


def test_a_call_from_the_loops_own_thread_raises_instead_of_deadlocking(loop: Loop) -> None:
    async def reenter() -> None:
        async def inner() -> None:
            pass

        loop.run(inner())

    with pytest.raises(SdkError, match="from its own event loop"):
        loop.run(reenter())


def test_a_closed_loop_runs_its_last_coroutine_then_refuses_work() -> None:
    made = Loop("closing")
    ran = threading.Event()

    async def last() -> None:
        ran.set()

    made.close(last())
    assert ran.is_set()
    assert made.closed

    async def later() -> None:
        pass

    with pytest.raises(SdkError, match="closed"):
        made.run(later())
