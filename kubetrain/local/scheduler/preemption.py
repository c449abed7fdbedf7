"""Preemption and reclaim: which running units to evict so that a waiting one can start.

Victims are whole units: every pod of a gang that holds a node (never a part of one), or one
pod outside a gang. They are evicted as kube-scheduler evicts: a ``DisruptionTarget``
condition, then a delete, so their jobs restart as their restart policies say (the
controller does the writing).

**Who may evict.** A unit the cycle left waiting because it does not fit the nodes, or its
queue's capability, and whose PriorityClass (or pods) does not say ``preemptionPolicy:
Never``.

**Whom.** Two kinds of victims, as Volcano's ``preempt`` and ``reclaim`` actions split them:

- *priority*: a unit of the same queue with a lower priority (kube-scheduler's
  DefaultPreemption, within a queue). Where queues are not modelled everything is one queue;
- *reclaim*: a unit of another queue, whatever its priority, when that queue is
  ``reclaimable`` and holds more than its deserved share, and the preemptor's queue holds
  less than its own; only a gang that was running before the preemptor began to wait
  (one started since got its room through the turns); only where, on average lately, the
  victim's queue has had more of its share than the preemptor's by more than a tenth of it
  (their standing, :mod:`~kubetrain.local.scheduler.queues`: two queues that have had alike
  lately are evened out by their turns, and evicting between them would only waste work,
  back and forth; so a queue that borrowed the node gives it back once it has held it for a
  while, about a fourteenth of the half-life when it held all of it); and only if, once the
  victim is gone and the preemptor runs, the two queues are nearer their shares than
  before: the larger of their two distances from their shares (``|held / deserved - 1|``)
  shrinks. Taking it back would make it grow again, so reclaim
  never goes back and forth, and a gang is not evicted only to leave its queue as far below
  its share as the other was. (Volcano takes only what keeps the victim's queue at its share
  or above; with gangs a large part of one machine that would rarely allow anything.)

**Which.** Candidates are tried lowest priority first, then the most recently started, then
from the queue furthest above its share (Kueue's classic preemption), each added until the
preemptor fits the nodes (with the pods already being evicted gone) and its queue's
capability; then, from the last added back, every victim it turns out not to need is spared.
If the preemptor does not fit even with every candidate gone, nothing is evicted: nothing is
ever evicted for a unit that would still not start.

**Pods already being deleted** count as gone: a unit that fits once they have ended waits for
them and evicts nothing more. The walk goes through the waiting units in the cycle's order,
and takes what each one will use (after its evictions, or once the deleted pods are gone) off
the nodes for the units after it, so two preemptors never count on the same room.

Owns: choosing victims. Must not: do I/O, read the clock, or change what is passed in.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubetrain.local.scheduler import (
    amounts,
    estimates,
    fit,
    gangs,
    messages,
    policy,
    queue,
    queues,
)

PRIORITY = "priority"
RECLAIM = "reclaim"
RECLAIM_MARGIN = Fraction(1, 10)  # how far apart, lately, two queues' standings must be


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass
class Victim:
    """A running unit that could be evicted: its pods that hold a node, with their nodes."""

    key: Hashable  # the gang's GroupRef, or the pod's uid
    label: str
    queue: str
    priority: int
    started: float
    pods: list[tuple[fit.PodInfo, str]]
    group: gangs.GroupRef | None = None

    @property
    def request(self) -> amounts.Amounts:
        return amounts.total(pod.request for pod, _ in self.pods)


@dataclass
class Eviction:
    """One preemptor and the victims it evicts, with why each may be taken."""

    preemptor: queue.Unit
    victims: list[Victim]
    why: dict[Hashable, str]  # per victim key: the reason, in words, for messages
    placed: list[tuple[fit.PodInfo, str]]  # where the preemptor is expected to go


@dataclass
class Decision:
    evictions: list[Eviction] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)  # id(unit) -> note for its message


def victims(
    holding: Iterable[tuple[Mapping[str, Any], str]],
    groups: Mapping[gangs.GroupRef, Mapping[str, Any] | None],
    priority_classes: Mapping[str, int],
    now: float,
) -> list[Victim]:
    """The running units among ``holding`` (pods with the node each holds; pods being deleted
    or finished must be left out by the caller). ``groups`` holds the PodGroups known."""
    by_group: dict[gangs.GroupRef, list[tuple[Mapping[str, Any], str]]] = collections.defaultdict(
        list
    )
    found: list[Victim] = []
    for pod, node in holding:
        ref = gangs.group_of(pod)
        if ref is not None:
            by_group[ref].append((pod, node))
            continue
        info = fit.PodInfo.of(pod)
        found.append(
            Victim(
                key=info.uid,
                label=f"pod {info.key}",
                queue=queues.DEFAULT,
                priority=_priority(pod),
                started=estimates.started_at(pod) or now,
                pods=[(info, node)],
            )
        )
    for ref, members in by_group.items():
        group = groups.get(ref)
        spec = gangs.Spec.of(group) if group is not None else gangs.Spec()
        volcano = ref.api_version == gangs.VOLCANO
        priority = max(_priority(p) for p, _ in members)
        if spec.priority_class and spec.priority_class in priority_classes:
            priority = priority_classes[spec.priority_class]
        found.append(
            Victim(
                key=ref,
                label=f"pod group {ref}",
                queue=queues.queue_of(spec.queue) if volcano else queues.DEFAULT,
                priority=priority,
                started=max(estimates.started_at(p) or now for p, _ in members),
                pods=[(fit.PodInfo.of(p), node) for p, node in members],
                group=ref,
            )
        )
    return found


def _priority(pod: Mapping[str, Any]) -> int:
    value = _mapping(pod.get("spec")).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _fraction(share: Fraction) -> str:
    return f"{float(share):.0%}"


class _Walk:
    def __init__(
        self,
        nodes: Sequence[fit.NodeInfo],
        terminating: Sequence[tuple[fit.PodInfo, str]],
        fair: queues.Fair | None,
    ) -> None:
        self.nodes = [n.clone() for n in nodes]
        self.by_name = {n.name: n for n in self.nodes}
        for pod, name in terminating:
            if name in self.by_name:
                self.by_name[name].remove(pod)
        self.fair = fair

    def hold(self, placed: Iterable[tuple[fit.PodInfo, str]], sign: int = 1) -> None:
        for pod, name in placed:
            node = self.by_name.get(name)
            if node is not None:
                (node.add if sign > 0 else node.remove)(pod)

    def same_queue(self, a: str, b: str) -> bool:
        return self.fair is None or self.fair.name_of(a) == self.fair.name_of(b)

    def within_capability(self, unit: queue.Unit, freed: Mapping[str, Fraction]) -> bool:
        fair = self.fair
        if fair is None or not fair.served:
            return True
        q = fair.queues.get(unit.queue)
        if q is None:
            return False
        held = amounts.subtract(fair.allocated.get(unit.queue, {}), freed)
        return not queues.over_capability(q, held, unit.request)


def _candidate(unit: queue.Unit, victim: Victim, walk: _Walk, capability_only: bool) -> str | None:
    """Whether ``victim`` may be evicted for ``unit`` at all, and as what."""
    if victim.group is not None and victim.group == unit.group:
        return None
    if walk.same_queue(victim.queue, unit.queue):
        return PRIORITY if victim.priority < unit.priority else None
    fair = walk.fair
    if capability_only or fair is None or not fair.served:
        return None
    owner = fair.queues.get(victim.queue)
    if owner is None or not owner.reclaimable:
        return None
    if fair.share(victim.queue) <= 1 or fair.share(unit.queue) >= 1:
        return None
    if victim.started > unit.waiting_since:  # (API times are whole seconds: same = before)
        return None  # it got its room through the turns while this one waited
    lately = fair.standing(unit.queue, charged=False)
    if fair.standing(victim.queue, charged=False) - lately <= RECLAIM_MARGIN:
        return None  # lately the two have had alike: the turns even them out, no eviction
    return RECLAIM


def _choose(
    unit: queue.Unit, candidates: Sequence[tuple[Victim, str]], walk: _Walk
) -> list[tuple[Victim, str]] | None:
    """The victims ``unit`` needs (the fewest the greedy order finds), or None."""
    fair = walk.fair
    after = fair.share_with(unit.queue, unit.request) if fair is not None else None
    chosen: list[tuple[Victim, str]] = []
    freed: dict[str, amounts.Amounts] = collections.defaultdict(dict)

    def fits() -> bool:
        return policy.attempt(unit, walk.nodes).ok and walk.within_capability(
            unit, freed.get(unit.queue, {})
        )

    for victim, kind in candidates:
        if kind == RECLAIM:
            assert fair is not None
            assert after is not None
            owner = fair.share_with(victim.queue, _negative(freed[victim.queue]))
            gone = amounts.add(freed[victim.queue], victim.request)
            left = fair.share_with(victim.queue, _negative(gone))
            before = max(abs(fair.share(unit.queue) - 1), abs(owner - 1))
            if max(abs(after - 1), abs(left - 1)) >= before:
                continue  # the two queues would not end up nearer their shares
        walk.hold(victim.pods, -1)
        freed[victim.queue] = amounts.add(freed[victim.queue], victim.request)
        chosen.append((victim, kind))
        if fits():
            break
    else:
        for victim, _ in chosen:
            walk.hold(victim.pods)
        return None
    for entry in reversed(chosen[:-1]):
        victim = entry[0]
        walk.hold(victim.pods)
        freed[victim.queue] = amounts.subtract(freed[victim.queue], victim.request)
        if fits():
            chosen.remove(entry)
            continue
        walk.hold(victim.pods, -1)
        freed[victim.queue] = amounts.add(freed[victim.queue], victim.request)
    return chosen


def _negative(values: Mapping[str, Fraction]) -> amounts.Amounts:
    return {n: -v for n, v in values.items()}


def _reason(unit: queue.Unit, victim: Victim, kind: str, fair: queues.Fair | None) -> str:
    if kind == PRIORITY or fair is None:
        return messages.higher_priority(unit.priority, victim.priority, unit.queue)
    return messages.reclaimed(
        unit.queue,
        victim.queue,
        _fraction(fair.share(victim.queue)),
        _fraction(fair.share(unit.queue)),
    )


def decide(
    outcomes: Sequence[policy.Outcome],
    nodes: Sequence[fit.NodeInfo],
    terminating: Sequence[tuple[fit.PodInfo, str]],
    running: Sequence[Victim],
    fair: queues.Fair | None = None,
    *,
    eligible: Callable[[queue.Unit], bool] = lambda unit: True,
) -> Decision:
    """The evictions this cycle calls for. ``outcomes`` are the cycle's (in its order);
    ``nodes`` carry every pod holding them (those being deleted included, listed again in
    ``terminating``), not yet what the cycle started; ``running`` are the units that could be
    evicted; ``fair`` the queues as they were before the cycle (charged here with what the
    cycle started, on a copy). ``eligible`` may rule a waiting unit out (the benchmark's
    baseline has no preemption)."""
    fair = fair.copy() if fair is not None else None
    walk = _Walk(nodes, terminating, fair)
    for outcome in outcomes:
        if outcome.placed:
            walk.hold(outcome.placed)
            if fair is not None:
                fair.charge(outcome.unit.queue, amounts.total(p.request for p, _ in outcome.placed))
    decision = Decision()
    taken: set[Hashable] = set()
    for outcome in outcomes:
        unit = outcome.unit
        if outcome.placed or outcome.why not in (policy.RESOURCES, policy.QUEUE):
            continue
        capability_only = outcome.why == policy.QUEUE
        if capability_only and (
            outcome.refusal is None or outcome.refusal.reason != messages.NOT_ENOUGH_RESOURCES
        ):
            continue
        tried = policy.attempt(unit, walk.nodes)
        if tried.ok and walk.within_capability(unit, {}):
            if terminating:  # the room is being freed already: it takes it, once free
                walk.hold(tried.placed)
                if fair is not None:
                    fair.charge(unit.queue, unit.request)
                decision.notes[id(unit)] = messages.waiting_for_preempted(
                    unit.label, len(terminating)
                )
            continue
        if not unit.preempts or not eligible(unit):
            continue
        candidates = [
            (v, kind)
            for v in running
            if v.key not in taken and (kind := _candidate(unit, v, walk, capability_only))
        ]
        candidates.sort(
            key=lambda c: (
                c[0].priority,
                -c[0].started,
                -(fair.share(c[0].queue) if fair is not None else 0),
                c[0].label,
            )
        )
        chosen = _choose(unit, candidates, walk)
        if chosen is None:
            continue
        placed = policy.attempt(unit, walk.nodes).placed
        walk.hold(placed)
        why = {v.key: _reason(unit, v, kind, fair) for v, kind in chosen}
        if fair is not None:
            for victim, _ in chosen:
                fair.charge(victim.queue, {n: -v for n, v in victim.request.items()})
            fair.charge(unit.queue, unit.request)
        taken.update(v.key for v, _ in chosen)
        decision.evictions.append(Eviction(unit, [v for v, _ in chosen], why, placed))
    return decision
