"""What the dashboard's pages show, computed by the command line's own modules: a job's row
(state, replicas, progress, the replica that failed and how), its replicas' resources, the
Gantt bars of its pods, the nodes' allocation."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubetrain.cli import usage
from kubetrain.dashboard import views
from tests import builders
from tests.unit.cli import jobobjects

FAILED = {
    "type": "Failed",
    "status": "True",
    "reason": "PyTorchJobFailed",
    "message": "job failed",
    "lastTransitionTime": "2024-05-01T12:00:00Z",
}


def test_a_failed_job_names_the_replica_that_failed_and_its_exit_code() -> None:
    job = jobobjects.v1_job(conditions=[FAILED], startTime="2024-05-01T11:51:00Z")
    pods = [
        jobobjects.pod("master", 0, exit_code=0),
        jobobjects.pod("worker", 1, exit_code=137, reason="OOMKilled"),
    ]
    row = views.job_row(job, pods)
    assert (row["key"], row["state"], row["reason"]) == (
        "ns/PyTorchJob/p",
        "Failed",
        "PyTorchJobFailed",
    )
    assert row["failure"] == {
        "replica": "worker-1",
        "pod": "p-worker-1",
        "exitCode": 137,
        "reason": "OOMKilled",
        "text": "worker-1: exit code 137 (OOMKilled)",
    }
    assert (row["started"], row["finished"]) == ("2024-05-01T11:51:00Z", "2024-05-01T12:00:00Z")


def test_a_job_that_did_not_fail_names_no_failure() -> None:
    pods = [jobobjects.pod("worker", 0, exit_code=1)]  # a restartable worker: the job runs on
    assert views.job_row(jobobjects.v1_job(), pods)["failure"] is None


def trainjob(**status: Any) -> dict[str, Any]:
    return builders.trainjob(
        namespace="ns",
        metadata={"uid": "u", "creationTimestamp": "2024-05-01T11:50:00Z"},
        trainer={},
        status=status,
    )


def node_pod(index: int, phase: str = "Running") -> dict[str, Any]:
    pod = jobobjects.pod("node", index, container="node", phase=phase)
    pod["metadata"]["labels"] = {
        "jobset.sigs.k8s.io/jobset-name": "t",
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/job-index": str(index),
    }
    return pod


def test_a_trainjob_counts_running_nodes_against_its_runtime_and_shows_its_report() -> None:
    job = trainjob(
        trainerStatus={
            "progressPercentage": 42,
            "estimatedRemainingSeconds": 300,
            "lastUpdatedTime": "2024-05-01T12:00:00Z",
        }
    )
    row = views.job_row(job, [node_pod(0), node_pod(1, phase="Pending")], runtime_nodes=3)
    assert (row["running"], row["replicas"]) == (1, 3)
    assert (row["progress"], row["eta"], row["reported"]) == (42.0, 300.0, "2024-05-01T12:00:00Z")
    assert row["state"] == "Running"


def test_a_pods_resources_are_used_requested_and_limited_and_a_missing_limit_is_none() -> None:
    pod = jobobjects.pod("worker", 0)
    pod["spec"]["containers"] = [
        {
            "name": "a",
            "resources": {
                "requests": {"cpu": "500m", "memory": "1Gi"},
                "limits": {"cpu": "1", "nvidia.com/gpu": "1"},
            },
        },
        {"name": "b", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "2"}}},
    ]
    found = views.resources(pod, usage.Amounts(cpu=Fraction(3, 10), memory=Fraction(2**29)))
    assert found["cpu"] == {
        "used": {"text": "300m", "value": 0.3},
        "request": {"text": "750m", "value": 0.75},
        "limit": {"text": "3", "value": 3.0},
    }
    assert found["memory"]["limit"] is None, "container b sets no memory limit"
    assert found["memory"]["used"] == {"text": "512Mi", "value": 2.0**29}
    assert found["gpu"]["used"] is None, "GPU use is not measured"
    assert found["gpu"]["limit"] is None


def test_the_gantt_chart_has_a_bar_per_pod_deleted_ones_first_with_the_run_before_a_restart() -> (
    None
):
    job = jobobjects.v1_job()
    restarted = jobobjects.pod("worker", 0, restarts=2, last_exit_code=1)
    restarted["status"]["containerStatuses"][0]["lastState"]["terminated"].update(
        {"startedAt": "2024-05-01T11:57:30Z", "finishedAt": "2024-05-01T11:57:50Z"}
    )
    gone = jobobjects.pod("master", 0, exit_code=1)
    gone["metadata"]["deletionTimestamp"] = "2024-05-01T11:59:30Z"
    bars = views.gantt(job, [restarted], [gone])
    assert [(b["replica"], b["deleted"]) for b in bars] == [
        ("master-0", "2024-05-01T11:59:30Z"),
        ("worker-0", None),
    ]
    assert bars[0]["exitCode"] == 1
    assert bars[1]["restarts"] == 2
    assert bars[1]["previous"] == {
        "started": "2024-05-01T11:57:30Z",
        "ended": "2024-05-01T11:57:50Z",
        "exitCode": 1,
    }


def test_conditions_are_a_timeline_in_the_order_they_changed() -> None:
    job = jobobjects.v1_job(
        conditions=[
            {**FAILED},
            {"type": "Created", "status": "True", "lastTransitionTime": "2024-05-01T11:50:01Z"},
            {"type": "Running", "status": "False", "lastTransitionTime": "2024-05-01T11:55:00Z"},
        ]
    )
    assert [c["type"] for c in views.conditions(job)] == ["Created", "Running", "Failed"]


def test_a_node_row_adds_up_its_live_pods_and_names_their_jobs() -> None:
    node = {
        "metadata": {"name": "n1"},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    running = jobobjects.pod("worker", 0)
    running["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": "1"}
    }
    done = jobobjects.pod("worker", 1, phase="Succeeded")
    done["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    [row] = views.node_rows([node], [running, done], {})
    assert (row["name"], row["status"], row["cpu"], row["gpu"], row["pods"]) == (
        "n1",
        "Ready",
        "1/4",
        "1/2",
        1,
    )
    assert row["bars"]["cpu"] == {"request": 1.0, "allocatable": 4.0, "used": None}
    assert row["jobs"] == ["ns/PyTorchJob/p"]


def test_the_yaml_leaves_out_managed_fields() -> None:
    job = jobobjects.v1_job()
    job["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    text = views.to_yaml(job)
    assert "managedFields" not in text
    assert "name: p" in text


def test_usage_is_shown_for_running_pods_only() -> None:
    """The metrics API may still hold a pod's last sample after it ended."""
    job = jobobjects.v1_job(replicas={"Worker": 2})
    pods = [jobobjects.pod("worker", 0), jobobjects.pod("worker", 1, phase="Succeeded")]
    sample = usage.Amounts(cpu=Fraction(1, 4))
    used = {("ns", "p-worker-0"): sample, ("ns", "p-worker-1"): sample}
    rows = views.replica_rows(job, pods, used)
    assert [r["resources"]["cpu"]["used"] for r in rows] == [{"text": "250m", "value": 0.25}, None]
