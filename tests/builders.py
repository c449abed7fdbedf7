"""Builders for job manifests in tests.

``pytorchjob("ns", "a").master().workers(2).build()`` returns the typed, defaulted v1 job
that the operator would see; ``.doc()`` returns the manifest as a user would write it, for
tests of validation and of the command line. ``trainjob("a", num_nodes=2)`` returns a
TrainJob manifest, with a status when a test plays the controller.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain import api

_FIELDS = {
    "TFJob": ("tfReplicaSpecs", "tensorflow"),
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboost"),
    "PaddleJob": ("paddleReplicaSpecs", "paddle"),
    "JAXJob": ("jaxReplicaSpecs", "jax"),
    "MPIJob": ("mpiReplicaSpecs", "mpi"),
    "MXJob": ("mxReplicaSpecs", "mxnet"),
}


class JobBuilder:
    def __init__(self, kind: str, namespace: str, name: str) -> None:
        self.field, self.container = _FIELDS[kind]
        self._doc: dict[str, Any] = {
            "apiVersion": "kubeflow.org/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {self.field: {}},
        }

    def replica(
        self,
        rtype: str,
        replicas: int | None = 1,
        *,
        restart_policy: str | None = None,
        ports: list[dict[str, Any]] | None = None,
        env: list[dict[str, Any]] | None = None,
        command: list[str] | None = None,
        limits: dict[str, Any] | None = None,
        sidecars: tuple[str, ...] = (),
        annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        service_account: str | None = None,
        containers: list[dict[str, Any]] | None = None,
    ) -> JobBuilder:
        """One replica type with the framework's default container, plus named sidecars.

        ``containers`` replaces them all, for tests of malformed or unusual container lists.
        """
        main: dict[str, Any] = {"name": self.container, "image": "example/train:1"}
        if ports is not None:
            main["ports"] = ports
        if env is not None:
            main["env"] = env
        if command is not None:
            main["command"] = command
        if limits is not None:
            main["resources"] = {"limits": limits}
        if containers is None:
            containers = [main, *({"name": s, "image": "example/side:1"} for s in sidecars)]
        pod_spec: dict[str, Any] = {"containers": containers}
        if service_account is not None:
            pod_spec["serviceAccountName"] = service_account
        template: dict[str, Any] = {"spec": pod_spec}
        metadata = {
            k: v for k, v in (("annotations", annotations), ("labels", labels)) if v is not None
        }
        if metadata:
            template["metadata"] = metadata
        spec: dict[str, Any] = {"template": template}
        if replicas is not None:
            spec["replicas"] = replicas
        if restart_policy is not None:
            spec["restartPolicy"] = restart_policy
        self._doc["spec"][self.field][rtype] = spec
        return self

    def master(self, replicas: int = 1, **options: Any) -> JobBuilder:
        return self.replica("Master", replicas, **options)

    def workers(self, replicas: int, **options: Any) -> JobBuilder:
        return self.replica("Worker", replicas, **options)

    def spec(self, **fields: Any) -> JobBuilder:
        """Top-level spec fields by wire name, e.g. ``elasticPolicy={...}``."""
        self._doc["spec"].update(fields)
        return self

    def run_policy(self, **fields: Any) -> JobBuilder:
        """``spec.runPolicy`` fields by wire name, e.g. ``managedBy="..."``."""
        self._doc["spec"].setdefault("runPolicy", {}).update(fields)
        return self

    def doc(self) -> dict[str, Any]:
        return copy.deepcopy(self._doc)

    def build(self) -> Any:
        """The defaulted job, as ``kubetrain.api.admit`` returns it."""
        return api.admit(self.doc())


def job(kind: str, name: str = "test-job", namespace: str = "default") -> JobBuilder:
    return JobBuilder(kind, namespace, name)


def tfjob(namespace: str = "default", name: str = "test-tfjob") -> JobBuilder:
    return JobBuilder("TFJob", namespace, name)


def pytorchjob(namespace: str = "default", name: str = "test-pytorchjob") -> JobBuilder:
    return JobBuilder("PyTorchJob", namespace, name)


def xgboostjob(namespace: str = "default", name: str = "test-xgboostjob") -> JobBuilder:
    return JobBuilder("XGBoostJob", namespace, name)


def paddlejob(namespace: str = "default", name: str = "test-paddlejob") -> JobBuilder:
    return JobBuilder("PaddleJob", namespace, name)


def jaxjob(namespace: str = "default", name: str = "test-jaxjob") -> JobBuilder:
    return JobBuilder("JAXJob", namespace, name)


def mpijob(namespace: str = "default", name: str = "test-mpijob") -> JobBuilder:
    return JobBuilder("MPIJob", namespace, name)


def mxjob(namespace: str = "default", name: str = "test-mxjob") -> JobBuilder:
    return JobBuilder("MXJob", namespace, name)


def drop_ports(job: Any, rtype: str) -> Any:
    """Remove every port from a replica's containers after admission.

    Defaulting always adds the framework's named port, so an admitted job never lacks it;
    this reproduces upstream's table cases where the port is missing.
    """
    for container in job.replica_specs()[rtype].template["spec"]["containers"]:
        container.pop("ports", None)
    return job


def names(env: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> list[str]:
    return [var["name"] for var in env]


def values(env: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> dict[str, Any]:
    """Name → value (or valueFrom), for env lists whose names are unique."""
    return {var["name"]: var.get("value", var.get("valueFrom")) for var in env}


TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"


def trainjob(
    name: str = "t",
    runtime: str = "torch-distributed",
    *,
    namespace: str | None = None,
    runtime_kind: str | None = None,
    num_nodes: int | None = None,
    metadata: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A TrainJob on ``runtime`` (a ClusterTrainingRuntime unless ``runtime_kind`` says),
    with ``spec`` fields by wire name (``trainer={...}``) and ``num_nodes`` as
    ``spec.trainer.numNodes``; ``metadata`` adds to the name and namespace."""
    ref: dict[str, Any] = {"name": runtime}
    if runtime_kind is not None:
        ref["kind"] = runtime_kind
    body: dict[str, Any] = {"runtimeRef": ref, **copy.deepcopy(spec)}
    if num_nodes is not None:
        body.setdefault("trainer", {})["numNodes"] = num_nodes
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(copy.deepcopy(metadata or {}))
    doc: dict[str, Any] = {
        "apiVersion": TRAINER_API_VERSION,
        "kind": "TrainJob",
        "metadata": meta,
        "spec": body,
    }
    if status is not None:
        doc["status"] = copy.deepcopy(status)
    return doc
