"""One whole cycle of the scheduler's pure modules, fed as the controller feeds them: units
from pods and PodGroups, the queues (Fair), the plan, and the evictions it calls for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.local.scheduler import (
    amounts,
    estimates,
    fit,
    gangs,
    policy,
    preemption,
    queue,
    queues,
)
from tests.unit.local.scheduler.builders import T0, member, node, pod, podgroup

STARTED = "2027-01-15T07:59:00Z"
LATER_START = "2027-01-15T07:59:30Z"


def vgroup(name: str, size: int, *, queue_name: str | None = None, **kw: Any) -> dict[str, Any]:
    group = podgroup(name, min_member=size, volcano=True, **kw)
    if queue_name is not None:
        group["spec"]["queue"] = queue_name
    return group


def members(
    group: str, size: int, cpu: str, *, running: bool = False, started: str = STARTED, **kw: Any
) -> list[dict[str, Any]]:
    extra: dict[str, Any] = (
        {"node": "n1", "phase": "Running", "started": started} if running else {}
    )
    return [
        pod(f"{group}-{i}", cpu=cpu, **member(group, volcano=True), **extra, **kw)
        for i in range(size)
    ]


@dataclass
class Cycle:
    plan: policy.Plan
    decision: preemption.Decision

    def evicted(self) -> list[list[str]]:
        """Per eviction, its victims' labels."""
        return [[v.label for v in e.victims] for e in self.decision.evictions]

    def preemptors(self) -> list[str]:
        return [e.preemptor.label for e in self.decision.evictions]


def cycle(
    pending: Iterable[dict[str, Any]],
    *,
    bound: Sequence[dict[str, Any]] = (),
    groups: Iterable[dict[str, Any]] = (),
    queue_objs: Sequence[queues.Queue] | None = None,
    priority_classes: Mapping[str, int] | None = None,
    never: Iterable[str] = (),
    nodes: Sequence[dict[str, Any]] = (),
    history: Mapping[str, amounts.Amounts] | None = None,
) -> Cycle:
    """One cycle's plan and evictions; ``queue_objs`` None: queues not modelled. A bound pod
    with a ``deletionTimestamp`` is being deleted. ``history``: what queues held lately (by
    default, what they hold now)."""
    nodes = list(nodes) or [node(cpu="4")]
    classes = dict(priority_classes or {})
    group_objs = {gangs.ref_of(g["apiVersion"], g): g for g in groups}
    holding: dict[str, list[fit.PodInfo]] = {n["metadata"]["name"]: [] for n in nodes}
    running: list[policy.Running] = []
    allocated: dict[str, amounts.Amounts] = {}
    for p in bound:
        info = fit.PodInfo.of(p)
        holding[p["spec"]["nodeName"]].append(info)
        running.append(policy.Running(p["spec"]["nodeName"], info, estimates.expected_end(p, T0)))
        ref = gangs.group_of(p)
        group = group_objs.get(ref) if ref is not None else None
        name = queues.queue_of(gangs.Spec.of(group).queue if group is not None else None)
        allocated[name] = amounts.add(allocated.get(name, {}), info.request)
    states = {}
    for ref, g in group_objs.items():
        held = sum(1 for p in bound if gangs.group_of(p) == ref)
        states[ref] = queue.GroupState(g, holding=held)
    units = queue.build(pending, states, classes, T0, frozenset(never))
    waiting: dict[str, amounts.Amounts] = {}
    for u in units:
        waiting[u.queue] = amounts.add(waiting.get(u.queue, {}), u.request)
    node_infos = [fit.NodeInfo.of(n, holding[n["metadata"]["name"]]) for n in nodes]
    total = amounts.total(n.allocatable for n in node_infos)
    fair = queues.Fair.build(
        queue_objs or [], total, allocated, waiting, served=queue_objs is not None, history=history
    )
    plan = policy.plan(units, node_infos, running, T0, fair=fair.copy())
    deleting = [p for p in bound if p["metadata"].get("deletionTimestamp")]
    candidates = [(p, p["spec"]["nodeName"]) for p in bound if p not in deleting]
    victims = preemption.victims(candidates, group_objs, classes, T0)
    terminating = [(fit.PodInfo.of(p), p["spec"]["nodeName"]) for p in deleting]
    return Cycle(plan, preemption.decide(plan.outcomes, node_infos, terminating, victims, fair))
