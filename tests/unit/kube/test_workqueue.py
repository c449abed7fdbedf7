"""The work queue's promises (client-go's workqueue, controller-runtime's default rate limiter):
one entry per key however often it is added, never one key in two workers, delays that keep
the earlier time, and retry delays of max(5 ms doubling to 1000 s per key, a 10 qps bucket
with burst 100) — all on a clock moved by hand."""

from __future__ import annotations

import asyncio

import pytest

from kubetrain import _aio
from kubetrain.kube import workqueue
from kubetrain.operator.runtime import metrics
from tests.unit.operator.runtime.fakes import FakeClock, run, until


def queue(clock: FakeClock | None = None, **options: object) -> workqueue.WorkQueue[str]:
    return workqueue.WorkQueue("test", clock=clock or FakeClock(), **options)  # type: ignore[arg-type]


def drain(q: workqueue.WorkQueue[str]) -> list[str]:
    """Take every ready key, finishing each at once."""
    taken = []
    while (key := q.get_nowait()) is not None:
        taken.append(key)
        q.done(key)
    return taken


def test_a_key_added_many_times_before_it_is_taken_comes_out_once() -> None:
    q = queue()
    for key in ["a", "b", "a", "a", "c", "b"]:
        q.add(key)
    assert len(q) == 3
    assert drain(q) == ["a", "b", "c"]


def test_a_key_in_process_is_not_handed_out_again_until_done_and_then_once_more() -> None:
    q = queue()
    q.add("a")
    assert q.get_nowait() == "a"
    q.add("a")
    q.add("a")
    assert q.get_nowait() is None, "a second worker must not get a key in process"
    assert q.processing == {"a"}
    q.done("a")
    assert q.get_nowait() == "a"
    q.done("a")
    assert q.get_nowait() is None


def test_a_key_done_without_being_added_meanwhile_is_not_requeued() -> None:
    q = queue()
    q.add("a")
    q.get_nowait()
    q.done("a")
    assert len(q) == 0
    assert q.get_nowait() is None


def test_add_after_holds_a_key_back_until_its_time() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add_after("a", 2.0)
    assert q.get_nowait() is None
    assert q.waiting == 1
    clock.advance(1.999)
    assert q.get_nowait() is None
    clock.advance(0.001)
    assert q.get_nowait() == "a"


def test_a_key_waiting_twice_keeps_the_earlier_time() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add_after("a", 5.0)
    q.add_after("a", 1.0)
    q.add_after("a", 3.0)
    clock.advance(1.0)
    assert drain(q) == ["a"]
    clock.advance(10.0)
    assert drain(q) == [], "the superseded later times must not add the key again"


def test_a_zero_delay_adds_at_once() -> None:
    q = queue()
    q.add_after("a", 0)
    assert q.get_nowait() == "a"


def test_delayed_keys_come_out_in_the_order_they_become_ready() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add_after("late", 3.0)
    q.add_after("early", 1.0)
    q.add_after("middle", 2.0)
    clock.advance(5.0)
    assert drain(q) == ["early", "middle", "late"]


def test_failing_keys_back_off_5ms_doubling_per_key() -> None:
    q = queue()
    delays = [q.add_rate_limited("a") for _ in range(5)]
    assert delays == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08])
    assert q.num_requeues("a") == 5
    assert q.add_rate_limited("b") == pytest.approx(0.005), "back-off is per key"


def test_back_off_stops_at_1000_seconds() -> None:
    limiter: workqueue.ItemExponentialFailure[str] = workqueue.ItemExponentialFailure()
    delays = [limiter.when("a") for _ in range(100)]
    assert max(delays) == 1000.0
    assert delays[-1] == 1000.0
    assert delays[17] == pytest.approx(655.36)  # 0.005 * 2**17
    assert delays[18] == 1000.0  # 0.005 * 2**18 is past the maximum


def test_forget_starts_the_back_off_over() -> None:
    q = queue()
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    q.forget("a")
    assert q.num_requeues("a") == 0
    assert q.add_rate_limited("a") == pytest.approx(0.005)


def test_the_overall_bucket_allows_100_at_once_then_10_per_second() -> None:
    clock = FakeClock()
    q = queue(clock)
    delays = [q.add_rate_limited(f"k{i}") for i in range(102)]
    assert delays[:100] == pytest.approx([0.005] * 100), "the burst, each on its first failure"
    assert delays[100:] == pytest.approx([0.1, 0.2])
    clock.advance(1.0)  # ten tokens back, two of them owed already
    assert q.add_rate_limited("k200") == pytest.approx(0.005)


def test_a_rate_limited_key_comes_out_after_its_delay() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add_rate_limited("a")
    assert q.get_nowait() is None
    clock.advance(0.005)
    assert q.get_nowait() == "a"


def test_the_queue_counts_depth_adds_and_retries() -> None:
    m = metrics.Metrics()
    clock = FakeClock()
    q = queue(clock, metrics=m)
    q.add("a")
    q.add("a")
    q.add("b")
    assert m.queue_depth.labels("test").value == 2
    assert m.queue_adds.labels("test").value == 2, "a duplicate add is not an add"
    q.get_nowait()
    assert m.queue_depth.labels("test").value == 1
    q.add_rate_limited("a")
    assert m.queue_retries.labels("test").value == 1
    text = m.registry.exposition()
    assert 'workqueue_depth{name="test"} 1' in text
    assert 'workqueue_queue_duration_seconds_count{name="test"} 1' in text


def test_get_waits_for_an_added_key() -> None:
    async def scenario() -> None:
        q: workqueue.WorkQueue[str] = workqueue.WorkQueue("test")
        waiter = asyncio.ensure_future(q.get())
        await asyncio.sleep(0)
        assert not waiter.done()
        q.add("a")
        async with _aio.timeout(1.0):
            assert await waiter == "a"

    run(scenario)


def test_get_wakes_when_a_delayed_key_is_due() -> None:
    async def scenario() -> None:
        q: workqueue.WorkQueue[str] = workqueue.WorkQueue("test")
        loop = asyncio.get_running_loop()
        started = loop.time()
        q.add_after("a", 0.05)
        async with _aio.timeout(1.0):
            assert await q.get() == "a"
        assert loop.time() - started >= 0.045

    run(scenario)


def test_workers_never_hold_the_same_key_at_once() -> None:
    async def scenario() -> None:
        q: workqueue.WorkQueue[str] = workqueue.WorkQueue("test")
        busy: set[str] = set()
        overlaps: list[str] = []
        processed: list[str] = []

        async def worker() -> None:
            while True:
                key = await q.get()
                if key in busy:
                    overlaps.append(key)
                busy.add(key)
                await asyncio.sleep(0.001)
                busy.discard(key)
                processed.append(key)
                q.done(key)

        async def producer() -> None:
            for i in range(200):
                q.add(f"k{i % 3}")
                await asyncio.sleep(0)

        async with _aio.TaskGroup() as group:
            workers = [group.create_task(worker(), name=f"w{i}") for i in range(4)]
            await producer()
            await until(lambda: not len(q) and not q.processing)
            for w in workers:
                w.cancel()
        assert overlaps == []
        assert set(processed) == {"k0", "k1", "k2"}
        assert len(processed) < 200, "adds while queued are merged"

    run(scenario)
