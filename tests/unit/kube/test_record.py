"""The event recorder, as client-go's EventRecorder, EventCorrelator and Broadcaster behave: the
Event it builds, the same event twice counted on one object, and failures that never reach
the reconciler; and the queue behind it: recording returns before the write, one object's
events are written in order, a full queue drops and counts, a write that fails for a passing
reason is tried again (a bounded number of times), and a stop writes what is queued."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubetrain import _aio, kube
from kubetrain.kube import record as events
from kubetrain.operator.runtime import manager
from kubetrain.operator.runtime import metrics as metrics_
from tests.unit.operator.runtime.fakes import FakeClient, FakeClock, run, until

JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "job", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
}
WALL = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def recorder(client: FakeClient, clock: FakeClock) -> events.Recorder:
    return events.Recorder(
        client,  # type: ignore[arg-type]
        "pytorchjob-controller",
        clock=clock,
        wall=lambda: WALL + datetime.timedelta(seconds=clock.now),
    )


def stored(client: FakeClient) -> list[dict[str, Any]]:
    return [o for (plural, _, _), o in client.objects.items() if plural == "events"]


def test_an_event_names_its_object_source_and_reason() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        await recorder(client, clock).event(JOB, "Normal", "SuccessfulCreatePod", "Created pod: a")
        [event] = stored(client)
        assert event["metadata"]["namespace"] == "ns"
        assert event["metadata"]["name"].startswith("job.")
        assert event["involvedObject"] == {
            "kind": "PyTorchJob",
            "namespace": "ns",
            "name": "job",
            "uid": "u-1",
            "apiVersion": "kubeflow.org/v1",
            "resourceVersion": "7",
        }
        assert event["source"] == {"component": "pytorchjob-controller"}
        assert event["reportingComponent"] == "pytorchjob-controller"
        assert (event["type"], event["reason"], event["message"]) == (
            "Normal",
            "SuccessfulCreatePod",
            "Created pod: a",
        )
        assert event["count"] == 1
        assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"

    run(scenario)


def test_the_same_event_again_counts_on_the_same_object() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        r = recorder(client, clock)
        await r.event(JOB, "Warning", "ExitedWithCode", "exit 1")
        clock.advance(30.0)
        await r.event(JOB, "Warning", "ExitedWithCode", "exit 1")
        [event] = stored(client)
        assert event["count"] == 2
        assert event["lastTimestamp"] == "2026-01-01T00:00:30Z"
        assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"
        assert client.verbs() == ["create", "patch"]

    run(scenario)


def test_a_different_message_reason_type_or_object_is_another_event() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        r = recorder(client, clock)
        other = {**JOB, "metadata": {**JOB["metadata"], "name": "other", "uid": "u-2"}}
        await r.event(JOB, "Normal", "R", "one")
        await r.event(JOB, "Normal", "R", "two")
        await r.event(JOB, "Normal", "S", "one")
        await r.event(JOB, "Warning", "R", "one")
        await r.event(other, "Normal", "R", "one")
        assert len(stored(client)) == 5
        assert client.verbs() == ["create"] * 5

    run(scenario)


def test_after_ten_minutes_the_same_event_is_new() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        r = recorder(client, clock)
        await r.event(JOB, "Normal", "R", "m")
        clock.advance(601.0)
        await r.event(JOB, "Normal", "R", "m")
        assert [e["count"] for e in stored(client)] == [1, 1]

    run(scenario)


def test_an_event_deleted_meanwhile_is_created_again() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        r = recorder(client, clock)
        await r.event(JOB, "Normal", "R", "m")
        client.objects.clear()
        clock.advance(1.0)
        await r.event(JOB, "Normal", "R", "m")
        assert client.verbs() == ["create", "patch", "create"]
        assert [e["count"] for e in stored(client)] == [1]

    run(scenario)


def test_failures_are_logged_never_raised(caplog: Any) -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        client.fail["create"] = [kube.Forbidden("events is forbidden", code=403)]
        await recorder(client, clock).event(JOB, "Normal", "R", "m")
        await recorder(client, clock).event({"metadata": {}}, "Normal", "R", "m")
        await recorder(client, clock).event(JOB, "Bogus", "R", "m")  # type: ignore[arg-type]

    run(scenario)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 3
    assert "events is forbidden" in warnings[0]


def test_messages_are_cut_to_1024_characters() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        await recorder(client, clock).event(JOB, "Warning", "R", "x" * 5000)
        [event] = stored(client)
        assert len(event["message"]) == 1024

    run(scenario)


def test_a_cluster_scoped_objects_events_go_to_default() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u"}}
    event = events.build(
        events.involved_object(node),
        "Normal",
        "R",
        "m",
        name="n1.1",
        component="c",
        host="h",
        now="t",
    )
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]
    assert event["source"] == {"component": "c", "host": "h"}


# -- the queue and its writers -----------------------------------------------------------------


class Pauses:
    """The writer's sleep: records each pause and returns at once."""

    def __init__(self) -> None:
        self.taken: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.taken.append(seconds)
        await asyncio.sleep(0)


def broadcaster(
    client: FakeClient, clock: FakeClock, **options: Any
) -> tuple[events.Broadcaster, metrics_.Metrics, Pauses]:
    metrics, pauses = metrics_.Metrics(), Pauses()
    made = events.Broadcaster(
        client,  # type: ignore[arg-type]
        dropped=metrics.events_dropped,
        clock=clock,
        sleep=pauses,
        **options,
    )
    return made, metrics, pauses


def queued_recorder(client: FakeClient, clock: FakeClock, b: events.Broadcaster) -> events.Recorder:
    return events.Recorder(
        client,  # type: ignore[arg-type]
        "pytorchjob-controller",
        broadcaster=b,
        clock=clock,
        wall=lambda: WALL + datetime.timedelta(seconds=clock.now),
    )


@contextlib.asynccontextmanager
async def writing(b: events.Broadcaster) -> AsyncIterator[asyncio.Task[None]]:
    """The writer running beside the block; stopped (and its drain awaited) after it."""
    task = asyncio.get_running_loop().create_task(b.run(), name="event-writer")
    await until(lambda: b.running)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def dropped(metrics: metrics_.Metrics, reason: str) -> float:
    return metrics.events_dropped.labels(reason).value


def job(name: str) -> dict[str, Any]:
    return {**JOB, "metadata": {**JOB["metadata"], "name": name, "uid": f"u-{name}"}}


def test_recording_returns_before_the_write_and_flush_waits_for_it() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(gate=asyncio.Event()), FakeClock(0.0)
        b, _, _ = broadcaster(client, clock)
        r = queued_recorder(client, clock, b)
        async with writing(b):
            async with _aio.timeout(1):
                await r.event(JOB, "Normal", "SuccessfulCreatePod", "Created pod: a")
            assert stored(client) == [], "the write waits behind the gate"
            assert b.queued == 1
            assert client.gate is not None
            client.gate.set()
            async with _aio.timeout(5):
                await r.flush()
            [event] = stored(client)
            assert event["reason"] == "SuccessfulCreatePod"
            assert b.queued == 0

    run(scenario)


@pytest.mark.parametrize("writers", [1, 4])
def test_one_objects_events_are_written_in_the_order_recorded(writers: int) -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        b, _, _ = broadcaster(client, clock, writers=writers)
        r = queued_recorder(client, clock, b)
        names = [f"job-{i}" for i in range(8)]
        async with writing(b):
            for step in range(5):
                for name in names:
                    r.emit(job(name), "Normal", f"Step{step}", "m")
            async with _aio.timeout(5):
                await r.flush()
        for name in names:
            reasons = [
                c.body["reason"]
                for c in client.calls
                if c.verb == "create" and c.name.startswith(f"{name}.")
            ]
            assert reasons == [f"Step{step}" for step in range(5)], name

    run(scenario)


def test_the_same_event_queued_three_times_is_one_event_with_count_3() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        b, _, _ = broadcaster(client, clock)
        r = queued_recorder(client, clock, b)
        for _ in range(3):
            r.emit(JOB, "Warning", "ExitedWithCode", "exit 1")
            clock.advance(1.0)
        async with writing(b), _aio.timeout(5):
            await r.flush()
        [event] = stored(client)
        assert event["count"] == 3
        assert (event["firstTimestamp"], event["lastTimestamp"]) == (
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:02Z",
        ), "the times are those of the recording, not of the write"
        assert client.verbs() == ["create", "patch", "patch"]

    run(scenario)


def test_a_full_queue_drops_counts_and_warns_at_most_every_ten_seconds(caplog: Any) -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        b, metrics, _ = broadcaster(client, clock, queue_size=2)
        r = queued_recorder(client, clock, b)
        kept = [r.emit(job(f"j{i}"), "Normal", "R", "m") for i in range(5)]
        assert kept == [True, True, False, False, False]
        assert dropped(metrics, events.FULL) == 3
        clock.advance(events.DROP_WARNING_INTERVAL)
        assert r.emit(job("late"), "Normal", "R", "m") is False
        assert dropped(metrics, events.FULL) == 4
        async with writing(b), _aio.timeout(5):
            await r.flush()
        assert sorted(e["involvedObject"]["name"] for e in stored(client)) == ["j0", "j1"]
        assert r.emit(job("again"), "Normal", "R", "m") is True, "written events make room"

    with caplog.at_level(logging.WARNING, logger=events.__name__):
        run(scenario)
    warnings = [m.getMessage() for m in caplog.records if "queue full" in m.getMessage()]
    assert len(warnings) == 2
    assert "1 events dropped since the last warning" in warnings[0]
    assert "3 events dropped since the last warning" in warnings[1]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(kube.ServerError("unavailable", code=503), id="a 503 is tried again"),
        pytest.param(kube.ServerError("boom", code=500), id="a 500 is tried again"),
        pytest.param(kube.Unavailable("connection refused"), id="no answer is tried again"),
        pytest.param(kube.TooManyRequests("slow down", code=429), id="a 429 is tried again"),
    ],
)
def test_a_passing_failure_is_tried_again_with_growing_pauses(error: kube.ApiError) -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        client.fail["create"] = [error, error]
        b, metrics, pauses = broadcaster(client, clock)
        r = queued_recorder(client, clock, b)
        async with writing(b):
            r.emit(JOB, "Normal", "R", "m")
            async with _aio.timeout(5):
                await r.flush()
        assert len(stored(client)) == 1
        assert client.verbs() == ["create"] * 3
        assert pauses.taken == [0.2, 0.4]
        assert sum(c.value for c in metrics.events_dropped.children.values()) == 0
        served = metrics.registry.get_sample_value  # the samples /metrics serves
        assert served("kubetrain_events_dropped_total", {"reason": "full"}) == 0

    run(scenario)


def test_retries_are_bounded_and_the_writer_goes_on(caplog: Any) -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        tries = events.Retry().tries
        client.fail["create"] = [kube.ServerError("down", code=503) for _ in range(tries)]
        b, metrics, pauses = broadcaster(client, clock)
        r = queued_recorder(client, clock, b)
        async with writing(b):
            r.emit(JOB, "Normal", "Lost", "m")
            r.emit(JOB, "Normal", "Kept", "m")
            async with _aio.timeout(5):
                await r.flush()
        assert [e["reason"] for e in stored(client)] == ["Kept"]
        assert client.verbs() == ["create"] * (tries + 1)
        assert len(pauses.taken) == tries - 1
        assert max(pauses.taken) <= events.Retry().cap
        assert dropped(metrics, events.FAILED) == 1

    with caplog.at_level(logging.WARNING, logger=events.__name__):
        run(scenario)
    assert any("after 6 tries" in m.getMessage() for m in caplog.records)


def test_a_refused_write_is_dropped_at_once_with_a_warning(caplog: Any) -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        client.fail["create"] = [kube.Invalid("events is invalid", code=422)]
        b, metrics, pauses = broadcaster(client, clock)
        r = queued_recorder(client, clock, b)
        async with writing(b):
            r.emit(JOB, "Normal", "R", "m")
            async with _aio.timeout(5):
                await r.flush()
        assert stored(client) == []
        assert client.verbs() == ["create"]
        assert pauses.taken == []
        assert dropped(metrics, events.REJECTED) == 1

    with caplog.at_level(logging.WARNING, logger=events.__name__):
        run(scenario)
    assert any("events is invalid" in m.getMessage() for m in caplog.records)


def test_a_create_whose_answer_was_lost_is_not_written_twice() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        client.lost["create"] = [kube.Unavailable("no answer within 30s")]
        b, metrics, _ = broadcaster(client, clock)
        r = queued_recorder(client, clock, b)
        async with writing(b):
            r.emit(JOB, "Normal", "R", "m")
            r.emit(JOB, "Normal", "R", "m")
            async with _aio.timeout(5):
                await r.flush()
        [event] = stored(client)
        assert event["count"] == 2, "the retry's 409 means the first try created it"
        assert client.verbs() == ["create", "create", "patch"]
        assert sum(c.value for c in metrics.events_dropped.children.values()) == 0

    run(scenario)


def test_a_stop_writes_what_is_queued() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(gate=asyncio.Event()), FakeClock(0.0)
        b, metrics, _ = broadcaster(client, clock, writers=2)
        r = queued_recorder(client, clock, b)
        task = asyncio.get_running_loop().create_task(b.run(), name="event-writer")
        await until(lambda: b.running)
        for name in ("a", "b", "c"):
            r.emit(job(name), "Normal", "R", "m")
        await until(lambda: client.held > 0)  # a write is under way, held by the gate
        task.cancel()
        await asyncio.sleep(0)
        assert client.gate is not None
        client.gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sorted(e["involvedObject"]["name"] for e in stored(client)) == ["a", "b", "c"]
        assert b.queued == 0
        assert dropped(metrics, events.STOPPED) == 0
        assert not b.running

    run(scenario)


def test_a_write_cut_by_the_stop_after_it_landed_is_not_counted_as_refused() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(answer_gate=asyncio.Event()), FakeClock(0.0)
        b, metrics, _ = broadcaster(client, clock)
        r = queued_recorder(client, clock, b)
        task = asyncio.get_running_loop().create_task(b.run(), name="event-writer")
        await until(lambda: b.running)
        r.emit(JOB, "Normal", "R", "m")
        await until(lambda: len(stored(client)) == 1)  # created; its answer is held
        task.cancel()
        await asyncio.sleep(0)
        assert client.answer_gate is not None
        client.answer_gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert client.verbs() == ["create", "create"], "the drain wrote it again: 409"
        assert len(stored(client)) == 1
        assert sum(c.value for c in metrics.events_dropped.children.values()) == 0

    run(scenario)


def test_a_stop_gives_up_on_what_it_cannot_write_in_time(caplog: Any) -> None:
    async def scenario() -> None:
        client, clock = FakeClient(gate=asyncio.Event()), FakeClock(0.0)
        b, metrics, _ = broadcaster(client, clock, drain_timeout=0.05)
        r = queued_recorder(client, clock, b)
        task = asyncio.get_running_loop().create_task(b.run(), name="event-writer")
        await until(lambda: b.running)
        for name in ("a", "b", "c"):
            r.emit(job(name), "Normal", "R", "m")
        await until(lambda: client.held > 0)
        task.cancel()
        async with _aio.timeout(5):
            with pytest.raises(asyncio.CancelledError):
                await task
        assert stored(client) == []
        assert dropped(metrics, events.STOPPED) == 3
        assert b.queued == 0

    with caplog.at_level(logging.WARNING, logger=events.__name__):
        run(scenario)
    assert any("3 events not written" in m.getMessage() for m in caplog.records)


@pytest.mark.parametrize(
    ("failures", "asked", "pause"),
    [
        pytest.param(1, None, 0.2, id="the first pause is the initial one"),
        pytest.param(3, None, 0.8, id="each pause doubles"),
        pytest.param(9, None, 5.0, id="pauses stop growing at the cap"),
        pytest.param(1, 2, 2.0, id="a 429 is waited for as long as it asks"),
        pytest.param(1, 60, 5.0, id="but never longer than the cap"),
    ],
)
def test_retry_pauses(failures: int, asked: int | None, pause: float) -> None:
    status = {} if asked is None else {"details": {"retryAfterSeconds": asked}}
    error = kube.TooManyRequests("slow down", code=429, status=status)
    assert events.Retry().pause(failures, error) == pytest.approx(pause)


def test_a_managers_recorders_share_its_writer_which_runs_with_the_manager() -> None:
    async def scenario() -> None:
        client = FakeClient(gate=asyncio.Event())
        settings = manager.Settings(leader_election=False, metrics_address="", probe_address="")
        m = manager.Manager(client, settings, metrics=metrics_.Metrics())  # type: ignore[arg-type]
        one, two = m.recorder("one-controller"), m.recorder("two-controller")
        assert one.broadcaster is two.broadcaster is m.events
        task = asyncio.get_running_loop().create_task(m.run(), name="manager")
        await until(lambda: m.events.running)
        assert "event-writer" in {t.get_name() for t in asyncio.all_tasks()}
        async with _aio.timeout(1):
            await one.event(JOB, "Normal", "R", "from one")
            await two.event(JOB, "Normal", "R", "from two")
        assert m.events.queued == 2
        assert client.gate is not None
        client.gate.set()
        async with _aio.timeout(5):
            await one.flush()
        assert sorted(e["source"]["component"] for e in stored(client)) == [
            "one-controller",
            "two-controller",
        ]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not m.events.running

    run(scenario)


def test_a_writer_started_again_writes_what_was_queued_while_it_was_stopped() -> None:
    client, clock = FakeClient(), FakeClock(0.0)
    b, _, _ = broadcaster(client, clock)
    r = queued_recorder(client, clock, b)

    async def first() -> None:
        async with writing(b), _aio.timeout(5):
            await r.event(job("a"), "Normal", "R", "m")
            await r.flush()

    async def second() -> None:  # another event loop, as a manager run again gets
        async with writing(b), _aio.timeout(5):
            await r.flush()

    run(first)
    r.emit(job("b"), "Normal", "R", "m")
    assert b.queued == 1
    run(second)
    assert sorted(e["involvedObject"]["name"] for e in stored(client)) == ["a", "b"]


def test_events_wait_while_the_controllers_are_busy() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        busy = [True]
        b, _, pauses = broadcaster(client, clock, busy=lambda: busy[0])
        r = queued_recorder(client, clock, b)
        async with writing(b):
            r.emit(JOB, "Normal", "SuccessfulCreatePod", "Created pod: a")
            await until(lambda: len(pauses.taken) >= 3)
            assert stored(client) == [], "held while the controllers are busy"
            busy[0] = False
            await until(lambda: len(stored(client)) == 1)
            assert set(pauses.taken) == {events.YIELD_POLL}

    run(scenario)


def test_an_event_waits_for_busy_controllers_no_longer_than_the_yield_limit() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        b, _, pauses = broadcaster(client, clock, busy=lambda: True, yield_limit=5.0)
        r = queued_recorder(client, clock, b)
        async with writing(b):
            r.emit(JOB, "Normal", "SuccessfulCreatePod", "Created pod: a")
            clock.advance(4.9)
            await until(lambda: len(pauses.taken) >= 3)
            assert stored(client) == []
            r.emit(job("other"), "Normal", "SuccessfulCreatePod", "Created pod: b")
            clock.advance(0.1)  # the first is 5 s old; the second, recorded later, is not
            await until(lambda: len(stored(client)) == 1)
            [first] = stored(client)
            assert first["message"] == "Created pod: a"
            clock.advance(4.9)
            await until(lambda: len(stored(client)) == 2)

    run(scenario)


def test_a_stopping_writer_does_not_wait_for_busy_controllers() -> None:
    async def scenario() -> None:
        client, clock = FakeClient(), FakeClock(0.0)
        b, _, _ = broadcaster(client, clock, busy=lambda: True)
        r = queued_recorder(client, clock, b)
        async with writing(b):
            r.emit(JOB, "Normal", "SuccessfulCreatePod", "Created pod: a")
        [event] = stored(client)
        assert event["message"] == "Created pod: a"

    run(scenario)
