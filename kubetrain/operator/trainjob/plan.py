"""The plan of one TrainJob reconcile: from the job, what its plugins built and what was
observed, to the whole new status and every write and event that should follow.

The reconciler fetches (caches, the runtime snapshot, the host port, the build, which needs a
fresh SSH key pair at most once), asks :func:`plan` what to do, and carries it out, as the v1
reconciler carries out :mod:`kubetrain.operator.jobs.plan`. Everything that decides lives
here, so it is tested without a client, a cache or a clock:

- :func:`unsupported_runtime`: a ``runtimeRef`` no plugin handles fails the job
  (``TrainingRuntimeNotSupported``), before anything is fetched for it;
- :func:`plan`: the pods observed against the JobSet give the status (:mod:`.status`, in
  upstream's order: suspended, the status plugin's verdict, the active deadline, running);
  a job that finished in this pass, or before, gets its status written first and then its
  active pods deleted (every pod for a passed deadline), and nothing else; otherwise
  :func:`kubetrain.operator.trainjob.workload.plan` says which pods to create and delete,
  whether a JobSet restart is first recorded on the Service, and which events follow.

The executor's order, which :class:`Plan` leaves to it because it is about writes, not
decisions: the plugins' objects, the volume claims and the Service first (409 = exists), then
the restart record, the deletions and the creations, then the status if it changed, then the
events; a finished job gets its status before its deletions, so that no later pass, even on a
stale cache, brings it back.

Must not: do I/O, read a clock (``now`` is the caller's) or change what it is given.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain import api
from kubetrain.operator.trainjob import framework, messages, status, workload

RUNTIME_KINDS: Final = (api.TrainingRuntime.KIND, api.ClusterTrainingRuntime.KIND)


@dataclass(frozen=True)
class Observed:
    """What the reconciler read for one pass.

    ``service``: the job's headless Service from the cache, if any; ``remembered_restarts``:
    the restart counts this process wrote to it last, which the cache may not show yet.
    """

    pods: Sequence[Mapping[str, Any]]
    service: Mapping[str, Any] | None = None
    remembered_restarts: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Plan:
    """One pass's decisions; ``finished`` set: write the status, delete ``delete``, stop."""

    status: dict[str, Any]
    jobset: dict[str, Any]
    finished: bool = False
    verdict: str | None = None  # "Complete (reason)" when this pass finished the job
    restarts: tuple[int, int] = (0, 0)  # what the Service records, or this process last wrote
    extras: tuple[dict[str, Any], ...] = ()  # the plugins' Secrets, ConfigMaps and PodGroups
    claims: tuple[dict[str, Any], ...] = ()  # the JobSet's volumeClaimPolicies
    suspend: bool = False
    restart: workload.Restart | None = None  # record on the Service before deleting
    delete: tuple[Mapping[str, Any], ...] = ()
    create: tuple[dict[str, Any], ...] = ()
    events: tuple[tuple[str, str, str], ...] = field(default=())  # (type, reason, message)
    requeue_after: float | None = None  # seconds until the active deadline


def unsupported_runtime(raw: Mapping[str, Any], now: datetime.datetime) -> dict[str, Any] | None:
    """The status of a job whose ``runtimeRef`` no plugin handles; None when one does."""
    ref = (raw.get("spec") or {}).get("runtimeRef") or {}
    if ref.get("apiGroup") == api.TRAINER_GROUP and ref.get("kind") in RUNTIME_KINDS:
        return None
    old_status = raw.get("status") or {}
    conditions = status.conditions_of(old_status)
    gk = f"{ref.get('kind') or ''}.{ref.get('apiGroup') or ''}"
    status.set_failed(
        conditions,
        messages.RUNTIME_NOT_SUPPORTED_REASON,
        messages.RUNTIME_NOT_SUPPORTED_MESSAGE.format(gk=gk),
        status.timestamp(now),
    )
    return status.merged(old_status, conditions, None)


def plan(
    raw: Mapping[str, Any],
    built: framework.Built,
    observed: Observed,
    now: datetime.datetime,
) -> Plan:
    """What one pass does for a TrainJob that passed every check and was built (see above)."""
    spec = raw.get("spec") or {}
    old_status = raw.get("status") or {}
    conditions = status.conditions_of(old_status)
    stamp = status.timestamp(now)
    status.accept(conditions)  # every check passed: a refusal is over
    jobset = jobset_of(built)
    extras = tuple(o for o in built.objects if o.get("kind") != "JobSet")
    restarts = max(workload.restart_counts(observed.service), observed.remembered_restarts)
    pods = list(observed.pods)
    observation = workload.observe(jobset, pods, *restarts)

    suspend = spec.get("suspend") is True
    was_finished = status.finished(conditions)
    status.set_suspended(conditions, suspend, stamp)
    update = framework.run_status(built.info, observation)
    status.apply_update(conditions, update, stamp)
    remaining = status.deadline_remaining(raw, conditions, now)
    deadline_passed = remaining is not None and remaining <= 0
    if deadline_passed:
        status.set_failed(
            conditions, messages.DEADLINE_EXCEEDED_REASON, messages.DEADLINE_EXCEEDED_MESSAGE, stamp
        )
    status.set_running(conditions, observation, suspend, stamp)
    new_status = status.merged(old_status, conditions, update.jobs_status)

    if status.finished(conditions):
        doomed = pods if deadline_passed else [p for p in pods if workload.active(p)]
        return Plan(
            status=new_status,
            jobset=jobset,
            finished=True,
            verdict=None if was_finished else verdict(conditions),
            restarts=restarts,
            delete=tuple(doomed),
        )
    work = workload.plan(jobset, observation, pods)
    by_name = {workload.name_of(p): p for p in pods}
    return Plan(
        status=new_status,
        jobset=jobset,
        restarts=restarts,
        extras=extras,
        claims=tuple(workload.volume_claims(jobset)),
        suspend=suspend,
        restart=work.restart,
        delete=tuple(by_name[name] for name in work.delete),
        create=work.create,
        events=work.events,
        requeue_after=remaining if remaining is not None and remaining > 0 else None,
    )


def jobset_of(built: framework.Built) -> dict[str, Any]:
    """The JobSet the plugins built: the shape of the job's pods and its Service's name."""
    return next(o for o in built.objects if o.get("kind") == "JobSet")


def verdict(conditions: Iterable[Mapping[str, Any]]) -> str:
    """``Complete (reason)`` or ``Failed (reason)``, for the log line of a finished job."""
    for condition in conditions:
        if (
            condition.get("type") in (messages.COMPLETE, messages.FAILED)
            and condition.get("status") == "True"
        ):
            return f"{condition.get('type')} ({condition.get('reason')})"
    return "unknown"
