"""Success and failure of a v1 job, from per-replica-type pod counts (reference 3.3).

:func:`evaluate` replays one framework's ``UpdateJobStatus`` from its :class:`StatusRules`
and returns the condition changes it would make, in order, with upstream's reasons and
messages word for word. :func:`on_pod_failed` is the generic pod loop's rule for one failed
pod (restart it, or fail the job). Applying changes to ``status.conditions`` (the
Running/Restarting exclusivity, "Failed is final") and the timestamps belong to the caller.

Where upstream iterates a Go map (so the order of replica types is random), the framework's
fixed order is used instead, leaders first. Pure: no clock, no I/O, no logging.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubetrain import api
from kubetrain.frameworks import _registry, _replicas
from kubetrain.frameworks._framework import Messages, StatusRules

RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
RESTARTING = "Restarting"
# What upstream reads when the default container has not terminated: retryable.
NO_EXIT_CODE = 0xBEEF


@dataclass(frozen=True, kw_only=True)
class ReplicaCounts:
    """Pods of one replica type by phase: Running, Succeeded, Failed (Pending is not counted)."""

    active: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(frozen=True)
class Condition:
    """A condition to set to True: type, ``<Kind><Type>`` reason and message."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """The condition changes upstream's ``UpdateJobStatus`` makes, in the order it makes them."""

    changes: tuple[Condition, ...] = ()

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(change.type for change in self.changes)

    @property
    def condition(self) -> Condition | None:
        """Where the job ends up: the first Failed (nothing changes after it), else the last."""
        for change in self.changes:
            if change.type == FAILED:
                return change
        return self.changes[-1] if self.changes else None

    @property
    def finished(self) -> bool:
        """Succeeded or Failed was set, so the caller records completionTime."""
        return any(change.type in (SUCCEEDED, FAILED) for change in self.changes)


@dataclass(frozen=True)
class PodFailure:
    """What a failed pod does to its job: ``restart`` means delete it so it is recreated."""

    restart: bool
    condition: Condition


def evaluate(
    job: api.JobKind,
    counts: Mapping[str, ReplicaCounts],
    *,
    worker0_completed: bool = False,
    restarting: Condition | None = None,
) -> Outcome:
    """The conditions a defaulted job gets from its pod counts, keyed by CamelCase type.

    ``worker0_completed`` (TF): worker 0's pod Succeeded and its ``tensorflow`` container
    exited 0. ``restarting`` (TF): the Restarting condition the job has now, if any, which TF
    re-sets instead of failing the job.
    """
    rules = _registry.for_kind(job.KIND).status
    messages = rules.messages or Messages.standard(job.KIND)
    specs = _replicas.specs(job)
    leaders = {rtype for rtype in rules.leaders if rtype in specs}
    if rules.single_worker_leads and _single_worker(job):
        leaders = set(specs)
    words = {"name": job.name, "namespace": _replicas.namespace(job)}
    changes: list[Condition] = []

    def add(kind: str, template: str, **more: object) -> None:
        message = template.format(**words, **more)
        changes.append(Condition(kind, f"{job.KIND}{kind}", message))

    for rtype in rules.order:
        spec = specs.get(rtype)
        if spec is None:
            continue
        count = counts.get(rtype) or ReplicaCounts()
        replicas = spec.replicas or 0
        expected = replicas - count.succeeded
        if rtype in leaders:
            if count.active > 0:
                add(RUNNING, messages.running_leader)
            if expected == 0:
                if rules.running_before_outcome:
                    add(RUNNING, messages.running_leader)
                add(SUCCEEDED, messages.succeeded_leader)
                if rules.leader_success_stops:
                    break
        elif not leaders and rtype == rules.fallback:
            if expected == 0 or _shortcut(job, rules, count, worker0_completed):
                add(SUCCEEDED, messages.succeeded)
            elif count.active > 0:
                add(RUNNING, messages.running)
        if count.failed <= 0:
            continue
        if rules.failure_needs_shortfall and replicas <= count.succeeded + count.active:
            continue  # replacements are already up
        if rules.keeps_restarting and restarting is not None:
            changes.append(Condition(RESTARTING, restarting.reason, restarting.message))
            continue
        if (
            rules.dynamic_workers_ignore_failures
            and rtype == "Worker"
            and job.spec.enable_dynamic_worker
        ):
            continue
        if rules.running_before_outcome:
            add(RUNNING, messages.running_leader)
        if spec.restart_policy in rules.restart_policies:
            add(RESTARTING, messages.restarting, failed=count.failed, rtype=rtype)
        else:
            add(FAILED, messages.failed, failed=count.failed, rtype=rtype)
    return Outcome(tuple(changes))


def _shortcut(job: api.JobKind, rules: StatusRules, count: ReplicaCounts, worker0: bool) -> bool:
    """TF's worker-0 and PyTorch's elastic early success."""
    if rules.worker0_success and worker0:
        return job.spec.success_policy != "AllWorkers"
    if rules.elastic_success:
        return job.spec.elastic_policy is not None and count.succeeded > 0
    return False


def _single_worker(job: api.JobKind) -> bool:
    """MXNet's "single training": one Worker, no Scheduler, no Server."""
    return (
        _replicas.replicas(job, "Worker") == 1
        and _replicas.replicas(job, "Scheduler") == 0
        and _replicas.replicas(job, "Server") == 0
    )


def is_retryable(exit_code: int) -> bool:
    """128 and above (signals: 130, 137, 143) are retryable; 1-127 are the program's verdict."""
    return exit_code >= 128


def on_pod_failed(job: api.JobKind, rtype: str, exit_code: int | None) -> PodFailure | None:
    """The generic pod loop's answer to one pod in phase Failed (not used by MPIJob).

    OnFailure, Always, or ExitCode with a retryable code: delete the pod, job Restarting.
    ExitCode with a permanent code: job Failed. Never: nothing here; ``evaluate`` decides.
    """
    if not _registry.for_kind(job.KIND).restarts_failed_pods:
        return None
    spec = _replicas.specs(job).get(rtype)
    policy = spec.restart_policy if spec is not None else None
    code = NO_EXIT_CODE if exit_code is None else exit_code
    if policy in ("OnFailure", "Always") or (policy == "ExitCode" and is_retryable(code)):
        message = f"job {job.name} is restarting because {rtype} replica(s) failed."
        return PodFailure(True, Condition(RESTARTING, f"{job.KIND}{RESTARTING}", message))
    if policy == "ExitCode":
        message = f'job "{job.name}" is failing because "{rtype}" replica(s) failed.'
        return PodFailure(False, Condition(FAILED, f"{job.KIND}{FAILED}", message))
    return None
