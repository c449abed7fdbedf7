"""The workload of a TrainJob: its JobSet realised as pods and one headless Service, as JobSet,
its Indexed Jobs and their Job controller would realise it, without either controller.

Upstream Trainer builds a JobSet, JobSet builds one Indexed Job per replica of each replicated
job, and Kubernetes' Job controller builds the pods. kubetrain needs none of those controllers:
given the JobSet the plugins built, this module says what the pods are (names, labels,
annotations, DNS identity), and what the Service and the volume claims are.

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

What the pods say (each Job's state, the set's verdict under its success and failure
policies, a restart) is :mod:`.observation`'s; which pods to create and delete next is
:func:`.plan.next_pods`'. Here:

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
from collections.abc import Mapping
from typing import Any, Final

from kubetrain import accessors, api
from kubetrain.operator import hostports

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


# --- reading the JobSet -------------------------------------------------------------------------


dig = accessors.dig  # one home: kubetrain.accessors


def int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


name_of = accessors.name_of


def replicated_jobs(jobset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = dig(jobset, "spec", "replicatedJobs")
    if not isinstance(items, list):
        return []
    return [j for j in items if isinstance(j, Mapping) and isinstance(j.get("name"), str)]


def replicas(rjob: Mapping[str, Any]) -> int:
    return max(int_or(rjob.get("replicas"), 1), 0)


def parallelism(rjob: Mapping[str, Any]) -> int:
    """Pods per Job: ``parallelism``, capped by ``completions`` (the plugins set both)."""
    spec = dig(rjob, "template", "spec") or {}
    count = max(int_or(spec.get("parallelism"), 1), 0)
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        count = min(count, max(completions, 0))
    return count


def backoff_limit(rjob: Mapping[str, Any]) -> int:
    return max(int_or(dig(rjob, "template", "spec", "backoffLimit"), DEFAULT_BACKOFF_LIMIT), 0)


def suspended(jobset: Mapping[str, Any]) -> bool:
    return dig(jobset, "spec", "suspend") is True


def dns_hostnames(jobset: Mapping[str, Any]) -> bool:
    return dig(jobset, "spec", "network", "enableDNSHostnames") is not False


def subdomain(jobset: Mapping[str, Any]) -> str:
    value = dig(jobset, "spec", "network", "subdomain")
    return value if isinstance(value, str) and value else name_of(jobset)


def job_name(jobset: Mapping[str, Any], rjob_name: str, index: int) -> str:
    return f"{name_of(jobset)}-{rjob_name}-{index}"


def pod_name(jobset: Mapping[str, Any], rjob_name: str, job_index: int, pod_index: int) -> str:
    return f"{job_name(jobset, rjob_name, job_index)}-{pod_index}"


def _owner_uid(jobset: Mapping[str, Any]) -> str:
    for ref in dig(jobset, "metadata", "ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("uid") or "")
    return str(dig(jobset, "metadata", "uid") or "")


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
    namespace = str(dig(jobset, "metadata", "namespace") or "")
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
    coordinator = dig(jobset, "spec", "coordinator")
    if isinstance(coordinator, Mapping) and isinstance(coordinator.get("replicatedJob"), str):
        keys[COORDINATOR] = (
            pod_name(
                jobset,
                coordinator["replicatedJob"],
                int_or(coordinator.get("jobIndex"), 0),
                int_or(coordinator.get("podIndex"), 0),
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
    template = copy.deepcopy(dig(rjob, "template", "spec", "template") or {})
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
        "namespace": dig(jobset, "metadata", "namespace"),
        "labels": labels,
        "annotations": annotations,
    }
    owners = dig(jobset, "metadata", "ownerReferences")
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
    for policy in dig(jobset, "spec", "volumeClaimPolicies") or []:
        if not isinstance(policy, Mapping):
            continue
        retain = dig(policy, "retentionPolicy", "whenDeleted") == RETAIN
        for template in policy.get("templates") or []:
            if isinstance(template, Mapping) and dig(template, "metadata", "name"):
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
            "namespace": dig(jobset, "metadata", "namespace"),
            "labels": labels,
        }
        if meta.get("annotations"):
            metadata["annotations"] = dict(meta["annotations"])
        owners = dig(jobset, "metadata", "ownerReferences")
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
        name = str(dig(template, "metadata", "name"))
        if name in mounted and name not in declared:
            claim = {"claimName": claim_name(jobset, name)}
            volumes.append({"name": name, "persistentVolumeClaim": claim})
    if volumes:
        spec["volumes"] = volumes


def desired_service(jobset: Mapping[str, Any], restarts: int = 0, towards_max: int = 0) -> dict:
    """The headless Service that gives the pods their DNS names, keeps the restart counts and,
    on a shared host network, records the job's port."""
    publish = dig(jobset, "spec", "network", "publishNotReadyAddresses")
    annotations = restart_annotations(restarts, towards_max)
    port = hostports.recorded(jobset)
    if port is not None:
        annotations[hostports.HOST_PORT_ANNOTATION] = str(port)
    metadata: dict[str, Any] = {
        "name": subdomain(jobset),
        "namespace": dig(jobset, "metadata", "namespace"),
        "annotations": annotations,
    }
    owners = dig(jobset, "metadata", "ownerReferences")
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
    annotations = dig(service, "metadata", "annotations") if service else None
    if not isinstance(annotations, Mapping):
        return 0, 0
    return count(annotations.get(RESTARTS_ANNOTATION)), count(
        annotations.get(RESTARTS_TOWARDS_MAX_ANNOTATION)
    )


def count(text: Any) -> int:
    try:
        return max(int(str(text)), 0)
    except ValueError:
        return 0


def desired_pod_names(jobset: Mapping[str, Any]) -> set[str]:
    """Every pod name the JobSet's current shape has room for."""
    return {
        pod_name(jobset, str(r["name"]), j, p)
        for r in replicated_jobs(jobset)
        for j in range(replicas(r))
        for p in range(parallelism(r))
    }
