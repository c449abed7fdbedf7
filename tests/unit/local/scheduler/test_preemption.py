"""Preemption and reclaim (kubetrain.local.scheduler.preemption), fed as the controller feeds
it: a cycle's plan, the running units, the pods being deleted and the queues. Victims are
whole gangs; preemption is by priority within a queue; reclaim takes back what a reclaimable
queue holds above its share; nothing is evicted for a unit that still would not fit."""

from __future__ import annotations

from fractions import Fraction

from kubetrain.local.scheduler import policy, queues
from tests.unit.local.scheduler.builders import node, pod
from tests.unit.local.scheduler.cycles import LATER_START, STARTED, Cycle, cycle, members, vgroup

# --- priority preemption ----------------------------------------------------------------------


def test_a_higher_priority_gang_evicts_a_whole_lower_priority_gang() -> None:
    found = cycle(
        members("hi", 2, "2"),
        bound=members("lo", 2, "2", running=True),
        groups=[vgroup("hi", 2, priority_class="urgent"), vgroup("lo", 2)],
        priority_classes={"urgent": 1000},
    )
    assert found.preemptors() == ["pod group ns/hi"]
    assert found.evicted() == [["pod group ns/lo"]]
    victim = found.decision.evictions[0].victims[0]
    assert sorted(p.name for p, _ in victim.pods) == ["lo-0", "lo-1"], "every pod of the gang"
    assert found.decision.evictions[0].why[victim.key] == "priority 1000 over 0 in queue default"


def test_only_the_victims_needed_are_taken_the_newest_of_the_lowest_first() -> None:
    bound = [
        *members("old", 1, "2", running=True, started=STARTED),
        *members("new", 1, "2", running=True, started=LATER_START),
    ]
    found = cycle(
        members("hi", 1, "2"),
        bound=bound,
        groups=[vgroup("hi", 1, priority_class="urgent"), vgroup("old", 1), vgroup("new", 1)],
        priority_classes={"urgent": 1000},
    )
    assert found.evicted() == [["pod group ns/new"]]


def test_the_lowest_priority_goes_before_the_newest() -> None:
    bound = [
        *members("mid", 1, "2", running=True, started=LATER_START),
        *members("low", 1, "2", running=True, started=STARTED),
    ]
    found = cycle(
        members("hi", 1, "2"),
        bound=bound,
        groups=[
            vgroup("hi", 1, priority_class="urgent"),
            vgroup("mid", 1, priority_class="mid"),
            vgroup("low", 1),
        ],
        priority_classes={"urgent": 1000, "mid": 10},
    )
    assert found.evicted() == [["pod group ns/low"]]


def test_victims_found_on_the_way_but_not_needed_in_the_end_are_spared() -> None:
    # Newest first: small (1 cpu) then big (3 cpu). With both gone the preemptor (3 cpu)
    # fits; without small it still fits, so small is spared.
    bound = [
        *members("big", 1, "3", running=True, started=STARTED),
        *members("small", 1, "1", running=True, started=LATER_START),
    ]
    found = cycle(
        members("hi", 1, "3"),
        bound=bound,
        groups=[vgroup("hi", 1, priority_class="urgent"), vgroup("big", 1), vgroup("small", 1)],
        priority_classes={"urgent": 1000},
    )
    assert found.evicted() == [["pod group ns/big"]]


def test_equal_or_higher_priority_is_never_evicted() -> None:
    found = cycle(
        members("hi", 2, "2"),
        bound=members("peer", 2, "2", running=True),
        groups=[
            vgroup("hi", 2, priority_class="urgent"),
            vgroup("peer", 2, priority_class="urgent"),
        ],
        priority_classes={"urgent": 1000},
    )
    assert found.evicted() == []


def test_preemption_policy_never_evicts_nothing() -> None:
    found = cycle(
        members("hi", 2, "2"),
        bound=members("lo", 2, "2", running=True),
        groups=[vgroup("hi", 2, priority_class="polite"), vgroup("lo", 2)],
        priority_classes={"polite": 1000},
        never=["polite"],
    )
    assert found.evicted() == []


def test_a_pod_with_preemption_policy_never_evicts_nothing() -> None:
    hi = pod("hi", cpu="4", priority=1000)
    hi["spec"]["preemptionPolicy"] = "Never"
    found = cycle([hi], bound=[pod("lo", cpu="2", node="n1", phase="Running")])
    assert found.evicted() == []


def test_nothing_is_evicted_for_a_unit_that_would_still_not_fit() -> None:
    # 4 cpus: a lower-priority gang holds 2, a higher one holds 2; the preemptor needs 4.
    bound = [*members("lo", 1, "2", running=True), *members("top", 1, "2", running=True)]
    found = cycle(
        members("hi", 1, "4"),
        bound=bound,
        groups=[
            vgroup("hi", 1, priority_class="urgent"),
            vgroup("lo", 1),
            vgroup("top", 1, priority_class="top"),
        ],
        priority_classes={"urgent": 1000, "top": 2000},
    )
    assert found.evicted() == []


def test_a_single_pod_preempts_and_is_preempted_as_kube_scheduler_would() -> None:
    found = cycle(
        [pod("hi", cpu="3", priority=100)],
        bound=[pod("lo", cpu="2", node="n1", phase="Running", started=STARTED)],
    )
    assert found.evicted() == [["pod ns/lo"]]


def test_pods_being_deleted_count_as_gone_and_no_more_is_evicted() -> None:
    # 6 cpus: lo (2 x 2) is being deleted, other (2) runs; hi (2 x 1) fits once lo is gone.
    # Counting lo as still there, hi would evict other.
    lo = members("lo", 2, "2", running=True)
    for p in lo:
        p["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z"
    found = cycle(
        members("hi", 2, "1"),
        bound=[*lo, *members("other", 1, "2", running=True)],
        groups=[vgroup("hi", 2, priority_class="urgent"), vgroup("lo", 2), vgroup("other", 1)],
        priority_classes={"urgent": 1000},
        nodes=[node(cpu="6")],
    )
    assert found.evicted() == []
    outcome = found.plan.outcome("pod group ns/hi")
    assert outcome is not None
    assert not outcome.placed
    assert found.decision.notes[id(outcome.unit)] == (
        "pod group ns/hi fits once 2 pods being evicted have ended; waiting for them."
    )


def test_two_preemptors_never_count_on_the_same_room() -> None:
    # 4 cpus held by two low gangs of 2; two urgent gangs of 2 each: one victim each.
    bound = [
        *members("lo1", 1, "2", running=True, started=STARTED),
        *members("lo2", 1, "2", running=True, started=LATER_START),
    ]
    found = cycle(
        [*members("a", 1, "2"), *members("b", 1, "2")],
        bound=bound,
        groups=[
            vgroup("a", 1, priority_class="urgent"),
            vgroup("b", 1, priority_class="urgent"),
            vgroup("lo1", 1),
            vgroup("lo2", 1),
        ],
        priority_classes={"urgent": 1000},
    )
    assert found.evicted() == [["pod group ns/lo2"], ["pod group ns/lo1"]]


def test_a_gang_over_its_queues_capability_may_evict_lower_priority_work_of_that_queue() -> None:
    team = queues.Queue("team", capability={"cpu": Fraction(2)})
    found = cycle(
        members("hi", 1, "2"),
        bound=members("lo", 1, "2", running=True),
        groups=[
            vgroup("hi", 1, queue_name="team", priority_class="urgent"),
            vgroup("lo", 1, queue_name="team"),
        ],
        priority_classes={"urgent": 1000},
        queue_objs=[team],
        nodes=[node(cpu="8")],
    )
    outcome = found.plan.outcome("pod group ns/hi")
    assert outcome is not None
    assert outcome.why == policy.QUEUE
    assert found.evicted() == [["pod group ns/lo"]]


# --- across queues ----------------------------------------------------------------------------


def test_priority_does_not_preempt_across_queues() -> None:
    qs = [queues.Queue("a"), queues.Queue("b", reclaimable=False)]
    found = cycle(
        members("hi", 2, "2"),
        bound=members("lo", 2, "2", running=True),
        groups=[
            vgroup("hi", 2, queue_name="a", priority_class="urgent"),
            vgroup("lo", 2, queue_name="b"),
        ],
        priority_classes={"urgent": 1000},
        queue_objs=qs,
    )
    assert found.evicted() == []


def reclaim_case(*, reclaimable: bool = True, lender_gangs: int = 2) -> Cycle:
    """Queue ``lender`` runs ``lender_gangs`` gangs of 2 cpus on 4; ``owner`` (weight 1 too)
    has one gang of 2 waiting."""
    qs = [queues.Queue("owner"), queues.Queue("lender", reclaimable=reclaimable)]
    bound = []
    groups = [vgroup("mine", 1, queue_name="owner")]
    for i in range(lender_gangs):
        bound += members(f"lent{i}", 1, "2", running=True)
        groups.append(vgroup(f"lent{i}", 1, queue_name="lender"))
    return cycle(members("mine", 1, "2"), bound=bound, groups=groups, queue_objs=qs)


def test_a_queue_under_its_share_reclaims_from_a_reclaimable_queue_over_its_own() -> None:
    found = reclaim_case()
    assert found.evicted() == [["pod group ns/lent0"]]
    eviction = found.decision.evictions[0]
    assert eviction.why[eviction.victims[0].key] == (
        "queue owner (at 0% of its fair share) reclaims from queue lender (at 200%), which lent it"
    )


def test_a_queue_that_is_not_reclaimable_keeps_what_it_borrowed() -> None:
    assert reclaim_case(reclaimable=False).evicted() == []


def test_a_queue_within_its_share_is_not_reclaimed_from() -> None:
    # 6 cpus: lender holds 3, its share; owner wants 4 and waits for room like anyone else.
    qs = [queues.Queue("owner"), queues.Queue("lender")]
    found = cycle(
        members("mine", 1, "4"),
        bound=members("lent", 1, "3", running=True),
        groups=[vgroup("mine", 1, queue_name="owner"), vgroup("lent", 1, queue_name="lender")],
        queue_objs=qs,
        nodes=[node(cpu="6")],
    )
    assert found.evicted() == []


def test_a_reclaim_must_bring_both_queues_nearer_their_shares() -> None:
    # lender (weight 1) runs one gang of 6 on 8 cpus; owner (weight 1) wants 4: both
    # deserve 4. Taking the 6 would leave lender at 0% and owner at 100%: no nearer.
    qs = [queues.Queue("owner"), queues.Queue("lender")]
    found = cycle(
        members("mine", 1, "4"),
        bound=members("lent", 1, "6", running=True),
        groups=[vgroup("mine", 1, queue_name="owner"), vgroup("lent", 1, queue_name="lender")],
        queue_objs=qs,
        nodes=[node(cpu="8")],
    )
    assert found.evicted() == []


def test_a_lender_may_end_a_little_below_its_share_when_the_owner_gets_just_its_own() -> None:
    # 20 cpus; lender runs five gangs of 4 while owner wants 2: owner deserves 2, lender 18.
    # Taking one gang leaves lender at 16 of 18 and gives owner its 2: both nearer.
    qs = [queues.Queue("owner"), queues.Queue("lender")]
    bound, groups = [], [vgroup("mine", 1, queue_name="owner")]
    for i in range(5):
        bound += members(f"lent{i}", 1, "4", running=True)
        groups.append(vgroup(f"lent{i}", 1, queue_name="lender"))
    found = cycle(
        members("mine", 1, "2"), bound=bound, groups=groups, queue_objs=qs, nodes=[node(cpu="20")]
    )
    assert [len(v) for v in found.evicted()] == [1]


def test_a_gang_started_after_the_owner_began_to_wait_got_its_room_fairly_and_stays() -> None:
    # As in the reclaim case above, but the lender's gangs started after "mine" was
    # submitted: the turns gave them the room while it waited, so it is not taken back.
    qs = [queues.Queue("owner"), queues.Queue("lender")]
    bound, groups = [], [vgroup("mine", 1, queue_name="owner")]
    for i in range(2):
        bound += members(f"lent{i}", 1, "2", running=True, started="2027-01-15T08:00:00Z")
        groups.append(vgroup(f"lent{i}", 1, queue_name="lender"))
    waiting = members("mine", 1, "2", created="2027-01-15T07:59:50Z")
    assert cycle(waiting, bound=bound, groups=groups, queue_objs=qs).evicted() == []


def test_two_queues_that_had_alike_lately_are_left_to_their_turns() -> None:
    # lender holds 4 of its 2 now, but lately both queues held about their shares.
    qs = [queues.Queue("owner"), queues.Queue("lender")]
    bound, groups = [], [vgroup("mine", 1, queue_name="owner")]
    for i in range(2):
        bound += members(f"lent{i}", 1, "2", running=True)
        groups.append(vgroup(f"lent{i}", 1, queue_name="lender"))
    lately = {"owner": {"cpu": Fraction(2)}, "lender": {"cpu": Fraction(2)}}
    found = cycle(
        members("mine", 1, "2"), bound=bound, groups=groups, queue_objs=qs, history=lately
    )
    assert found.evicted() == []
