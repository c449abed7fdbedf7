"""Builders for v1 job manifests in tests: plain dicts, as a user would write them."""

from __future__ import annotations

import copy
from typing import Any

REPLICA_FIELDS = {
    "TFJob": ("tfReplicaSpecs", "tensorflow"),
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboost"),
    "PaddleJob": ("paddleReplicaSpecs", "paddle"),
    "JAXJob": ("jaxReplicaSpecs", "jax"),
    "MPIJob": ("mpiReplicaSpecs", "mpi"),
    "MXJob": ("mxReplicaSpecs", "mxnet"),
}


class JobBuilder:
    """``job("PyTorchJob", "a").replica("Master", 1).replica("Worker", 2).build()``."""

    def __init__(self, kind: str, name: str, namespace: str = "default") -> None:
        self.kind = kind
        self.field, self.container = REPLICA_FIELDS[kind]
        self.doc: dict[str, Any] = {
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
        containers: list[dict[str, Any]] | None = None,
        restart_policy: str | None = None,
    ) -> JobBuilder:
        if containers is None:
            containers = [{"name": self.container, "image": "example/train:1"}]
        spec: dict[str, Any] = {"template": {"spec": {"containers": containers}}}
        if replicas is not None:
            spec["replicas"] = replicas
        if restart_policy is not None:
            spec["restartPolicy"] = restart_policy
        self.doc["spec"][self.field][rtype] = spec
        return self

    def spec(self, **fields: Any) -> JobBuilder:
        self.doc["spec"].update(fields)
        return self

    def run_policy(self, **fields: Any) -> JobBuilder:
        self.doc["spec"].setdefault("runPolicy", {}).update(fields)
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self.doc)


def job(kind: str, name: str = "test-job", namespace: str = "default") -> JobBuilder:
    return JobBuilder(kind, name, namespace)
