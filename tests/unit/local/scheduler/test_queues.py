"""Volcano Queues (kubetrain.local.scheduler.queues): reading a Queue, each queue's deserved
share by the proportion plugin's water-filling, shares, admission (missing, closed, over
capability), the turns queues take, and the status written back."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubetrain.local.scheduler import messages, policy, queues
from tests.unit.local.scheduler.builders import T0, pod
from tests.unit.local.scheduler.cycles import cycle, members, vgroup

F = Fraction
EARLY = "2027-01-15T07:59:00Z"
LATE = "2027-01-15T07:59:30Z"
LONG_AGO = "2027-01-15T07:00:00Z"


def cpu(value: float | int | str) -> dict[str, Fraction]:
    return {"cpu": F(value)}


def queue_obj(
    name: str,
    *,
    weight: int | None = None,
    capability: dict[str, str] | None = None,
    reclaimable: bool | None = None,
    state: str | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if weight is not None:
        spec["weight"] = weight
    if capability is not None:
        spec["capability"] = capability
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if priority is not None:
        spec["priority"] = priority
    status = {"state": state} if state is not None else {}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": status,
    }


# --- reading --------------------------------------------------------------------------------


def test_a_queue_with_nothing_set_is_an_open_reclaimable_queue_of_weight_one() -> None:
    q = queues.Queue.of(queue_obj("team"))
    assert q == queues.Queue("team", weight=1, capability=None, reclaimable=True, state="Open")


def test_the_seed_queue_is_read_as_written() -> None:
    q = queues.Queue.of(
        queue_obj(
            "high-priority-queue",
            weight=10,
            reclaimable=False,
            capability={"cpu": "100", "memory": "500Gi", "nvidia.com/gpu": "32"},
        )
    )
    assert q.weight == 10
    assert q.reclaimable is False
    assert q.capability == {"cpu": F(100), "memory": F(500 * 2**30), "nvidia.com/gpu": F(32)}


@pytest.mark.parametrize(
    ("state", "open_"),
    [
        pytest.param(None, True, id="no state yet: open"),
        pytest.param("Open", True, id="Open"),
        pytest.param("Closed", False, id="Closed"),
        pytest.param("Closing", False, id="Closing"),
        pytest.param("Unknown", False, id="Unknown admits nothing new either"),
    ],
)
def test_only_an_open_queue_admits_new_work(state: str | None, open_: bool) -> None:
    assert queues.Queue.of(queue_obj("q", state=state)).open is open_


# --- deserved shares ------------------------------------------------------------------------

D = queues.Demand
DESERVED_CASES = [
    pytest.param(
        {"a": D(3, cpu(100)), "b": D(1, cpu(100))},
        {"a": cpu(12), "b": cpu(4)},
        id="two queues wanting more than the node share it by weight",
    ),
    pytest.param(
        {"a": D(3, cpu(2)), "b": D(1, cpu(100))},
        {"a": cpu(2), "b": cpu(14)},
        id="what a queue does not ask for goes to the others: it may borrow",
    ),
    pytest.param(
        {"a": D(1, cpu(100), cpu(3)), "b": D(1, cpu(100))},
        {"a": cpu(3), "b": cpu(13)},
        id="capability caps a queue's share and the rest goes to the others",
    ),
    pytest.param(
        {"a": D(1, cpu(100)), "idle": D(5, {})},
        {"a": cpu(16), "idle": {}},
        id="a queue asking for nothing deserves nothing, whatever its weight",
    ),
    pytest.param(
        {"a": D(1, cpu(5)), "b": D(1, cpu(5)), "c": D(2, cpu(100))},
        {"a": cpu(4), "b": cpu(4), "c": cpu(8)},
        id="every queue wants more than its weight's share: each gets exactly that",
    ),
    pytest.param(
        {"a": D(1, cpu(2)), "b": D(1, cpu(5)), "c": D(1, cpu(100))},
        {"a": cpu(2), "b": cpu(5), "c": cpu(9)},
        id="water-filling: what one leaves is shared again among the rest, round by round",
    ),
]


@pytest.mark.parametrize(("demands", "expected"), DESERVED_CASES)
def test_deserved(demands: dict[str, queues.Demand], expected: dict[str, Any]) -> None:
    assert queues.deserved(cpu(16), demands) == expected


def test_a_queue_deserves_only_the_resources_it_asks_for() -> None:
    total = {"cpu": F(16), "memory": F(64)}
    demands = {"a": D(1, {"cpu": F(100)}), "b": D(1, {"cpu": F(2), "memory": F(8)})}
    assert queues.deserved(total, demands) == {
        "a": {"cpu": F(14)},
        "b": {"cpu": F(2), "memory": F(8)},
    }


def test_shares_are_exact_and_add_up_to_the_node() -> None:
    demands = {name: D(1, cpu(100)) for name in ("a", "b", "c")}
    found = queues.deserved(cpu(10), demands)
    assert found["a"] == {"cpu": F(10, 3)}
    assert sum(d["cpu"] for d in found.values()) == 10


@pytest.mark.parametrize(
    ("allocated", "deserved", "expected"),
    [
        pytest.param({}, cpu(4), F(0), id="nothing held"),
        pytest.param(cpu(2), cpu(4), F(1, 2), id="half its share"),
        pytest.param(cpu(6), cpu(4), F(3, 2), id="above its share"),
        pytest.param(
            {"cpu": F(1), "memory": F(8)}, {"cpu": F(4), "memory": F(8)}, F(1), id="dominant"
        ),
        pytest.param(cpu(1), {}, F(1), id="something it deserves none of counts as its share"),
    ],
)
def test_share(
    allocated: dict[str, Fraction], deserved: dict[str, Fraction], expected: Fraction
) -> None:
    assert queues.share(allocated, deserved) == expected


# --- admission ------------------------------------------------------------------------------


def fair(*qs: queues.Queue, allocated: dict[str, dict[str, Fraction]] | None = None) -> queues.Fair:
    return queues.Fair.build(qs, cpu(16), allocated or {}, {})


def test_a_unit_of_a_missing_queue_waits_for_it_to_exist() -> None:
    refusal = fair(queues.Queue("default")).admit("pod group ns/a", "team-x", cpu(1), new=True)
    assert refusal == queues.Refusal(
        messages.QUEUE_NOT_FOUND,
        "pod group ns/a: queue team-x not found; waiting for it to be created.",
    )


def test_a_closed_queue_admits_nothing_new_but_lets_a_running_gang_complete_itself() -> None:
    f = fair(queues.Queue("team", state="Closed"))
    refusal = f.admit("pod group ns/a", "team", cpu(1), new=True)
    assert refusal is not None
    assert refusal.reason == messages.QUEUE_CLOSED
    assert refusal.message == (
        "pod group ns/a: queue team is Closed and admits nothing new; waiting for it to open."
    )
    assert f.admit("pod group ns/a", "team", cpu(1), new=False) is None


def test_a_unit_that_would_take_its_queue_past_its_capability_waits_saying_so() -> None:
    f = fair(queues.Queue("team", capability={"cpu": F(4)}), allocated={"team": cpu(3)})
    assert f.admit("pod group ns/small", "team", cpu(1), new=True) is None
    refusal = f.admit("pod group ns/big", "team", {"cpu": F(2), "memory": F(2**30)}, new=True)
    assert refusal is not None
    assert refusal.reason == messages.NOT_ENOUGH_RESOURCES
    assert refusal.message == (
        "queue resource quota insufficient: insufficient cpu: pod group ns/big: queue team has "
        "capability cpu=4, its running pods hold cpu=3, and this asks for cpu=2; waiting."
    )


def test_capability_caps_only_the_resources_it_lists() -> None:
    f = fair(queues.Queue("team", capability={"nvidia.com/gpu": F(1)}))
    assert f.admit("pod ns/p", "team", {"cpu": F(64), "memory": F(2**40)}, new=True) is None


def test_without_the_queue_kind_every_unit_is_in_one_queue_that_admits_everything() -> None:
    f = queues.Fair.build([], cpu(16), {}, {}, served=False)
    assert f.admit("pod group ns/a", "team-x", cpu(100), new=True) is None
    assert f.name_of("team-x") == queues.DEFAULT


def test_charging_counts_for_the_units_after() -> None:
    f = fair(queues.Queue("team", capability={"cpu": F(4)}))
    f.charge("team", cpu(3))
    assert f.admit("pod ns/p", "team", cpu(2), new=True) is not None


# --- turns ----------------------------------------------------------------------------------


def test_queues_take_turns_by_share_and_charges_move_the_turn() -> None:
    f = queues.Fair.build(
        [queues.Queue("a"), queues.Queue("b")],
        cpu(4),
        {"a": cpu(2)},
        {"a": cpu(3), "b": cpu(3)},
    )
    units = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("b", 3)]
    seen = []
    for unit in queues.Turns(units, f, lambda u: u[0], lambda u: u[1]):
        seen.append(unit)
        f.charge(unit[0], cpu(1))
    # a holds 2 of its 2 deserved: b goes first until it has caught up, then they alternate.
    assert seen == [("b", 1), ("b", 2), ("a", 1), ("b", 3), ("a", 2), ("a", 3)]


def test_a_queue_of_higher_priority_takes_its_turns_first() -> None:
    f = queues.Fair.build(
        [queues.Queue("a"), queues.Queue("vip", priority=10)],
        cpu(4),
        {"vip": cpu(4)},
        {"a": cpu(1), "vip": cpu(1)},
    )
    order = list(queues.Turns([("a", 1), ("vip", 1)], f, lambda u: u[0], lambda u: u[1]))
    assert order == [("vip", 1), ("a", 1)]


# --- status ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "unfinished", "expected"),
    [
        pytest.param({}, 0, "Open", id="a new queue opens"),
        pytest.param({"state": "Closed"}, 3, "Closed", id="closed stays closed"),
        pytest.param({"state": "Closing"}, 1, "Closing", id="closing while groups remain"),
        pytest.param({"state": "Closing"}, 0, "Closed", id="closing becomes closed once empty"),
        pytest.param({"state": "Open"}, 2, "Open", id="open stays open"),
    ],
)
def test_state(current: dict[str, str], unfinished: int, expected: str) -> None:
    assert queues.state_of(current, unfinished) == expected


def test_status_counts_groups_by_phase_and_what_the_queue_holds() -> None:
    status = queues.status(
        {},
        {"Running": 2, "Pending": 1, "Inqueue": 1, "Completed": 4},
        {"cpu": F(3, 2), "nvidia.com/gpu": F(2)},
    )
    assert status == {
        "state": "Open",
        "pending": 1,
        "inqueue": 1,
        "running": 2,
        "unknown": 0,
        "completed": 4,
        "allocated": {"cpu": "1500m", "memory": "0", "nvidia.com/gpu": "2"},
    }


# --- in a cycle ------------------------------------------------------------------------------


def test_in_a_cycle_queues_take_turns_instead_of_first_come_first_served() -> None:
    # 4 cpus; team a submitted four 1-cpu gangs before team b submitted four: with equal
    # weights each gets two.
    pending, groups = [], []
    for team, created in (("a", EARLY), ("b", LATE)):
        for i in range(4):
            name = f"{team}{i}"
            pending += members(name, 1, "1", created=created)
            groups.append(vgroup(name, 1, queue_name=team, created=created))
    qs = [queues.Queue("a"), queues.Queue("b")]
    with_queues = cycle(pending, groups=groups, queue_objs=qs)
    started = sorted(o.unit.name for o in with_queues.plan.outcomes if o.placed)
    assert started == ["a0", "a1", "b0", "b1"]
    without = cycle(pending, groups=groups)
    assert sorted(o.unit.name for o in without.plan.outcomes if o.placed) == [
        "a0",
        "a1",
        "a2",
        "a3",
    ]


def test_in_a_cycle_a_gang_its_queue_refuses_waits_and_holds_up_no_one() -> None:
    qs = [queues.Queue("team", capability={"cpu": F(2)}), queues.Queue("default")]
    found = cycle(
        [*members("big", 1, "3", created=EARLY), pod("later", cpu="1", created=LATE)],
        groups=[vgroup("big", 1, queue_name="team", created=EARLY)],
        queue_objs=qs,
    )
    big = found.plan.outcome("pod group ns/big")
    assert big is not None
    assert big.why == policy.QUEUE
    assert big.message is not None
    assert big.message.startswith("queue resource quota insufficient: insufficient cpu: ")
    assert [o.unit.name for o in found.plan.outcomes if o.placed] == ["later"]


def test_in_a_cycle_a_gang_of_a_missing_queue_waits_for_it() -> None:
    found = cycle(
        members("g", 1, "1"),
        groups=[vgroup("g", 1, queue_name="nowhere")],
        queue_objs=[queues.Queue("default")],
    )
    outcome = found.plan.outcome("pod group ns/g")
    assert outcome is not None
    assert outcome.refusal is not None
    assert outcome.refusal.reason == messages.QUEUE_NOT_FOUND
    assert not outcome.placed


# --- what a queue held lately ----------------------------------------------------------------


def test_what_a_queue_held_lately_is_an_average_with_a_half_life() -> None:
    assert queues.held_lately({}, cpu(8), 10.0, 10.0) == cpu(4), "half of it after one half-life"
    assert queues.held_lately(cpu(8), {}, 20.0, 10.0) == cpu(2), "a quarter left after two"
    assert queues.held_lately(cpu(4), cpu(4), 123.0, 10.0) == cpu(4), "steady stays steady"


def test_what_a_queue_held_lately_is_read_from_its_status_as_of_now() -> None:
    obj = queue_obj("team")
    obj["status"] = {
        "allocated": {"cpu": "8"},
        "fairSharing": {"consumedResources": {"cpu": "0"}, "lastUpdate": "2027-01-15T08:00:00Z"},
    }
    assert queues.history_of(obj, T0 + 600, 600.0) == cpu(4)
    assert queues.history_of(queue_obj("new"), T0, 600.0) is None


def test_turns_go_by_what_queues_held_lately_so_a_gang_sized_gap_does_not_lock_in() -> None:
    # At this moment a holds 8 of its 10, b 4 of its 6.67 (its gang just ended): by the
    # moment b is lower and would take the room back, as it does every time. Lately,
    # though, b held 8 (over its share) and a 8 (under): a's turn.
    qs = [queues.Queue("a", weight=3), queues.Queue("b", weight=2)]
    demand = {"a": cpu(100), "b": cpu(100)}
    now = {"a": cpu(8), "b": cpu(4)}
    fair = queues.Fair.build(qs, cpu(16 + 4 / 3), now, demand, history={"a": cpu(8), "b": cpu(8)})
    assert fair.share("b") < fair.share("a")
    assert fair.standing("a") < fair.standing("b")
    order = list(queues.Turns([("a", 1), ("b", 1)], fair, lambda u: u[0], lambda u: u[1]))
    assert order == [("a", 1), ("b", 1)]


def test_status_records_what_the_queue_held_lately_as_of_now() -> None:
    assert queues.fair_sharing(cpu("7.5"), "2027-01-15T08:00:00Z") == {
        "consumedResources": {"cpu": "7500m"},
        "lastUpdate": "2027-01-15T08:00:00Z",
    }


def test_a_queue_over_its_share_may_not_take_the_room_an_owed_queue_waits_for() -> None:
    # 4 CPUs. rich runs 2 until T0+10 and has 2 more to start, for 5 s: they fit now and end
    # before owed's gang of 4, reserved from T0+10, which has waited long enough that a
    # backfill of 5 s would be let in. But rich holds its share, and owed is owed its own.
    qs = [queues.Queue("rich"), queues.Queue("owed")]
    groups = [
        vgroup("big", 1, queue_name="owed", created=LONG_AGO),
        vgroup("run", 1, queue_name="rich"),
        vgroup("more", 1, queue_name="rich"),
    ]
    pending = [*members("big", 1, "4", created=LONG_AGO), *members("more", 1, "2", runtime=5)]
    bound = members("run", 1, "2", running=True, runtime=70)  # started a minute ago: 10 s left
    with_queues = cycle(pending, bound=bound, groups=groups, queue_objs=qs)
    more = with_queues.plan.outcome("pod group ns/more")
    assert more is not None
    assert not more.placed
    assert more.message == (
        "pod group ns/more waits behind pod group ns/big: queue rich is at 100% of its fair share."
    )
    without = cycle(pending, bound=bound, groups=groups)
    assert [o.unit.name for o in without.plan.outcomes if o.placed] == ["more"]
