"""The job table of ``list``, the description of ``get`` and the ``-o`` renderings."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import yaml

from kubetrain.cli import get, listing, output, replicas
from tests.unit.cli.jobobjects import pod, v1_job

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
RUNNING = [
    {"type": "Created", "status": "True", "reason": "PyTorchJobCreated",
     "lastTransitionTime": "2024-05-01T11:50:00Z"},
    {"type": "Running", "status": "True", "reason": "PyTorchJobRunning",
     "message": "PyTorchJob ns/p is running.", "lastTransitionTime": "2024-05-01T11:58:00Z"},
]  # fmt: skip


def test_the_list_table() -> None:
    jobs = [
        v1_job(conditions=RUNNING, startTime="2024-05-01T11:58:00Z",
               replicaStatuses={"Master": {"active": 1}, "Worker": {"active": 1}}),
        v1_job("TFJob", "t", replicas={"Worker": 2}),
    ]  # fmt: skip
    lines = listing.table(jobs, NOW, wide=False, namespaces=False).splitlines()
    assert [line.split() for line in lines] == [
        ["KIND", "NAME", "STATE", "AGE", "DURATION", "REPLICAS"],
        ["PyTorchJob", "p", "Running", "10m", "2m", "2/3"],
        ["TFJob", "t", "Pending", "10m", "-", "0/2"],
    ]


def test_wide_and_all_namespaces_add_columns() -> None:
    text = listing.table([v1_job(conditions=RUNNING)], NOW, wide=True, namespaces=True)
    header, row = text.splitlines()
    assert header.split() == [
        "NAMESPACE", "KIND", "NAME", "STATE", "AGE", "DURATION", "REPLICAS", "PROGRESS", "REASON",
    ]  # fmt: skip
    assert row.split()[0] == "ns"
    assert row.split()[-1] == "PyTorchJobRunning"


def test_get_describes_state_conditions_replicas_and_events() -> None:
    job = v1_job(conditions=RUNNING, startTime="2024-05-01T11:58:00Z")
    pods = [pod("master", 0), pod("worker", 1, phase="Failed", exit_code=2, reason="Error")]
    events = [
        {"type": "Warning", "reason": "BackOff", "message": "restarting", "count": 3,
         "involvedObject": {"kind": "Pod", "name": "p-worker-1"},
         "lastTimestamp": "2024-05-01T11:59:00Z"},
    ]  # fmt: skip
    text = get.describe(job, pods, events, NOW)
    assert "State:     Running (PyTorchJobRunning: PyTorchJob ns/p is running.)" in text
    assert "Duration:  2m" in text
    conditions = text.split("Conditions:\n")[1].split("\n\n")[0].splitlines()
    assert conditions[1].split()[:4] == ["Created", "True", "PyTorchJobCreated", "10m"]
    table = text.split("Replicas:\n")[1].split("\n\n")[0].splitlines()
    assert [row.split() for row in table] == [
        ["REPLICA", "POD", "PHASE", "NODE", "RESTARTS", "EXIT", "CODE", "AGE"],
        ["master-0", "p-master-0", "Running", "n1", "0", "-", "3m"],
        ["worker-0", "-", "-", "-", "-", "-", "-"],
        ["worker-1", "p-worker-1", "Failed", "n1", "0", "2", "(Error)", "3m"],
    ]
    assert "pod/p-worker-1   restarting (x3)" in text.split("Events:\n")[1]


def test_get_shows_a_refused_job_as_failed_with_the_operators_words_and_no_end() -> None:
    refusal = (
        "PyTorchJob failed validation because "
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"
    )
    conditions = [
        {"type": "Failed", "status": "True", "reason": "PyTorchJobFailedValidation",
         "message": refusal, "lastTransitionTime": "2024-05-01T11:51:00Z"},
    ]  # fmt: skip
    text = get.describe(v1_job(conditions=conditions), [], [], NOW)
    assert f"State:     Failed (PyTorchJobFailedValidation: {refusal})" in text
    assert "Finished:  -" in text
    lines = listing.table([v1_job(conditions=conditions)], NOW, wide=True, namespaces=False)
    assert lines.splitlines()[1].split()[:3] == ["PyTorchJob", "p", "Failed"]
    assert "PyTorchJobFailedValidation" in lines.splitlines()[1]


def test_outputs_for_scripts() -> None:
    jobs = [v1_job(), v1_job("TFJob", "t", replicas={"Worker": 1})]
    assert output.render(jobs, "name") == "pytorchjob.kubeflow.org/p\ntfjob.kubeflow.org/t\n"
    listed = json.loads(output.render(jobs, "json"))
    assert listed["kind"] == "List"
    assert [item["metadata"]["name"] for item in listed["items"]] == ["p", "t"]
    assert yaml.safe_load(output.render(jobs[:1], "yaml", single=True))["kind"] == "PyTorchJob"
    assert (
        output.qualified_name({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}})
        == "pod/x"
    )


def test_suspend_patches_run_policy_for_v1_and_spec_for_trainjob() -> None:
    from kubetrain.cli import jobkinds, suspend

    assert suspend.suspend_patch(jobkinds.find("tfjob"), True) == {
        "spec": {"runPolicy": {"suspend": True}}
    }
    assert suspend.suspend_patch(jobkinds.TRAINJOB, False) == {"spec": {"suspend": False}}
    job = v1_job()
    assert not suspend.is_suspended(job)
    job["spec"]["runPolicy"] = {"suspend": True}
    assert suspend.is_suspended(job)


def trainjob(num_nodes: int | None = None) -> dict[str, Any]:
    trainer = {} if num_nodes is None else {"numNodes": num_nodes}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "ns", "creationTimestamp": "2024-05-01T11:50:00Z"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer},
        # JobSet's counts are of Jobs: one Job runs both nodes
        "status": {"jobsStatus": [{"name": "node", "active": 1, "ready": 1}]},
    }


def trainjob_pod(replicated_job: str, completion: int, phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"tj-{replicated_job}-0-{completion}",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": "tj",
                "jobset.sigs.k8s.io/replicatedjob-name": replicated_job,
                "jobset.sigs.k8s.io/job-index": "0",
                "batch.kubernetes.io/job-completion-index": str(completion),
            },
        },
        "spec": {"containers": [{"name": "node", "image": "x"}]},
        "status": {"phase": phase},
    }


def test_a_trainjob_counts_its_running_nodes_on_its_pods_and_its_runtime_s_node_count() -> None:
    pods = [
        trainjob_pod("dataset-initializer", 0, phase="Succeeded"),
        trainjob_pod("node", 0),
        trainjob_pod("node", 1),
        trainjob_pod("node", 2, phase="Pending"),
    ]
    assert replicas.node_counts(trainjob(), pods, 3) == (2, 3)
    assert replicas.node_counts(trainjob(4), pods, 3) == (2, 4), "the job's own numNodes wins"
    assert replicas.node_counts(trainjob(), pods, None) == (2, None)
    text = get.describe(trainjob(), pods, [], NOW, 3)
    assert "Replicas:  2/3 running" in text


def test_the_list_table_takes_trainjob_node_counts_when_given() -> None:
    job = trainjob()
    without = listing.table([job], NOW, wide=False, namespaces=False).splitlines()
    assert without[1].split()[-1] == "1/?", "counted from jobsStatus: Jobs, not nodes"
    counted = listing.table(
        [job], NOW, wide=False, namespaces=False, nodes={("ns", "tj"): (2, 3)}
    ).splitlines()
    assert counted[1].split()[-1] == "2/3"
