"""Gangs: which PodGroup a pod belongs to, what the PodGroup asks for, and the status the
scheduler writes back to it. Both kinds the operator creates are understood:

- scheduler-plugins coscheduling, ``scheduling.x-k8s.io/v1alpha1`` PodGroup, members carry
  the label ``scheduling.x-k8s.io/pod-group: <name>``; spec ``minMember``, ``minResources``,
  ``scheduleTimeoutSeconds``;
- Volcano, ``scheduling.volcano.sh/v1beta1`` PodGroup, members carry the annotation
  ``scheduling.k8s.io/group-name: <name>`` (or ``scheduling.volcano.sh/group-name``); spec
  ``minMember``, ``minResources``, ``queue``, ``priorityClassName``. What a queue admits is
  :mod:`~kubetrain.local.scheduler.queues`'s to say.

Status, computed whole from the members' state and this cycle's decision (the controller
writes it only when it differs from what is stored):

scheduler-plugins, phases as its API documents them: ``Pending`` until ``minMember`` pods
are bound, ``Scheduling`` while they are bound but fewer than ``minMember`` run,
``Running`` once ``minMember`` run (or ran to success), ``Finished`` once ``minMember``
succeeded, ``Failed`` once a member failed and ``minMember`` of them have run; the last two
are final, as in its PodGroup controller. ``running``/``succeeded``/``failed`` count
members, ``scheduleStartTime`` is when the scheduler first tried the whole gang, and
``occupiedBy`` names the members' owners. ``scheduleTimeoutSeconds``: upstream it bounds how
long placed members wait in Permit before the attempt is undone and retried; it never fails
the group. Here members are bound together or not at all, so nothing waits half-placed; once
the timeout has passed since ``scheduleStartTime`` with the gang still not placed, the group
stays ``Pending`` and the members' Unschedulable message (and the Warning event on the
PodGroup) says the timeout passed; scheduling goes on trying.

Volcano: ``Pending`` until the group is enqueueable (no ``minResources``, or
``minResources`` within what the nodes have at all; and its queue admits it), then
``Inqueue`` (the v1 operator creates a Volcano gang's pods only from then on), ``Running``
once ``minMember`` members are bound or done (Volcano counts allocated tasks), back to
``Inqueue`` (``Pending`` if no longer enqueueable) if they go, ``Completed`` once every
member has finished. Conditions ``Unschedulable`` (reasons ``NotEnoughResources``,
``NotEnoughTasks``, and kubetrain's ``QueueNotFound`` and ``QueueClosed``) while the gang
waits, ``Scheduled`` once placed.

Owns: these rules. Must not: do I/O or decide placement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import podgroups
from kubetrain.local.scheduler import amounts, messages, timestamps

COSCHEDULING: Final = podgroups.COSCHEDULING
VOLCANO: Final = podgroups.VOLCANO
DEFAULT_SCHEDULER: Final = {COSCHEDULING: "scheduler-plugins-scheduler", VOLCANO: "volcano"}
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True, order=True)
class GroupRef:
    """A PodGroup by kind (its apiVersion), namespace and name."""

    api_version: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def group_of(pod: Mapping[str, Any]) -> GroupRef | None:
    """The PodGroup ``pod`` belongs to, if any (the scheduler-plugins label first)."""
    member = podgroups.member_of(pod)
    if member is None:
        return None
    namespace = str(_mapping(pod.get("metadata")).get("namespace") or "")
    return GroupRef(member[0], namespace, member[1])


def ref_of(api_version: str, group: Mapping[str, Any]) -> GroupRef:
    meta = _mapping(group.get("metadata"))
    return GroupRef(api_version, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class Spec:
    """What a PodGroup asks of the scheduler."""

    min_member: int = 1
    min_resources: amounts.Amounts | None = None
    timeout: int | None = None  # scheduleTimeoutSeconds (scheduler-plugins)
    queue: str | None = None  # Volcano
    priority_class: str | None = None  # Volcano
    created: float | None = None
    uid: str = ""

    @classmethod
    def of(cls, group: Mapping[str, Any]) -> Spec:
        spec = _mapping(group.get("spec"))
        meta = _mapping(group.get("metadata"))
        minimum = spec.get("minResources")
        timeout = spec.get("scheduleTimeoutSeconds")
        return cls(
            min_member=max(0, _int(spec.get("minMember"), 1)),
            min_resources=amounts.parse(minimum) if isinstance(minimum, Mapping) else None,
            timeout=timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None,
            queue=spec.get("queue") if isinstance(spec.get("queue"), str) else None,
            priority_class=spec.get("priorityClassName") or None,
            created=timestamps.parse(meta.get("creationTimestamp")),
            uid=str(meta.get("uid") or ""),
        )


@dataclass(frozen=True)
class Members:
    """The state of a gang's pods, for its status."""

    total: int = 0
    bound: int = 0  # holding or having held a node (this cycle's bindings included), not failed
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    owners: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, pods: Iterable[Mapping[str, Any]], bound_now: frozenset[str] = frozenset()
    ) -> Members:
        total = bound = running = succeeded = failed = 0
        owners: set[str] = set()
        for pod in pods:
            meta = _mapping(pod.get("metadata"))
            phase = _mapping(pod.get("status")).get("phase")
            total += 1
            running += phase == "Running"
            succeeded += phase == "Succeeded"
            failed += phase == "Failed"
            has_node = (
                bool(_mapping(pod.get("spec")).get("nodeName")) or meta.get("uid") in bound_now
            )
            bound += has_node and phase != "Failed"
            for ref in meta.get("ownerReferences") or []:
                if isinstance(ref, Mapping) and ref.get("name"):
                    owners.add(f"{meta.get('namespace')}/{ref['name']}")
        return cls(total, bound, running, succeeded, failed, tuple(sorted(owners)))


@dataclass(frozen=True)
class Waiting:
    """Why the gang waits this cycle (None in :func:`coscheduling_status` and
    :func:`volcano_status` when it does not)."""

    message: str
    incomplete: bool = False  # fewer pods than minMember exist
    reason: str | None = None  # the condition's reason, where neither of the usual two


@dataclass(frozen=True)
class Context:
    now: str  # the current time, as status times are written
    waiting: Waiting | None = None
    placed: bool = False  # bound this cycle
    enqueueable: bool = True  # Volcano: minResources within what the nodes have


def _counts(members: Members) -> dict[str, int]:
    return {"running": members.running, "succeeded": members.succeeded, "failed": members.failed}


def coscheduling_phase(current: str | None, spec: Spec, members: Members) -> str:
    if current in (messages.FINISHED, messages.FAILED):
        return current
    minimum = spec.min_member
    if members.total < minimum:
        return messages.PENDING
    if members.succeeded >= minimum and members.total:
        return messages.FINISHED
    if members.failed and members.failed + members.running + members.succeeded >= minimum:
        return messages.FAILED
    if members.total and members.running + members.succeeded >= minimum:
        return messages.RUNNING
    if members.total and members.bound >= minimum:
        return messages.SCHEDULING
    return messages.PENDING


def coscheduling_status(
    current: Mapping[str, Any], spec: Spec, members: Members, context: Context
) -> dict[str, Any]:
    """The whole ``status`` of a scheduler-plugins PodGroup."""
    status: dict[str, Any] = {
        "phase": coscheduling_phase(current.get("phase"), spec, members),
        **_counts(members),
    }
    if current.get("occupiedBy") or members.owners:
        status["occupiedBy"] = current.get("occupiedBy") or ",".join(members.owners)
    started = current.get("scheduleStartTime")
    if not started and members.total >= spec.min_member and members.total:
        started = context.now
    if started:
        status["scheduleStartTime"] = started
    return status


def timed_out(current: Mapping[str, Any], spec: Spec, now: float) -> bool:
    """scheduleTimeoutSeconds has passed since the scheduler first tried the gang."""
    if spec.timeout is None:
        return False
    started = timestamps.parse(current.get("scheduleStartTime"))
    return started is not None and now >= started + spec.timeout


def timeout_at(current: Mapping[str, Any], spec: Spec) -> float | None:
    """When scheduleTimeoutSeconds passes, if it is set and the gang has been tried."""
    started = timestamps.parse(current.get("scheduleStartTime"))
    if spec.timeout is None or started is None:
        return None
    return started + spec.timeout


def volcano_phase(current: str | None, spec: Spec, members: Members, enqueueable: bool) -> str:
    if current == messages.COMPLETED:
        return current
    finished = members.succeeded + members.failed
    if members.total and finished == members.total and members.total >= spec.min_member:
        return messages.COMPLETED
    if members.total and members.bound >= spec.min_member:
        return messages.RUNNING
    if current == messages.INQUEUE or enqueueable:
        return messages.INQUEUE
    return messages.PENDING


def _condition(
    kind: str, status: str, reason: str, message: str, before: Mapping[str, Any] | None, now: str
) -> dict[str, Any]:
    since = now
    if before is not None and before.get("status") == status and before.get("lastTransitionTime"):
        since = before["lastTransitionTime"]
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }


def volcano_status(
    current: Mapping[str, Any], spec: Spec, members: Members, context: Context
) -> dict[str, Any]:
    """The whole ``status`` of a Volcano PodGroup."""
    phase = volcano_phase(current.get("phase"), spec, members, context.enqueueable)
    old = [c for c in current.get("conditions") or [] if isinstance(c, Mapping)]
    by_type = {c.get("type"): c for c in old}
    unschedulable = by_type.get(messages.CONDITION_TYPE_UNSCHEDULABLE)
    scheduled = by_type.get(messages.CONDITION_TYPE_SCHEDULED)
    now = context.now
    if context.waiting is not None:
        reason = context.waiting.reason or (
            messages.NOT_ENOUGH_TASKS
            if context.waiting.incomplete
            else messages.NOT_ENOUGH_RESOURCES
        )
        unschedulable = _condition(
            messages.CONDITION_TYPE_UNSCHEDULABLE,
            "True",
            reason,
            context.waiting.message,
            unschedulable,
            now,
        )
    elif context.placed or phase == messages.RUNNING:
        unschedulable = None
        scheduled = _condition(
            messages.CONDITION_TYPE_SCHEDULED, "True", messages.GANG_READY, "", scheduled, now
        )
    conditions = [
        c
        for c in old
        if c.get("type")
        not in (messages.CONDITION_TYPE_UNSCHEDULABLE, messages.CONDITION_TYPE_SCHEDULED)
    ]
    conditions += [dict(c) for c in (scheduled, unschedulable) if c is not None]
    status: dict[str, Any] = {"phase": phase, **_counts(members)}
    if conditions:
        status["conditions"] = conditions
    return status


def differs(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether writing ``wanted`` would change the stored status (fields the scheduler does
    not set are left as they are, so only its own are compared)."""
    return any(current.get(key) != value for key, value in wanted.items())
