"""What a TrainJob's pods say: each Job's state, the JobSet's verdict, and whether it restarts.

The workload (:mod:`.workload`) says what the pods should be; this module reads the ones that
exist, as JobSet and Kubernetes' Job controller would read them, given the restart attempt the
Service records:

- a Job succeeds when every completion index has a Succeeded pod, and fails when one of its
  pods failed, or when its pods restarted in place (restartPolicy OnFailure, JobSet's default)
  more than ``backoffLimit`` times (default 6); reason ``BackoffLimitExceeded``;
- ``successPolicy`` (``All`` by default, or ``Any``, over ``targetReplicatedJobs`` or all) makes
  the set complete; a failed Job applies ``failurePolicy``: none → failed (``FailedJobs``);
  otherwise the first matching rule's action (``FailJobSet``, ``RestartJobSet``,
  ``RestartJobSetAndIgnoreMaxRestarts``; per-Job restarts act as whole-set restarts), else
  ``RestartJobSet``, which fails the set (``ReachedMaxRestarts``) once ``maxRestarts`` restarts
  counted. A restart is a decision here (:class:`Restart`); recreating the pods is the plan's;
- training has started when every pod of the trainer jobs runs (or ran): the time the last of
  them started, for the ``Running`` condition.

Must not: do I/O or read a clock; times come from pod statuses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import api
from kubetrain.operator.trainjob import messages, workload

IN_PLACE_RESTART_POLICIES: Final = frozenset({"OnFailure", "Always"})
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})
FAIL_JOBSET: Final = "FailJobSet"
RESTART_JOBSET: Final = "RestartJobSet"
RESTART_IGNORE_MAX: Final = "RestartJobSetAndIgnoreMaxRestarts"
RESTART_JOB: Final = "RestartJob"
RESTART_JOB_IGNORE_MAX: Final = "RestartJobAndIgnoreMaxRestarts"
IGNORING_MAX: Final = frozenset({RESTART_IGNORE_MAX, RESTART_JOB_IGNORE_MAX})


# --- reading pods ----------------------------------------------------------------------------


def _labels(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    value = workload.dig(pod, "metadata", "labels")
    return value if isinstance(value, Mapping) else {}


def phase(pod: Mapping[str, Any]) -> str:
    return str(workload.dig(pod, "status", "phase") or "Pending")


def terminating(pod: Mapping[str, Any]) -> bool:
    return bool(workload.dig(pod, "metadata", "deletionTimestamp"))


def active(pod: Mapping[str, Any]) -> bool:
    return not terminating(pod) and phase(pod) not in TERMINAL_PHASES


def ready(pod: Mapping[str, Any]) -> bool:
    for condition in workload.dig(pod, "status", "conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def restart_count(pod: Mapping[str, Any]) -> int:
    total = 0
    for status in workload.dig(pod, "status", "containerStatuses") or []:
        if isinstance(status, Mapping):
            total += workload.int_or(status.get("restartCount"), 0)
    return total


def attempt(pod: Mapping[str, Any]) -> int:
    return workload.count(_labels(pod).get(workload.RESTART_ATTEMPT))


def _pod_time(pod: Mapping[str, Any], state: str, key: str) -> str:
    """The latest ``state.<state>.<key>`` among the pod's containers ('' when none)."""
    times = [
        str(workload.dig(status, "state", state, key))
        for status in workload.dig(pod, "status", "containerStatuses") or []
        if isinstance(status, Mapping) and workload.dig(status, "state", state, key)
    ]
    return max(times, default="")


def started_at(pod: Mapping[str, Any]) -> str:
    return (
        _pod_time(pod, "running", "startedAt")
        or _pod_time(pod, "terminated", "startedAt")
        or str(workload.dig(pod, "status", "startTime") or "")
    )


def failed_at(pod: Mapping[str, Any]) -> str:
    return _pod_time(pod, "terminated", "finishedAt") or started_at(pod)


@dataclass(frozen=True)
class JobState:
    """One Job (replica) of a replicated job, in the current restart attempt."""

    replicated_job: str
    index: int
    name: str
    parallelism: int
    pods: tuple[Mapping[str, Any], ...]
    succeeded: bool
    failed: bool
    failed_at: str
    ready: bool
    active: bool


@dataclass(frozen=True)
class ReplicatedJobStatus:
    name: str
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ready": self.ready,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "active": self.active,
            "suspended": self.suspended,
        }


@dataclass(frozen=True)
class Outcome:
    """The set finished: ``type`` is ``Complete`` or ``Failed``."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Restart:
    """The failure policy restarts the set: the counts after this restart, and the event."""

    restarts: int
    towards_max: int
    reason: str
    message: str


@dataclass(frozen=True)
class Observation:
    restarts: int
    restarts_towards_max: int
    jobs: tuple[JobState, ...]
    statuses: tuple[ReplicatedJobStatus, ...]
    outcome: Outcome | None = None
    restart: Restart | None = None
    training_started_at: str | None = None  # set when every trainer pod runs
    suspended: bool = False

    def status(self, name: str) -> ReplicatedJobStatus:
        return next((s for s in self.statuses if s.name == name), ReplicatedJobStatus(name))


def _job_state(
    jobset: Mapping[str, Any], rjob: Mapping[str, Any], index: int, pods: list[Mapping[str, Any]]
) -> JobState:
    count = workload.parallelism(rjob)
    live = [p for p in pods if not terminating(p)]
    done = {_labels(p).get(workload.COMPLETION_INDEX) for p in live if phase(p) == "Succeeded"} & {
        str(i) for i in range(count)
    }
    failed_pods = [p for p in live if phase(p) == "Failed"]
    restarted = sum(
        restart_count(p) for p in live if _restart_policy(p) in IN_PLACE_RESTART_POLICIES
    )
    failed = bool(failed_pods) or restarted > workload.backoff_limit(rjob)
    when = min((failed_at(p) for p in failed_pods), default="")
    if failed and not when:
        when = min((failed_at(p) for p in live), default="")
    succeeded = not failed and len(done) >= count
    finished = failed or succeeded
    ready_pods = sum(1 for p in live if phase(p) == "Succeeded" or (active(p) and ready(p)))
    return JobState(
        replicated_job=str(rjob["name"]),
        index=index,
        name=workload.job_name(jobset, str(rjob["name"]), index),
        parallelism=count,
        pods=tuple(live),
        succeeded=succeeded,
        failed=failed,
        failed_at=when,
        ready=not finished and bool(live) and ready_pods >= count,
        active=not finished and any(active(p) for p in live),
    )


def _restart_policy(pod: Mapping[str, Any]) -> str:
    return str(workload.dig(pod, "spec", "restartPolicy") or workload.DEFAULT_RESTART_POLICY)


def observe(
    jobset: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    restarts: int = 0,
    towards_max: int = 0,
) -> Observation:
    """What the pods say about the JobSet, in restart attempt ``restarts``."""
    current: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for pod in pods:
        labels = _labels(pod)
        if attempt(pod) != restarts:
            continue
        key = (
            str(labels.get(workload.REPLICATED_JOB_NAME, "")),
            workload.count(labels.get(workload.JOB_INDEX)),
        )
        current.setdefault(key, []).append(pod)
    is_suspended = workload.suspended(jobset)
    jobs: list[JobState] = []
    statuses: list[ReplicatedJobStatus] = []
    for rjob in workload.replicated_jobs(jobset):
        rname = str(rjob["name"])
        states = [
            _job_state(jobset, rjob, i, current.get((rname, i), []))
            for i in range(workload.replicas(rjob))
        ]
        jobs += states
        started = [s for s in states if s.pods or s.succeeded or s.failed]
        statuses.append(
            ReplicatedJobStatus(
                name=rname,
                ready=sum(1 for s in started if s.ready),
                succeeded=sum(1 for s in started if s.succeeded),
                failed=sum(1 for s in started if s.failed),
                active=sum(1 for s in started if s.active),
                suspended=(
                    sum(1 for s in states if not s.succeeded and not s.failed)
                    if is_suspended
                    else 0
                ),
            )
        )
    observation = Observation(
        restarts=restarts,
        restarts_towards_max=towards_max,
        jobs=tuple(jobs),
        statuses=tuple(statuses),
        suspended=is_suspended,
    )
    outcome, restart = _judge(jobset, observation)
    return Observation(
        restarts=restarts,
        restarts_towards_max=towards_max,
        jobs=observation.jobs,
        statuses=observation.statuses,
        outcome=outcome,
        restart=restart,
        training_started_at=_training_started(jobset, observation),
        suspended=is_suspended,
    )


def _judge(jobset: Mapping[str, Any], seen: Observation) -> tuple[Outcome | None, Restart | None]:
    """Failure policy first, then success policy, as JobSet's reconcile does."""
    failed = sorted((j for j in seen.jobs if j.failed), key=lambda j: (j.failed_at, j.name))
    if failed:
        return _failure_policy(jobset, seen, failed)
    if _success_policy_met(jobset, seen):
        return (
            Outcome(
                messages.COMPLETE,
                messages.ALL_JOBS_COMPLETED_REASON,
                messages.ALL_JOBS_COMPLETED_MESSAGE,
            ),
            None,
        )
    return None, None


def _first_failed(message: str, job: JobState) -> str:
    return messages.FIRST_FAILED_JOB.format(message=message, job=job.name)


def _failure_policy(
    jobset: Mapping[str, Any], seen: Observation, failed: Sequence[JobState]
) -> tuple[Outcome | None, Restart | None]:
    policy = workload.dig(jobset, "spec", "failurePolicy")
    if not isinstance(policy, Mapping):
        message = _first_failed(messages.FAILED_JOBS_MESSAGE, failed[0])
        return Outcome(messages.FAILED, messages.FAILED_JOBS_REASON, message), None
    action, job = RESTART_JOBSET, failed[0]
    for rule in policy.get("rules") or []:
        matched = [j for j in failed if isinstance(rule, Mapping) and _rule_applies(rule, j)]
        if matched:
            action, job = str(rule.get("action") or RESTART_JOBSET), matched[0]
            break
    if action == FAIL_JOBSET:
        message = _first_failed(messages.FAIL_JOBSET_ACTION_MESSAGE, job)
        return Outcome(messages.FAILED, messages.FAIL_JOBSET_ACTION_REASON, message), None
    if action in IGNORING_MAX:
        message = _first_failed(messages.RESTART_IGNORE_MAX_ACTION_MESSAGE, job)
        restart = Restart(
            seen.restarts + 1,
            seen.restarts_towards_max,
            messages.RESTART_IGNORE_MAX_ACTION_REASON,
            message,
        )
        return None, restart
    if seen.restarts_towards_max >= max(workload.int_or(policy.get("maxRestarts"), 0), 0):
        message = _first_failed(messages.REACHED_MAX_RESTARTS_MESSAGE, job)
        return Outcome(messages.FAILED, messages.REACHED_MAX_RESTARTS_REASON, message), None
    message = _first_failed(messages.RESTART_JOBSET_ACTION_MESSAGE, job)
    restart = Restart(
        seen.restarts + 1,
        seen.restarts_towards_max + 1,
        messages.RESTART_JOBSET_ACTION_REASON,
        message,
    )
    return None, restart


def _rule_applies(rule: Mapping[str, Any], job: JobState) -> bool:
    targets = rule.get("targetReplicatedJobs") or []
    if targets and job.replicated_job not in targets:
        return False
    reasons = rule.get("onJobFailureReasons") or []
    if reasons and messages.BACKOFF_LIMIT_EXCEEDED_REASON not in reasons:
        return False
    patterns = rule.get("onJobFailureMessagePatterns") or []
    return not patterns or any(
        _search(p, messages.BACKOFF_LIMIT_EXCEEDED_MESSAGE) for p in patterns
    )


def _search(pattern: Any, text: str) -> bool:
    try:
        return re.search(str(pattern), text) is not None
    except re.error:
        return False  # JobSet logs an invalid pattern and treats it as no match


def _success_policy_met(jobset: Mapping[str, Any], seen: Observation) -> bool:
    policy = workload.dig(jobset, "spec", "successPolicy")
    policy = policy if isinstance(policy, Mapping) else {}
    targets = policy.get("targetReplicatedJobs") or []
    chosen = [r for r in workload.replicated_jobs(jobset) if not targets or r["name"] in targets]
    succeeded = sum(
        1 for j in seen.jobs if j.succeeded and (not targets or j.replicated_job in targets)
    )
    if policy.get("operator") == "Any":
        return succeeded >= 1
    expected = sum(workload.replicas(r) for r in chosen)
    return expected > 0 and succeeded >= expected


def _trainer_jobs(jobset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rjobs = workload.replicated_jobs(jobset)
    trainers = [
        r
        for r in rjobs
        if workload.dig(r, "template", "metadata", "labels", api.ANCESTOR_LABEL)
        == api.TRAINER_ANCESTOR
    ]
    return trainers or rjobs


def _training_started(jobset: Mapping[str, Any], seen: Observation) -> str | None:
    """When the last trainer pod started, once every one of them runs (or ran); else None."""
    names = {str(r["name"]) for r in _trainer_jobs(jobset)}
    jobs = [j for j in seen.jobs if j.replicated_job in names]
    if seen.outcome is not None or not jobs:
        return None
    latest = ""
    for job in jobs:
        by_index = {_labels(p).get(workload.COMPLETION_INDEX): p for p in job.pods}
        for index in range(job.parallelism):
            pod = by_index.get(str(index))
            if pod is None or phase(pod) not in ("Running", "Succeeded"):
                return None
            latest = max(latest, started_at(pod))
    return latest
