"""A job's replicas and the facts read from their pods (kubetrain.cli.replicas)."""

from __future__ import annotations

from kubetrain.cli import jobkinds, replicas
from tests.unit.cli.jobobjects import pod, v1_job

PYTORCH = jobkinds.find("pytorchjob")


def test_replicas_are_named_by_type_and_index_in_the_frameworks_order() -> None:
    job = v1_job()
    pods = [pod("worker", 1), pod("master", 0)]
    found = replicas.of_job(job, pods)
    assert [(r.id, r.pod_name) for r in found] == [
        ("master-0", "p-master-0"),
        ("worker-0", None),
        ("worker-1", "p-worker-1"),
    ]
    assert [r.rtype for r in found] == ["Master", "Worker", "Worker"]


def test_the_mpi_launcher_has_no_index() -> None:
    job = v1_job("MPIJob", replicas={"Launcher": 1, "Worker": 2})
    assert [r.id for r in replicas.expected(job)] == ["launcher", "worker-0", "worker-1"]


def test_trainjob_pods_are_named_by_replicated_job_and_index() -> None:
    node1 = {
        "metadata": {
            "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "jobset.sigs.k8s.io/job-index": "1",
            }
        }
    }
    init = {
        "metadata": {
            "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": "dataset-initializer",
                "jobset.sigs.k8s.io/job-index": "0",
            }
        }
    }
    assert replicas.of_pod(node1, jobkinds.TRAINJOB).id == "node-1"
    assert replicas.of_pod(init, jobkinds.TRAINJOB).id == "dataset-initializer"


def test_exit_codes_prefer_a_failure_and_remember_restarts() -> None:
    failed = pod("worker", 0, phase="Failed", exit_code=3, reason="Error")
    ended = replicas.termination(failed)
    assert ended is not None
    assert (ended.exit_code, str(ended), ended.current) == (3, "3 (Error)", True)
    restarted = pod("worker", 0, restarts=2, last_exit_code=137)
    ended = replicas.termination(restarted)
    assert ended is not None
    assert (ended.exit_code, ended.current) == (137, False)
    assert replicas.restarts(restarted) == 2
    assert replicas.termination(pod("worker", 0)) is None


def test_phase_node_and_waiting_reason() -> None:
    waiting = pod("worker", 0, phase="Pending", node=None)
    waiting["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    assert replicas.phase(waiting) == "Pending"
    assert replicas.node(waiting) is None
    assert replicas.waiting_reason(waiting) == "Unschedulable"
    going = pod("worker", 0)
    going["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    assert replicas.phase(going) == "Terminating"
    assert replicas.phase(None) == "-"


def test_why_waiting_gives_the_reason_with_its_message() -> None:
    unscheduled = pod("worker", 0, phase="Pending", node=None)
    unscheduled["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient cpu.",
            }
        ],
    }
    assert replicas.why_waiting(unscheduled) == replicas.Reason(
        "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."
    )
    created = pod("worker", 0, phase="Pending")
    created["status"]["containerStatuses"][0]["state"] = {
        "waiting": {"reason": "CreateContainerError", "message": "no command"}
    }
    why = replicas.why_waiting(created)
    assert str(why) == "CreateContainerError: no command"
    assert replicas.waiting_reason(created) == "CreateContainerError"
    assert replicas.why_waiting(pod("worker", 0)) is None


def test_the_log_container_is_the_annotated_then_the_frameworks_then_the_first() -> None:
    p = pod("worker", 0)
    p["spec"]["containers"].insert(0, {"name": "sidecar"})
    assert replicas.default_container(p, PYTORCH) == "pytorch"
    p["metadata"]["annotations"] = {"kubectl.kubernetes.io/default-container": "sidecar"}
    assert replicas.default_container(p, PYTORCH) == "sidecar"
    assert replicas.default_container(pod("worker", 0, container="main"), PYTORCH) == "main"
