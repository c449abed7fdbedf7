"""The worker loop (controller-runtime's internal/controller): what each outcome of a
reconcile does to the key, what is logged and counted, and the context a reconcile runs in.
No server: reconcilers here are scripted."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kubetrain import _aio, kube
from kubetrain.kube import workqueue
from kubetrain.operator.runtime import controller, logcontext, metrics
from kubetrain.operator.runtime.controller import Key, Result
from tests.unit.operator.runtime.fakes import FakeClock, run, until

KEY = Key("ns", "job")


class Scripted:
    """Runs ``step`` per reconcile; records keys and the log context each saw."""

    def __init__(self, step: Callable[[Key], Awaitable[Result]]) -> None:
        self.step = step
        self.keys: list[Key] = []
        self.contexts: list[dict[str, str]] = []

    async def reconcile(self, key: Key) -> Result:
        self.keys.append(key)
        self.contexts.append(dict(logcontext.current()))
        return await self.step(key)


def returning(result: Result) -> Callable[[Key], Awaitable[Result]]:
    async def step(key: Key) -> Result:
        return result

    return step


def raising(exc: Exception) -> Callable[[Key], Awaitable[Result]]:
    async def step(key: Key) -> Result:
        raise exc

    return step


def setup(
    step: Callable[[Key], Awaitable[Result]], *, timeout: float | None = 5.0
) -> tuple[controller.Controller, workqueue.WorkQueue[Key], FakeClock, metrics.Metrics]:
    clock = FakeClock()
    m = metrics.Metrics()
    c = controller.Controller(
        "test", Scripted(step), reconcile_timeout=timeout, metrics=m, clock=clock
    )
    q: workqueue.WorkQueue[Key] = workqueue.WorkQueue("test", clock=clock, metrics=m)
    return c, q, clock, m


async def once(c: controller.Controller, q: workqueue.WorkQueue[Key]) -> str:
    q.add(KEY)
    key = q.get_nowait()
    assert key == KEY
    try:
        return await c.process(q, key)
    finally:
        q.done(key)


def count(m: metrics.Metrics, result: str) -> float:
    return m.reconcile_total.labels("test", result).value


def test_success_forgets_the_key() -> None:
    async def scenario() -> None:
        c, q, clock, m = setup(returning(Result()))
        q.add_rate_limited(KEY)  # an earlier failure
        clock.advance(1.0)
        assert await once(c, q) == "success"
        assert q.num_requeues(KEY) == 0
        assert q.waiting == 0
        assert len(q) == 0
        assert count(m, "success") == 1

    run(scenario)


def test_requeue_after_brings_the_key_back_then() -> None:
    async def scenario() -> None:
        c, q, clock, m = setup(returning(Result(requeue_after=30.0)))
        assert await once(c, q) == "requeue_after"
        assert q.get_nowait() is None
        clock.advance(30.0)
        assert q.get_nowait() == KEY
        assert count(m, "requeue_after") == 1

    run(scenario)


def test_an_exception_is_retried_with_growing_delays_and_one_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=controller.__name__)

    async def scenario() -> None:
        c, q, clock, m = setup(raising(RuntimeError("broken")))
        assert await once(c, q) == "error"
        assert q.get_nowait() is None
        clock.advance(0.005)
        key = q.get_nowait()
        assert key == KEY
        await c.process(q, key)
        q.done(key)
        assert q.num_requeues(KEY) == 2
        clock.advance(0.009)
        assert q.get_nowait() is None, "the second retry waits 10 ms"
        clock.advance(0.001)
        assert q.get_nowait() == KEY
        assert count(m, "error") == 2
        assert m.reconcile_errors.labels("test").value == 2

    run(scenario)
    records = [r for r in caplog.records if r.name == controller.__name__]
    assert [r.levelname for r in records] == ["ERROR", "WARNING"]
    assert records[0].exc_info is not None, "the first failure shows where it happened"
    assert records[1].exc_info is None, "later ones say only that it failed again"
    assert "broken" in records[1].getMessage()


def test_an_api_error_is_retried_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=controller.__name__)

    async def scenario() -> None:
        c, q, _, _ = setup(raising(kube.Conflict("the object has been modified", code=409)))
        assert await once(c, q) == "error"
        assert q.waiting == 1

    run(scenario)
    [record] = [r for r in caplog.records if r.name == controller.__name__]
    assert record.levelname == "WARNING"
    assert record.exc_info is None
    assert "the object has been modified" in record.getMessage()


def test_a_terminal_error_is_logged_and_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=controller.__name__)

    async def scenario() -> None:
        c, q, clock, m = setup(raising(controller.TerminalError("spec.replicas: must be 1")))
        assert await once(c, q) == "error"
        clock.advance(10_000.0)
        assert q.get_nowait() is None
        assert q.waiting == 0
        assert m.terminal_reconcile_errors.labels("test").value == 1
        assert m.reconcile_errors.labels("test").value == 1

    run(scenario)
    [record] = [r for r in caplog.records if r.name == controller.__name__]
    assert record.levelname == "ERROR"
    assert "spec.replicas: must be 1" in record.getMessage()


def test_a_reconcile_that_runs_too_long_is_cut_and_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=controller.__name__)

    async def slow(key: Key) -> Result:
        await asyncio.sleep(10)
        return Result()

    async def scenario() -> None:
        c, q, _, _ = setup(slow, timeout=0.01)
        assert await once(c, q) == "error"
        assert q.waiting == 1

    run(scenario)
    assert "took longer than 0.01s" in caplog.records[-1].getMessage()


def test_a_timeout_raised_inside_the_reconciler_is_an_ordinary_failure() -> None:
    async def scenario() -> None:
        c, q, _, _ = setup(raising(TimeoutError("inner")), timeout=5.0)
        assert await once(c, q) == "error"
        assert q.waiting == 1

    run(scenario)


def test_each_reconcile_has_its_key_and_own_id_in_the_log_context() -> None:
    async def scenario() -> Scripted:
        c, q, _, _ = setup(returning(Result()))
        await once(c, q)
        await once(c, q)
        assert isinstance(c.reconciler, Scripted)
        return c.reconciler

    reconciler = run(scenario)
    first, second = reconciler.contexts
    assert {k: first[k] for k in ("controller", "namespace", "name")} == {
        "controller": "test",
        "namespace": "ns",
        "name": "job",
    }
    assert first["reconcile_id"] != second["reconcile_id"]
    assert logcontext.current() == {}


def test_the_log_filter_puts_the_context_on_records() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", (), None)
    with logcontext.bound(controller="c", name="job", reconcile_id="r1"):
        assert logcontext.Filter().filter(record)
    assert record.context == {"controller": "c", "name": "job", "reconcile_id": "r1"}  # type: ignore[attr-defined]
    assert record.reconcile_id == "r1"  # type: ignore[attr-defined]
    assert record.controller == "c"  # type: ignore[attr-defined]
    assert record.name == "x", "the logger's name stays"


def test_run_reconciles_the_initial_keys_then_what_is_enqueued() -> None:
    async def scenario() -> list[Key]:
        seen: list[Key] = []
        done = asyncio.Event()

        async def step(key: Key) -> Result:
            seen.append(key)
            if len(seen) == 3:
                done.set()
            return Result()

        c = controller.Controller("test", Scripted(step), workers=2, metrics=None)
        c.enqueue(Key("ns", "dropped"))  # not running: dropped, the initial list covers it
        async with _aio.TaskGroup() as group:
            task = group.create_task(c.run(lambda: [Key("ns", "a"), Key("ns", "b")]), name="c")
            await until(lambda: c.queue is not None)
            c.enqueue(Key("ns", "c"))
            async with _aio.timeout(5):
                await done.wait()
            task.cancel()
        assert c.queue is None
        return seen

    assert sorted(run(scenario)) == [Key("ns", "a"), Key("ns", "b"), Key("ns", "c")]


def test_workers_never_reconcile_one_key_at_once_and_catch_up_after() -> None:
    async def scenario() -> tuple[int, int]:
        active: set[Key] = set()
        overlaps = 0
        calls = 0
        started, release = asyncio.Event(), asyncio.Event()

        async def step(key: Key) -> Result:
            nonlocal overlaps, calls
            calls += 1
            if key in active:
                overlaps += 1
            active.add(key)
            started.set()
            await release.wait()  # the first reconcile holds the key until the adds are in
            active.discard(key)
            return Result()

        c = controller.Controller("test", Scripted(step), workers=4, metrics=None)
        async with _aio.TaskGroup() as group:
            task = group.create_task(c.run(), name="c")
            await until(lambda: c.queue is not None)
            c.enqueue(KEY)
            async with _aio.timeout(5):
                await started.wait()  # in process now
            for _ in range(10):
                c.enqueue(KEY)
            for _ in range(10):
                await asyncio.sleep(0)  # idle workers get every chance to take the key again
            release.set()
            queue: Any = c.queue
            await until(lambda: calls >= 2 and not queue.processing and not len(queue))
            task.cancel()
        return overlaps, calls

    overlaps, calls = run(scenario)
    assert overlaps == 0
    assert calls == 2, "the adds during the first reconcile are one more reconcile"


def test_a_controller_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        controller.Controller("x", Scripted(returning(Result())), workers=0)
