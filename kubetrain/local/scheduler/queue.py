"""What waits to be scheduled, as units, and their order.

A unit is either one pending pod or the pending pods of one gang (PodGroup), which are placed
together or not at all. A gang must place ``need`` of them at once: ``minMember`` less the
members that already hold a node (so a member recreated after a failure is placed alone once
the rest run), at least one. A gang with fewer pending pods than that, or whose PodGroup does
not exist (yet), is *blocked*: it waits with a message and takes no part in ordering, so it
cannot hold up anyone.

Order (kube's PrioritySort and coscheduling's QueueSort, Kueue's BestEffortFIFO):

1. priority, highest first: a pod's ``spec.priority`` (the API server sets it from its
   PriorityClass); a gang's is its Volcano ``priorityClassName`` value when that class exists,
   else its highest member's;
2. submission: ``creationTimestamp`` of the PodGroup for a gang (coscheduling orders so), of
   the pod otherwise;
3. namespace/name.

``fifo`` ordering (the benchmark's baseline) skips the first step. Where queues are modelled,
:class:`~kubetrain.local.scheduler.queues.Turns` interleaves the queues and keeps this order
within each.

Each unit also says which Volcano queue it is in (a Volcano gang's ``spec.queue``, else
``default``), whether it may evict others to start (not when its PriorityClass, or any of its
pods, has ``preemptionPolicy: Never``), and whether it already holds a node (a gang some of
whose members run: a queue that closed since still lets the rest join).

Owns: building units from pods and PodGroups, and the order. Must not: look at nodes.
"""

from __future__ import annotations

import collections
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kubetrain.local.scheduler import (
    amounts,
    estimates,
    fit,
    gangs,
    messages,
    queues,
    quotas,
    timestamps,
)

Ordering = Literal["priority", "fifo"]
NEVER = "Never"  # preemptionPolicy


@dataclass(eq=False)
class Unit:
    label: str  # "pod ns/name" or "pod group ns/name", as messages name it
    namespace: str
    name: str
    priority: int
    created: float
    pods: list[fit.PodInfo]
    need: int = 1
    runtime: float | None = None  # expected seconds, None: unknown (taken as forever)
    usage: list[amounts.Amounts] = field(default_factory=list)  # quota usage, per pod
    min_resources: amounts.Amounts | None = None
    group: gangs.GroupRef | None = None
    blocked: str | None = None  # why it cannot be considered at all
    blocked_incomplete: bool = False
    note: str | None = None  # appended to its waiting message
    queue: str = queues.DEFAULT  # the Volcano queue it is in
    preempts: bool = True  # may evict lower-priority work to start (preemptionPolicy)
    admitted: bool = False  # a gang with members holding a node already
    waiting_since: float = 0.0  # when its oldest pending pod was created

    @property
    def gang(self) -> bool:
        return self.group is not None

    @property
    def request(self) -> amounts.Amounts:
        """What all its pending pods request together."""
        return amounts.total(p.request for p in self.pods)


def sort_key(unit: Unit, ordering: Ordering = "priority") -> tuple[Any, ...]:
    rank = (unit.created, unit.namespace, unit.name)
    return rank if ordering == "fifo" else (-unit.priority, *rank)


def order(units: Iterable[Unit], ordering: Ordering = "priority") -> list[Unit]:
    return sorted(units, key=lambda u: sort_key(u, ordering))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _priority(pod: Mapping[str, Any]) -> int:
    value = _mapping(pod.get("spec")).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _preempts(pod: Mapping[str, Any]) -> bool:
    return _mapping(pod.get("spec")).get("preemptionPolicy") != NEVER


def _created(obj: Mapping[str, Any], default: float) -> float:
    found = timestamps.parse(_mapping(obj.get("metadata")).get("creationTimestamp"))
    return found if found is not None else default


def single(pod: Mapping[str, Any], now: float) -> Unit:
    info = fit.PodInfo.of(pod)
    return Unit(
        label=f"pod {info.key}",
        namespace=info.namespace,
        name=info.name,
        priority=_priority(pod),
        created=_created(pod, now),
        pods=[info],
        runtime=estimates.expected_runtime(pod),
        usage=[quotas.usage(pod)],
        preempts=_preempts(pod),
        waiting_since=_created(pod, now),
    )


@dataclass(frozen=True)
class GroupState:
    """What the controller knows of one PodGroup besides its pending pods."""

    obj: Mapping[str, Any] | None  # None: not found
    served: bool = True  # the PodGroup kind is served at all
    holding: int = 0  # members holding a node (bound, not failed)


def gang(
    ref: gangs.GroupRef,
    pods: Sequence[Mapping[str, Any]],
    state: GroupState,
    priority_classes: Mapping[str, int],
    now: float,
    never: Collection[str] = frozenset(),
) -> Unit:
    """``never``: the PriorityClasses with ``preemptionPolicy: Never``."""
    ordered = sorted(pods, key=lambda p: str(_mapping(p.get("metadata")).get("name") or ""))
    infos = [fit.PodInfo.of(p) for p in ordered]
    unit = Unit(
        label=f"pod group {ref}",
        namespace=ref.namespace,
        name=ref.name,
        priority=max((_priority(p) for p in ordered), default=0),
        created=min((_created(p, now) for p in ordered), default=now),
        pods=infos,
        runtime=estimates.gang_runtime(ordered),
        usage=[quotas.usage(p) for p in ordered],
        group=ref,
        preempts=all(_preempts(p) for p in ordered),
        admitted=state.holding > 0,
        waiting_since=min((_created(p, now) for p in ordered), default=now),
    )
    if not state.served:
        unit.blocked = messages.group_kind_not_served(str(ref), ref.api_version)
        return unit
    if state.obj is None:
        unit.blocked = messages.group_not_found(str(ref))
        return unit
    spec = gangs.Spec.of(state.obj)
    if spec.created is not None:
        unit.created = spec.created
    if spec.priority_class and spec.priority_class in priority_classes:
        unit.priority = priority_classes[spec.priority_class]
        unit.preempts = spec.priority_class not in never
    if ref.api_version == gangs.VOLCANO:
        unit.queue = queues.queue_of(spec.queue)
    unit.min_resources = spec.min_resources
    missing = spec.min_member - state.holding
    if len(infos) < missing:
        unit.blocked = messages.gang_incomplete(str(ref), spec.min_member)
        unit.blocked_incomplete = True
        return unit
    unit.need = max(1, missing)
    status = _mapping(state.obj.get("status"))
    waited_out = gangs.timed_out(status, spec, now) and state.holding < spec.min_member
    if ref.api_version == gangs.COSCHEDULING and waited_out:
        unit.note = messages.schedule_timeout(spec.timeout or 0)
    return unit


def build(
    pending: Iterable[Mapping[str, Any]],
    groups: Mapping[gangs.GroupRef, GroupState],
    priority_classes: Mapping[str, int],
    now: float,
    never: Collection[str] = frozenset(),
) -> list[Unit]:
    """Units for ``pending`` pods: one per pod outside a gang, one per gang. ``groups`` says
    what is known of each gang's PodGroup (a gang it does not list is taken as not found);
    ``never`` names the PriorityClasses with ``preemptionPolicy: Never``."""
    by_group: dict[gangs.GroupRef, list[Mapping[str, Any]]] = collections.defaultdict(list)
    units: list[Unit] = []
    for pod in pending:
        ref = gangs.group_of(pod)
        if ref is None:
            units.append(single(pod, now))
        else:
            by_group[ref].append(pod)
    for ref, pods in by_group.items():
        state = groups.get(ref, GroupState(None))
        units.append(gang(ref, pods, state, priority_classes, now, never))
    return units
