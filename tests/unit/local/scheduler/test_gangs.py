"""PodGroups: membership by the scheduler-plugins label or the Volcano annotation, and the
status the scheduler writes for each kind."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.local.scheduler import gangs
from tests.unit.local.scheduler.builders import T0, T0_TEXT, member, pod, podgroup

LATER_TEXT = "2027-01-15T08:01:00Z"


def test_a_pod_belongs_to_the_group_its_label_or_annotation_names() -> None:
    assert gangs.group_of(pod("a", **member("g"))) == gangs.GroupRef(gangs.COSCHEDULING, "ns", "g")
    assert gangs.group_of(pod("a", **member("v", volcano=True))) == gangs.GroupRef(
        gangs.VOLCANO, "ns", "v"
    )
    assert gangs.group_of(pod("a")) is None
    other = pod("a", annotations={"scheduling.volcano.sh/group-name": "v2"})
    assert gangs.group_of(other) == gangs.GroupRef(gangs.VOLCANO, "ns", "v2")


def test_the_spec_is_read_from_either_kind() -> None:
    spec = gangs.Spec.of(
        podgroup("g", min_member=4, min_resources={"cpu": "8"}, timeout=60, priority_class="hi")
    )
    assert spec.min_member == 4
    assert spec.min_resources == {"cpu": 8}
    assert spec.timeout == 60
    assert spec.priority_class == "hi"
    assert spec.created == T0


def members(*phases_and_nodes: tuple[str, bool]) -> gangs.Members:
    pods = [
        pod(f"p{i}", phase=phase, node="n1" if on_node else None)
        for i, (phase, on_node) in enumerate(phases_and_nodes)
    ]
    return gangs.Members.of(pods)


PENDING = ("Pending", False)
BOUND = ("Pending", True)
RUNNING = ("Running", True)
SUCCEEDED = ("Succeeded", True)
FAILED = ("Failed", True)

COSCHEDULING_PHASES = [
    pytest.param(None, [PENDING, PENDING], "Pending", id="fewer pods than minMember: Pending"),
    pytest.param(None, [PENDING] * 3, "Pending", id="all there, none bound: Pending"),
    pytest.param(
        "Pending", [BOUND] * 3, "Scheduling", id="minMember bound, not running: Scheduling"
    ),
    pytest.param(
        "Scheduling",
        [RUNNING, RUNNING, BOUND],
        "Scheduling",
        id="two of three running: still Scheduling",
    ),
    pytest.param("Scheduling", [RUNNING] * 3, "Running", id="minMember running: Running"),
    pytest.param(
        "Running",
        [SUCCEEDED, SUCCEEDED, RUNNING],
        "Running",
        id="succeeded members count as having run",
    ),
    pytest.param("Running", [SUCCEEDED] * 3, "Finished", id="minMember succeeded: Finished"),
    pytest.param(
        "Running",
        [FAILED, RUNNING, RUNNING],
        "Failed",
        id="a member failed after the gang ran: Failed",
    ),
    pytest.param("Finished", [], "Finished", id="Finished is final, even once the pods are gone"),
    pytest.param("Failed", [PENDING] * 3, "Failed", id="Failed is final"),
]


@pytest.mark.parametrize(("current", "state", "expected"), COSCHEDULING_PHASES)
def test_scheduler_plugins_phases(
    current: str | None, state: list[tuple[str, bool]], expected: str
) -> None:
    assert gangs.coscheduling_phase(current, gangs.Spec(min_member=3), members(*state)) == expected


def test_scheduler_plugins_status_records_when_scheduling_started_and_counts() -> None:
    spec = gangs.Spec(min_member=2)
    context = gangs.Context(now=T0_TEXT)
    first = gangs.coscheduling_status({}, spec, members(PENDING, PENDING), context)
    assert first == {
        "phase": "Pending",
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "scheduleStartTime": T0_TEXT,
    }
    later = gangs.coscheduling_status(
        first, spec, members(RUNNING, SUCCEEDED), gangs.Context(now=LATER_TEXT)
    )
    assert later["scheduleStartTime"] == T0_TEXT
    assert (later["phase"], later["running"], later["succeeded"]) == ("Running", 1, 1)


def test_scheduler_plugins_status_names_the_owners() -> None:
    owned = pod("a", phase="Pending")
    owned["metadata"]["ownerReferences"] = [{"name": "job-a", "kind": "PyTorchJob"}]
    status = gangs.coscheduling_status(
        {}, gangs.Spec(min_member=1), gangs.Members.of([owned]), gangs.Context(now=T0_TEXT)
    )
    assert status["occupiedBy"] == "ns/job-a"


def test_pods_bound_this_cycle_count_as_bound() -> None:
    pods = [pod("a"), pod("b")]
    state = gangs.Members.of(pods, frozenset({"uid-ns-a", "uid-ns-b"}))
    assert gangs.coscheduling_phase("Pending", gangs.Spec(min_member=2), state) == "Scheduling"


def test_the_timeout_counts_from_the_start_of_scheduling() -> None:
    spec = gangs.Spec(min_member=2, timeout=60)
    status = {"scheduleStartTime": T0_TEXT}
    assert not gangs.timed_out(status, spec, T0 + 59)
    assert gangs.timed_out(status, spec, T0 + 60)
    assert gangs.timeout_at(status, spec) == T0 + 60
    assert not gangs.timed_out({}, spec, T0 + 600), "not tried yet: no timeout"


VOLCANO_PHASES = [
    pytest.param(None, [], True, "Inqueue", id="no pods, minResources fit the nodes: Inqueue"),
    pytest.param(None, [], False, "Pending", id="minResources beyond the nodes: Pending"),
    pytest.param("Inqueue", [], False, "Inqueue", id="once Inqueue it stays so"),
    pytest.param("Inqueue", [BOUND, BOUND], True, "Running", id="minMember bound: Running"),
    pytest.param(
        "Running", [SUCCEEDED, RUNNING], True, "Running", id="succeeded members count as allocated"
    ),
    pytest.param(
        "Running", [SUCCEEDED, FAILED], True, "Completed", id="every member finished: Completed"
    ),
    pytest.param("Completed", [], True, "Completed", id="Completed is final"),
    pytest.param(
        "Running",
        [PENDING, PENDING],
        False,
        "Pending",
        id="members gone from their nodes: back to Pending",
    ),
]


@pytest.mark.parametrize(("current", "state", "enqueueable", "expected"), VOLCANO_PHASES)
def test_volcano_phases(
    current: str | None, state: list[tuple[str, bool]], enqueueable: bool, expected: str
) -> None:
    phase = gangs.volcano_phase(current, gangs.Spec(min_member=2), members(*state), enqueueable)
    assert phase == expected


def by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


def test_volcano_conditions_follow_the_gang() -> None:
    spec = gangs.Spec(min_member=2)
    waiting = gangs.Context(
        now=T0_TEXT, waiting=gangs.Waiting("0/1 nodes are available: 1 Insufficient cpu.")
    )
    first = gangs.volcano_status({"phase": "Inqueue"}, spec, members(PENDING, PENDING), waiting)
    unschedulable = by_type(first)["Unschedulable"]
    assert (unschedulable["status"], unschedulable["reason"]) == ("True", "NotEnoughResources")
    assert unschedulable["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    again = gangs.volcano_status(
        first,
        spec,
        members(PENDING, PENDING),
        gangs.Context(now=LATER_TEXT, waiting=waiting.waiting),
    )
    assert not gangs.differs(first, again), "an unchanged wait is not written again"
    placed = gangs.volcano_status(
        again,
        spec,
        gangs.Members.of([pod("a"), pod("b")], frozenset({"uid-ns-a", "uid-ns-b"})),
        gangs.Context(now=LATER_TEXT, placed=True),
    )
    assert placed["phase"] == "Running"
    conditions = by_type(placed)
    assert "Unschedulable" not in conditions
    assert conditions["Scheduled"]["reason"] == "tasks in gang are ready to be scheduled"
    assert conditions["Scheduled"]["lastTransitionTime"] == LATER_TEXT


def test_a_volcano_gang_short_of_pods_is_not_enough_tasks() -> None:
    context = gangs.Context(now=T0_TEXT, waiting=gangs.Waiting("fewer pods", incomplete=True))
    status = gangs.volcano_status({}, gangs.Spec(min_member=3), members(PENDING), context)
    assert by_type(status)["Unschedulable"]["reason"] == "NotEnoughTasks"


def test_fields_the_scheduler_does_not_set_do_not_count_as_a_difference() -> None:
    assert not gangs.differs({"phase": "Pending", "extra": 1}, {"phase": "Pending"})
    assert gangs.differs({"phase": "Pending"}, {"phase": "Running"})
