"""Units (a pod, or a gang's pending pods) and their order."""

from __future__ import annotations

from kubetrain.local.scheduler import gangs, queue
from tests.unit.local.scheduler.builders import T0, member, pod, podgroup

REF = gangs.GroupRef(gangs.COSCHEDULING, "ns", "g")


def gang_of(*pods: dict, state: queue.GroupState) -> queue.Unit:
    (unit,) = queue.build(pods, {REF: state}, {}, T0)
    return unit


def test_pods_outside_a_gang_are_units_of_their_own() -> None:
    units = queue.build([pod("a"), pod("b", **member("g"))], {}, {}, T0)
    assert sorted(u.label for u in units) == ["pod group ns/g", "pod ns/a"]


def test_a_gang_needs_minmember_less_the_members_that_hold_a_node() -> None:
    unit = gang_of(
        pod("a", **member("g")), state=queue.GroupState(podgroup("g", min_member=3), holding=2)
    )
    assert unit.need == 1
    assert unit.blocked is None


def test_a_gang_whose_podgroup_kind_is_not_served_waits() -> None:
    unit = gang_of(pod("a", **member("g")), state=queue.GroupState(None, served=False))
    assert unit.blocked == (
        "pod group ns/g: PodGroup scheduling.x-k8s.io/v1alpha1 is not served; waiting for it."
    )


def test_the_timeout_note_is_for_gangs_not_yet_placed() -> None:
    group = podgroup(
        "g", min_member=1, timeout=10, status={"scheduleStartTime": "2027-01-15T07:00:00Z"}
    )
    waiting = gang_of(pod("a", **member("g")), state=queue.GroupState(group))
    assert waiting.note == "scheduleTimeoutSeconds (10s) passed; still trying."
    placed = gang_of(pod("a", **member("g")), state=queue.GroupState(group, holding=1))
    assert placed.note is None


def test_fifo_ignores_priority_and_priority_order_does_not() -> None:
    early = queue.single(pod("early", created="2027-01-15T07:00:00Z"), T0)
    urgent = queue.single(pod("urgent", priority=10), T0)
    assert [u.name for u in queue.order([urgent, early], "fifo")] == ["early", "urgent"]
    assert [u.name for u in queue.order([early, urgent])] == ["urgent", "early"]
