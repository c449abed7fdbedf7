"""Objects a job needs besides its pods and services: MPIJob's launcher wiring and an elastic
PyTorchJob's autoscaler.

- An MPIJob's launcher reaches its workers with ``kubectl exec``, so it needs (upstream
  ``controller.v1/mpi``): the ConfigMap ``<job>-config`` (hostfile, kubexec.sh, and
  discover_hosts.sh listing the Running workers), and a ServiceAccount, Role (get/list/watch
  pods, exec into the worker pods) and RoleBinding, all named ``<job>-launcher``. The texts
  come from :mod:`kubetrain.frameworks.mpi`; this module only wraps them into objects.
- A PyTorchJob whose ``elasticPolicy`` has ``metrics`` gets a HorizontalPodAutoscaler named
  like the job that scales it between ``minReplicas`` and ``maxReplicas`` (upstream
  ``controller.v1/pytorch/hpa.go``); it is deleted while the job is suspended.

The rules are looked up by the framework's name in :data:`RULES`, a stand-in for a field the
``Framework`` record lacks (``companions``): once ``kubetrain.frameworks`` grows it, the rules
move there and this table goes.

Pure: builds dicts from the job and the pods observed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain import api, frameworks, kube
from kubetrain.frameworks import mpi, pytorch
from kubetrain.operator.jobs import children

HORIZONTAL_POD_AUTOSCALERS = kube.Resource(
    "autoscaling", "v2", "horizontalpodautoscalers", kind="HorizontalPodAutoscaler"
)


@dataclass(frozen=True)
class Companion:
    """One object to exist. ``watched``: read from the cache and its ``field`` (``data``,
    ``spec``) kept up to date; otherwise created once and left alone. ``while_suspended``:
    kept while the job is suspended (else deleted then)."""

    resource: kube.Resource
    body: dict[str, Any]
    watched: bool = False
    field: str = "data"
    while_suspended: bool = True

    @property
    def name(self) -> str:
        return children.name_of(self.body)


Rule = Callable[[api.JobKind, Sequence[Mapping[str, Any]], dict[str, Any]], tuple[Companion, ...]]


def _meta(job: api.JobKind, name: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": job.metadata.namespace,
        "labels": {"app": job.name},
        "ownerReferences": [owner],
    }


def mpi_launcher(
    job: api.JobKind, pods: Sequence[Mapping[str, Any]], owner: dict[str, Any]
) -> tuple[Companion, ...]:
    """The MPI launcher's ConfigMap, ServiceAccount, Role and RoleBinding."""
    worker = api.REPLICA_TYPE_LABEL
    running = [
        children.name_of(pod)
        for pod in pods
        if children.labels_of(pod).get(worker) == "worker"
        and children.phase(pod) == "Running"
        and not children.is_deleting(pod)
    ]
    data = {
        **mpi.config_map_data(job),
        mpi.DISCOVER_HOSTS: mpi.discover_hosts_script(job, running),
    }
    launcher = mpi.launcher_name(job)
    specs = job.replica_specs() or {}
    workers = (specs.get("Worker").replicas or 0) if specs.get("Worker") else 0
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(job, mpi.config_map_name(job), owner),
        "data": data,
    }
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(job, launcher, owner),
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(job, launcher, owner),
        "rules": [
            {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
            {
                "verbs": ["create"],
                "apiGroups": [""],
                "resources": ["pods/exec"],
                "resourceNames": [mpi.worker_name(job, i) for i in range(workers)],
            },
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(job, launcher, owner),
        "subjects": [
            {"kind": "ServiceAccount", "name": launcher, "namespace": job.metadata.namespace}
        ],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": launcher},
    }
    return (
        Companion(children.CONFIGMAPS, config_map, watched=True),
        Companion(children.SERVICE_ACCOUNTS, account),
        Companion(children.ROLES, role),
        Companion(children.ROLE_BINDINGS, binding),
    )


def pytorch_autoscaler(
    job: api.JobKind, pods: Sequence[Mapping[str, Any]], owner: dict[str, Any]
) -> tuple[Companion, ...]:
    """The HorizontalPodAutoscaler of an elastic PyTorchJob with metrics; none without."""
    elastic = getattr(job.spec, "elastic_policy", None)
    if elastic is None or elastic.metrics is None:
        return ()
    spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": job.KIND, "name": job.name, "apiVersion": job.api_version},
        "maxReplicas": elastic.max_replicas,
        "metrics": list(elastic.metrics),
    }
    if elastic.min_replicas is not None:
        spec["minReplicas"] = elastic.min_replicas
    body = {
        "apiVersion": HORIZONTAL_POD_AUTOSCALERS.api_version,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": job.name,
            "namespace": job.metadata.namespace,
            "ownerReferences": [owner],
        },
        "spec": spec,
    }
    autoscaler = Companion(
        HORIZONTAL_POD_AUTOSCALERS, body, watched=True, field="spec", while_suspended=False
    )
    return (autoscaler,)


RULES: Mapping[str, Rule] = {
    mpi.FRAMEWORK.name: mpi_launcher,
    pytorch.FRAMEWORK.name: pytorch_autoscaler,
}
# Resources whose objects are watched (cached) because they are kept up to date.
WATCHED: Mapping[str, tuple[kube.Resource, ...]] = {
    mpi.FRAMEWORK.name: (children.CONFIGMAPS,),
    pytorch.FRAMEWORK.name: (HORIZONTAL_POD_AUTOSCALERS,),
}


def companions(
    framework: frameworks.Framework,
    job: api.JobKind,
    pods: Sequence[Mapping[str, Any]],
    owner: dict[str, Any],
) -> tuple[Companion, ...]:
    rule = RULES.get(framework.name)
    return rule(job, pods, owner) if rule is not None else ()


def watched(framework: frameworks.Framework) -> tuple[kube.Resource, ...]:
    return WATCHED.get(framework.name, ())
