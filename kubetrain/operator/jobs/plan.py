"""One reconcile of a v1 job, decided without I/O: what to create, delete and patch, the new
status, the events, and when to look again.

Given the job as the cache holds it, the pods and services it controls, and ``now``, :func:`plan`
replays upstream's ``ReconcileJobs`` (reference 3.1-3.4) with the per-framework rules of
:mod:`kubetrain.frameworks`, in this order:

1. ``runPolicy.managedBy`` names another controller (one admission accepts: a value it refuses
   names no controller, so the job is refused in step 2), or the job is being deleted: nothing.
2. The job fails admission (created while no webhook ran, or edited since), or its pods
   cannot be built: it is refused. Its ``Failed`` condition (reason ``<Kind>FailedValidation``)
   states every problem in the admission's words, with a Warning event of the same reason and
   message when that changes; nothing else is done, so pods it already has are left as they
   are. Once the spec is valid again the condition is removed and the job goes on from here
   (see :mod:`.conditions` on why a refusal is not final). A finished job's conditions stay.
3. ``Created`` once. A finished job (Succeeded/Failed): clean up by ``cleanPodPolicy``, drop the
   PodGroup, and delete the job ``ttlSecondsAfterFinished`` after it finished.
4. Suspended: delete every pod and service, the PodGroup and an elastic PyTorchJob's
   autoscaler, ``Suspended=True``. Resumed:
   ``Suspended=False`` and ``startTime`` starts over.
5. Count pods per replica type; past ``backoffLimit`` (see :mod:`.backoff`) or
   ``activeDeadlineSeconds``: Failed. A pod failed with a permanent ExitCode: Failed.
   Other failed pods under OnFailure/Always/ExitCode: deleted to be recreated, Restarting.
6. The framework's status rules (:func:`kubetrain.frameworks.evaluate`) set Running,
   Succeeded, Restarting or Failed; finishing now cleans up at once.
7. Otherwise: the PodGroup, the companions (MPI's ConfigMap and RBAC, an elastic
   PyTorchJob's HorizontalPodAutoscaler), one headless Service and one pod per missing
   index (Service first: it records a host-network pod's port), surplus pods and services
   deleted (scale down, removed replica types).

Events for conditions are emitted for what changed between the status read and the status
written, so one pass that sets Running and then Restarting reports only Restarting; the event
of a restart goes with the deletion of the failed pod (:attr:`Delete.announce`).
``lastReconcileTime`` moves only when something else in the status moved, so a status write
never causes another one by itself.

At about 800 lines this module is one concept, kept whole on purpose: the one ordered walk of
a pass (``_Pass``, steps 1 to 7 above) and the data it returns. What can be judged apart
already lives apart (:mod:`.backoff`, :mod:`.conditions`, :mod:`.children`,
:mod:`.companions`, :mod:`.gang`, :mod:`.ports`, :mod:`.times`); cutting the walk itself would
spread one order, which is upstream's, over several files.

Must not: do I/O, read a clock, log, or know a framework by name (house rule 12).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from kubetrain import api, frameworks, kube
from kubetrain.operator import hostports
from kubetrain.operator.jobs import (
    backoff,
    children,
    companions,
    conditions,
    gang,
    ports,
    reasons,
    times,
)
from kubetrain.operator.jobs import settings as settings_

EventType = Literal["Normal", "Warning"]
# Metric names: training_operator_jobs_<name>_total.
CREATED_METRIC: Final = "created"
DELETED_METRIC: Final = "deleted"
SUCCESSFUL_METRIC: Final = "successful"
FAILED_METRIC: Final = "failed"
RESTARTED_METRIC: Final = "restarted"

_ACTIVE_PHASES: Final = ("Running", "Pending")
# runPolicy.managedBy naming the built-in controller, which kubetrain is.
MANAGED_BY_US: Final = "kubeflow.org/training-operator"
MANAGED_BY_PATH: Final = "spec.runPolicy.managedBy"


@dataclass(frozen=True)
class Event:
    type: EventType
    reason: str
    message: str


@dataclass(frozen=True)
class Patch:
    """A JSON merge patch to one object."""

    resource: kube.Resource
    name: str
    patch: dict[str, Any]


@dataclass(frozen=True)
class Create:
    """Create ``body``; ``then`` is created once this one exists (a pod after its Service)."""

    resource: kube.Resource
    body: dict[str, Any]
    then: Create | None = None

    @property
    def name(self) -> str:
        return children.name_of(self.body)


@dataclass(frozen=True)
class Delete:
    """Delete one object, only if its uid is still ``uid`` (when given).

    ``restart``: a failed pod deleted to be recreated; the next reconcile waits until its
    deletion is seen. ``before`` is applied first (the restart's record on its Service); if it
    fails, the pod stays. ``announce``: a restart not counted before: once the pod is deleted,
    this event is emitted and ``training_operator_jobs_restarted_total`` counts it.
    """

    resource: kube.Resource
    name: str
    uid: str = ""
    restart: bool = False
    before: Patch | None = None
    announce: Event | None = None


@dataclass(frozen=True)
class Observed:
    """What the cache holds for one job.

    ``pods``/``services``: those the job controls. ``cached``: watched companions (MPI's
    ConfigMap) by (plural, name), whoever owns them. ``taken_ports``: every host port any
    Service records (or the reconciler has just handed out). ``priorities``: PriorityClass
    values by name, for the PodGroup's ``minResources``.
    """

    job: Mapping[str, Any]
    pods: Sequence[Mapping[str, Any]] = ()
    services: Sequence[Mapping[str, Any]] = ()
    pod_group: Mapping[str, Any] | None = None
    cached: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    taken_ports: frozenset[int] = frozenset()
    priorities: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """The decision. ``status`` is the whole new status (None: leave it alone);
    ``status_changed`` says whether it differs from the one read.

    ``skip``: why the job is left alone. ``invalid``: the job cannot run as written (its
    refusal is in ``status``; the reconcile stops there, without retrying). ``problem``:
    something keeps the job from progressing for now (retried with back-off after everything
    else was done).
    """

    status: dict[str, Any] | None = None
    status_changed: bool = False
    creates: tuple[Create, ...] = ()
    deletes: tuple[Delete, ...] = ()
    patches: tuple[Patch, ...] = ()
    ensure: tuple[companions.Companion, ...] = ()
    events: tuple[Event, ...] = ()
    metrics: tuple[str, ...] = ()
    requeue_after: float | None = None
    delete_job: bool = False
    skip: str | None = None
    invalid: str | None = None
    problem: str | None = None


def managed_elsewhere(job: Mapping[str, Any]) -> str | None:
    """The other controller named by ``spec.runPolicy.managedBy``; None when it is ours."""
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    run_policy = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else {}
    managed_by = run_policy.get("managedBy")
    if managed_by is None or managed_by == MANAGED_BY_US:
        return None
    return str(managed_by)


def plan(
    framework: frameworks.Framework,
    settings: settings_.Settings,
    observed: Observed,
    now: datetime,
) -> Plan:
    """Decide one reconcile of the job in ``observed`` (see the module docstring)."""
    raw = observed.job
    if children.is_deleting(raw):
        return Plan(skip="being deleted")
    # Status is the operator's own writing and never part of validation.
    verdict = api.review({key: value for key, value in raw.items() if key != "status"})
    other = managed_elsewhere(raw)
    if other is not None and MANAGED_BY_PATH not in {error.path for error in verdict.errors}:
        return Plan(skip=f"managed by {other}")
    if not verdict.ok or not isinstance(verdict.obj, api.JobKind):
        return refused(framework, raw, "; ".join(str(error) for error in verdict.errors), now)
    try:
        return _Pass(framework, settings, observed, verdict.obj, now).run()
    except frameworks.ContractError as error:
        return refused(framework, raw, str(error), now)


def refused(
    framework: frameworks.Framework, job: Mapping[str, Any], errors: str, now: datetime
) -> Plan:
    """The plan for a job that cannot run as written: its refusal condition, and the event
    when the condition changed (a finished job only gets the event, as its conditions stay)."""
    message = reasons.FAILED_VALIDATION_MESSAGE.format(kind=framework.kind, errors=errors)
    reason = reasons.reason(framework.kind, reasons.FAILED_VALIDATION)
    event = Event("Warning", reason, message)
    old = job.get("status")
    status: dict[str, Any] = copy.deepcopy(old) if isinstance(old, dict) else {}
    if conditions.is_finished(status):
        return Plan(invalid=message, events=(event,))
    stamp = times.format_time(now)
    if not conditions.refuse(status, reason, message, stamp):
        return Plan(status=status, invalid=message)
    status["lastReconcileTime"] = stamp
    return Plan(status=status, status_changed=True, invalid=message, events=(event,))


@dataclass
class _Replicas:
    """The pods and services of one replica type, by index, as observed."""

    pods: dict[int, list[Mapping[str, Any]]] = field(default_factory=dict)
    services: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    active: int = 0
    succeeded: int = 0
    failed: int = 0

    def all_pods(self) -> list[Mapping[str, Any]]:
        return [pod for pods in self.pods.values() for pod in pods]


class _Pass:
    """One planning pass; collects what :class:`Plan` returns."""

    def __init__(
        self,
        framework: frameworks.Framework,
        settings: settings_.Settings,
        observed: Observed,
        job: api.JobKind,
        now: datetime,
    ) -> None:
        self.framework = framework
        self.settings = settings
        self.observed = observed
        self.job = job
        self.kind = framework.kind
        self.now = now
        self.stamp = times.format_time(now)
        self.namespace = job.metadata.namespace or ""
        self.uid = children.uid_of(observed.job)
        self.owner = children.owner_reference(self.kind, job.name, self.uid)
        self.run_policy = job.run_policy_or_empty
        raw_status = observed.job.get("status")
        self.old_status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
        self.status: dict[str, Any] = copy.deepcopy(self.old_status)
        self.pods = [p for p in observed.pods if children.is_controlled_by(p, self.uid)]
        self.services = [s for s in observed.services if children.is_controlled_by(s, self.uid)]
        self.creates: list[Create] = []
        self.deletes: list[Delete] = []
        self.patches: list[Patch] = []
        self.ensure: list[companions.Companion] = []
        self.events: list[Event] = []
        self.metrics: list[str] = []
        self.requeue: list[float] = []
        self.delete_job = False
        self.problem: str | None = None
        self.restarted = False

    # -- the steps -----------------------------------------------------------------------------

    def run(self) -> Plan:
        conditions.accept(self.status)  # valid now: a refusal is over
        if conditions.find(self.status, reasons.CREATED) is None:
            message = reasons.CREATED_MESSAGE.format(kind=self.kind, name=self.job.name)
            self._set(reasons.CREATED, "True", reasons.reason(self.kind, reasons.CREATED), message)
        if conditions.is_finished(self.status):
            self._finished()
        elif self.run_policy.suspend:
            self._suspended()
        else:
            self._active()
        return self._result()

    def _finished(self) -> None:
        """Upstream's finished branch: clean up, and the TTL."""
        if conditions.is_true(self.status, reasons.SUCCEEDED):
            for replica in (self.status.get("replicaStatuses") or {}).values():
                if isinstance(replica, dict) and replica.get("active"):
                    replica["succeeded"] = (replica.get("succeeded") or 0) + replica["active"]
                    replica.pop("active")
        if not self.status.get("completionTime"):
            self.status["completionTime"] = self.stamp
        # MPIJob's deprecated spec.cleanPodPolicy counts where runPolicy's is unset.
        policy = self.run_policy.clean_pod_policy or getattr(
            self.job.spec, "clean_pod_policy", None
        )
        self._clean_up(policy or "None")
        self._drop_pod_group()
        ttl = self.run_policy.ttl_seconds_after_finished
        if ttl is None or self.run_policy.suspend:
            return
        finished = times.parse_time(self.status.get("completionTime")) or self.now
        expires = finished + timedelta(seconds=ttl)
        if self.now >= expires:
            self.delete_job = True
        else:
            self.requeue.append((expires - self.now).total_seconds())

    def _suspended(self) -> None:
        for pod in self.pods:
            self._delete_pod(pod)
        for service in self.services:
            self._delete(children.SERVICES, service)
        self._drop_pod_group()
        for companion in companions.companions(self.framework, self.job, self.pods, self.owner):
            cached = self.observed.cached.get((companion.resource.plural, companion.name))
            if companion.while_suspended or cached is None:
                continue
            if children.is_controlled_by(cached, self.uid):
                self._delete(companion.resource, cached)
        for replica in (self.status.get("replicaStatuses") or {}).values():
            if isinstance(replica, dict):
                replica.pop("active", None)
        message = reasons.SUSPENDED_MESSAGE.format(kind=self.kind, name=self.job.name)
        reason = reasons.reason(self.kind, reasons.SUSPENDED)
        if conditions.is_true(self.status, reasons.RUNNING):
            self._set(reasons.RUNNING, "False", reason, message)
        if not conditions.is_true(self.status, reasons.SUSPENDED):
            self._set(reasons.SUSPENDED, "True", reason, message)

    def _active(self) -> None:
        if conditions.is_true(self.status, reasons.SUSPENDED):
            message = reasons.RESUMED_MESSAGE.format(kind=self.kind, name=self.job.name)
            reason = reasons.reason(self.kind, reasons.RESUMED)
            self._set(reasons.SUSPENDED, "False", reason, message)
            self.status["startTime"] = self.stamp
        if not self.status.get("startTime"):
            self.status["startTime"] = self.stamp
        replicas, surplus_pods, surplus_services = self._observe()
        self.status["replicaStatuses"] = self._replica_statuses(replicas)

        restarts, permanent = self._failures(replicas)
        new_restarts = [r for r in restarts if not r[3]]
        pods_by_type = {rtype: r.all_pods() for rtype, r in replicas.items()}
        so_far = backoff.retries(self.job, pods_by_type, self.services)
        if backoff.exceeded(self.run_policy.backoff_limit, so_far, len(new_restarts)):
            self._fail(reasons.BACKOFF_LIMIT_MESSAGE.format(name=self.job.name))
            self._finished()
            return
        deadline = self._deadline()
        if deadline is not None and deadline <= self.now:
            self._fail(reasons.DEADLINE_MESSAGE.format(name=self.job.name))
            self._finished()
            return
        if permanent:
            self._fail(permanent[0].condition.message, permanent[0].condition.reason)
            self._finished()
            return
        for rtype, pod, service, already in restarts:
            self._restart(rtype, pod, service, already)

        self._evaluate(replicas)
        if conditions.is_finished(self.status):
            self._finished()
            return
        if deadline is not None:
            self.requeue.append((deadline - self.now).total_seconds())
        for pod in surplus_pods:
            self._delete_pod(pod)
        for service in surplus_services:
            self._delete(children.SERVICES, service)
        group = gang.resource(self.settings)
        delayed = False
        if group is not None:
            self._sync_pod_group(group)
            delayed = gang.delays_pods(self.settings, self.observed.pod_group)
        self._companions()
        if not delayed:
            self._create_replicas(replicas)

    # -- observing -----------------------------------------------------------------------------

    def _specs(self) -> dict[str, api.ReplicaSpec]:
        return {rt: s for rt, s in (self.job.replica_specs() or {}).items() if s is not None}

    def _observe(
        self,
    ) -> tuple[dict[str, _Replicas], list[Mapping[str, Any]], list[Mapping[str, Any]]]:
        specs = self._specs()
        by_label = {rtype.lower(): rtype for rtype in specs}
        replicas = {rtype: _Replicas() for rtype in specs}
        surplus_pods: list[Mapping[str, Any]] = []
        surplus_services: list[Mapping[str, Any]] = []
        for pod in self.pods:
            slot = self._slot(pod, by_label, specs)
            if slot is None:
                surplus_pods.append(pod)
                continue
            rtype, index = slot
            replicas[rtype].pods.setdefault(index, []).append(pod)
            replica = replicas[rtype]
            phase = children.phase(pod)
            if phase == "Running":
                if children.is_deleting(pod):
                    replica.failed += 1  # a Running pod being deleted will not finish its work
                else:
                    replica.active += 1
            elif phase == "Succeeded":
                replica.succeeded += 1
            elif phase == "Failed":
                replica.failed += 1
        for service in self.services:
            slot = self._slot(service, by_label, specs)
            if slot is None or slot[1] in replicas[slot[0]].services:
                surplus_services.append(service)
            else:
                replicas[slot[0]].services[slot[1]] = service
        return replicas, surplus_pods, surplus_services

    def _slot(
        self,
        obj: Mapping[str, Any],
        by_label: Mapping[str, str],
        specs: Mapping[str, api.ReplicaSpec],
    ) -> tuple[str, int] | None:
        """(type, index) of a child within the spec; None for one to delete."""
        labels = children.labels_of(obj)
        rtype = by_label.get(labels.get(api.REPLICA_TYPE_LABEL, ""))
        if rtype is None:
            return None
        if rtype in self.framework.unindexed:
            index: int | None = 0
        else:
            text = labels.get(api.REPLICA_INDEX_LABEL, "")
            index = int(text) if text.isdigit() else None
        if index is None or index >= (specs[rtype].replicas or 0):
            return None
        return rtype, index

    def _replica_statuses(self, replicas: Mapping[str, _Replicas]) -> dict[str, Any]:
        statuses: dict[str, Any] = {}
        for rtype, replica in replicas.items():
            entry: dict[str, Any] = {}
            for key in ("active", "succeeded", "failed"):
                value = getattr(replica, key)
                if value:  # upstream's fields are omitempty
                    entry[key] = value
            if self.framework.reports_selector:
                labels = frameworks.replica_labels(self.job, rtype, None)
                entry["labelSelector"] = {"matchLabels": labels}
                entry["selector"] = frameworks.replica_selector(self.job, rtype)
            statuses[rtype] = entry
        return statuses

    def _failures(
        self, replicas: Mapping[str, _Replicas]
    ) -> tuple[
        list[tuple[str, Mapping[str, Any], Mapping[str, Any] | None, bool]],
        list[frameworks.PodFailure],
    ]:
        """Failed pods the framework restarts (type, pod, its Service, already counted) and
        the verdicts of those that fail the job."""
        restarts = []
        permanent = []
        for rtype, replica in replicas.items():
            for index, pods in sorted(replica.pods.items()):
                for pod in pods:
                    if children.phase(pod) != "Failed":
                        continue
                    code = children.exit_code(pod, self.job.DEFAULT_CONTAINER)
                    verdict = frameworks.on_pod_failed(self.job, rtype, code)
                    if verdict is None:
                        continue
                    if not verdict.restart:
                        permanent.append(verdict)
                        continue
                    service = replica.services.get(index)
                    if self.framework.creates_services and service is None:
                        continue  # its Service comes first, to record the restart on
                    already = children.is_deleting(pod) or backoff.counted(service, pod)
                    restarts.append((rtype, pod, service, already))
        return restarts, permanent

    def _deadline(self) -> datetime | None:
        seconds = self.run_policy.active_deadline_seconds
        started = times.parse_time(self.status.get("startTime"))
        if seconds is None or started is None:
            return None
        return started + timedelta(seconds=seconds)

    # -- conditions ----------------------------------------------------------------------------

    def _set(self, type_: str, value: str, reason: str, message: str) -> bool:
        return conditions.set_condition(self.status, type_, value, reason, message, self.stamp)

    def _fail(self, message: str, reason: str | None = None) -> None:
        reason = reason or reasons.reason(self.kind, reasons.FAILED)
        self._set(reasons.FAILED, "True", reason, message)
        failed = conditions.is_true(self.status, reasons.FAILED)
        if failed and not self.status.get("completionTime"):
            self.status["completionTime"] = self.stamp

    def _restart(
        self,
        rtype: str,
        pod: Mapping[str, Any],
        service: Mapping[str, Any] | None,
        already: bool,
    ) -> None:
        """Delete a failed pod so that it is recreated; count it once."""
        if children.is_deleting(pod):
            return
        before = None
        announce = None
        if not already:
            if service is not None:
                before = Patch(
                    children.SERVICES, children.name_of(service), backoff.record(service, pod)
                )
            message = f"job {self.job.name} is restarting because {rtype} replica(s) failed."
            reason = reasons.reason(self.kind, reasons.RESTARTING)
            announce = Event("Warning", reason, message)
            self._set(reasons.RESTARTING, "True", reason, message)
            self.restarted = True
        self.deletes.append(
            Delete(
                children.PODS,
                children.name_of(pod),
                children.uid_of(pod),
                restart=True,
                before=before,
                announce=announce,
            )
        )

    def _evaluate(self, replicas: Mapping[str, _Replicas]) -> None:
        counts = {
            rtype: frameworks.ReplicaCounts(
                active=replica.active, succeeded=replica.succeeded, failed=replica.failed
            )
            for rtype, replica in replicas.items()
        }
        worker0 = False
        first = (replicas.get("Worker") or _Replicas()).pods.get(0) or []
        if first:
            pod = first[0]
            worker0 = (
                children.phase(pod) == "Succeeded"
                and children.exit_code(pod, self.job.DEFAULT_CONTAINER) == 0
            )
        restarting = None
        current = conditions.find(self.status, reasons.RESTARTING)
        if current is not None and current.get("status") == "True":
            restarting = frameworks.Condition(
                reasons.RESTARTING, str(current.get("reason")), str(current.get("message"))
            )
        outcome = frameworks.evaluate(
            self.job, counts, worker0_completed=worker0, restarting=restarting
        )
        for change in outcome.changes:
            self._set(change.type, "True", change.reason, change.message)
        if conditions.is_finished(self.status) and not self.status.get("completionTime"):
            self.status["completionTime"] = self.stamp

    # -- children ------------------------------------------------------------------------------

    def _delete(self, resource: kube.Resource, obj: Mapping[str, Any]) -> None:
        if not children.is_deleting(obj):
            self.deletes.append(Delete(resource, children.name_of(obj), children.uid_of(obj)))

    def _delete_pod(self, pod: Mapping[str, Any]) -> None:
        self._delete(children.PODS, pod)

    def _clean_up(self, policy: str) -> None:
        """``cleanPodPolicy`` of a finished job: None keeps all; Running deletes the pods
        still Running or Pending (and their Services); All deletes every pod and Service."""
        if policy == "None":
            return
        by_name = {children.name_of(s): s for s in self.services}
        for pod in self.pods:
            if policy == "Running" and children.phase(pod) not in _ACTIVE_PHASES:
                continue
            self._delete_pod(pod)
            service = by_name.pop(children.name_of(pod), None)
            if service is not None:
                self._delete(children.SERVICES, service)
        if policy == "All":
            for service in by_name.values():
                self._delete(children.SERVICES, service)

    def _drop_pod_group(self) -> None:
        group = gang.resource(self.settings)
        existing = self.observed.pod_group
        if group is None or existing is None or children.is_deleting(existing):
            return
        if not children.is_controlled_by(existing, self.uid):
            return
        self.events.append(Event("Normal", reasons.JOB_TERMINATED, reasons.JOB_TERMINATED_MESSAGE))
        self._delete(group, existing)

    def _sync_pod_group(self, group: kube.Resource) -> None:
        existing = self.observed.pod_group
        desired = gang.pod_group(
            self.job, self.settings, self.owner, self.observed.priorities, existing
        )
        if existing is None:
            self.creates.append(Create(group, desired))
            return
        patch = gang.spec_patch(existing, desired)
        if patch is not None and children.is_controlled_by(existing, self.uid):
            self.patches.append(Patch(group, self.job.name, patch))

    def _companions(self) -> None:
        for companion in companions.companions(self.framework, self.job, self.pods, self.owner):
            if not companion.watched:
                self.ensure.append(companion)
                continue
            key = (companion.resource.plural, companion.name)
            cached = self.observed.cached.get(key)
            if cached is None:
                self.creates.append(Create(companion.resource, companion.body))
            elif not children.is_controlled_by(cached, self.uid):
                message = reasons.RESOURCE_EXISTS_MESSAGE.format(
                    name=companion.name, kind=companion.resource.kind
                )
                self.events.append(Event("Warning", reasons.ERR_RESOURCE_EXISTS, message))
                self.problem = message
            elif cached.get(companion.field) != companion.body.get(companion.field):
                changes = _merge_patch(
                    cached.get(companion.field), companion.body.get(companion.field)
                )
                patch = {companion.field: changes}
                self.patches.append(Patch(companion.resource, companion.name, patch))

    def _create_replicas(self, replicas: Mapping[str, _Replicas]) -> None:
        specs = self._specs()
        assigned = self._ports(replicas)
        if assigned is None:
            return
        # Every pod's env names its peers' ports, so it is built knowing all of them.
        pod_settings = dataclasses.replace(self.settings.pod, host_ports=assigned)
        for rtype, spec in specs.items():
            replica = replicas[rtype]
            warned = False
            for index in range(spec.replicas or 0):
                service = None
                if self.framework.creates_services and index not in replica.services:
                    service = self._service(rtype, index, assigned.get((rtype, index)))
                if replica.pods.get(index):
                    if service is not None:
                        self.creates.append(Create(children.SERVICES, service))
                    continue
                pod = self._pod(rtype, index, pod_settings)
                if not warned and ports.template_spec(self.job, rtype).get("restartPolicy"):
                    warned = True
                    self.events.append(
                        Event(
                            "Warning",
                            reasons.SET_POD_TEMPLATE_RESTART_POLICY,
                            reasons.SET_POD_TEMPLATE_RESTART_POLICY_MESSAGE,
                        )
                    )
                create = Create(children.PODS, pod)
                if service is not None:
                    create = Create(children.SERVICES, service, then=create)
                self.creates.append(create)

    def _ports(self, replicas: Mapping[str, _Replicas]) -> dict[frameworks.PodKey, int] | None:
        """Host ports by (type, index): recorded on the Service, else the pod's, else new.

        None when the range has no free port left (``problem`` says so).
        """
        if not self.framework.creates_services:
            return {}
        used = set(self.observed.taken_ports)
        assigned: dict[frameworks.PodKey, int] = {}
        low, high = self.settings.host_port_range
        for rtype, spec in self._specs().items():
            force = self.settings.force_host_network
            if not ports.host_network(self.job, rtype, force) or not ports.listens(self.job, rtype):
                continue
            replica = replicas[rtype]
            for index in range(spec.replicas or 0):
                service = replica.services.get(index)
                port = hostports.recorded(service)
                if port is None:
                    port = _pod_host_port(replica.pods.get(index) or [], self.job)
                if port is None:
                    seed = ports.seed(self.namespace, self.job.name, rtype, index)
                    port = hostports.choose(seed, used, low, high)
                    if port is None:
                        self.problem = (
                            f"{self.kind} {self.namespace}/{self.job.name}: no free host port "
                            f"in {low}-{high} for {rtype} {index}; accepted: a larger "
                            "host port range"
                        )
                        reason = reasons.FAILED_CREATE.format(kind="Pod")
                        message = reasons.CREATE_ERROR_MESSAGE.format(error=self.problem)
                        self.events.append(Event("Warning", reason, message))
                        return None
                used.add(port)
                assigned[(rtype, index)] = port
        return assigned

    def _pod(self, rtype: str, index: int, pod_settings: frameworks.Settings) -> dict[str, Any]:
        contract = frameworks.pod_contract(self.job, rtype, index, pod_settings)
        template = (self.job.replica_specs() or {})[rtype]
        pod = contract.apply(template.template if template is not None else None)
        pod["apiVersion"] = "v1"
        pod["kind"] = "Pod"
        metadata = pod["metadata"]
        metadata.pop("generateName", None)
        metadata["namespace"] = self.namespace
        metadata["ownerReferences"] = [dict(self.owner)]
        spec = pod["spec"]
        if self.settings.force_host_network:
            spec["hostNetwork"] = True
            spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        if gang.resource(self.settings) is not None:
            for reason, message in gang.decorate(pod, self.job, rtype, self.settings):
                event = Event("Warning", reason, message)
                if event not in self.events:
                    self.events.append(event)
        return pod

    def _service(self, rtype: str, index: int, port: int | None) -> dict[str, Any]:
        contract = frameworks.service_contract(self.job, rtype, index)
        service = contract.manifest(self.namespace)
        service["metadata"]["ownerReferences"] = [dict(self.owner)]
        if port is not None:
            ports.set_service_port(service, self.job, port)
        return service

    # -- the result ----------------------------------------------------------------------------

    def _condition_events(self) -> None:
        """Events for conditions that changed in this pass, in the order they now appear."""
        before = {
            c.get("type"): (c.get("status"), c.get("reason"))
            for c in self.old_status.get("conditions") or []
            if isinstance(c, dict)
        }
        for condition in self.status.get("conditions") or []:
            type_ = condition.get("type")
            now = (condition.get("status"), condition.get("reason"))
            if before.get(type_) == now:
                continue
            if condition.get("status") == "True":
                if type_ == reasons.RESTARTING and self.restarted:
                    continue  # each restart had its own event
                warning = type_ in (reasons.RESTARTING, reasons.FAILED)
                kind: EventType = "Warning" if warning else "Normal"
                self.events.append(Event(kind, condition["reason"], condition["message"]))
                metric = {
                    reasons.CREATED: CREATED_METRIC,
                    reasons.SUCCEEDED: SUCCESSFUL_METRIC,
                    reasons.FAILED: FAILED_METRIC,
                }.get(type_)
                if metric is not None:
                    self.metrics.append(metric)
            elif type_ == reasons.SUSPENDED and condition.get("reason", "").endswith(
                reasons.RESUMED
            ):
                self.events.append(Event("Normal", condition["reason"], condition["message"]))

    def _result(self) -> Plan:
        self._condition_events()
        changed = self.status != self.old_status
        if changed:
            self.status["lastReconcileTime"] = self.stamp
        return Plan(
            status=self.status,
            status_changed=changed,
            creates=tuple(self.creates),
            deletes=tuple(self.deletes),
            patches=tuple(self.patches),
            ensure=tuple(self.ensure),
            events=tuple(self.events),
            metrics=tuple(self.metrics),
            requeue_after=min(self.requeue) if self.requeue else None,
            delete_job=self.delete_job,
            problem=self.problem,
        )


def _pod_host_port(pods: Sequence[Mapping[str, Any]], job: api.JobKind) -> int | None:
    """The host port an existing pod already listens on (when its Service was lost)."""
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            if not isinstance(container, dict) or container.get("name") != job.DEFAULT_CONTAINER:
                continue
            for port in container.get("ports") or []:
                if isinstance(port, dict) and port.get("name") == job.PORT_NAME:
                    host = port.get("hostPort")
                    if isinstance(host, int) and host > 0:
                        return host
    return None


def _merge_patch(old: Any, new: Any) -> dict[str, Any]:
    """Keys of ``new`` plus nulls for keys only ``old`` has: a merge patch from one to the other."""
    old = old if isinstance(old, dict) else {}
    new = new if isinstance(new, dict) else {}
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    patch.update({key: value for key, value in new.items() if old.get(key) != value})
    return patch
