"""Job manifests built from ``kubetrain submit`` options (kubetrain.cli.manifests)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.cli import manifests
from kubetrain.cli.errors import UserError


def submission(framework: str, **options: Any) -> manifests.Submission:
    options.setdefault("command", ("python", "train.py"))
    return manifests.Submission(framework=framework, name="job", **options)


LAYOUTS = [
    ("pytorch", 3, "PyTorchJob", {"Master": 1, "Worker": 2}),
    ("pytorch", 1, "PyTorchJob", {"Master": 1}),
    ("xgboost", 2, "XGBoostJob", {"Master": 1, "Worker": 1}),
    ("tf", 2, "TFJob", {"Worker": 2}),
    ("jax", 4, "JAXJob", {"Worker": 4}),
    ("paddle", 2, "PaddleJob", {"Worker": 2}),
    ("mpi", 2, "MPIJob", {"Launcher": 1, "Worker": 2}),
]


@pytest.mark.parametrize(
    ("framework", "workers", "kind", "replicas"),
    LAYOUTS,
    ids=[f"{f} with --workers {w} is {r}" for f, w, _, r in LAYOUTS],
)
def test_workers_become_the_frameworks_replicas_and_the_job_is_valid(
    framework: str, workers: int, kind: str, replicas: dict[str, int]
) -> None:
    manifest = manifests.build(submission(framework, workers=workers))
    assert manifest["kind"] == kind
    specs = next(iter(manifest["spec"].values()))
    assert {rtype: spec["replicas"] for rtype, spec in specs.items()} == replicas
    review = api.review(manifest)
    assert review.ok, review.messages()


def test_the_command_is_argv_env_and_resources_are_on_every_replica() -> None:
    manifest = manifests.build(
        submission(
            "pytorch",
            workers=2,
            command=("python", "-c", "print('a b')"),
            env=(("A", "1"), ("B", "x=y")),
            cpu="2",
            memory="4Gi",
            gpus=1,
        )
    )
    for spec in manifest["spec"]["pytorchReplicaSpecs"].values():
        (container,) = spec["template"]["spec"]["containers"]
        assert container["name"] == "pytorch"
        assert container["command"] == ["python", "-c", "print('a b')"]
        assert container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "x=y"}]
        amounts = {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}
        assert container["resources"] == {"requests": amounts, "limits": amounts}
        assert container["image"] == manifests.DEFAULT_IMAGE


def test_mpi_workers_get_no_command_and_the_launcher_no_resources() -> None:
    manifest = manifests.build(submission("mpi", workers=2, cpu="1", procs_per_node="2"))
    specs = manifest["spec"]["mpiReplicaSpecs"]
    launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    assert launcher["command"] == ["python", "train.py"]
    assert "resources" not in launcher
    assert "command" not in worker
    assert worker["resources"]["limits"] == {"cpu": "1"}
    assert manifest["spec"]["slotsPerWorker"] == 2


def test_pytorch_processes_per_node() -> None:
    manifest = manifests.build(submission("pytorch", procs_per_node="4"))
    assert manifest["spec"]["nprocPerNode"] == "4"


def test_a_trainjob_names_its_runtime_and_nodes() -> None:
    manifest = manifests.build(
        submission(
            "trainjob",
            workers=2,
            runtime="torch-distributed",
            procs_per_node="2",
            namespace="team",
            labels=(("a", "b"),),
        )
    )
    assert manifest == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "team", "labels": {"a": "b"}},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"command": ["python", "train.py"], "numNodes": 2, "numProcPerNode": 2},
        },
    }
    assert api.review(manifest).ok


MISTAKES = [
    pytest.param(submission("pytorch", command=()), "the command to run after --", id="no command"),
    pytest.param(
        submission("pytorch", workers=0), "--workers 0: must be 1 or more", id="no workers"
    ),
    pytest.param(
        submission("tf", procs_per_node="2"), "--nproc-per-node applies", id="nproc on tf"
    ),
    pytest.param(
        submission("mpi", procs_per_node="auto"), "must be a whole number", id="mpi slots"
    ),
    pytest.param(submission("caffe"), "no framework 'caffe'", id="unknown framework"),
]


@pytest.mark.parametrize(("sub", "message"), MISTAKES)
def test_mistakes_are_user_errors(sub: manifests.Submission, message: str) -> None:
    with pytest.raises(UserError, match=message):
        manifests.build(sub)


def test_pairs_need_a_key_and_an_equals_sign() -> None:
    assert manifests.parse_pairs(["A=1", "B=", "C=x=y"], "--env") == (
        ("A", "1"),
        ("B", ""),
        ("C", "x=y"),
    )
    with pytest.raises(UserError, match="--env 'A': write KEY=VALUE"):
        manifests.parse_pairs(["A"], "--env")
    with pytest.raises(UserError):
        manifests.parse_pairs(["=1"], "--env")


@pytest.mark.parametrize("framework", list(manifests.FRAMEWORKS))
def test_the_restart_policy_help_names_what_the_job_gets(framework: str) -> None:
    """``--restart-policy``'s help says its default with this function: the policy the API
    defaults every replica of the built job to."""
    review = api.review(manifests.build(submission(framework, workers=2)))
    assert review.obj is not None
    defaulted = review.obj.to_dict()["spec"]
    replicas = next(v for k, v in defaulted.items() if k.endswith("ReplicaSpecs"))
    policies = {spec["restartPolicy"] for spec in replicas.values()}
    assert policies == {manifests.default_restart_policy(framework)}
