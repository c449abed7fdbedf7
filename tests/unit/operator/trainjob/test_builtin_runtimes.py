"""The built-in runtimes (package data, copied to ``deploy/runtimes``): each parses, passes
admission as written, is listed in the kustomization, carries a command that runs on the local
node, and builds a job; the deploy copies are the package's files byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain import api
from kubetrain.operator.trainjob import builtin
from tests.unit.operator.trainjob.building import build, container

DEPLOY = Path(__file__).resolve().parents[4] / "deploy" / "runtimes"
EXPECTED = {
    "torch_distributed.yaml": ("torch-distributed", "torch"),
    "mpi_distributed.yaml": ("mpi-distributed", "mpi"),
    "jax_distributed.yaml": ("jax-distributed", "jax"),
    "xgboost_distributed.yaml": ("xgboost-distributed", "xgboost"),
    "trl_sft.yaml": ("trl-sft", "torch"),
    "torchtune_llama3_2_1b.yaml": ("torchtune-llama3.2-1b", "torch"),
    "torchtune_llama3_2_3b.yaml": ("torchtune-llama3.2-3b", "torch"),
    "torchtune_qwen2_5_1_5b.yaml": ("torchtune-qwen2.5-1.5b", "torch"),
    "torchtune_llama3_3_70b.yaml": ("torchtune-llama3.3-70b", "torch"),
}
LOCAL_PROGRAMS = ("torchrun", "python3", "mpirun", "tune")


def _load(file: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(builtin.files()[file])
    return doc


def test_the_deploy_copies_are_the_package_files() -> None:
    """``make manifests`` copies them; run it when this fails."""
    for name, text in builtin.files().items():
        assert (DEPLOY / name).read_text(encoding="utf-8") == text, name
    assert sorted(builtin.files()) == sorted(EXPECTED)


def test_the_kustomization_lists_every_runtime_file() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(EXPECTED)
    assert sorted(p.name for p in DEPLOY.glob("*.yaml")) == sorted(
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
