"""Volcano Queues (``scheduling.volcano.sh/v1beta1`` Queue), as the local scheduler models them:
which queue a unit belongs to, whether the queue lets it start, each queue's fair share of the
nodes, and the order in which queues take turns.

**Membership.** A Volcano gang belongs to its PodGroup's ``spec.queue`` (``default`` when
empty, as Volcano defaults it). Every other unit (a pod outside a gang, a scheduler-plugins
gang) belongs to ``default``, as Volcano puts the pods it schedules without a PodGroup there.
Where the Queue kind is not served at all, there is one implicit queue with no capability and
everything is in it: priority alone orders, as before queues existed.

**Admission** (Volcano's ``proportion`` plugin, ``AllocatableFn`` and ``JobEnqueueable``):

- a queue that does not exist admits nothing: the unit waits with a message naming it;
- a queue whose ``status.state`` is not ``Open`` (``Closed``, ``Closing``) admits nothing new.
  A gang that already holds a node is not new: a member recreated after a failure may join it;
- ``spec.capability`` is a hard cap on what the queue's running pods request: a unit whose
  requests would take the queue past it waits, with a message naming the queue, the
  capability, what the queue holds and what the unit asks for (Volcano's words "queue
  resource quota insufficient" first). Only the resources the capability lists are capped.

**Fair share** (the ``proportion`` plugin's water-filling): each queue's *request* is what its
running pods request plus what its waiting units ask for. Starting from every node's
allocatable, each round gives every queue not yet satisfied ``remaining x weight / total
weight`` more, capped by its capability and by its request; a queue whose request is met (or
whose share stopped growing) drops out, and what it did not take is shared again among the
others, until nothing is left or nothing changes. The result, *deserved*, is the queue's fair
share: a queue asking for less than its weight's share leaves the rest to others (that is how
a queue borrows idle capacity), and one asking for more gets no more than its weight's share
while the others have work. A queue's *share* is its dominant ``allocated / deserved`` over
the resources it uses (0 when it holds nothing; 1 where it holds something it deserves none
of, as Volcano's ``helpers.Share``).

**Turns** (Volcano's queue order, with Kueue's admission fair sharing): queues with a higher
``spec.priority`` first, then the queue that stands lowest against its deserved share; within
a queue, units in their own order (priority, then submission). A queue's *standing* is what it
held lately on average (an exponentially weighted average of what its pods held, with a
half-life, kept in the Queue's ``status.fairSharing``: ``consumedResources`` as of
``lastUpdate``, the names Kueue's LocalQueue uses) over what it deserves. Volcano goes by what
each queue holds at the moment; on one machine, where a gang is a large part of the node, that
locks in: whichever queue's gang ends holds the lowest share at that moment and takes the room
back, so a queue can stay below its share for good. Going by the average, a queue below its
share gets the next turns until it has caught up. Each unit that starts or reserves in a cycle
is charged to its queue's standing at once, so the turns interleave within a cycle too.

**Reclaim** (``reclaimable``, default true): a queue above its deserved share holds capacity
another queue is owed; see :mod:`~kubetrain.local.scheduler.preemption` for when it is taken
back.

Not modelled: ``guarantee``, ``deserved`` (the capacity plugin), hierarchical queues
(``parent``), ``dequeueStrategy`` (units of a queue are always traversed, Volcano's default),
``affinity`` and ``extendClusters``.

Owns: reading Queues, the water-filling, shares, admission, the turn order and the Queue
status. Must not: place pods, do I/O or read the clock.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from kubetrain.local.scheduler import amounts, messages, timestamps

Amounts = amounts.Amounts

API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
DEFAULT: Final = "default"
OPEN: Final = "Open"
CLOSED: Final = "Closed"
CLOSING: Final = "Closing"
UNKNOWN: Final = "Unknown"
STATES: Final = frozenset({OPEN, CLOSED, CLOSING, UNKNOWN})
# PodGroup phases counted in a Queue's status, and the status field each is counted in.
PHASE_COUNTS: Final = {
    "Pending": "pending",
    "Inqueue": "inqueue",
    "Running": "running",
    "Unknown": "unknown",
    "Completed": "completed",
}
_ZERO = Fraction(0)
_ONE = Fraction(1)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class Queue:
    """What the scheduler reads of one Queue."""

    name: str
    weight: int = 1
    capability: Amounts | None = None  # None: no cap
    reclaimable: bool = True
    priority: int = 0
    state: str = OPEN  # status.state; a queue not yet given one is Open

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Queue:
        spec = _mapping(obj.get("spec"))
        status = _mapping(obj.get("status"))
        capability = amounts.parse(spec.get("capability")) or None
        state = status.get("state")
        reclaimable = spec.get("reclaimable")
        return cls(
            name=str(_mapping(obj.get("metadata")).get("name") or ""),
            weight=max(1, _int(spec.get("weight"), 1)),
            capability=capability,
            reclaimable=reclaimable if isinstance(reclaimable, bool) else True,
            priority=_int(spec.get("priority"), 0),
            state=state if state in STATES else OPEN,
        )

    @property
    def open(self) -> bool:
        return self.state == OPEN


IMPLICIT: Final = Queue(DEFAULT)  # the one queue there is where the Queue kind is not served


def queue_of(spec_queue: str | None) -> str:
    """The queue a unit belongs to, from its Volcano PodGroup's ``spec.queue`` (None: not a
    Volcano gang)."""
    return spec_queue or DEFAULT


# --- fair share ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Demand:
    """One queue's part in the water-filling."""

    weight: int
    request: Amounts  # what its running pods request plus what its waiting units ask for
    capability: Amounts | None = None


def _capped(value: Amounts, cap: Mapping[str, Fraction] | None) -> Amounts:
    if cap is None:
        return value
    return {n: min(v, cap[n]) if n in cap else v for n, v in value.items()}


def _within(request: Mapping[str, Fraction], deserved: Mapping[str, Fraction]) -> bool:
    return all(v <= deserved.get(n, _ZERO) for n, v in request.items() if v > 0)


def deserved(total: Mapping[str, Fraction], demands: Mapping[str, Demand]) -> dict[str, Amounts]:
    """Each queue's deserved share of ``total`` (see the module docstring). Exact: amounts
    stay fractions, so the shares of a node add up to the node."""
    remaining = {n: v for n, v in total.items() if v > 0}
    result: dict[str, Amounts] = {name: {} for name in demands}
    met: set[str] = set()
    while remaining:
        open_ = [name for name in sorted(demands) if name not in met]
        weights = sum(demands[name].weight for name in open_)
        if not weights:
            break
        given: Amounts = {}
        for name in open_:
            demand = demands[name]
            before = result[name]
            part = {n: v * Fraction(demand.weight, weights) for n, v in remaining.items()}
            offered = _capped(amounts.add(before, part), demand.capability)
            # A queue deserves nothing of a resource it does not ask for.
            after = {n: min(v, demand.request.get(n, _ZERO)) for n, v in offered.items()}
            after = {n: v for n, v in after.items() if v > 0}
            if _within(demand.request, after) or after == before:
                met.add(name)
            given = amounts.add(given, amounts.subtract(after, before))
            result[name] = after
        remaining = {n: v for n, v in amounts.subtract(remaining, given).items() if v > 0}
        if not any(v > 0 for v in given.values()):
            break
    return result


def share(allocated: Mapping[str, Fraction], deserved_: Mapping[str, Fraction]) -> Fraction:
    """The dominant ``allocated / deserved`` over the resources the queue holds (Volcano's
    ``helpers.Share`` per resource: 0 of 0 is 0, something of nothing is 1)."""
    result = _ZERO
    for name, used in allocated.items():
        if used <= 0:
            continue
        have = deserved_.get(name, _ZERO)
        ratio = used / have if have > 0 else _ONE
        result = max(result, ratio)
    return result


# --- one cycle's view of the queues -------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """Why a queue does not let a unit start: a PodGroup condition reason and a message."""

    reason: str
    message: str


@dataclass
class Fair:
    """The queues during one scheduling cycle: what each holds (updated as units start or
    reserve in the cycle) against what it deserves. ``served`` is False where the Queue kind
    is not served: then every unit is in the implicit queue, which admits everything."""

    queues: Mapping[str, Queue]
    deserved: Mapping[str, Amounts]
    allocated: dict[str, Amounts] = field(default_factory=dict)
    served: bool = True
    history: Mapping[str, Amounts] = field(default_factory=dict)  # held lately, on average
    charged: dict[str, Amounts] = field(default_factory=dict)  # started or reserved this cycle

    @classmethod
    def build(
        cls,
        queues: Iterable[Queue],
        total: Mapping[str, Fraction],
        allocated: Mapping[str, Mapping[str, Fraction]],
        waiting: Mapping[str, Mapping[str, Fraction]],
        *,
        served: bool = True,
        history: Mapping[str, Mapping[str, Fraction]] | None = None,
    ) -> Fair:
        """``allocated``: per queue, what its running pods request; ``waiting``: per queue,
        what its waiting units ask for; ``history``: per queue, what it held lately on
        average (:func:`held_lately`; a queue it does not list counts what it holds now).
        Queues named there that do not exist get no share."""
        known = {q.name: q for q in queues} if served else {DEFAULT: IMPLICIT}
        demands = {
            name: Demand(
                q.weight,
                amounts.add(allocated.get(name, {}), waiting.get(name, {})),
                q.capability,
            )
            for name, q in known.items()
        }
        held = {name: dict(a) for name, a in allocated.items()}
        return cls(
            queues=known,
            deserved=deserved(total, demands),
            allocated=held,
            served=served,
            history={name: dict((history or {}).get(name, held.get(name, {}))) for name in known},
        )

    def copy(self) -> Fair:
        """A copy to charge without changing this one."""
        return Fair(
            self.queues,
            self.deserved,
            {name: dict(a) for name, a in self.allocated.items()},
            self.served,
            self.history,
            {name: dict(a) for name, a in self.charged.items()},
        )

    def name_of(self, queue_name: str) -> str:
        return queue_name if self.served else DEFAULT

    def share(self, queue_name: str) -> Fraction:
        name = self.name_of(queue_name)
        return share(self.allocated.get(name, {}), self.deserved.get(name, {}))

    def share_with(self, queue_name: str, change: Mapping[str, Fraction]) -> Fraction:
        """The queue's share were ``change`` added to what it holds (negative: taken away)."""
        name = self.name_of(queue_name)
        return share(amounts.add(self.allocated.get(name, {}), change), self.deserved.get(name, {}))

    def standing(self, queue_name: str, *, charged: bool = True) -> Fraction:
        """Where the queue stands against its fair share over time: what it held lately on
        average, plus (``charged``) what it was given in this cycle, against what it
        deserves. The turns and whether the queue is owed (below 1) go by this."""
        name = self.name_of(queue_name)
        held = self.history.get(name, {})
        if charged:
            held = amounts.add(held, self.charged.get(name, {}))
        return share(held, self.deserved.get(name, {}))

    def charge(self, queue_name: str, request: Mapping[str, Fraction]) -> None:
        name = self.name_of(queue_name)
        self.allocated[name] = amounts.add(self.allocated.get(name, {}), request)
        self.charged[name] = amounts.add(self.charged.get(name, {}), request)

    def admit(self, label: str, queue_name: str, request: Amounts, *, new: bool) -> Refusal | None:
        """Whether the queue lets a unit asking for ``request`` start now (``new``: it holds
        no node yet)."""
        if not self.served:
            return None
        queue = self.queues.get(queue_name)
        if queue is None:
            return Refusal(messages.QUEUE_NOT_FOUND, messages.queue_not_found(label, queue_name))
        if new and not queue.open:
            message = messages.queue_closed(label, queue_name, queue.state)
            return Refusal(messages.QUEUE_CLOSED, message)
        over = over_capability(queue, self.allocated.get(queue_name, {}), request)
        if over:
            assert queue.capability is not None
            held = self.allocated.get(queue_name, {})
            return Refusal(
                messages.NOT_ENOUGH_RESOURCES,
                messages.queue_capability(
                    label,
                    queue_name,
                    over,
                    amounts.format_amounts({n: queue.capability[n] for n in over}),
                    amounts.format_amounts({n: held.get(n, _ZERO) for n in over}),
                    amounts.format_amounts({n: request[n] for n in over}),
                ),
            )
        return None


def over_capability(
    queue: Queue, allocated: Mapping[str, Fraction], request: Mapping[str, Fraction]
) -> list[str]:
    """The resources of ``request`` that would take ``queue`` past its capability."""
    cap = queue.capability
    if not cap:
        return []
    return [
        n for n, v in request.items() if v > 0 and n in cap and allocated.get(n, _ZERO) + v > cap[n]
    ]


# --- turns --------------------------------------------------------------------------------------


class Turns:
    """The order units are considered in: queues by priority and then by share, re-ranked
    after each unit (see the module docstring); within a queue, ``units`` keep their order.
    Iterate once; charge the queue (:meth:`Fair.charge`) before asking for the next unit."""

    def __init__(self, units: Sequence[Any], fair: Fair, queue_name: Any, rank: Any) -> None:
        """``queue_name(unit)`` and ``rank(unit)`` (a sort key) describe a unit."""
        self._fair = fair
        self._queue_name = queue_name
        self._rank = rank
        self._lines: dict[str, list[Any]] = {}
        for unit in sorted(units, key=rank):
            self._lines.setdefault(fair.name_of(queue_name(unit)), []).append(unit)
        self._next = {name: 0 for name in self._lines}
        self._tie = itertools.count()

    def _key(self, name: str) -> tuple[Any, ...]:
        queue = self._fair.queues.get(name)
        priority = queue.priority if queue is not None else 0
        head = self._lines[name][self._next[name]]
        return (-priority, self._fair.standing(name), self._rank(head), next(self._tie))

    def __iter__(self) -> Iterator[Any]:
        heap = [(self._key(name), name) for name in self._lines]
        heapq.heapify(heap)
        while heap:
            _, name = heapq.heappop(heap)
            line = self._lines[name]
            unit = line[self._next[name]]
            self._next[name] += 1
            yield unit
            if self._next[name] < len(line):
                heapq.heappush(heap, (self._key(name), name))


# --- history ------------------------------------------------------------------------------------


def held_lately(
    before: Mapping[str, Fraction],
    held: Mapping[str, Fraction],
    elapsed: float,
    half_life: float,
) -> Amounts:
    """The average of what a queue held, ``elapsed`` seconds after it was ``before``, having
    held ``held`` all the while: an exponentially weighted average with ``half_life``
    (Kueue's ``usageHalfLifeTime``). Kept to thousandths."""
    kept = 0.5 ** (max(0.0, elapsed) / half_life) if half_life > 0 else 0.0
    out: Amounts = {}
    for name in set(before) | set(held):
        value = float(before.get(name, _ZERO)) * kept + float(held.get(name, _ZERO)) * (1 - kept)
        rounded = Fraction(round(value * 1000), 1000)
        if rounded > 0:
            out[name] = rounded
    return out


def history_of(obj: Mapping[str, Any], now: float, half_life: float) -> Amounts | None:
    """What a Queue held lately on average, as of ``now``, from its status (None: not yet
    recorded): ``fairSharing.consumedResources`` as of ``fairSharing.lastUpdate``, and
    ``allocated`` held since."""
    status = _mapping(obj.get("status"))
    sharing = _mapping(status.get("fairSharing"))
    since = timestamps.parse(sharing.get("lastUpdate"))
    if since is None:
        return None
    before = amounts.parse(sharing.get("consumedResources"))
    return held_lately(before, amounts.parse(status.get("allocated")), now - since, half_life)


# --- status -------------------------------------------------------------------------------------


def state_of(current: Mapping[str, Any], holding_groups: int) -> str:
    """The state to write: what was set (a queue is closed by writing ``Closed`` or
    ``Closing`` to its status), ``Open`` where none was, and ``Closing`` becoming ``Closed``
    once no PodGroup of the queue is left unfinished (Volcano's queue controller)."""
    state = current.get("state")
    if state not in STATES or state == UNKNOWN:
        return OPEN
    if state == CLOSING and holding_groups == 0:
        return CLOSED
    return str(state)


def status(
    current: Mapping[str, Any], phases: Mapping[str, int], allocated: Mapping[str, Fraction]
) -> dict[str, Any]:
    """A Queue's ``status`` but for ``fairSharing``: its state, how many of its PodGroups are
    in each phase, and what its pods holding a node request (cpu and memory always, as
    Volcano writes them)."""
    counts = {field_: phases.get(phase, 0) for phase, field_ in PHASE_COUNTS.items()}
    unfinished = sum(n for phase, n in phases.items() if phase != "Completed")
    return {
        "state": state_of(current, unfinished),
        **counts,
        "allocated": _quantities({"cpu": _ZERO, "memory": _ZERO, **allocated}),
    }


def fair_sharing(lately: Mapping[str, Fraction], now: str) -> dict[str, Any]:
    """``status.fairSharing``: what the queue held lately on average, as of ``now``. Written
    with every other change of the status (``allocated`` above all), so that what the queue
    held between two writes is always the ``allocated`` of the first."""
    return {"consumedResources": _quantities(lately), "lastUpdate": now}


def _quantities(values: Mapping[str, Fraction]) -> dict[str, str]:
    return {
        n: amounts.format_quantity(v, n)
        for n, v in sorted(values.items())
        if v > 0 or n in ("cpu", "memory")
    }
