"""What the scheduler writes about a pod: the PodScheduled condition (only when the message
changes, with kube's transition-time rule) and its bodies."""

from __future__ import annotations

import asyncio

from kubetrain.kube import record
from kubetrain.local.scheduler import bodies, scheduler
from tests.unit.local.scheduler.builders import T0, T0_TEXT, pod
from tests.unit.operator.runtime.fakes import FakeClient


def waiting(message: str, since: str = "2027-01-15T07:00:00Z") -> dict:
    p = pod("p")
    p["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": since,
        }
    ]
    return p


def test_the_message_a_pod_shows_is_read_back() -> None:
    assert bodies.shown_message(waiting("0/1 nodes are available: 1 Insufficient cpu.")) == (
        "0/1 nodes are available: 1 Insufficient cpu."
    )
    assert bodies.shown_message(pod("p")) is None
    bound = pod("p")
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    assert bodies.shown_message(bound) is None


def test_the_condition_keeps_its_transition_time_while_the_pod_keeps_waiting() -> None:
    patch = bodies.unschedulable_patch(waiting("old"), "new", T0)
    (condition,) = patch["status"]["conditions"]
    assert condition["message"] == "new"
    assert condition["lastTransitionTime"] == "2027-01-15T07:00:00Z"
    fresh = bodies.unschedulable_patch(pod("p"), "new", T0)["status"]["conditions"][0]
    assert fresh["lastTransitionTime"] == T0_TEXT
    assert patch["metadata"] == {"uid": "uid-ns-p"}, "the uid guards against a replaced pod"


def test_an_event_names_the_pods_scheduler_as_its_reporter_and_counts_a_repeat() -> None:
    """The scheduler records through the shared recorder, as kube-scheduler's profile: the
    pod's scheduler in source and reportingComponent, ``<profile>-<host>`` as instance, an
    eventTime and timestamps from the scheduler's clock; the same event again is counted."""
    client = FakeClient()
    volcano = pod("p", scheduler="volcano")
    profile = scheduler.recorder(
        client,  # type: ignore[arg-type]
        bodies.component_of(volcano),
        "box",
        record.Broadcaster(client),  # type: ignore[arg-type]
        lambda: T0,
    )

    async def twice() -> None:
        for _ in range(2):
            await profile.event(
                volcano, "Warning", "FailedScheduling", "x" * 2000, action="Scheduling"
            )

    asyncio.run(twice())
    [((_, namespace, _), body)] = client.objects.items()
    assert namespace == "ns"
    assert body["source"] == {"component": "volcano"}
    assert body["reportingComponent"] == "volcano"
    assert body["reportingInstance"] == "volcano-box"
    assert body["action"] == "Scheduling"
    assert body["involvedObject"]["uid"] == "uid-ns-p"
    assert body["involvedObject"]["kind"] == "Pod"
    assert body["metadata"]["name"].startswith("p.")
    assert (body["firstTimestamp"], body["eventTime"][:19]) == (T0_TEXT, T0_TEXT[:19])
    assert len(body["message"]) == 1024
    assert body["count"] == 2, "a repeat is counted on the same Event"
    assert bodies.component_of(pod("p")) == "default-scheduler"


def test_a_binding_targets_the_node_and_carries_the_uid() -> None:
    body = bodies.binding(pod("p"), "n1")
    assert body["kind"] == "Binding"
    assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert body["metadata"]["uid"] == "uid-ns-p"
