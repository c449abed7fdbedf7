"""Defaulting for the ``kubeflow.org/v1`` kinds, exactly as upstream's ``SetDefaults_<Kind>``.

Upstream applies these in the controller on every reconcile and never writes them back, so a
user's object on the server stays as they wrote it; kubetrain does the same (the operator
defaults in memory) and ``kubetrain validate`` prints the result so users can see it.

Defaulting only fills what is unset. It never rewrites a value the user gave, with one
upstream exception kept on purpose: replica-type keys are normalised to CamelCase.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api import _podtemplate
from kubetrain.api._v1 import (
    JobKind,
    MPIJob,
    PaddleJob,
    PyTorchJob,
    ReplicaSpec,
    RunPolicy,
    TFJob,
)

DEFAULT_NPROC_PER_NODE = "auto"


def normalize_replica_types(job: JobKind) -> None:
    """``worker``/``WORKER`` → ``Worker``, ``ps`` → ``PS`` (upstream ``setTypeNameToCamelCase``).

    MPIJob has no such step upstream: its keys must already be ``Launcher``/``Worker``.
    A key that matches no known type is left as written, for validation to report.
    """
    specs = job.replica_specs()
    if not specs or isinstance(job, MPIJob):
        return
    canonical = {t.lower(): t for t in job.REPLICA_TYPES}
    renamed: dict[str, ReplicaSpec | None] = {}
    for key, spec in specs.items():
        target = canonical.get(key.lower(), key)
        if target in renamed:  # "Worker" and "worker" both given: keep both for validation
            renamed[key] = spec
        else:
            renamed[target] = spec
    job.set_replica_specs(renamed)


def set_defaults(job: JobKind) -> JobKind:
    """Return a defaulted deep copy of ``job``; the argument is not modified."""
    job = job.model_copy(deep=True)
    normalize_replica_types(job)
    run_policy = job.spec.run_policy or RunPolicy()
    job.spec.run_policy = run_policy
    if isinstance(job, MPIJob):
        _default_mpi(job, run_policy)
    else:
        if run_policy.clean_pod_policy is None:
            run_policy.clean_pod_policy = "None"
        for spec in (job.replica_specs() or {}).values():
            if spec is None:
                continue
            if spec.replicas is None:
                spec.replicas = 1
            if spec.restart_policy is None:
                spec.restart_policy = job.DEFAULT_RESTART_POLICY  # type: ignore[assignment]
            if job.ADDS_DEFAULT_PORT:
                _ensure_default_port(spec, job)
    if run_policy.suspend is None:  # CRD default
        run_policy.suspend = False
    if isinstance(job, TFJob) and job.spec.success_policy is None:
        job.spec.success_policy = ""
    if isinstance(job, PyTorchJob):
        _default_pytorch(job)
    if isinstance(job, PaddleJob):
        _default_elastic_bounds(job.spec.elastic_policy, job)
    return job


def _default_mpi(job: MPIJob, run_policy: RunPolicy) -> None:
    if job.spec.clean_pod_policy is None and run_policy.clean_pod_policy is None:
        job.spec.clean_pod_policy = "None"
        run_policy.clean_pod_policy = "None"
    specs = job.replica_specs() or {}
    for rtype, replicas in (("Launcher", 1), ("Worker", 0)):
        spec = specs.get(rtype)
        if spec is None:
            continue
        if spec.replicas is None:
            spec.replicas = replicas
        if spec.restart_policy is None:
            spec.restart_policy = "Never"


def _default_pytorch(job: PyTorchJob) -> None:
    elastic = job.spec.elastic_policy
    _default_elastic_bounds(elastic, job)
    if (elastic is None or elastic.n_proc_per_node is None) and job.spec.nproc_per_node is None:
        job.spec.nproc_per_node = DEFAULT_NPROC_PER_NODE


def _default_elastic_bounds(elastic: Any, job: JobKind) -> None:
    """Both set: kept; one set: the other copies it; neither: both = Worker replicas."""
    if elastic is None:
        return
    if elastic.min_replicas is not None and elastic.max_replicas is not None:
        return
    if elastic.max_replicas is not None:
        elastic.min_replicas = elastic.max_replicas
    elif elastic.min_replicas is not None:
        elastic.max_replicas = elastic.min_replicas
    else:
        worker = (job.replica_specs() or {}).get("Worker")
        replicas = worker.replicas if worker is not None else None
        elastic.min_replicas = replicas
        elastic.max_replicas = replicas


def _ensure_default_port(spec: ReplicaSpec, job: JobKind) -> None:
    container = _podtemplate.default_container(spec.template, job.DEFAULT_CONTAINER)
    if container is None:
        return
    ports = container.get("ports") or []
    if not isinstance(ports, list):
        return  # a malformed template is validation's to report, not ours to rewrite
    if any(isinstance(p, dict) and p.get("name") == job.PORT_NAME for p in ports):
        return
    container["ports"] = [*ports, {"name": job.PORT_NAME, "containerPort": job.DEFAULT_PORT}]
