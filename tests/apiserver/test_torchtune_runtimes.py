"""The TorchTune runtimes install with ``kubectl apply --server-side`` on both servers, one file
at a time as docs/llm.md shows, and come back as written: the initializer steps with upstream's
images and no command, the ``node`` step's ``tune run`` command with its immutable settings,
its ``dependsOn`` and the ``volumeClaimPolicies`` claim, nothing pruned (torch's
``numProcPerNode`` comes back as the CRD's default, ``auto``). A second apply of the same file
changes nothing (same resourceVersion)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.fixtures.cluster import Kubectl

RUNTIMES = Path(__file__).resolve().parents[2] / "deploy" / "runtimes"
FILES = sorted(p.name for p in RUNTIMES.glob("torchtune_*.yaml"))
MANAGER = "kubetrain-torchtune-test"


def test_the_four_torchtune_runtimes_are_shipped() -> None:
    assert FILES == [
        "torchtune_llama3_2_1b.yaml",
        "torchtune_llama3_2_3b.yaml",
        "torchtune_llama3_3_70b.yaml",
        "torchtune_qwen2_5_1_5b.yaml",
    ]


@pytest.mark.parametrize("file", FILES)
def test_a_torchtune_runtime_applies_server_side_and_reads_back_as_written(
    kubectl: Kubectl, file: str
) -> None:
    path = RUNTIMES / file
    written = yaml.safe_load(path.read_text(encoding="utf-8"))
    name = written["metadata"]["name"]
    # installed afresh: another test may have installed it with a client-side apply, whose
    # managed fields a server-side apply by another manager merges with differently
    kubectl("delete", "clustertrainingruntime", name, "--ignore-not-found")
    kubectl("apply", "--server-side", f"--field-manager={MANAGER}", "-f", str(path))
    stored = json.loads(kubectl("get", "clustertrainingruntime", name, "-o", "json").stdout)
    assert stored["metadata"]["labels"] == written["metadata"]["labels"]
    # the CRD's default fills torch's numProcPerNode on both servers
    assert stored["spec"]["mlPolicy"] == {
        "numNodes": written["spec"]["mlPolicy"]["numNodes"],
        "torch": {"numProcPerNode": "auto"},
    }
    template = stored["spec"]["template"]["spec"]
    assert (
        template["volumeClaimPolicies"]
        == written["spec"]["template"]["spec"]["volumeClaimPolicies"]
    )
    steps = {r["name"]: r for r in template["replicatedJobs"]}
    assert list(steps) == ["dataset-initializer", "model-initializer", "node"]
    for step in ("dataset-initializer", "model-initializer"):
        (container,) = steps[step]["template"]["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"ghcr.io/kubeflow/trainer/{step}"
        assert "command" not in container
        assert container["env"][0]["name"] == "STORAGE_URI"
    node = steps["node"]
    assert node["dependsOn"] == [
        {"name": "dataset-initializer", "status": "Complete"},
        {"name": "model-initializer", "status": "Complete"},
    ]
    written_node = written["spec"]["template"]["spec"]["replicatedJobs"][2]
    (container,) = node["template"]["spec"]["template"]["spec"]["containers"]
    (expected,) = written_node["template"]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == expected["command"]
    assert container["resources"] == expected["resources"]
    assert container["volumeMounts"] == [{"mountPath": "/workspace", "name": "initializer"}]
    version = stored["metadata"]["resourceVersion"]
    kubectl("apply", "--server-side", f"--field-manager={MANAGER}", "-f", str(path))
    again = json.loads(kubectl("get", "clustertrainingruntime", name, "-o", "json").stdout)
    assert again["metadata"]["resourceVersion"] == version
