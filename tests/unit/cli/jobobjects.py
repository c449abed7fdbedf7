"""Job and pod objects as the API server returns them, for the command line's unit tests."""

from __future__ import annotations

from typing import Any

CREATED = "2024-05-01T11:50:00Z"


def v1_job(
    kind: str = "PyTorchJob",
    name: str = "p",
    replicas: dict[str, int] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    **status: Any,
) -> dict[str, Any]:
    field = {
        "PyTorchJob": "pytorchReplicaSpecs",
        "MPIJob": "mpiReplicaSpecs",
        "TFJob": "tfReplicaSpecs",
    }[kind]
    container = {"PyTorchJob": "pytorch", "MPIJob": "mpi", "TFJob": "tensorflow"}[kind]
    specs = {
        rtype: {
            "replicas": count,
            "template": {"spec": {"containers": [{"name": container, "image": "x"}]}},
        }
        for rtype, count in (replicas or {"Master": 1, "Worker": 2}).items()
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": CREATED, "uid": "u"},
        "spec": {field: specs},
        "status": {"conditions": conditions or [], **status},
    }


def pod(
    rtype: str,
    index: int | None,
    *,
    job: str = "p",
    phase: str = "Running",
    node: str | None = "n1",
    container: str = "pytorch",
    exit_code: int | None = None,
    restarts: int = 0,
    reason: str = "",
    last_exit_code: int | None = None,
    start: str | None = "2024-05-01T11:58:00Z",
) -> dict[str, Any]:
    labels = {
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": rtype,
    }
    if index is not None:
        labels["training.kubeflow.org/replica-index"] = str(index)
    state: dict[str, Any] = {"running": {}}
    if exit_code is not None:
        state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": reason,
                "finishedAt": "2024-05-01T11:59:00Z",
            }
        }
    status: dict[str, Any] = {
        "name": container,
        "state": state,
        "restartCount": restarts,
    }
    if last_exit_code is not None:
        status["lastState"] = {"terminated": {"exitCode": last_exit_code, "reason": "Error"}}
    name = f"{job}-{rtype}" + (f"-{index}" if index is not None else "")
    spec: dict[str, Any] = {"containers": [{"name": container, "image": "x"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "labels": labels,
            "creationTimestamp": "2024-05-01T11:57:00Z",
        },
        "spec": spec,
        "status": {"phase": phase, "startTime": start, "containerStatuses": [status]},
    }
