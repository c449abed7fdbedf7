"""Trainer v2 defaulting: the CRD defaults upstream's API server applies, and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.api import _trainer_defaults
from tests.unit.api import trainers


def defaulted(doc: dict[str, Any]) -> dict[str, Any]:
    obj, errors = api.parse(doc)
    assert obj is not None, errors
    return _trainer_defaults.set_defaults(obj).to_dict()


def test_trainjob_gets_runtime_ref_suspend_and_managed_by_defaults() -> None:
    spec = defaulted(trainers.trainjob("a").build())["spec"]
    assert spec == {
        "runtimeRef": {
            "name": "torch-distributed",
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
        },
        "suspend": False,
        "managedBy": "trainer.kubeflow.org/trainjob-controller",
    }


def test_trainjob_values_the_user_set_are_kept() -> None:
    doc = (
        trainers.trainjob("a", kind="TrainingRuntime")
        .spec(suspend=True, managedBy="kueue.x-k8s.io/multikueue")
        .build()
    )
    spec = defaulted(doc)["spec"]
    assert spec["runtimeRef"]["kind"] == "TrainingRuntime"
    assert spec["suspend"] is True
    assert spec["managedBy"] == "kueue.x-k8s.io/multikueue"


def test_trainjob_runtime_patch_time_is_left_to_the_server() -> None:
    doc = trainers.trainjob("a").patch("acme.io/tool").build()
    assert defaulted(doc)["spec"]["runtimePatches"] == [{"manager": "acme.io/tool"}]


def test_trainjob_without_spec_gets_no_spec() -> None:
    doc = trainers.trainjob("a").build()
    del doc["spec"]
    assert "spec" not in defaulted(doc)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param("torch", {"numNodes": 1, "torch": {"numProcPerNode": "auto"}}, id="torch"),
        pytest.param(
            "mpi",
            {
                "numNodes": 1,
                "mpi": {
                    "numProcPerNode": 1,
                    "mpiImplementation": "OpenMPI",
                    "sshAuthMountPath": "/root/.ssh",
                    "runLauncherAsNode": False,
                },
            },
            id="mpi",
        ),
        pytest.param("flux", {"numNodes": 1, "flux": {"numProcPerNode": 1}}, id="flux"),
        pytest.param("jax", {"numNodes": 1, "jax": {}}, id="jax has no fields"),
        pytest.param("xgboost", {"numNodes": 1, "xgboost": {}}, id="xgboost has no fields"),
    ],
)
def test_runtime_ml_policy_defaults(policy: str, expected: dict[str, Any]) -> None:
    assert defaulted(trainers.runtime(policy).build())["spec"]["mlPolicy"] == expected


def test_runtime_without_ml_policy_gets_none() -> None:
    assert "mlPolicy" not in defaulted(trainers.runtime(None).build())["spec"]


def test_runtime_with_elastic_policy_keeps_num_nodes_unset() -> None:
    doc = trainers.runtime("torch").policy("torch", elasticPolicy={"minNodes": 1}).build()
    assert "numNodes" not in defaulted(doc)["spec"]["mlPolicy"]


def test_runtime_coscheduling_timeout_defaults_to_sixty_seconds() -> None:
    doc = trainers.runtime("torch").pod_group_policy(coscheduling={}).build()
    policy = defaulted(doc)["spec"]["podGroupPolicy"]
    assert policy == {"coscheduling": {"scheduleTimeoutSeconds": 60}}


def test_runtime_jobset_template_is_left_as_written() -> None:
    doc = trainers.runtime("torch").build()
    assert defaulted(doc)["spec"]["template"] == doc["spec"]["template"]


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(trainers.trainjob("a").build(), id="a TrainJob"),
        pytest.param(trainers.runtime("mpi").build(), id="an MPI runtime"),
        pytest.param(
            trainers.runtime("torch").pod_group_policy(coscheduling={}).build(),
            id="a gang-scheduled torch runtime",
        ),
    ],
)
def test_defaulting_is_idempotent_and_leaves_its_input_alone(doc: dict[str, Any]) -> None:
    obj, _ = api.parse(doc)
    assert obj is not None
    before = obj.to_dict()
    once = _trainer_defaults.set_defaults(obj)
    assert obj.to_dict() == before
    assert _trainer_defaults.set_defaults(once).to_dict() == once.to_dict()
