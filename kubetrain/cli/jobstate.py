"""The state of a job in one word, from what its controller wrote in ``status``.

A ``kubeflow.org/v1`` job carries the conditions Created, Running, Restarting, Suspended,
Succeeded and Failed; several may be True at once (Created stays True), so the state is the
True condition that matters most: Failed, Succeeded, Suspended, Restarting, Running, Created.
A job whose operator has not written anything yet is Pending.

A job the operator refuses (it fails admission: created where no webhook checked it) is
Failed, as ``kubectl get`` shows it, with the reason ``<Kind>FailedValidation`` and every
problem in its message; it is :attr:`State.refused` too, since fixing its spec lets it run
(the operator then removes that condition), so it has no end time.

A TrainJob only gets Complete, Failed and Suspended conditions from upstream (which never
shipped Created or Running), so between creation and the end it is Created, or Running once
it has started: its replicated jobs report active or finished pods (or, when its pods are
given, one of them runs or has ended), as the Kubeflow SDK reports it. kubetrain's own
``Running`` condition says so too where its controller writes it, and its reason tells a
restart (Restarting). A job that has started stays Running until its final condition, also
in the moment between its last pod ending and the controller saying Complete. Its success
keeps upstream's word, Complete; filters treat Succeeded and Complete as the same state.

Owns: that rule, plus the times (start, end, duration), the replica counts and the progress a
job reports. Pure: the current time is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubetrain import accessors
from kubetrain.cli import durations, jobkinds

PENDING = "Pending"
CREATED = "Created"
RUNNING = "Running"
RESTARTING = "Restarting"
SUSPENDED = "Suspended"
SUCCEEDED = "Succeeded"
COMPLETE = "Complete"
FAILED = "Failed"

STATES: tuple[str, ...] = (
    PENDING, CREATED, RUNNING, RESTARTING, SUSPENDED, SUCCEEDED, COMPLETE, FAILED,
)  # fmt: skip
# v1 conditions, the one that decides first.
V1_PRIORITY: tuple[str, ...] = (FAILED, SUCCEEDED, SUSPENDED, RESTARTING, RUNNING, CREATED)
TRAINJOB_PRIORITY: tuple[str, ...] = (FAILED, COMPLETE, SUSPENDED)
_SYNONYMS = {SUCCEEDED.lower(): SUCCEEDED, COMPLETE.lower(): SUCCEEDED, "completed": SUCCEEDED}
# The reason of a refusal's Failed condition ends so: <Kind>FailedValidation, for every kind.
REFUSED_REASON_SUFFIX = "FailedValidation"


@dataclass(frozen=True)
class State:
    """A job's state, and the reason, message and time of the condition that decided it."""

    phase: str
    reason: str = ""
    message: str = ""
    since: str | None = None  # lastTransitionTime of that condition

    @property
    def finished(self) -> bool:
        return self.phase in (SUCCEEDED, COMPLETE, FAILED)

    @property
    def succeeded(self) -> bool:
        return self.phase in (SUCCEEDED, COMPLETE)

    @property
    def failed(self) -> bool:
        return self.phase == FAILED

    @property
    def refused(self) -> bool:
        """Failed because the operator refuses the job as written (until its spec is fixed)."""
        return self.phase == FAILED and self.reason.endswith(REFUSED_REASON_SUFFIX)


def canonical(name: str) -> str:
    """A state as typed by a user, in its canonical spelling (Complete and Succeeded are one);
    ValueError names the accepted states."""
    lowered = name.strip().lower()
    if lowered in _SYNONYMS:
        return _SYNONYMS[lowered]
    for state in STATES:
        if state.lower() == lowered:
            return state
    raise ValueError(f"no job state {name!r}; accepted: {', '.join(STATES)}")


def matches(state: State, wanted: str) -> bool:
    """Whether a job in ``state`` is in the state a user asked for (``--state``)."""
    return canonical(state.phase) == canonical(wanted)


def reached(state: State, wanted: str) -> bool:
    """Whether a job has got as far as ``wanted`` (``wait --for``): Created is reached by every
    state after Pending but a refusal (the operator did not accept the job); the others only
    by being in them."""
    if canonical(wanted) == CREATED:
        return state.phase != PENDING and not state.refused
    return matches(state, wanted)


def conditions(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = job.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in found or [] if isinstance(c, Mapping)]


def of(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]] | None = None) -> State:
    """The state of ``job``; for a TrainJob, ``pods`` (when given) tell Running from Created."""
    true = {str(c.get("type")): c for c in conditions(job) if c.get("status") == "True"}
    v1 = job.get("kind") != jobkinds.TRAINJOB.kind
    for kind in V1_PRIORITY if v1 else TRAINJOB_PRIORITY:
        if kind in true:
            c = true[kind]
            return State(
                kind,
                str(c.get("reason") or ""),
                str(c.get("message") or ""),
                c.get("lastTransitionTime") or c.get("lastUpdateTime"),
            )
    if v1:
        return State(PENDING)
    return _trainjob_underway(job, pods)


def _trainjob_underway(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]] | None) -> State:
    """A TrainJob with no final or Suspended condition: Created, Running or Restarting."""
    running = next((c for c in conditions(job) if c.get("type") == RUNNING), None)
    if running is not None and running.get("status") == "True":
        return State(RUNNING, str(running.get("reason") or ""), str(running.get("message") or ""))
    if running is not None and running.get("reason") == RESTARTING:
        return State(
            RESTARTING,
            RESTARTING,
            str(running.get("message") or ""),
            running.get("lastTransitionTime"),
        )
    statuses = _jobs_status(job)
    ended = any(_int(s.get("succeeded")) > 0 for s in statuses)
    if pods is not None:  # a Job's active pods may still be Pending: the pods themselves tell
        started = any(accessors.phase(p) in (RUNNING, SUCCEEDED, FAILED) for p in pods)
        started = started or any(_int(s.get("ready")) > 0 for s in statuses)
    else:
        started = any(_int(s.get("active")) > 0 for s in statuses)
    return State(RUNNING if started or ended else CREATED)


# --- times --------------------------------------------------------------------------------


def started(job: Mapping[str, Any]) -> datetime | None:
    """When the job started running: ``status.startTime`` (v1); a TrainJob records none, so its
    creation time stands in."""
    status = _status(job)
    if job.get("kind") == jobkinds.TRAINJOB.kind:
        return durations.timestamp((job.get("metadata") or {}).get("creationTimestamp"))
    return durations.timestamp(status.get("startTime"))


def finished(job: Mapping[str, Any]) -> datetime | None:
    """When the job ended: ``status.completionTime``, else when its final condition came; None
    while it runs, and for a refused job, which never ran."""
    state = of(job)
    if not state.finished or state.refused:
        return None
    return durations.timestamp(_status(job).get("completionTime")) or durations.timestamp(
        state.since
    )


def duration(job: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds from start to end (or to ``now`` while it runs); None before it started."""
    start = started(job)
    if start is None:
        return None
    end = finished(job) or now
    return max(0.0, (end - start).total_seconds())


def age(job: Mapping[str, Any], now: datetime) -> float | None:
    return durations.since((job.get("metadata") or {}).get("creationTimestamp"), now)


# --- replicas -----------------------------------------------------------------------------


def replica_specs(job: Mapping[str, Any]) -> list[tuple[str, int | None]]:
    """(replica type, replicas) in the framework's order: a v1 job's replica specs (replicas
    default to 1), or a TrainJob's ``node`` with ``trainer.numNodes`` (None when the runtime
    decides)."""
    kind = jobkinds.of(job)
    spec = job.get("spec") if isinstance(job.get("spec"), Mapping) else {}
    if not kind.v1:
        trainer = spec.get("trainer") if isinstance(spec.get("trainer"), Mapping) else {}
        nodes = trainer.get("numNodes")
        return [(jobkinds.TRAINJOB.replica_types[0], nodes if isinstance(nodes, int) else None)]
    specs = spec.get(kind.replica_field or "")
    if not isinstance(specs, Mapping):
        return []
    order = {rtype: i for i, rtype in enumerate(kind.replica_types)}
    found = []
    for rtype in sorted(specs, key=lambda t: (order.get(t, len(order)), t)):
        replica = specs[rtype] if isinstance(specs[rtype], Mapping) else {}
        count = replica.get("replicas", 1)
        found.append((str(rtype), count if isinstance(count, int) else 1))
    return found


def replica_counts(job: Mapping[str, Any]) -> tuple[int, int | None]:
    """(running replicas, desired replicas) as the controller reports them; desired is None
    when the job does not say (a TrainJob that leaves numNodes to its runtime)."""
    specs = replica_specs(job)
    counts = [n for _, n in specs]
    total = None if any(n is None for n in counts) else sum(n or 0 for n in counts)
    if job.get("kind") == jobkinds.TRAINJOB.kind:
        statuses: Iterable[Any] = _jobs_status(job)
    else:
        replica_statuses = _status(job).get("replicaStatuses")
        statuses = replica_statuses.values() if isinstance(replica_statuses, Mapping) else ()
    running = sum(_int(s.get("active")) for s in statuses if isinstance(s, Mapping))
    return running, total


def progress(job: Mapping[str, Any]) -> str | None:
    """What the job reports of its progress (a TrainJob's ``trainerStatus``): ``42%``, with
    the estimated time left when given (``42% ETA 5m``); None when it reports nothing."""
    trainer = _status(job).get("trainerStatus")
    if not isinstance(trainer, Mapping):
        return None
    percent = trainer.get("progressPercentage")
    if not isinstance(percent, int | float):
        return None
    text = f"{percent:g}%"
    left = trainer.get("estimatedRemainingSeconds")
    if isinstance(left, int | float):
        text += f" ETA {durations.human(left)}"
    return text


def _status(job: Mapping[str, Any]) -> Mapping[str, Any]:
    status = job.get("status")
    return status if isinstance(status, Mapping) else {}


def _jobs_status(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = _status(job).get("jobsStatus")
    return [s for s in found or [] if isinstance(s, Mapping)]


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0
