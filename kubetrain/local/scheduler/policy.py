"""One scheduling cycle's decisions: which units start now, on which nodes, and why the
others wait. Priority then submission order, all-or-nothing gangs, namespace quotas checked
for a whole gang, and conservative backfill (Mu'alem and Feitelson's: every waiting unit
holds a reservation, not only the first as in EASY) with a bound on how long a backfill may
hold up a unit it passes.

The cycle walks the queue (:mod:`~kubetrain.local.scheduler.queue`) once, keeping a timeline
of the nodes (:mod:`~kubetrain.local.scheduler.timeline`): running pods leave it at their
expected ends (:mod:`~kubetrain.local.scheduler.estimates`), and each unit that starts or
reserves below is added to it.

- A *blocked* unit (incomplete gang, missing PodGroup) waits and holds up no one.
- A unit over its namespace's quota (counting only pods that hold a node, the unit's pods all
  together) waits and holds up no one (Kueue's BestEffortFIFO for quota).
- A unit that cannot be placed even on empty nodes (too big, no matching node) waits and
  holds up no one: reserving for it would block the queue for ever.
- A unit that fits now, with no reservation ahead of it, starts.
- Past a reservation, a unit that fits now starts (a *backfill*) only if (a) it fits beside
  every reservation made so far for its whole estimated run, placed on the nodes as they are
  at the busiest moment of that run, and (b) for every reserved unit that has waited less
  than the backfill's estimated runtime, it also fits beside that unit at the start of its
  reservation.
- Every other unit gets a *reservation*: the first moment from which it fits on the timeline
  for its whole estimated run, on nodes chosen then. Units behind it must leave it alone.

Why (b): estimates are upper bounds, and jobs often end early. When the pods a reserved unit
waits for end sooner than expected, it could start before its reservation, and a backfill
that (a) let in because it was to end by then may still be in its way: it holds the unit up
until its own end, at most its runtime later. A backfill whose runtime is no longer than the
unit's wait so far can thus hold it up by no more than it has waited already, and the wait
it would have had without the backfill is at least that: its wait at most doubles. One that
would be in the way for longer must not take what the unit needs at all. The bound holds for
the units a backfill passes; units that arrive later and queue behind a unit held up inherit
the delay (``bench/scheduler.py`` counts every job against its wait under strict FIFO).

Because every waiting unit reserves, and (a) and (b) are checked against each reservation, a
unit second or tenth in the queue has the same protection as the first. The policy keeps
nothing between cycles: each cycle plans afresh, in queue order, from what runs now.

Unknown runtimes make this conservative, never optimistic: a unit without an estimate is
taken to run for ever, so it may start past a reservation only where it fits beside it for
good. A running pod without an estimate (or past it) is taken as running for ever; a unit
that can fit only once such a pod has ended is reserved "once every running pod has ended",
at an unknown time, beside everything else placed in the cycle, and from then on every unit
that starts or reserves must fit beside it there too. Such a unit never has what it needs
taken, whenever it becomes able to start; only higher priority work that arrives later goes
before it, by design.

``Options(ordering="fifo", backfill=False)`` is strict FIFO (the benchmark's baseline): the
first unit that does not fit now blocks every unit after it.

With queues (``fair``, :mod:`~kubetrain.local.scheduler.queues`), the walk takes the queues'
turns instead of one global order, and a unit its queue does not admit (missing, closed, over
its capability) waits and holds up no one, as one over its namespace quota does. A unit that
starts or reserves is charged to its queue, for the turns and the capability of the units
after it. A unit of a queue that stands at or over its fair share may pass a reservation of
another queue that is owed its share only where it would not be in its way at all: rule (b)
holds for it however long the reserved unit has waited, so the room an owed queue waits for
goes to it, and not, a little at a time, to the queues ahead of their shares.

Placement is first fit over nodes in name order, a gang's pods in name order; a gang's
``minResources``, if set, must also fit what the nodes have free in total.

Owns: these rules. Must not: do I/O, read the clock, or keep anything between cycles.
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from kubetrain.local.scheduler import amounts, fit, messages, queue, queues, quotas, timeline

FOREVER = timeline.FOREVER

# Why a unit waits (Outcome.why), for what may come next (preemption) and for tests.
BLOCKED = "blocked"  # incomplete gang, missing PodGroup
QUEUE = "queue"  # its queue does not admit it now
QUOTA = "quota"  # over its namespace's ResourceQuota
FIFO = "fifo"  # strict FIFO: behind the first unit that waits
BACKFILL = "backfill"  # fits now, but would delay a reservation
RESOURCES = "resources"  # does not fit the nodes now


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
    """When and where a waiting unit is expected to start: no unit behind it may take what
    these pods need from ``start`` until ``end``."""

    unit: queue.Unit
    start: float  # FOREVER: once every running pod has ended, whenever that is
    end: float  # FOREVER: unknown
    placed: list[tuple[fit.PodInfo, str]]
    owed: bool = False  # its queue held less than its fair share when it reserved


@dataclass
class Outcome:
    unit: queue.Unit
    placed: list[tuple[fit.PodInfo, str]] = field(default_factory=list)
    message: str | None = None  # for the unit's pods that are not placed
    backfilled: bool = False  # started past a reservation
    reservation: Reservation | None = None  # for a unit that waits
    why: str | None = None  # for a unit that waits: BLOCKED, QUEUE, ...
    refusal: queues.Refusal | None = None  # why its queue does not admit it (why == QUEUE)


@dataclass
class Plan:
    outcomes: list[Outcome]
    reservations: list[Reservation] = field(default_factory=list)  # in queue order

    @property
    def reservation(self) -> Reservation | None:
        """The first unit's reservation: the one every other unit must leave alone."""
        return self.reservations[0] if self.reservations else None

    @property
    def binds(self) -> list[tuple[fit.PodInfo, str]]:
        return [b for o in self.outcomes for b in o.placed]

    def started(self) -> list[tuple[str, amounts.Amounts]]:
        """Per unit placed in this cycle, its queue and what its placed pods request."""
        return [
            (o.unit.queue, amounts.total(pod.request for pod, _ in o.placed))
            for o in self.outcomes
            if o.placed
        ]

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


def _shape(unit: queue.Unit) -> Hashable:
    """What decides where a unit fits and for how long: units of one shape fare alike."""
    pods = tuple(
        (
            tuple(p.request.items()),
            p.ports,
            tuple(p.node_selector.items()),
            repr(p.required_terms),
            repr(p.tolerations),
        )
        for p in unit.pods
    )
    minimum = tuple(unit.min_resources.items()) if unit.min_resources else None
    return (unit.need, unit.runtime, minimum, pods)


def _end(r: Running) -> float:
    return r.end if r.end is not None else FOREVER


def _finish(start: float, unit: queue.Unit) -> float:
    return start + unit.runtime if unit.runtime is not None else FOREVER


def reserve(
    unit: queue.Unit, line: timeline.Timeline, earliest: float = -FOREVER
) -> Reservation | None:
    """``unit``'s reservation: the first moment after now (and not before ``earliest``) from
    which it fits on the timeline for its whole estimated run; else, once every running pod
    has ended; else none."""
    if line.unknown_start and not attempt(unit, line.after).ok:
        return None  # every window and the unknown start carry what is reserved there
    i = max(1, bisect.bisect_left(line.moments, earliest))
    while i < len(line.moments):
        start = line.moments[i]
        end = _finish(start, unit)
        span = line.moments_from(i, end)
        # Each moment alone first (cheap, and a moment that fails rules out every window
        # that spans it); the peak of them only once each fits.
        short = next((j for j in span if not attempt(unit, line.pictures[j]).ok), None)
        if short is not None:
            i = short + 1
            continue
        tried = attempt(unit, line.window(i, end))
        if tried.ok:
            return Reservation(unit, start, end, tried.placed)
        i += 1
    tried = attempt(unit, line.after)
    if tried.ok:
        return Reservation(unit, FOREVER, FOREVER, tried.placed)
    return None


def _fits_as_placed(
    placed: Sequence[tuple[fit.PodInfo, str]], nodes: Sequence[fit.NodeInfo]
) -> bool:
    """Whether the pods fit these nodes on the nodes named (the nodes are left as they were)."""
    by_name = {n.name: n for n in nodes}
    added = []
    ok = True
    for pod, name in placed:
        node = by_name[name]
        if fit.reasons(pod, node):
            ok = False
            break
        node.add(pod)
        added.append((pod, node))
    for pod, node in added:
        node.remove(pod)
    return ok


def _overlong(
    unit: queue.Unit,
    placed: Sequence[tuple[fit.PodInfo, str]],
    line: timeline.Timeline,
    now: float,
    reservations: Sequence[Reservation],
    *,
    over_share: bool = False,
    fair: queues.Fair | None = None,
) -> Reservation | None:
    """The first reservation ``unit``, placed as ``placed`` from now, could hold up for
    longer than its unit has waited so far, were the pods it waits for to end early: rule
    (b). A unit of a queue at or over its fair share (``over_share``) may not hold up a unit
    of another queue that is owed its share at all, however long that one has waited."""
    runtime = unit.runtime if unit.runtime is not None else FOREVER
    for r in reservations:
        if r.start == FOREVER:
            continue
        owed = over_share and r.owed and not _same_queue(fair, r.unit, unit)
        if runtime <= now - r.unit.created and not owed:
            continue
        if not _fits_as_placed(placed, line.at(r.start)):
            return r
    return None


def _same_queue(fair: queues.Fair | None, a: queue.Unit, b: queue.Unit) -> bool:
    return fair is None or fair.name_of(a.queue) == fair.name_of(b.queue)


def _delayed(unit_end: float, reservations: Sequence[Reservation]) -> Reservation:
    """Which reservation a unit that fits now but may not start would delay, for its
    message: the first whose time its run overlaps (one of unknown start overlaps any)."""
    return next(
        (r for r in reservations if r.start < unit_end or r.start == FOREVER), reservations[0]
    )


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
    fair: queues.Fair | None = None,
) -> Plan:
    """Decide this cycle. ``nodes`` carry the pods that hold them (``running`` lists the same
    pods with their expected ends); ``quota_used`` is, per namespace, what those pods count
    against quotas; ``fair``, the queues (None: not modelled), is charged with what starts
    or reserves. Nothing else passed in is changed."""
    options = options or Options()
    line = timeline.Timeline(
        sorted(nodes, key=lambda n: n.name), ((r.node, r.pod, _end(r)) for r in running), now
    )
    state = line.now()
    used = {ns: dict(u) for ns, u in (quota_used or {}).items()}
    namespace_quotas: dict[str, list[quotas.Quota]] = collections.defaultdict(list)
    for quota in quota_list:
        namespace_quotas[quota.namespace].append(quota)
    reservations: list[Reservation] = []
    possible: dict[Hashable, bool] = {}  # per shape: fits the nodes were they empty
    reserved: dict[Hashable, float | None] = {}  # per shape: the last reservation's start
    blocking: queue.Unit | None = None  # strict FIFO: the first unit that waits
    outcomes: list[Outcome] = []
    ordered: Iterable[queue.Unit]
    if fair is None:
        ordered = queue.order(units, options.ordering)
    else:
        ordered = queues.Turns(
            list(units),
            fair,
            lambda u: u.queue,
            lambda u: queue.sort_key(u, options.ordering),
        )
    for unit in ordered:
        owed = fair is not None and fair.standing(unit.queue) < 1  # before it is charged
        if unit.blocked is not None:
            outcomes.append(Outcome(unit, message=unit.blocked, why=BLOCKED))
            continue
        if fair is not None:
            refusal = fair.admit(unit.label, unit.queue, unit.request, new=not unit.admitted)
            if refusal is not None:
                outcomes.append(Outcome(unit, message=refusal.message, why=QUEUE, refusal=refusal))
                continue
        wanted = amounts.total(unit.usage)
        exceeded = quotas.check(
            namespace_quotas.get(unit.namespace, ()), used.get(unit.namespace, {}), wanted
        )
        if exceeded is not None:
            outcomes.append(Outcome(unit, message=_quota_message(unit, exceeded), why=QUOTA))
            continue
        if blocking is not None:
            message = messages.fifo_blocked(unit.label, blocking.label)
            outcomes.append(Outcome(unit, message=message, why=FIFO))
            continue
        end = _finish(now, unit)
        tried = attempt(unit, state)
        waiting: Outcome | None = None
        if tried.ok and reservations:
            # Fitting now is not enough past a reservation: the unit must fit beside every
            # reservation for its whole run, so it is placed on the nodes at their busiest.
            tried = attempt(unit, line.window(0, end))
            delayed = None
            if not tried.ok:
                delayed = _delayed(end, reservations)
            else:
                over_share = fair is not None and not owed
                delayed = _overlong(
                    unit, tried.placed, line, now, reservations, over_share=over_share, fair=fair
                )
            if delayed is not None:
                message = messages.backfill_denied(unit.label, delayed.unit.label)
                if (
                    fair is not None
                    and not owed
                    and delayed.owed
                    and not _same_queue(fair, delayed.unit, unit)
                ):
                    share = f"{float(fair.standing(unit.queue)):.0%}"
                    message = messages.behind_queue(
                        unit.label, unit.queue, share, delayed.unit.label
                    )
                waiting = Outcome(unit, message=message, why=BACKFILL)
        if waiting is None and tried.ok:
            line.hold(tried.placed, now, end)
            placed_uids = {id(pod) for pod, _ in tried.placed}
            placed_usage = [
                u for p, u in zip(unit.pods, unit.usage, strict=False) if id(p) in placed_uids
            ]
            used[unit.namespace] = amounts.add(
                used.get(unit.namespace, {}), amounts.total(placed_usage)
            )
            if fair is not None:
                fair.charge(unit.queue, amounts.total(pod.request for pod, _ in tried.placed))
            leftover = None
            if len(tried.placed) < len(unit.pods):
                leftover = fit.fit_error(len(state), tried.failure or [])
            outcomes.append(Outcome(unit, tried.placed, leftover, backfilled=bool(reservations)))
            continue
        if waiting is None:
            message = _waiting_message(unit, tried, len(state))
            waiting = Outcome(unit, message=message, why=RESOURCES)
        outcomes.append(waiting)
        shape = _shape(unit)
        if shape not in possible:
            possible[shape] = ever_fits(unit, state)
        if not possible[shape]:
            continue
        if not options.backfill:
            blocking = unit
            continue
        # The timeline only fills up during a cycle, so a unit cannot be reserved before an
        # earlier unit of its shape, nor at all once one was not.
        earliest = reserved.get(shape, -FOREVER)
        if earliest is None:
            continue
        reservation = reserve(unit, line, earliest)
        reserved[shape] = reservation.start if reservation is not None else None
        if reservation is not None:
            reservation.owed = owed
            line.hold(reservation.placed, reservation.start, reservation.end)
            reservations.append(reservation)
            waiting.reservation = reservation
            if fair is not None:
                fair.charge(unit.queue, amounts.total(pod.request for pod, _ in reservation.placed))
    return Plan(outcomes, reservations)
