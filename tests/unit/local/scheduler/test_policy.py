"""One scheduling cycle's decisions (kubetrain.local.scheduler.policy): priority then
submission order, gangs all or nothing, quotas for a whole gang, and conservative backfill
(every waiting unit reserves) with a backfill's hold-up of a reserved unit bounded by that
unit's wait so far."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from kubetrain.local.scheduler import amounts, estimates, fit, gangs, policy, queue, quotas
from tests.unit.local.scheduler.builders import T0, member, node, pod, podgroup

LATER = "2027-01-15T08:00:05Z"
EARLIER = "2027-01-15T07:59:55Z"  # 5 s before T0
HOUR_AGO = "2027-01-15T07:00:00Z"


def decide(
    pending: Iterable[dict[str, Any]],
    *,
    nodes: Sequence[dict[str, Any]] = (),
    bound: Iterable[dict[str, Any]] = (),
    groups: Iterable[dict[str, Any]] = (),
    priority_classes: Mapping[str, int] | None = None,
    quota_objs: Iterable[dict[str, Any]] = (),
    now: float = T0,
    options: policy.Options | None = None,
) -> policy.Plan:
    """What the controller feeds the policy, built from stored objects."""
    nodes = list(nodes) or [node()]
    holding: dict[str, list[fit.PodInfo]] = {n["metadata"]["name"]: [] for n in nodes}
    running: list[policy.Running] = []
    used: dict[str, amounts.Amounts] = {}
    bound = list(bound)
    for p in bound:
        if p["status"]["phase"] in ("Succeeded", "Failed"):
            continue
        info = fit.PodInfo.of(p)
        holding[p["spec"]["nodeName"]].append(info)
        running.append(policy.Running(p["spec"]["nodeName"], info, estimates.expected_end(p, now)))
        ns = p["metadata"]["namespace"]
        used[ns] = amounts.add(used.get(ns, {}), quotas.usage(p))
    states = {}
    for g in groups:
        ref = gangs.ref_of(g["apiVersion"], g)
        held = sum(
            1 for p in bound if gangs.group_of(p) == ref and p["status"]["phase"] != "Failed"
        )
        states[ref] = queue.GroupState(g, holding=held)
    units = queue.build(pending, states, priority_classes or {}, now)
    node_infos = [fit.NodeInfo.of(n, holding[n["metadata"]["name"]]) for n in nodes]
    return policy.plan(
        units,
        node_infos,
        running,
        now,
        quota_list=[quotas.Quota.of(q) for q in quota_objs],
        quota_used=used,
        options=options,
    )


def bound_names(plan: policy.Plan) -> list[str]:
    return [info.name for info, _ in plan.binds]


def message(plan: policy.Plan, label: str) -> str | None:
    outcome = plan.outcome(label)
    assert outcome is not None, f"no outcome for {label}"
    return outcome.message


def running_pod(name: str, cpu: str, *, runtime: float | None = None, **kw: Any) -> dict[str, Any]:
    """A pod bound at T0 to n1, running, with an expected runtime from T0."""
    return pod(
        name,
        cpu=cpu,
        node="n1",
        phase="Running",
        started="2027-01-15T08:00:00Z",
        runtime=runtime,
        **kw,
    )


def gang_pods(group: str, count: int, cpu: str, **kw: Any) -> list[dict[str, Any]]:
    return [pod(f"{group}-{i}", cpu=cpu, **member(group), **kw) for i in range(count)]


# --- ordering ---------------------------------------------------------------------------------

ORDER_CASES = [
    pytest.param(
        [pod("low", cpu="2", created=EARLIER), pod("high", cpu="2", priority=100, created=LATER)],
        ["high"],
        id="a higher priority pod goes first though submitted later",
    ),
    pytest.param(
        [pod("second", cpu="2", created=LATER), pod("first", cpu="2", created=EARLIER)],
        ["first"],
        id="at equal priority the earlier submission goes first",
    ),
    pytest.param(
        [pod("b", cpu="2"), pod("a", cpu="2")],
        ["a"],
        id="submitted in the same second, the name decides",
    ),
    pytest.param(
        [pod("big", cpu="64", priority=100), pod("small", cpu="1")],
        ["small"],
        id="a pod that fits no node however empty holds up no one",
    ),
]


@pytest.mark.parametrize(("pending", "expected"), ORDER_CASES)
def test_order(pending: list[dict[str, Any]], expected: list[str]) -> None:
    plan = decide(pending, nodes=[node(cpu="2")])
    assert bound_names(plan) == expected


def test_a_gang_takes_its_priority_from_its_volcano_priority_class() -> None:
    pending = [
        pod("solo", cpu="2", priority=50),
        *[pod(f"g-{i}", cpu="1", **member("g", volcano=True)) for i in range(2)],
    ]
    plan = decide(
        pending,
        nodes=[node(cpu="2")],
        groups=[podgroup("g", min_member=2, volcano=True, priority_class="urgent")],
        priority_classes={"urgent": 1000},
    )
    assert sorted(bound_names(plan)) == ["g-0", "g-1"]


def test_a_gang_is_ordered_by_its_podgroups_creation() -> None:
    pending = [pod("solo", cpu="2", created=EARLIER), *gang_pods("g", 2, "1", created=LATER)]
    plan = decide(
        pending,
        nodes=[node(cpu="2")],
        groups=[podgroup("g", min_member=2, created="2027-01-15T07:00:00Z")],
    )
    assert sorted(bound_names(plan)) == ["g-0", "g-1"]


# --- gangs ------------------------------------------------------------------------------------


def test_a_gang_that_does_not_fit_as_a_whole_binds_no_pod() -> None:
    plan = decide(
        gang_pods("g", 4, "1"), nodes=[node(cpu="3")], groups=[podgroup("g", min_member=4)]
    )
    assert bound_names(plan) == []
    assert message(plan, "pod group ns/g") == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "pod group ns/g: 3/4 pods can be placed; waiting for the whole gang."
    )


def test_a_gang_that_fits_binds_every_pod() -> None:
    plan = decide(
        gang_pods("g", 4, "1"), nodes=[node(cpu="4")], groups=[podgroup("g", min_member=4)]
    )
    assert sorted(bound_names(plan)) == ["g-0", "g-1", "g-2", "g-3"]


def test_a_gang_is_spread_over_nodes_when_no_single_node_holds_it() -> None:
    plan = decide(
        gang_pods("g", 4, "2"),
        nodes=[node("n1", cpu="4"), node("n2", cpu="4")],
        groups=[podgroup("g", min_member=4)],
    )
    assert sorted(n for _, n in plan.binds) == ["n1", "n1", "n2", "n2"]


def test_with_minmember_below_the_pod_count_the_pods_that_fit_start() -> None:
    plan = decide(
        gang_pods("g", 3, "2"), nodes=[node(cpu="4")], groups=[podgroup("g", min_member=2)]
    )
    assert sorted(bound_names(plan)) == ["g-0", "g-1"]
    assert message(plan, "pod group ns/g") == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_gang_with_fewer_pods_than_minmember_waits_and_holds_up_no_one() -> None:
    pending = [*gang_pods("g", 2, "1", created=EARLIER), pod("later", cpu="1", created=LATER)]
    plan = decide(pending, nodes=[node(cpu="4")], groups=[podgroup("g", min_member=3)])
    assert bound_names(plan) == ["later"]
    assert message(plan, "pod group ns/g") == (
        "pod group ns/g: fewer pods than minMember (3) exist; waiting for the rest."
    )


def test_a_recreated_member_of_a_running_gang_starts_alone() -> None:
    bound = [pod(f"g-{i}", cpu="1", node="n1", phase="Running", **member("g")) for i in range(3)]
    plan = decide(
        [pod("g-3", cpu="1", **member("g"))], bound=bound, groups=[podgroup("g", min_member=4)]
    )
    assert bound_names(plan) == ["g-3"]


def test_pods_of_a_podgroup_that_does_not_exist_wait_for_it() -> None:
    plan = decide(gang_pods("ghost", 2, "1"))
    assert bound_names(plan) == []
    assert message(plan, "pod group ns/ghost") == "pod group ns/ghost not found; waiting for it."


def test_a_gang_waits_while_its_minresources_exceed_what_is_free() -> None:
    group = podgroup("g", min_member=1, min_resources={"cpu": "4"})
    plan = decide(gang_pods("g", 1, "1"), bound=[running_pod("r", "1")], groups=[group])
    assert bound_names(plan) == []
    assert "minResources (cpu=4)" in (message(plan, "pod group ns/g") or "")


def test_a_timed_out_gang_says_so_and_keeps_trying() -> None:
    group = podgroup(
        "g", min_member=2, timeout=60, status={"scheduleStartTime": "2027-01-15T07:58:00Z"}
    )
    plan = decide(gang_pods("g", 2, "3"), groups=[group])
    assert message(plan, "pod group ns/g") == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "pod group ns/g: 1/2 pods can be placed; waiting for the whole gang. "
        "scheduleTimeoutSeconds (60s) passed; still trying."
    )


# --- quotas -----------------------------------------------------------------------------------


def quota(hard: dict[str, str], namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": "q", "namespace": namespace}, "spec": {"hard": hard}}


def test_a_gang_is_admitted_only_if_all_its_pods_fit_the_quota_together() -> None:
    pending = [*gang_pods("g", 2, "1"), pod("other", "elsewhere", cpu="1")]
    plan = decide(
        pending,
        bound=[running_pod("r", "2")],
        groups=[podgroup("g", min_member=2)],
        quota_objs=[quota({"requests.cpu": "3"})],
    )
    assert bound_names(plan) == ["other"]
    assert message(plan, "pod group ns/g") == (
        "pod group ns/g: exceeded quota: q, requested: requests.cpu=2, used: requests.cpu=2, "
        "limited: requests.cpu=3"
    )


def test_two_gangs_that_each_fit_the_quota_but_not_together() -> None:
    pending = [*gang_pods("a", 2, "1"), *gang_pods("b", 2, "1")]
    plan = decide(
        pending,
        groups=[podgroup("a", min_member=2), podgroup("b", min_member=2)],
        quota_objs=[quota({"cpu": "3", "pods": "10"})],
    )
    assert sorted(bound_names(plan)) == ["a-0", "a-1"]
    assert (message(plan, "pod group ns/b") or "").startswith("pod group ns/b: exceeded quota: q")


# --- backfill ---------------------------------------------------------------------------------


def head_and(
    small: dict[str, Any],
    *,
    node_cpu: str = "4",
    running_cpu: str = "3",
    head_cpu: str = "2",
    head_pods: int = 2,
    running_runtime: float | None = 300,
    head_created: str = HOUR_AGO,
    **kw: Any,
) -> policy.Plan:
    """A running pod, a gang first in the queue that does not fit, and ``small`` after it.
    The head has waited an hour unless ``head_created`` says otherwise, so that the bound on
    hold-ups only matters where a case asks for it."""
    head = gang_pods("head", head_pods, head_cpu, created=head_created)
    return decide(
        [*head, small],
        nodes=[node(cpu=node_cpu)],
        bound=[running_pod("r", running_cpu, runtime=running_runtime)],
        groups=[podgroup("head", min_member=head_pods, created=head_created)],
        **kw,
    )


DENIED_BY_HEAD = (
    "pod ns/small fits now, but starting it could delay pod group ns/head, which is ahead of "
    "it in the queue and has the resources reserved; waiting."
)

BACKFILL_CASES = [
    pytest.param(
        {"runtime": 10},
        {},
        True,
        id="a small job that ends before the head's reservation starts now",
    ),
    pytest.param(
        {"runtime": 1000},
        {},
        False,
        id="a small job that would still run at the reservation and take the head's room waits",
    ),
    pytest.param(
        {},
        {},
        False,
        id="a small job without an estimate is taken as running for ever, so it waits",
    ),
    pytest.param(
        {"deadline": 10},
        {},
        True,
        id="activeDeadlineSeconds is an estimate too",
    ),
    pytest.param(
        {},
        {"node_cpu": "6", "running_cpu": "4", "head_cpu": "2"},
        True,
        id="a job without an estimate may start if it fits beside the reserved head",
    ),
    pytest.param(
        {"runtime": 10},
        {"running_runtime": None},
        False,
        id="with a running pod of unknown end the reservation is unknown: ending soon is no excuse",
    ),
    pytest.param(
        {},
        {
            "node_cpu": "6",
            "running_cpu": "2",
            "head_cpu": "5",
            "head_pods": 1,
            "running_runtime": None,
        },
        True,
        id="with an unknown reservation a job may use only what the head never needs",
    ),
    # The bound: the head below has waited 5 s.
    pytest.param(
        {"runtime": 10},
        {"head_created": EARLIER},
        False,
        id="a job longer than the head has waited may not take the head's room, though it "
        "would end before the reservation",
    ),
    pytest.param(
        {"runtime": 5},
        {"head_created": EARLIER},
        True,
        id="a job no longer than the head has waited may take its room until the reservation",
    ),
    pytest.param(
        {"runtime": 10},
        {"head_created": EARLIER, "node_cpu": "6", "running_cpu": "4"},
        True,
        id="a job longer than the head has waited may start where it leaves the head's room free",
    ),
    pytest.param(
        {"runtime": 10},
        {"head_created": LATER},
        False,
        id="a head stamped later than now (clock skew) has waited nothing",
    ),
]


@pytest.mark.parametrize(("small_kw", "setup", "starts"), BACKFILL_CASES)
def test_backfill(small_kw: dict[str, Any], setup: dict[str, Any], starts: bool) -> None:
    small = pod("small", cpu="1", created=LATER, **small_kw)
    plan = head_and(small, **setup)
    head = plan.outcome("pod group ns/head")
    assert head is not None
    assert not head.placed, "the head must not fit now in these cases"
    assert plan.reservation is not None
    assert plan.reservation.unit is head.unit
    assert head.reservation is plan.reservation
    outcome = plan.outcome("pod ns/small")
    assert outcome is not None
    assert bool(outcome.placed) is starts
    if starts:
        assert outcome.backfilled
    else:
        assert outcome.message == DENIED_BY_HEAD


def behind_two(small_runtime: float, *, mid_created: str = HOUR_AGO) -> policy.Plan:
    """A node of 5 CPUs with r1 (2 CPUs, ends at +100) and r2 (2 CPUs, ends at +300) on it;
    waiting: ``big`` (5 CPUs, reserved from +300), then ``mid`` (3 CPUs for 150 s, which fits
    from +100 to +250, in the hole before big's reservation), then ``small`` (1 CPU), which
    fits now."""
    return decide(
        [
            pod("big", cpu="5", runtime=100, created=HOUR_AGO),
            pod("mid", cpu="3", runtime=150, created=mid_created),
            pod("small", cpu="1", runtime=small_runtime, created=LATER),
        ],
        nodes=[node(cpu="5")],
        bound=[running_pod("r1", "2", runtime=100), running_pod("r2", "2", runtime=300)],
    )


def test_every_waiting_unit_holds_a_reservation_in_queue_order() -> None:
    plan = behind_two(small_runtime=1000)
    assert [(r.unit.name, r.start - T0, r.end - T0) for r in plan.reservations] == [
        ("big", 300, 400),
        ("mid", 100, 250),
        ("small", 400, 1400),
    ]
    small = plan.outcome("pod ns/small")
    assert small is not None
    assert small.reservation is plan.reservations[2]


DENIED_BY_MID = (
    "pod ns/small fits now, but starting it could delay pod ns/mid, which is ahead of it in "
    "the queue and has the resources reserved; waiting."
)

CONSERVATIVE_CASES = [
    pytest.param(
        90,
        {},
        None,
        id="a job that ends before every reservation starts",
    ),
    pytest.param(
        150,
        {},
        DENIED_BY_MID,
        id="a job that would end before the head's reservation but run into the second "
        "unit's waits (EASY would have started it)",
    ),
    pytest.param(
        90,
        {"mid_created": EARLIER},
        DENIED_BY_MID,
        id="the bound on hold-ups protects the second unit too: it has waited 5 s, less than "
        "the job's 90 s",
    ),
]


@pytest.mark.parametrize(("runtime", "setup", "denied"), CONSERVATIVE_CASES)
def test_a_backfill_may_delay_no_reservation(
    runtime: float, setup: dict[str, Any], denied: str | None
) -> None:
    plan = behind_two(runtime, **setup)
    assert [r.unit.name for r in plan.reservations[:2]] == ["big", "mid"]
    outcome = plan.outcome("pod ns/small")
    assert outcome is not None
    if denied is None:
        assert bound_names(plan) == ["small"]
        assert outcome.backfilled
    else:
        assert bound_names(plan) == []
        assert outcome.message == denied
        assert outcome.reservation is not None, "a job denied now reserves like any other"


def test_units_of_one_shape_reserve_one_after_another() -> None:
    pending = [pod(f"p{i}", cpu="2", runtime=50, created=HOUR_AGO) for i in range(3)]
    plan = decide(pending, nodes=[node(cpu="2")], bound=[running_pod("r", "2", runtime=100)])
    assert [(r.unit.name, r.start - T0) for r in plan.reservations] == [
        ("p0", 100),
        ("p1", 150),
        ("p2", 200),
    ]


def test_a_unit_that_fits_nowhere_on_the_timeline_reserves_once_every_running_pod_ended() -> None:
    plan = decide(
        [pod("head", cpu="4", created=HOUR_AGO), pod("next", cpu="4", created=HOUR_AGO)],
        bound=[running_pod("r", "1", runtime=None)],
    )
    head, following = plan.outcome("pod ns/head"), plan.outcome("pod ns/next")
    assert head is not None
    assert head.reservation is not None
    assert head.reservation.start == policy.FOREVER
    assert following is not None
    assert following.reservation is None, "the unknown start is the head's: no room beside it"


def test_the_reservation_is_at_the_first_end_after_which_the_head_fits() -> None:
    plan = decide(
        [pod("head", cpu="4", created=EARLIER)],
        bound=[
            running_pod("r1", "1", runtime=100),
            running_pod("r2", "2", runtime=200),
            running_pod("r3", "1", runtime=None),
        ],
        nodes=[node(cpu="5")],
    )
    assert plan.reservation is not None
    assert plan.reservation.start == T0 + 200


def test_a_running_pod_past_its_estimate_is_taken_as_running_for_ever() -> None:
    overrun = pod(
        "r", cpu="3", node="n1", phase="Running", started="2027-01-15T07:00:00Z", runtime=60
    )
    plan = decide([pod("head", cpu="4", created=EARLIER)], bound=[overrun])
    assert plan.reservation is not None
    assert plan.reservation.start == policy.FOREVER


def test_backfilled_jobs_together_cannot_delay_the_head() -> None:
    pending = [
        pod("head", cpu="5", created=EARLIER),
        pod("s1", cpu="1", created=LATER),
        pod("s2", cpu="1", created=LATER),
    ]
    plan = decide(pending, nodes=[node(cpu="6")], bound=[running_pod("r", "4", runtime=300)])
    assert bound_names(plan) == ["s1"]


def test_a_higher_priority_job_that_fits_is_not_a_backfill() -> None:
    pending = [
        pod("head", cpu="4", created=EARLIER),
        pod("urgent", cpu="1", priority=10, created=LATER),
    ]
    plan = decide(pending, bound=[running_pod("r", "3", runtime=300)])
    urgent = plan.outcome("pod ns/urgent")
    assert urgent is not None
    assert urgent.placed
    assert not urgent.backfilled


def test_strict_fifo_lets_the_head_block_everyone() -> None:
    pending = [
        pod("head", cpu="4", created=EARLIER),
        pod("small", cpu="1", runtime=1, created=LATER),
    ]
    plan = decide(
        pending,
        bound=[running_pod("r", "3", runtime=300)],
        options=policy.Options("fifo", backfill=False),
    )
    assert bound_names(plan) == []
    assert (
        message(plan, "pod ns/small")
        == "pod ns/small waits behind pod ns/head, which is first in the queue."
    )


def test_with_no_nodes_kube_says_so() -> None:
    plan = policy.plan(queue.build([pod("p", cpu="1")], {}, {}, T0), [], [], T0)
    assert message(plan, "pod ns/p") == "no nodes available to schedule pods"
