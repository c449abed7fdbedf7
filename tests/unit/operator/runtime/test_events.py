"""The event recorder, as client-go's EventRecorder and EventCorrelator behave: the Event it
builds, the same event twice counted on one object, and failures that never reach the
reconciler."""

from __future__ import annotations

import datetime
from typing import Any

from kubetrain import kube
from kubetrain.operator.runtime import events
from tests.unit.operator.runtime.fakes import FakeClient, FakeClock, run

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
