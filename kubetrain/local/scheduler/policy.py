"""One scheduling cycle's decisions: which units start now, on which nodes, and why the
others wait. Priority then submission order, all-or-nothing gangs, namespace quotas checked
for a whole gang, and EASY backfill (Slurm's ``sched/backfill`` in its EASY form).

The cycle walks the queue (:mod:`~kubetrain.local.scheduler.queue`) once:

- A *blocked* unit (incomplete gang, missing PodGroup) waits and holds up no one.
- A unit over its namespace's quota (counting only pods that hold a node, the unit's pods all
  together) waits and holds up no one (Kueue's BestEffortFIFO for quota).
- A unit that cannot be placed even on empty nodes (too big, no matching node) waits and
  holds up no one: reserving for it would block the queue for ever.
- The first unit that could be placed on the nodes but does not fit *now* becomes the
  *head*: it gets a reservation at its earliest possible start, found by letting the running
  pods end at their expected end times (:mod:`~kubetrain.local.scheduler.estimates`), in
  order, until the head fits.
- Every later unit that fits now may start (*backfill*) only if it cannot delay the head:
  (a) it ends, by its own estimate, before the reservation starts, or (b) the head still fits
  at the reservation beside it (it only uses what the head does not need). Each backfilled
  unit is counted in the reservation's picture, so several together cannot delay the head
  either. Later units that do not fit now just wait; only the head reserves.

Unknown runtimes make this conservative, never optimistic: a unit without an estimate cannot
pass (a), only (b). A running pod without an estimate (or past it) is taken as running for
ever, so its resources never come free in the reservation's picture; if the head cannot fit
without them, its start is unknown, and then (a) is not used at all and (b) is checked
against the nodes as they will be once *every* running pod has ended. A backfilled unit thus
never takes what the head needs, whenever the head becomes able to start. Since the head's
reservation only moves earlier as pods end, and later units never take what it needs, the
head cannot starve; only higher priority work that arrives later goes before it, by design.

``Options(ordering="fifo", backfill=False)`` is strict FIFO (the benchmark's baseline): the
first unit that does not fit now blocks every unit after it.

Placement is first fit over nodes in name order, a gang's pods in name order; a gang's
``minResources``, if set, must also fit what the nodes have free in total.

Owns: these rules. Must not: do I/O, read the clock, or keep anything between cycles.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from kubetrain.local.scheduler import amounts, fit, messages, queue, quotas

FOREVER = math.inf


@dataclass(frozen=True)
class Options:
    ordering: queue.Ordering = "priority"
    backfill: bool = True


@dataclass(frozen=True)
class Running:
    """A pod holding a node, and when it is expected to end (None: unknown)."""

    node: str
    pod: fit.PodInfo
    end: float | None = None


@dataclass
class Attempt:
    """A tentative placement of a unit on some nodes (nothing on the nodes is changed)."""

    placed: list[tuple[fit.PodInfo, str]]
    failure: list[list[str]] | None  # per node, the reasons of the first pod no node took
    min_resources_short: bool = False
    ok: bool = False


@dataclass
class Reservation:
    """The head's earliest start, and the nodes as they will be then (without the head, with
    the units backfilled since that will still run)."""

    unit: queue.Unit
    start: float  # FOREVER: unknown
    nodes: list[fit.NodeInfo]


@dataclass
class Outcome:
    unit: queue.Unit
    placed: list[tuple[fit.PodInfo, str]] = field(default_factory=list)
    message: str | None = None  # for the unit's pods that are not placed
    backfilled: bool = False  # started past a reservation


@dataclass
class Plan:
    outcomes: list[Outcome]
    reservation: Reservation | None = None

    @property
    def binds(self) -> list[tuple[fit.PodInfo, str]]:
        return [b for o in self.outcomes for b in o.placed]

    def outcome(self, label: str) -> Outcome | None:
        return next((o for o in self.outcomes if o.unit.label == label), None)


def attempt(unit: queue.Unit, nodes: Sequence[fit.NodeInfo]) -> Attempt:
    """Place ``unit``'s pods first fit, as many as go; it succeeds if ``need`` of them do
    (and its minResources fit what is free)."""
    if unit.min_resources:
        free = amounts.total(n.free() for n in nodes)
        if amounts.short(unit.min_resources, free):
            return Attempt([], None, min_resources_short=True)
    placed: list[tuple[fit.PodInfo, fit.NodeInfo]] = []
    failure: list[list[str]] | None = None
    for pod in unit.pods:
        for node in nodes:
            if not fit.reasons(pod, node):
                node.add(pod)
                placed.append((pod, node))
                break
        else:
            if failure is None:
                failure = [fit.reasons(pod, n) for n in nodes]
    for pod, node in placed:
        node.remove(pod)
    chosen = [(pod, node.name) for pod, node in placed]
    return Attempt(chosen, failure, ok=len(placed) >= unit.need)


def ever_fits(unit: queue.Unit, nodes: Sequence[fit.NodeInfo]) -> bool:
    """Whether ``unit`` could be placed on these nodes were they empty."""
    return attempt(unit, [n.emptied() for n in nodes]).ok


def reserve(
    unit: queue.Unit, nodes: Sequence[fit.NodeInfo], running: Iterable[Running]
) -> Reservation | None:
    """The head's reservation: the first expected end after which it fits; else (unknown
    ends stand in the way) FOREVER, pictured on nodes with nothing running."""
    state = {n.name: n.clone() for n in nodes}
    ending = sorted((r for r in running if r.end is not None and r.node in state), key=_end)
    i = 0
    while i < len(ending):
        moment = _end(ending[i])
        while i < len(ending) and _end(ending[i]) == moment:
            state[ending[i].node].remove(ending[i].pod)
            i += 1
        if attempt(unit, list(state.values())).ok:
            return Reservation(unit, moment, list(state.values()))
    empty = [n.emptied() for n in nodes]
    if attempt(unit, empty).ok:
        return Reservation(unit, FOREVER, empty)
    return None


def _end(r: Running) -> float:
    return r.end if r.end is not None else FOREVER


def allows(reservation: Reservation, unit: queue.Unit, now_try: Attempt, now: float) -> bool:
    """Whether ``unit``, placed as in ``now_try``, may start without delaying the head; if
    it still runs at the reservation, it is added to the reservation's picture."""
    if (
        reservation.start != FOREVER
        and unit.runtime is not None
        and now + unit.runtime <= reservation.start
    ):
        return True
    by_name = {n.name: n for n in reservation.nodes}
    added = [(pod, by_name[name]) for pod, name in now_try.placed if name in by_name]
    for pod, node in added:
        node.add(pod)
    if attempt(reservation.unit, reservation.nodes).ok:
        return True
    for pod, node in added:
        node.remove(pod)
    return False


def _waiting_message(unit: queue.Unit, tried: Attempt, node_count: int) -> str:
    if tried.min_resources_short and unit.min_resources is not None:
        message = messages.min_resources_short(
            str(unit.group), amounts.format_amounts(unit.min_resources)
        )
    else:
        message = fit.fit_error(node_count, tried.failure or [])
        if unit.gang:
            message += " " + messages.gang_waiting(str(unit.group), len(tried.placed), unit.need)
    if unit.note:
        message += " " + unit.note
    return message


def _quota_message(unit: queue.Unit, exceeded: quotas.Exceeded) -> str:
    return messages.exceeded_quota(
        unit.label,
        exceeded.quota,
        amounts.format_amounts(exceeded.requested),
        amounts.format_amounts(exceeded.used),
        amounts.format_amounts(exceeded.limited),
    )


def plan(
    units: Iterable[queue.Unit],
    nodes: Sequence[fit.NodeInfo],
    running: Iterable[Running],
    now: float,
    *,
    quota_list: Iterable[quotas.Quota] = (),
    quota_used: Mapping[str, Mapping[str, Fraction]] | None = None,
    options: Options | None = None,
) -> Plan:
    """Decide this cycle. ``nodes`` carry the pods that hold them (``running`` lists the same
    pods with their expected ends); ``quota_used`` is, per namespace, what those pods count
    against quotas. Nothing passed in is changed."""
    options = options or Options()
    state = sorted((n.clone() for n in nodes), key=lambda n: n.name)
    by_name = {n.name: n for n in state}
    running_now = list(running)
    used = {ns: dict(u) for ns, u in (quota_used or {}).items()}
    namespace_quotas: dict[str, list[quotas.Quota]] = collections.defaultdict(list)
    for quota in quota_list:
        namespace_quotas[quota.namespace].append(quota)
    reservation: Reservation | None = None
    blocking: queue.Unit | None = None  # strict FIFO: the first unit that waits
    outcomes: list[Outcome] = []
    for unit in queue.order(units, options.ordering):
        if unit.blocked is not None:
            outcomes.append(Outcome(unit, message=unit.blocked))
            continue
        wanted = amounts.total(unit.usage)
        exceeded = quotas.check(
            namespace_quotas.get(unit.namespace, ()), used.get(unit.namespace, {}), wanted
        )
        if exceeded is not None:
            outcomes.append(Outcome(unit, message=_quota_message(unit, exceeded)))
            continue
        if blocking is not None:
            outcomes.append(
                Outcome(unit, message=messages.fifo_blocked(unit.label, blocking.label))
            )
            continue
        tried = attempt(unit, state)
        if tried.ok:
            if reservation is not None and not allows(reservation, unit, tried, now):
                message = messages.backfill_denied(unit.label, reservation.unit.label)
                outcomes.append(Outcome(unit, message=message))
                continue
            end = now + unit.runtime if unit.runtime is not None else None
            placed_uids = set()
            for pod, name in tried.placed:
                by_name[name].add(pod)
                running_now.append(Running(name, pod, end))
                placed_uids.add(id(pod))
            placed_usage = [
                u for p, u in zip(unit.pods, unit.usage, strict=False) if id(p) in placed_uids
            ]
            used[unit.namespace] = amounts.add(
                used.get(unit.namespace, {}), amounts.total(placed_usage)
            )
            leftover = None
            if len(tried.placed) < len(unit.pods):
                leftover = fit.fit_error(len(state), tried.failure or [])
            outcomes.append(
                Outcome(unit, tried.placed, leftover, backfilled=reservation is not None)
            )
            continue
        outcomes.append(Outcome(unit, message=_waiting_message(unit, tried, len(state))))
        if not ever_fits(unit, state):
            continue
        if not options.backfill:
            blocking = unit
        elif reservation is None:
            reservation = reserve(unit, state, running_now)
    return Plan(outcomes, reservation)
