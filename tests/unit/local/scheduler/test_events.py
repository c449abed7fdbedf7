"""What the scheduler writes about a pod: the PodScheduled condition (only when the message
changes, with kube's transition-time rule) and its events."""

from __future__ import annotations

from kubetrain.local.scheduler import events
from tests.unit.local.scheduler.builders import T0, T0_TEXT, pod


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
    assert events.shown_message(waiting("0/1 nodes are available: 1 Insufficient cpu.")) == (
        "0/1 nodes are available: 1 Insufficient cpu."
    )
    assert events.shown_message(pod("p")) is None
    bound = pod("p")
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    assert events.shown_message(bound) is None


def test_the_condition_keeps_its_transition_time_while_the_pod_keeps_waiting() -> None:
    patch = events.unschedulable_patch(waiting("old"), "new", T0)
    (condition,) = patch["status"]["conditions"]
    assert condition["message"] == "new"
    assert condition["lastTransitionTime"] == "2027-01-15T07:00:00Z"
    fresh = events.unschedulable_patch(pod("p"), "new", T0)["status"]["conditions"][0]
    assert fresh["lastTransitionTime"] == T0_TEXT
    assert patch["metadata"] == {"uid": "uid-ns-p"}, "the uid guards against a replaced pod"


def test_an_event_names_the_pods_scheduler_as_its_reporter() -> None:
    body = events.event(
        pod("p", scheduler="volcano"),
        reason="FailedScheduling",
        message="x" * 2000,
        type="Warning",
        action="Scheduling",
        component=events.component_of(pod("p", scheduler="volcano")),
        now=T0,
        host="box",
    )
    assert body["source"] == {"component": "volcano"}
    assert body["reportingComponent"] == "volcano"
    assert body["reportingInstance"] == "volcano-box"
    assert body["involvedObject"]["uid"] == "uid-ns-p"
    assert body["metadata"]["namespace"] == "ns"
    assert body["metadata"]["name"].startswith("p.")
    assert len(body["message"]) == 1024
    assert events.component_of(pod("p")) == "default-scheduler"


def test_a_binding_targets_the_node_and_carries_the_uid() -> None:
    body = events.binding(pod("p"), "n1")
    assert body["kind"] == "Binding"
    assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert body["metadata"]["uid"] == "uid-ns-p"
