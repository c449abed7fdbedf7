"""The workload of a TrainJob: its JobSet realised as pods and one headless Service, as JobSet,
its Indexed Jobs and their Job controller would realise it, without either controller.

Upstream Trainer builds a JobSet, JobSet builds one Indexed Job per replica of each replicated
job, and Kubernetes' Job controller builds the pods. kubetrain needs none of those controllers:
given the JobSet the plugins built and the pods that exist, this module says what the pods are
(names, labels, annotations, DNS identity), how far each Job got, whether the whole set is
complete or failed, and what to create or delete next.

Naming and identity, as JobSet and Indexed Jobs give them:

- Job ``<jobset>-<replicatedJob>-<jobIndex>``; its pods ``<job>-<podIndex>``, i.e.
  ``<jobset>-<replicatedJob>-<jobIndex>-<podIndex>``, which is also the pod's ``hostname``; the
  ``subdomain`` is ``network.subdomain`` or the JobSet name, and the headless Service of that
  name (selector ``jobset.sigs.k8s.io/jobset-name``) makes ``<hostname>.<subdomain>`` resolve;
- the completion index is the pod index, as the annotation (and label)
  ``batch.kubernetes.io/job-completion-index``, which the env contracts read as the rank;
- every ``jobset.sigs.k8s.io/*`` key is set as a label and an annotation (JobSet's
  ``labelAndAnnotateObject``); ``jobset-uid`` is the TrainJob's uid, since there is no JobSet
  object; ``job-key`` is the SHA-1 of ``<namespace>/<job name>``.

Behaviour, as JobSet does it:

- a Job succeeds when every completion index has a Succeeded pod, and fails when one of its
  pods failed, or when its pods restarted in place (restartPolicy OnFailure, JobSet's default)
  more than ``backoffLimit`` times (default 6); reason ``BackoffLimitExceeded``;
- ``successPolicy`` (``All`` by default, or ``Any``, over ``targetReplicatedJobs`` or all) makes
  the set complete; a failed Job applies ``failurePolicy``: none → failed (``FailedJobs``);
  otherwise the first matching rule's action (``FailJobSet``, ``RestartJobSet``,
  ``RestartJobSetAndIgnoreMaxRestarts``; per-Job restarts act as whole-set restarts), else
  ``RestartJobSet``, which fails the set (``ReachedMaxRestarts``) once ``maxRestarts`` restarts
  counted. A restart recreates every pod (strategy ``Recreate``), with the new
  ``jobset.sigs.k8s.io/restart-attempt``;
- ``dependsOn`` (``Ready``/``Complete``) and ``startupPolicy: InOrder`` hold back the pods of
  later replicated jobs until their predecessors got there;
- suspended: no active pods; finished: active pods are deleted, finished ones kept for logs;
- ``volumeClaimPolicies`` (JobSet's stateful-JobSet API, which upstream's initializer runtimes
  use for the volume ``initializer``): one PersistentVolumeClaim per template, shared by every
  replicated job, named ``<template>-<jobset>``, with the template's labels plus
  ``jobset.sigs.k8s.io/jobset-name``; owned by the TrainJob (so deleted with it) unless
  ``retentionPolicy.whenDeleted`` is ``Retain``. Every pod template one of whose containers
  mounts a volume of a template's name (and that declares no volume of that name itself) gets
  the volume ``{name: <template>, persistentVolumeClaim: {claimName: <template>-<jobset>}}``.
  That is how the dataset and model initializers hand ``/workspace`` to every trainer node: on
  a cluster through whatever storage the claim binds to (ReadWriteMany for several nodes), on
  kubetrain's local node through one directory of this machine.

On a shared host network the JobSet records the job's port
(:data:`~kubetrain.operator.hostports.HOST_PORT_ANNOTATION`): the Service records it
too, and only rank 0 (``<jobset>-node-0-0``, where every env contract points its peers) keeps
that container port, as its host port; the other pods of the same template drop it, since they
do not listen there and would otherwise all claim one host port on one node.

Where the restart counts live: JobSet keeps them in its status. Here they are annotations on
the headless Service (:data:`RESTARTS_ANNOTATION`), which is created before the first pod and
outlives every pod, so they survive an operator restart. The Service is created even when
``network.enableDNSHostnames`` is false (pods then get no hostname or subdomain).

Must not: do I/O or read a clock; times come from pod statuses.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain import api
from kubetrain.operator import hostports
from kubetrain.operator.trainjob import messages

JOBSET_NAME: Final = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID: Final = "jobset.sigs.k8s.io/jobset-uid"
REPLICATED_JOB_NAME: Final = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS: Final = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS: Final = "jobset.sigs.k8s.io/global-replicas"
JOB_INDEX: Final = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX: Final = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY: Final = "jobset.sigs.k8s.io/job-key"
GROUP_NAME: Final = "jobset.sigs.k8s.io/group-name"
GROUP_REPLICAS: Final = "jobset.sigs.k8s.io/group-replicas"
JOB_GROUP_INDEX: Final = "jobset.sigs.k8s.io/job-group-index"
RESTART_ATTEMPT: Final = "jobset.sigs.k8s.io/restart-attempt"
COORDINATOR: Final = "jobset.sigs.k8s.io/coordinator"
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
JOB_NAME_LABELS: Final = ("job-name", "batch.kubernetes.io/job-name")
RESTARTS_ANNOTATION: Final = "kubetrain.io/jobset-restarts"
RESTARTS_TOWARDS_MAX_ANNOTATION: Final = "kubetrain.io/jobset-restarts-count-towards-max"
RETAIN: Final = "Retain"
DEFAULT_GROUP: Final = "default"
DEFAULT_BACKOFF_LIMIT: Final = 6
DEFAULT_RESTART_POLICY: Final = "OnFailure"
IN_PLACE_RESTART_POLICIES: Final = frozenset({"OnFailure", "Always"})
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})

FAIL_JOBSET: Final = "FailJobSet"
RESTART_JOBSET: Final = "RestartJobSet"
RESTART_IGNORE_MAX: Final = "RestartJobSetAndIgnoreMaxRestarts"
RESTART_JOB: Final = "RestartJob"
RESTART_JOB_IGNORE_MAX: Final = "RestartJobAndIgnoreMaxRestarts"
IGNORING_MAX: Final = frozenset({RESTART_IGNORE_MAX, RESTART_JOB_IGNORE_MAX})


# --- reading the JobSet -------------------------------------------------------------------------


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def name_of(obj: Mapping[str, Any]) -> str:
    return str(_dig(obj, "metadata", "name") or "")


def replicated_jobs(jobset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = _dig(jobset, "spec", "replicatedJobs")
    if not isinstance(items, list):
        return []
    return [j for j in items if isinstance(j, Mapping) and isinstance(j.get("name"), str)]


def replicas(rjob: Mapping[str, Any]) -> int:
    return max(_int(rjob.get("replicas"), 1), 0)


def parallelism(rjob: Mapping[str, Any]) -> int:
    """Pods per Job: ``parallelism``, capped by ``completions`` (the plugins set both)."""
    spec = _dig(rjob, "template", "spec") or {}
    count = max(_int(spec.get("parallelism"), 1), 0)
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        count = min(count, max(completions, 0))
    return count


def backoff_limit(rjob: Mapping[str, Any]) -> int:
    return max(_int(_dig(rjob, "template", "spec", "backoffLimit"), DEFAULT_BACKOFF_LIMIT), 0)


def suspended(jobset: Mapping[str, Any]) -> bool:
    return _dig(jobset, "spec", "suspend") is True


def dns_hostnames(jobset: Mapping[str, Any]) -> bool:
    return _dig(jobset, "spec", "network", "enableDNSHostnames") is not False


def subdomain(jobset: Mapping[str, Any]) -> str:
    value = _dig(jobset, "spec", "network", "subdomain")
    return value if isinstance(value, str) and value else name_of(jobset)


def job_name(jobset: Mapping[str, Any], rjob_name: str, index: int) -> str:
    return f"{name_of(jobset)}-{rjob_name}-{index}"


def pod_name(jobset: Mapping[str, Any], rjob_name: str, job_index: int, pod_index: int) -> str:
    return f"{job_name(jobset, rjob_name, job_index)}-{pod_index}"


def _owner_uid(jobset: Mapping[str, Any]) -> str:
    for ref in _dig(jobset, "metadata", "ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return str(_dig(jobset, "metadata", "uid") or "")


def _group(rjob: Mapping[str, Any]) -> str:
    value = rjob.get("groupName")
    return value if isinstance(value, str) and value else DEFAULT_GROUP


# --- building pods and the Service -----------------------------------------------------------


def jobset_keys(
    jobset: Mapping[str, Any], rjob: Mapping[str, Any], job_index: int, restarts: int
) -> dict[str, str]:
    """The ``jobset.sigs.k8s.io/*`` keys of one Job (JobSet's ``labelAndAnnotateObject``)."""
    rjobs = replicated_jobs(jobset)
    rname, group = str(rjob["name"]), _group(rjob)
    global_index = 0
    for other in rjobs:
        if other["name"] == rname:
            break
        global_index += replicas(other)
    group_index, group_total = 0, 0
    seen = False
    for other in rjobs:
        if _group(other) != group:
            continue
        if other["name"] == rname:
            seen = True
        elif not seen:
            group_index += replicas(other)
        group_total += replicas(other)
    namespace = str(_dig(jobset, "metadata", "namespace") or "")
    jname = job_name(jobset, rname, job_index)
    keys = {
        JOBSET_NAME: name_of(jobset),
        JOBSET_UID: _owner_uid(jobset),
        REPLICATED_JOB_NAME: rname,
        RESTART_ATTEMPT: str(restarts),
        REPLICATED_JOB_REPLICAS: str(replicas(rjob)),
        GLOBAL_REPLICAS: str(sum(replicas(r) for r in rjobs)),
        JOB_INDEX: str(job_index),
        JOB_KEY: hashlib.sha1(f"{namespace}/{jname}".encode()).hexdigest(),
        JOB_GLOBAL_INDEX: str(global_index + job_index),
        GROUP_NAME: group,
        GROUP_REPLICAS: str(group_total),
        JOB_GROUP_INDEX: str(group_index + job_index),
    }
    coordinator = _dig(jobset, "spec", "coordinator")
    if isinstance(coordinator, Mapping) and isinstance(coordinator.get("replicatedJob"), str):
        keys[COORDINATOR] = (
            pod_name(
                jobset,
                coordinator["replicatedJob"],
                _int(coordinator.get("jobIndex"), 0),
                _int(coordinator.get("podIndex"), 0),
            )
            + f".{subdomain(jobset)}"
        )
    return keys


def desired_pod(
    jobset: Mapping[str, Any],
    rjob: Mapping[str, Any],
    job_index: int,
    pod_index: int,
    restarts: int,
) -> dict[str, Any]:
    """One pod of an Indexed Job of the JobSet, as the Job controller would create it."""
    template = copy.deepcopy(_dig(rjob, "template", "spec", "template") or {})
    metadata = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    rname = str(rjob["name"])
    jname = job_name(jobset, rname, job_index)
    name = f"{jname}-{pod_index}"
    keys = jobset_keys(jobset, rjob, job_index, restarts)
    labels = {**(metadata.get("labels") or {}), **keys}
    annotations = {**(metadata.get("annotations") or {}), **keys}
    for key in JOB_NAME_LABELS:
        labels[key] = jname
    labels[COMPLETION_INDEX] = str(pod_index)
    annotations[COMPLETION_INDEX] = str(pod_index)
    spec.setdefault("restartPolicy", DEFAULT_RESTART_POLICY)
    _claim_volumes(jobset, spec)
    port = hostports.recorded(jobset)
    if port is not None:
        rank0 = rname == api.NODE and job_index == 0 and pod_index == 0
        _claim_host_port(spec, port, rank0)
    if dns_hostnames(jobset):
        spec["hostname"] = name
        spec["subdomain"] = subdomain(jobset)
    pod_meta: dict[str, Any] = {
        "name": name,
        "namespace": _dig(jobset, "metadata", "namespace"),
        "labels": labels,
        "annotations": annotations,
    }
    owners = _dig(jobset, "metadata", "ownerReferences")
    if owners:
        pod_meta["ownerReferences"] = copy.deepcopy(owners)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def _claim_host_port(spec: dict[str, Any], port: int, rank0: bool) -> None:
    """Rank 0 declares ``port`` as its host port; the others do not declare it at all."""
    for container in spec.get("containers") or []:
        if not isinstance(container, dict) or not isinstance(container.get("ports"), list):
            continue
        kept = []
        for entry in container["ports"]:
            if isinstance(entry, dict) and entry.get("containerPort") == port:
                if not rank0:
                    continue
                entry["hostPort"] = port
            kept.append(entry)
        container["ports"] = kept


def _claim_templates(jobset: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], bool]]:
    """Every ``volumeClaimPolicies`` template, with whether its claim is retained."""
    found = []
    for policy in _dig(jobset, "spec", "volumeClaimPolicies") or []:
        if not isinstance(policy, Mapping):
            continue
        retain = _dig(policy, "retentionPolicy", "whenDeleted") == RETAIN
        for template in policy.get("templates") or []:
            if isinstance(template, Mapping) and _dig(template, "metadata", "name"):
                found.append((template, retain))
    return found


def claim_name(jobset: Mapping[str, Any], template: str) -> str:
    """JobSet's shared claim name, ``<template>-<jobset>``."""
    return f"{template}-{name_of(jobset)}"


def volume_claims(jobset: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The PersistentVolumeClaims of the JobSet's ``volumeClaimPolicies``."""
    claims = []
    for template, retain in _claim_templates(jobset):
        meta = template.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), JOBSET_NAME: name_of(jobset)}
        metadata: dict[str, Any] = {
            "name": claim_name(jobset, str(meta["name"])),
            "namespace": _dig(jobset, "metadata", "namespace"),
            "labels": labels,
        }
        if meta.get("annotations"):
            metadata["annotations"] = dict(meta["annotations"])
        owners = _dig(jobset, "metadata", "ownerReferences")
        if owners and not retain:
            metadata["ownerReferences"] = copy.deepcopy(owners)
        claims.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": metadata,
                "spec": copy.deepcopy(template.get("spec") or {}),
            }
        )
    return claims


def _claim_volumes(jobset: Mapping[str, Any], spec: dict[str, Any]) -> None:
    """The claims' volumes, on a pod spec whose containers mount them by template name."""
    mounted = {
        mount.get("name")
        for key in ("initContainers", "containers")
        for container in spec.get(key) or []
        if isinstance(container, Mapping)
        for mount in container.get("volumeMounts") or []
        if isinstance(mount, Mapping)
    }
    volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
    declared = {v.get("name") for v in volumes if isinstance(v, Mapping)}
    for template, _ in _claim_templates(jobset):
        name = str(_dig(template, "metadata", "name"))
        if name in mounted and name not in declared:
            claim = {"claimName": claim_name(jobset, name)}
            volumes.append({"name": name, "persistentVolumeClaim": claim})
    if volumes:
        spec["volumes"] = volumes


def desired_service(jobset: Mapping[str, Any], restarts: int = 0, towards_max: int = 0) -> dict:
    """The headless Service that gives the pods their DNS names, keeps the restart counts and,
    on a shared host network, records the job's port."""
    publish = _dig(jobset, "spec", "network", "publishNotReadyAddresses")
    annotations = restart_annotations(restarts, towards_max)
    port = hostports.recorded(jobset)
    if port is not None:
        annotations[hostports.HOST_PORT_ANNOTATION] = str(port)
    metadata: dict[str, Any] = {
        "name": subdomain(jobset),
        "namespace": _dig(jobset, "metadata", "namespace"),
        "annotations": annotations,
    }
    owners = _dig(jobset, "metadata", "ownerReferences")
    if owners:
        metadata["ownerReferences"] = copy.deepcopy(owners)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "clusterIP": "None",
            "selector": {JOBSET_NAME: name_of(jobset)},
            "publishNotReadyAddresses": publish is not False,
        },
    }


def restart_annotations(restarts: int, towards_max: int) -> dict[str, str]:
    return {RESTARTS_ANNOTATION: str(restarts), RESTARTS_TOWARDS_MAX_ANNOTATION: str(towards_max)}


def restart_counts(service: Mapping[str, Any] | None) -> tuple[int, int]:
    """(restarts, restarts counted towards maxRestarts) recorded on the Service."""
    annotations = _dig(service, "metadata", "annotations") if service else None
    if not isinstance(annotations, Mapping):
        return 0, 0
    return _count(annotations.get(RESTARTS_ANNOTATION)), _count(
        annotations.get(RESTARTS_TOWARDS_MAX_ANNOTATION)
    )


def _count(text: Any) -> int:
    try:
        return max(int(str(text)), 0)
    except ValueError:
        return 0


# --- observing pods ------------------------------------------------------------------------------


def _labels(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    value = _dig(pod, "metadata", "labels")
    return value if isinstance(value, Mapping) else {}


def phase(pod: Mapping[str, Any]) -> str:
    return str(_dig(pod, "status", "phase") or "Pending")


def terminating(pod: Mapping[str, Any]) -> bool:
    return bool(_dig(pod, "metadata", "deletionTimestamp"))


def active(pod: Mapping[str, Any]) -> bool:
    return not terminating(pod) and phase(pod) not in TERMINAL_PHASES


def ready(pod: Mapping[str, Any]) -> bool:
    for condition in _dig(pod, "status", "conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def restart_count(pod: Mapping[str, Any]) -> int:
    total = 0
    for status in _dig(pod, "status", "containerStatuses") or []:
        if isinstance(status, Mapping):
            total += _int(status.get("restartCount"), 0)
    return total


def attempt(pod: Mapping[str, Any]) -> int:
    return _count(_labels(pod).get(RESTART_ATTEMPT))


def _pod_time(pod: Mapping[str, Any], state: str, key: str) -> str:
    """The latest ``state.<state>.<key>`` among the pod's containers ('' when none)."""
    times = [
        str(_dig(status, "state", state, key))
        for status in _dig(pod, "status", "containerStatuses") or []
        if isinstance(status, Mapping) and _dig(status, "state", state, key)
    ]
    return max(times, default="")


def started_at(pod: Mapping[str, Any]) -> str:
    return (
        _pod_time(pod, "running", "startedAt")
        or _pod_time(pod, "terminated", "startedAt")
        or str(_dig(pod, "status", "startTime") or "")
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
    count = parallelism(rjob)
    live = [p for p in pods if not terminating(p)]
    done = {_labels(p).get(COMPLETION_INDEX) for p in live if phase(p) == "Succeeded"} & {
        str(i) for i in range(count)
    }
    failed_pods = [p for p in live if phase(p) == "Failed"]
    restarted = sum(
        restart_count(p) for p in live if _restart_policy(p) in IN_PLACE_RESTART_POLICIES
    )
    failed = bool(failed_pods) or restarted > backoff_limit(rjob)
    when = min((failed_at(p) for p in failed_pods), default="")
    if failed and not when:
        when = min((failed_at(p) for p in live), default="")
    succeeded = not failed and len(done) >= count
    finished = failed or succeeded
    ready_pods = sum(1 for p in live if phase(p) == "Succeeded" or (active(p) and ready(p)))
    return JobState(
        replicated_job=str(rjob["name"]),
        index=index,
        name=job_name(jobset, str(rjob["name"]), index),
        parallelism=count,
        pods=tuple(live),
        succeeded=succeeded,
        failed=failed,
        failed_at=when,
        ready=not finished and bool(live) and ready_pods >= count,
        active=not finished and any(active(p) for p in live),
    )


def _restart_policy(pod: Mapping[str, Any]) -> str:
    return str(_dig(pod, "spec", "restartPolicy") or DEFAULT_RESTART_POLICY)


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
        key = (str(labels.get(REPLICATED_JOB_NAME, "")), _count(labels.get(JOB_INDEX)))
        current.setdefault(key, []).append(pod)
    is_suspended = suspended(jobset)
    jobs: list[JobState] = []
    statuses: list[ReplicatedJobStatus] = []
    for rjob in replicated_jobs(jobset):
        rname = str(rjob["name"])
        states = [
            _job_state(jobset, rjob, i, current.get((rname, i), [])) for i in range(replicas(rjob))
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
    policy = _dig(jobset, "spec", "failurePolicy")
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
    if seen.restarts_towards_max >= max(_int(policy.get("maxRestarts"), 0), 0):
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
    policy = _dig(jobset, "spec", "successPolicy")
    policy = policy if isinstance(policy, Mapping) else {}
    targets = policy.get("targetReplicatedJobs") or []
    chosen = [r for r in replicated_jobs(jobset) if not targets or r["name"] in targets]
    succeeded = sum(
        1 for j in seen.jobs if j.succeeded and (not targets or j.replicated_job in targets)
    )
    if policy.get("operator") == "Any":
        return succeeded >= 1
    expected = sum(replicas(r) for r in chosen)
    return expected > 0 and succeeded >= expected


def _trainer_jobs(jobset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rjobs = replicated_jobs(jobset)
    trainers = [
        r
        for r in rjobs
        if _dig(r, "template", "metadata", "labels", api.ANCESTOR_LABEL) == api.TRAINER_ANCESTOR
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
        by_index = {_labels(p).get(COMPLETION_INDEX): p for p in job.pods}
        for index in range(job.parallelism):
            pod = by_index.get(str(index))
            if pod is None or phase(pod) not in ("Running", "Succeeded"):
                return None
            latest = max(latest, started_at(pod))
    return latest


# --- planning --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What to do next. ``restart`` set: write its counts to the Service before deleting."""

    create: tuple[dict[str, Any], ...] = ()
    delete: tuple[str, ...] = ()
    restart: Restart | None = None
    events: tuple[tuple[str, str, str], ...] = field(default=())  # (type, reason, message)


def _dependencies_met(rjob: Mapping[str, Any], seen: Observation, jobset: Mapping) -> bool:
    wanted = {str(r["name"]): replicas(r) for r in replicated_jobs(jobset)}
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
    return _dig(jobset, "spec", "startupPolicy", "startupPolicyOrder") == "InOrder"


def _all_started(rjob: Mapping[str, Any], seen: Observation) -> bool:
    status = seen.status(str(rjob["name"]))
    return replicas(rjob) == status.failed + status.ready + status.succeeded


def desired_pod_names(jobset: Mapping[str, Any]) -> set[str]:
    """Every pod name the JobSet's current shape has room for."""
    return {
        pod_name(jobset, str(r["name"]), j, p)
        for r in replicated_jobs(jobset)
        for j in range(replicas(r))
        for p in range(parallelism(r))
    }


def plan(
    jobset: Mapping[str, Any],
    seen: Observation,
    pods: Iterable[Mapping[str, Any]],
    *,
    finished: bool = False,
) -> Plan:
    """The next step towards what the JobSet and its status want (see the module docstring)."""
    pods = list(pods)
    deletable = [p for p in pods if not terminating(p)]
    if finished or seen.outcome is not None:
        return Plan(delete=tuple(sorted(name_of(p) for p in deletable if active(p))))
    if suspended(jobset):
        return Plan(delete=tuple(sorted(name_of(p) for p in deletable if active(p))))
    if seen.restart is not None:
        doomed = sorted(name_of(p) for p in deletable)
        event = ("Warning", seen.restart.reason, seen.restart.message)
        return Plan(delete=tuple(doomed), restart=seen.restart, events=(event,))
    wanted = desired_pod_names(jobset)
    delete = sorted(
        name_of(p) for p in deletable if attempt(p) != seen.restarts or name_of(p) not in wanted
    )
    taken = {name_of(p) for p in pods}
    create: list[dict[str, Any]] = []
    for rjob in replicated_jobs(jobset):
        if not _dependencies_met(rjob, seen, jobset):
            continue
        for job_index in range(replicas(rjob)):
            state = next(
                (j for j in seen.jobs if j.replicated_job == rjob["name"] and j.index == job_index),
                None,
            )
            if state is not None and (state.succeeded or state.failed):
                continue
            for pod_index in range(parallelism(rjob)):
                if pod_name(jobset, str(rjob["name"]), job_index, pod_index) in taken:
                    continue
                create.append(desired_pod(jobset, rjob, job_index, pod_index, seen.restarts))
        if _in_order(jobset) and not _all_started(rjob, seen):
            break
    return Plan(create=tuple(create), delete=tuple(delete))
