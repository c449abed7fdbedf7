"""The trainer node of a TrainJob: how many there are, their resources, and rank 0's address.

Every v2 env contract is built from the same few facts, computed here once and the way
upstream's runtime framework computes them:

- the pod count of each replicated job: ``parallelism`` (default 1), except the trainer-ancestor
  job, which has the runtime's ``mlPolicy.numNodes`` and then the TrainJob's
  ``trainer.numNodes`` when set;
- the resources per node: the TrainJob's ``trainer.resourcesPerNode`` when set, else the
  ``node`` container's resources in the runtime's trainer job (by ancestor label or by name);
- the rank-0 host ``<job>-node-0-0.<job>`` and the trainer port 29500 (every contract takes
  the port as an argument: on a shared host network each job is given its own instead);
- each pod's DNS name ``<job>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>``, where the
  subdomain is the JobSet's ``network.subdomain`` or the TrainJob's name.

The JobSet template is a free-form object; wrong shapes read as absent (validation reports them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain import accessors, api

PORT = 29500
COMPLETION_INDEX_FIELD_PATH = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def value_env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def completion_index_env(name: str) -> dict[str, Any]:
    """An env var holding the pod's index in its Indexed Job (its rank among the nodes)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD_PATH}}}


def trainer_port(port: int = PORT) -> dict[str, Any]:
    """The container port rank 0 listens on; the JobSet's headless Service exposes it."""
    return {"containerPort": port}


def job_name(job: api.TrainJob) -> str:
    return job.metadata.name or ""


def master_host(job: api.TrainJob) -> str:
    """Rank 0's stable DNS name: pod 0 of job 0 of the ``node`` replicated job."""
    name = job_name(job)
    return f"{name}-{api.NODE}-0-0.{name}"


def ml_policy(runtime: api.Runtime) -> api.MLPolicy | None:
    return runtime.spec.ml_policy if runtime.spec is not None else None


def jobset_spec(runtime: api.Runtime) -> Mapping[str, Any]:
    spec = runtime.spec
    if spec is None or spec.template is None or not isinstance(spec.template.spec, dict):
        return {}
    return spec.template.spec


def replicated_jobs(runtime: api.Runtime) -> list[Mapping[str, Any]]:
    """The runtime's replicated jobs that are objects with a string name, in template order."""
    items = jobset_spec(runtime).get("replicatedJobs")
    if not isinstance(items, list):
        return []
    return [j for j in items if isinstance(j, Mapping) and isinstance(j.get("name"), str)]


def ancestor(rjob: Mapping[str, Any]) -> str | None:
    """The ancestor step a replicated job is labelled with, on its Job template."""
    value = accessors.dig(rjob, "template", "metadata", "labels", api.ANCESTOR_LABEL)
    return value if isinstance(value, str) else None


def containers(rjob: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = accessors.dig(rjob, "template", "spec", "template", "spec", "containers")
    return [c for c in items if isinstance(c, Mapping)] if isinstance(items, list) else []


def init_containers(rjob: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = accessors.dig(rjob, "template", "spec", "template", "spec", "initContainers")
    return [c for c in items if isinstance(c, Mapping)] if isinstance(items, list) else []


def container_names(rjob: Mapping[str, Any]) -> set[str]:
    """The names of a replicated job's containers and init containers."""
    return {
        c["name"]
        for c in containers(rjob) + init_containers(rjob)
        if isinstance(c.get("name"), str)
    }


def replicated_job(runtime: api.Runtime, name: str) -> Mapping[str, Any] | None:
    return next((j for j in replicated_jobs(runtime) if j["name"] == name), None)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def runtime_num_nodes(runtime: api.Runtime) -> int:
    """``mlPolicy.numNodes``, at least 1 (upstream clamps the runtime's count)."""
    policy = ml_policy(runtime)
    return max(_int(policy.num_nodes if policy else None, 1), 1)


def trainer_count(job: api.TrainJob, runtime: api.Runtime) -> int:
    """Nodes in the trainer job: the TrainJob's ``numNodes``, else the runtime's."""
    trainer = job.spec.trainer if job.spec else None
    if trainer is not None and trainer.num_nodes is not None:
        return trainer.num_nodes
    return runtime_num_nodes(runtime)


def runtime_pod_counts(runtime: api.Runtime) -> dict[str, int]:
    """Pods per Job of each replicated job as the runtime alone sets them.

    ``parallelism`` (default 1), except the trainer-ancestor job of a runtime with an
    ``mlPolicy``, which runs ``mlPolicy.numNodes``.
    """
    policy = ml_policy(runtime)
    counts: dict[str, int] = {}
    for rjob in replicated_jobs(runtime):
        count = max(_int(accessors.dig(rjob, "template", "spec", "parallelism"), 1), 1)
        if ancestor(rjob) == api.TRAINER_ANCESTOR and policy is not None:
            count = runtime_num_nodes(runtime)
        counts[rjob["name"]] = count
    return counts


def pod_counts(job: api.TrainJob, runtime: api.Runtime) -> dict[str, int]:
    """Pods per Job, with the TrainJob's node count on the trainer-ancestor job.

    This is what every policy but MPI uses (torch, JAX, XGBoost, and plain runtimes).
    """
    counts = runtime_pod_counts(runtime)
    for rjob in replicated_jobs(runtime):
        if ancestor(rjob) == api.TRAINER_ANCESTOR:
            counts[rjob["name"]] = trainer_count(job, runtime)
    return counts


def subdomain(job: api.TrainJob, runtime: api.Runtime) -> str:
    """The pods' subdomain, which is also the headless Service's name."""
    value = accessors.dig(jobset_spec(runtime), "network", "subdomain")
    return value if isinstance(value, str) and value else job_name(job)


def endpoints(
    job: api.TrainJob, runtime: api.Runtime, counts: Mapping[str, int]
) -> dict[str, list[str]]:
    """Each replicated job's pod DNS names, for its ``replicas`` Jobs of ``counts`` pods each."""
    name = job_name(job)
    domain = subdomain(job, runtime)
    result: dict[str, list[str]] = {}
    for rjob in replicated_jobs(runtime):
        rname = rjob["name"]
        replicas = _int(rjob.get("replicas"), 1)
        result[rname] = [
            f"{name}-{rname}-{replica}-{pod}.{domain}"
            for replica in range(replicas)
            for pod in range(counts.get(rname, 1))
        ]
    return result


def runtime_resources(runtime: api.Runtime) -> Mapping[str, Any] | None:
    """The ``node`` container's resources in the trainer job (named ``node`` or the ancestor)."""
    for rjob in replicated_jobs(runtime):
        if rjob["name"] != api.NODE and ancestor(rjob) != api.TRAINER_ANCESTOR:
            continue
        for container in containers(rjob):
            resources = container.get("resources")
            if container.get("name") == api.NODE and isinstance(resources, Mapping):
                return resources
    return None


def resources_per_node(job: api.TrainJob, runtime: api.Runtime) -> Mapping[str, Any]:
    """The TrainJob's ``resourcesPerNode`` if set (it replaces the runtime's), else theirs."""
    trainer = job.spec.trainer if job.spec else None
    if trainer is not None and trainer.resources_per_node is not None:
        return trainer.resources_per_node
    return runtime_resources(runtime) or {}


def gpus_per_node(job: api.TrainJob, runtime: api.Runtime) -> int:
    return api.gpu_count(resources_per_node(job, runtime))


def cpus_per_node(job: api.TrainJob, runtime: api.Runtime) -> int:
    return api.cpu_count(resources_per_node(job, runtime))
