"""v1 jobs for TrainingClient: built from a function as kubeflow-training 1.9 builds them,
their conditions, pod selectors and failures (kubetrain.sdk._v1jobs)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.sdk import InvalidTrainer, _v1jobs


def train(parameters: dict) -> None:
    print(parameters)


def test_a_pytorchjob_from_a_function_has_one_master_and_the_other_workers() -> None:
    job = _v1jobs.build(
        kind=api.PyTorchJob,
        name="p",
        namespace="ns",
        train_func=train,
        parameters={"lr": "0.1"},
        num_workers=3,
        resources_per_worker={"CPU": 1, "gpu": 1},
        env_vars={"A": "1"},
        labels={"team": "a"},
    )
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert (specs["Master"]["replicas"], specs["Worker"]["replicas"]) == (1, 2)
    assert job["spec"]["nprocPerNode"] == "1"
    template = specs["Worker"]["template"]
    assert template["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    (container,) = template["spec"]["containers"]
    assert container["name"] == "pytorch"
    assert container["command"][:5] == ["torchrun", "--no-python", "python3", "-u", "-c"]
    assert container["command"][5].rstrip().endswith("train({'lr': '0.1'})")
    assert container["env"] == [{"name": "A", "value": "1"}]
    amounts = {"cpu": "1", "nvidia.com/gpu": "1"}
    assert container["resources"] == {"requests": amounts, "limits": amounts}
    assert job["metadata"] == {"name": "p", "namespace": "ns", "labels": {"team": "a"}}
    reviewed = api.review(job)
    assert reviewed.ok, reviewed.messages()


def test_one_worker_runs_plain_python_as_the_master() -> None:
    job = _v1jobs.build(kind=api.PyTorchJob, name="p", namespace="ns", train_func=train)
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert set(specs) == {"Master"}
    assert "nprocPerNode" not in job["spec"]
    command = specs["Master"]["template"]["spec"]["containers"][0]["command"]
    assert command[:3] == ["python3", "-u", "-c"]
    assert command[3].rstrip().endswith("train()")


def test_a_tfjob_gets_workers_chief_and_ps() -> None:
    job = _v1jobs.build(
        kind=api.TFJob,
        name="t",
        namespace="ns",
        base_image="tf:1",
        num_workers=2,
        num_chief_replicas=1,
        num_ps_replicas=1,
    )
    specs = job["spec"]["tfReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "PS": 1, "Worker": 2}
    container = specs["Worker"]["template"]["spec"]["containers"][0]
    assert container == {"name": "tensorflow", "image": "tf:1"}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param(
            {"kind": api.XGBoostJob, "train_func": train},
            "job_kind: XGBoostJob jobs are created from a job object only",
            id="only PyTorchJob and TFJob are built from a function",
        ),
        pytest.param(
            {"kind": api.PyTorchJob},
            "create_job: give job, train_func or base_image",
            id="something must say what to run",
        ),
        pytest.param(
            {"kind": api.PyTorchJob, "train_func": train, "num_workers": 0},
            "num_workers: 0; accepted: a whole number, 1 or more",
            id="at least one worker",
        ),
        pytest.param(
            {"kind": api.PyTorchJob, "train_func": lambda p: p},
            "train_func.func: a lambda cannot be shipped",
            id="the function is checked",
        ),
    ],
)
def test_what_cannot_be_built_is_refused(fields: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidTrainer) as raised:
        _v1jobs.build(name="p", namespace="ns", **fields)
    assert expected in str(raised.value)


def test_kinds_are_found_in_any_case_and_unknown_ones_listed() -> None:
    assert _v1jobs.kind_of("pytorchjob") is api.PyTorchJob
    assert _v1jobs.resource_of(api.TFJob).path("ns") == "/apis/kubeflow.org/v1/namespaces/ns/tfjobs"
    with pytest.raises(InvalidTrainer, match="job_kind: 'Spark'; accepted: TFJob, PyTorchJob"):
        _v1jobs.kind_of("Spark")


@pytest.mark.parametrize(
    ("options", "selector"),
    [
        pytest.param({}, "training.kubeflow.org/job-name=p", id="every pod of the job"),
        pytest.param(
            {"is_master": True},
            "training.kubeflow.org/job-name=p,training.kubeflow.org/job-role=master",
            id="the master",
        ),
        pytest.param(
            {"replica_type": "Worker", "replica_index": 1},
            "training.kubeflow.org/job-name=p,training.kubeflow.org/replica-type=worker,"
            "training.kubeflow.org/replica-index=1",
            id="one replica, type in lower case as the operator labels it",
        ),
    ],
)
def test_pods_are_selected_by_kubeflow_labels(options: dict[str, Any], selector: str) -> None:
    assert _v1jobs.pod_selector("p", **options) == selector


def pod(rtype: str, index: int, exit_code: int | None) -> dict[str, Any]:
    state = {"terminated": {"exitCode": exit_code}} if exit_code is not None else {"running": {}}
    return {
        "metadata": {
            "name": f"p-{rtype}-{index}",
            "labels": {api.REPLICA_TYPE_LABEL: rtype, api.REPLICA_INDEX_LABEL: str(index)},
        },
        "status": {"containerStatuses": [{"name": "pytorch", "state": state}]},
    }


def job(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {
        "kind": "PyTorchJob",
        "metadata": {"name": "p", "namespace": "ns"},
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": "PyTorchJobFailed", "message": "failed."}
                for t, s in conditions
            ]
        },
    }


def test_true_conditions_are_those_with_status_true() -> None:
    got = _v1jobs.true_conditions(job(("Created", "True"), ("Running", "False")))
    assert got == {"Created"}


def test_a_failed_job_names_the_replica_that_exited_non_zero() -> None:
    pods = [pod("worker", 0, None), pod("master", 0, 0), pod("worker", 1, 2)]
    failure = _v1jobs.failure_of(job(("Failed", "True")), pods, "pytorch")
    assert failure is not None
    assert failure.message == (
        "PyTorchJob ns/p failed: PyTorchJobFailed: failed.; replica worker-1 (pod p-worker-1) "
        "exited with code 2"
    )
    assert _v1jobs.failure_of(job(("Running", "True")), pods, "pytorch") is None
