"""Where a trainer reports its progress (the TrainerStatus plugin's env), and what an
initializer whose storage URI is ``pvc://`` gets (the claim, read-only, at /mnt/source)."""

from __future__ import annotations

import pytest

from kubetrain import progress
from kubetrain.initializers import config as initializer_config
from kubetrain.operator.trainjob.plugins import jobset, trainerstatus
from tests.unit.api.trainers import initializer_job, runtime, trainer_job, trainjob
from tests.unit.operator.trainjob.building import build, container, env
from tests.unit.operator.trainjob.test_ml_plugins import _mpi_runtime

REPORT = {"KUBETRAIN_TRAINJOB_NAME": "job", "KUBETRAIN_TRAINJOB_NAMESPACE": "default"}


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param("torch", id="torch: on the trainer's node container"),
        pytest.param(None, id="plain runtime: there too"),
        pytest.param("xgboost", id="xgboost: there too"),
    ],
)
def test_the_trainer_learns_which_trainjob_it_reports_to(policy: str | None) -> None:
    built = build(trainjob("job").trainer(numNodes=2).build(), runtime(policy).build())
    everything = env(built, everything=True)
    assert {k: everything[k] for k in REPORT} == REPORT
    assert list(everything)[-2:] == list(REPORT), "after the framework's env"


def test_mpi_reports_from_the_launcher_where_the_trainer_runs() -> None:
    built = build(trainjob("job").trainer(numNodes=3).build(), _mpi_runtime())
    launcher = env(built, "launcher", "node", everything=True)
    assert launcher["KUBETRAIN_TRAINJOB_NAME"] == "job"
    assert "KUBETRAIN_TRAINJOB_NAME" not in env(built, "node", "node", everything=True)


def test_initializers_are_not_told_to_report() -> None:
    rt = runtime("torch").jobs(initializer_job("dataset-initializer"), trainer_job())
    job = trainjob("job").initializer(dataset={"storageUri": "file:///data"})
    built = build(job.build(), rt.build())
    assert "KUBETRAIN_TRAINJOB_NAME" not in env(
        built, "dataset-initializer", "dataset-initializer", everything=True
    )


def test_the_env_names_are_the_ones_kubetrain_report_reads() -> None:
    assert (trainerstatus.NAME_ENV, trainerstatus.NAMESPACE_ENV) == (
        progress.NAME_ENV,
        progress.NAMESPACE_ENV,
    )


def test_a_pvc_source_is_mounted_read_only_where_the_initializer_reads_it() -> None:
    rt = runtime("torch").jobs(
        initializer_job("dataset-initializer"), initializer_job("model-initializer"), trainer_job()
    )
    job = trainjob("job").initializer(
        dataset={"storageUri": "pvc://shared-data/digits"},
        model={"storageUri": "hf://org/model"},
    )
    built = build(job.build(), rt.build())
    dataset = container(built, "dataset-initializer", "dataset-initializer")
    assert dataset["volumeMounts"] == [
        {"name": "initializer", "mountPath": "/workspace"},
        {"name": "storage-source", "mountPath": "/mnt/source", "readOnly": True},
    ]
    rjob = built.objects[-1]["spec"]["replicatedJobs"][0]
    dataset_pod_spec = rjob["template"]["spec"]["template"]["spec"]
    assert dataset_pod_spec["volumes"] == [
        {
            "name": "storage-source",
            "persistentVolumeClaim": {"claimName": "shared-data", "readOnly": True},
        }
    ]
    model = container(built, "model-initializer", "model-initializer")
    assert [m["name"] for m in model["volumeMounts"]] == ["initializer"], "hf://: no source"
    assert jobset.PVC_SOURCE_MOUNT == initializer_config.PVC_SOURCE_MOUNT
