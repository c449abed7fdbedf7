"""The history ``kubetrain run`` writes without a terminal (kubetrain.cli.run.Screen): a line
per change of the job's state, of each replica, and of the reasons a job does not run."""

from __future__ import annotations

import io
from typing import Any

from kubetrain.cli import jobkinds, run
from tests import builders
from tests.unit.cli.jobobjects import pod, v1_job

CREATED = "2024-05-01T11:50:00Z"


def trainjob(*conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return builders.trainjob(
        namespace="ns",
        num_nodes=2,
        metadata={"uid": "t-uid", "creationTimestamp": CREATED},
        status={"conditions": list(conditions), **status},
    )


def cond(kind: str, status: str = "True", reason: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "lastTransitionTime": CREATED}


def node_pod(index: int, phase: str) -> dict[str, Any]:
    labels = {
        "trainer.kubeflow.org/trainjob-name": "t",
        jobkinds.REPLICATED_JOB_LABEL: "node",
        jobkinds.JOB_INDEX_LABEL: str(index),
    }
    name = f"t-node-{index}-0"
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels},
        "spec": {"nodeName": "n1", "containers": [{"name": "node", "image": "x"}]},
        "status": {"phase": phase},
    }


def history(
    steps: list[tuple[dict[str, Any], list[dict[str, Any]], list[Any] | None]],
) -> list[str]:
    err = io.StringIO()
    screen = run.Screen(io.StringIO(), err, tty=False)
    for job, pods, warnings in steps:
        screen.show(job, pods, warnings)
    return [line.removeprefix("[kubetrain] ") for line in err.getvalue().splitlines()]


def test_a_trainjob_goes_created_running_complete_and_never_back_to_created() -> None:
    lines = history(
        [
            (trainjob(), [], None),
            (trainjob(), [node_pod(0, "Pending"), node_pod(1, "Pending")], None),
            (trainjob(), [node_pod(0, "Running"), node_pod(1, "Running")], None),
            (
                trainjob(cond("Running", reason="TrainingStarted")),
                [node_pod(0, "Running"), node_pod(1, "Running")],
                None,
            ),
            # the pods have ended; the controller has not said Complete yet
            (
                trainjob(cond("Running", "False", reason="Pending")),
                [node_pod(0, "Succeeded"), node_pod(1, "Succeeded")],
                None,
            ),
            (
                trainjob(cond("Running", "False", reason="Completed"), cond("Complete")),
                [node_pod(0, "Succeeded"), node_pod(1, "Succeeded")],
                None,
            ),
        ]
    )
    states = [line for line in lines if line.startswith("trainjob/t ")]
    assert states == ["trainjob/t Created", "trainjob/t Running", "trainjob/t Complete"]


def test_a_jobs_warning_is_said_once_when_it_comes() -> None:
    job = v1_job(replicas={"Worker": 2})
    quota = {
        "metadata": {"name": "p.quota"},
        "involvedObject": {"kind": "PyTorchJob", "name": "p", "uid": "u"},
        "type": "Warning",
        "reason": "FailedCreatePod",
        "message": "Error creating: 403 Forbidden: exceeded quota: small",
        "lastTimestamp": "2024-05-01T11:59:00Z",
    }
    lines = history(
        [
            (job, [pod("worker", 0)], []),
            (job, [pod("worker", 0)], [quota]),
            (job, [pod("worker", 0)], None),  # a pod change: the warnings stay as they were
            (job, [pod("worker", 0)], [{**quota, "count": 2}]),
        ]
    )
    warned = [line for line in lines if "Warning" in line]
    assert warned == [
        "pytorchjob/p: Warning FailedCreatePod: Error creating: 403 Forbidden: "
        "exceeded quota: small"
    ]
