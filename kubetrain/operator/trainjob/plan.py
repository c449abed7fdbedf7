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
  :func:`next_pods` says which pods to create and delete, whether a JobSet restart is first
  recorded on the Service, and which events follow, as JobSet and the Job controller would:
  a restart recreates every pod (strategy ``Recreate``) with the new
  ``jobset.sigs.k8s.io/restart-attempt``; ``dependsOn`` (``Ready``/``Complete``) and
  ``startupPolicy: InOrder`` hold back the pods of later replicated jobs until their
  predecessors got there; suspended: no active pods; finished: active pods are deleted,
  finished ones kept for logs; a pod past the JobSet's current shape (a resized elastic job)
  or of an earlier attempt goes.

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
from kubetrain.operator.trainjob import framework, messages, observation, status, workload

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
    restart: observation.Restart | None = None  # record on the Service before deleting
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
    seen = observation.observe(jobset, pods, *restarts)

    suspend = spec.get("suspend") is True
    was_finished = status.finished(conditions)
    status.set_suspended(conditions, suspend, stamp)
    update = framework.run_status(built.info, seen)
    status.apply_update(conditions, update, stamp)
    remaining = status.deadline_remaining(raw, conditions, now)
    deadline_passed = remaining is not None and remaining <= 0
    if deadline_passed:
        status.set_failed(
            conditions, messages.DEADLINE_EXCEEDED_REASON, messages.DEADLINE_EXCEEDED_MESSAGE, stamp
        )
    status.set_running(conditions, seen, suspend, stamp)
    new_status = status.merged(old_status, conditions, update.jobs_status)

    if status.finished(conditions):
        doomed = pods if deadline_passed else [p for p in pods if observation.active(p)]
        return Plan(
            status=new_status,
            jobset=jobset,
            finished=True,
            verdict=None if was_finished else verdict(conditions),
            restarts=restarts,
            delete=tuple(doomed),
        )
    work = next_pods(jobset, seen, pods)
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


# --- pods ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodPlan:
    """What to do next. ``restart`` set: write its counts to the Service before deleting."""

    create: tuple[dict[str, Any], ...] = ()
    delete: tuple[str, ...] = ()
    restart: observation.Restart | None = None
    events: tuple[tuple[str, str, str], ...] = field(default=())  # (type, reason, message)


def _dependencies_met(
    rjob: Mapping[str, Any], seen: observation.Observation, jobset: Mapping
) -> bool:
    wanted = {str(r["name"]): workload.replicas(r) for r in workload.replicated_jobs(jobset)}
    for dependency in rjob.get("dependsOn") or []:
        if not isinstance(dependency, Mapping):
            continue
        name = str(dependency.get("name", ""))
        status = seen.status(name)
        total = wanted.get(name, 0)
        if dependency.get("status") == "Complete" and status.succeeded != total:
            return False
        if dependency.get("status") == "Ready" and (
            status.ready + status.failed + status.succeeded != total
        ):
            return False
    return True


def _in_order(jobset: Mapping[str, Any]) -> bool:
    return workload.dig(jobset, "spec", "startupPolicy", "startupPolicyOrder") == "InOrder"


def _all_started(rjob: Mapping[str, Any], seen: observation.Observation) -> bool:
    status = seen.status(str(rjob["name"]))
    return workload.replicas(rjob) == status.failed + status.ready + status.succeeded


def next_pods(
    jobset: Mapping[str, Any],
    seen: observation.Observation,
    pods: Iterable[Mapping[str, Any]],
    *,
    finished: bool = False,
) -> PodPlan:
    """The next step towards what the JobSet and its status want (see the module docstring)."""
    pods = list(pods)
    deletable = [p for p in pods if not observation.terminating(p)]
    if finished or seen.outcome is not None:
        return PodPlan(
            delete=tuple(sorted(workload.name_of(p) for p in deletable if observation.active(p)))
        )
    if workload.suspended(jobset):
        return PodPlan(
            delete=tuple(sorted(workload.name_of(p) for p in deletable if observation.active(p)))
        )
    if seen.restart is not None:
        doomed = sorted(workload.name_of(p) for p in deletable)
        event = ("Warning", seen.restart.reason, seen.restart.message)
        return PodPlan(delete=tuple(doomed), restart=seen.restart, events=(event,))
    wanted = workload.desired_pod_names(jobset)
    delete = sorted(
        workload.name_of(p)
        for p in deletable
        if observation.attempt(p) != seen.restarts or workload.name_of(p) not in wanted
    )
    taken = {workload.name_of(p) for p in pods}
    create: list[dict[str, Any]] = []
    for rjob in workload.replicated_jobs(jobset):
        if not _dependencies_met(rjob, seen, jobset):
            continue
        for job_index in range(workload.replicas(rjob)):
            state = next(
                (j for j in seen.jobs if j.replicated_job == rjob["name"] and j.index == job_index),
                None,
            )
            if state is not None and (state.succeeded or state.failed):
                continue
            for pod_index in range(workload.parallelism(rjob)):
                if workload.pod_name(jobset, str(rjob["name"]), job_index, pod_index) in taken:
                    continue
                create.append(
                    workload.desired_pod(jobset, rjob, job_index, pod_index, seen.restarts)
                )
        if _in_order(jobset) and not _all_started(rjob, seen):
            break
    return PodPlan(create=tuple(create), delete=tuple(delete))
