"""The built-in runtimes of ``deploy/runtimes``: each parses, passes admission as written, is
listed in the kustomization, carries a command that runs on the local node, and builds a job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import api
from tests.unit.operator.trainjob.building import build, container

RUNTIMES = Path(__file__).resolve().parents[4] / "deploy" / "runtimes"
EXPECTED = {
    "torch_distributed.yaml": ("torch-distributed", "torch"),
    "mpi_distributed.yaml": ("mpi-distributed", "mpi"),
    "jax_distributed.yaml": ("jax-distributed", "jax"),
    "xgboost_distributed.yaml": ("xgboost-distributed", "xgboost"),
}
LOCAL_PROGRAMS = ("torchrun", "python3", "mpirun")


def _load(file: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((RUNTIMES / file).read_text())
    return doc


def test_the_kustomization_lists_every_runtime_file() -> None:
    kustomization = yaml.safe_load((RUNTIMES / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(EXPECTED)
    assert sorted(p.name for p in RUNTIMES.glob("*.yaml")) == sorted(
        [*EXPECTED, "kustomization.yaml"]
    )


@pytest.mark.parametrize(("file", "expected"), list(EXPECTED.items()), ids=list(EXPECTED))
def test_each_runtime_passes_admission(file: str, expected: tuple[str, str]) -> None:
    verdict = api.review(_load(file))
    assert verdict.ok, verdict.messages()
    assert not verdict.warnings
    runtime = verdict.obj
    assert isinstance(runtime, api.ClusterTrainingRuntime)
    assert runtime.name == expected[0]
    assert runtime.spec is not None
    assert runtime.spec.ml_policy is not None
    assert runtime.spec.ml_policy.sources() == [expected[1]]


@pytest.mark.parametrize("file", list(EXPECTED), ids=list(EXPECTED))
def test_each_runtime_builds_a_job_whose_trainer_runs_a_local_program(file: str) -> None:
    doc = _load(file)
    name = doc["metadata"]["name"]
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"runtimeRef": {"name": name}, "trainer": {"numNodes": 2, "args": ["train.py"]}},
    }
    runtime = api.review(doc).obj
    verdict = api.review(job, find_runtime=lambda kind, ns, n: runtime if n == name else None)
    assert verdict.ok, verdict.messages()
    built = build(job, doc)
    assert not built.errors
    trainer_job = "launcher" if file.startswith("mpi") else "node"
    command = container(built, trainer_job)["command"]
    assert command[0] in LOCAL_PROGRAMS
