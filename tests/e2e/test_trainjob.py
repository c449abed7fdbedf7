"""Trainer v2 end to end, on both planes: TrainJobs as users write them run real torchrun
training on this machine's node, and their status tells what happened.

- the seed documents' TrainJob (``torch-ddp``, 2 nodes here, CPU) on the built-in
  ``torch-distributed`` runtime trains examples/pytorch/train_ddp.py with DDP to Complete;
- an elastic TrainJob (torch ``elasticPolicy`` 2..3 nodes) grows from 2 to 3 nodes while it
  trains, when its ``trainer.numNodes`` is patched, and completes;
- a training process calling ``kubetrain.report`` shows its progress and ETA in
  ``kubectl get trainjob``;
- a dataset initializer copies a ``file://`` dataset onto the volume the runtime's
  ``volumeClaimPolicies`` share, and both trainer nodes read it.

Everything is read back through the API (conditions, trainerStatus, pods, logs) or kubectl.
All run on both planes (tests/e2e/conftest.py) but the elastic TrainJob, which keeps to the
local one to keep the suite's time in budget: on the real plane elastic resizing runs once,
as test_elastic.py's PyTorchJob.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from kubetrain import kube
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import run
from tests.e2e.conftest import LOCAL, local_only
from tests.e2e.trainjob_fixtures import (
    ANCESTOR,
    API_VERSION,
    REPOSITORY,
    cluster_runtime,
    condition,
    explain,
    log_of,
    logs_of,
    pods_of,
    wait_finished,
    wait_job,
    wait_log,
)
from tests.fixtures.cluster import Kubectl

# kubectl bound to this directory's planes: a fixture of this module, not the suite's
# session-cached one, which serves the suite's own servers
from tests.fixtures.cluster import kubectl as kubectl

TRAIN_DDP = str(REPOSITORY / "examples" / "pytorch" / "train_ddp.py")
TRAIN_ELASTIC = str(REPOSITORY / "examples" / "pytorch" / "elastic" / "train_elastic.py")

pytestmark = pytest.mark.usefixtures("torch_installed")


def seed_trainjob(namespace: str, plane: str) -> dict[str, Any]:
    """The seed's TrainJob as a user writes it (its apiVersion, name and image), with 2 CPU
    nodes instead of 5 GPU ones and a command that exists on this machine. kube-apiserver
    serves the CRD's one version, v1alpha1; the local API server accepts the seed's v2alpha1 as
    well."""
    return {
        "apiVersion": "trainer.kubeflow.org/v2alpha1" if plane == LOCAL else API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": "torch-ddp", "namespace": namespace},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "image": "docker.io/custom-training",
                "command": ["torchrun", TRAIN_DDP, "--epochs", "3"],
                "numNodes": 2,
            },
        },
    }


def test_the_seed_trainjob_trains_with_ddp_on_two_nodes(
    kubeconfig: str, namespace: str, plane: str
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            job = seed_trainjob(namespace, plane)
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            job = await wait_finished(client, namespace, "torch-ddp")
            logs = await logs_of(client, namespace, "torch-ddp")
            assert (condition(job, "Complete") or {}).get("status") == "True", explain(job, logs)
            assert set(logs) == {"torch-ddp-node-0-0", "torch-ddp-node-0-1"}
            rank0 = "\n".join(logs.values())
            assert "training on 1797 digits across 2 processes" in rank0, explain(job, logs)
            accuracy = re.search(r"^test accuracy (\d\.\d+)", rank0, re.MULTILINE)
            assert accuracy is not None, explain(job, logs)
            assert float(accuracy[1]) > 0.8, explain(job, logs)
            running = condition(job, "Running") or {}
            assert (running.get("status"), running.get("reason")) == ("False", "Completed")
            assert job["status"]["jobsStatus"] == [
                {
                    "name": "node",
                    "ready": 0,
                    "succeeded": 1,
                    "failed": 0,
                    "active": 0,
                    "suspended": 0,
                }
            ]

    run(body())


def replicated_job(
    name: str, ancestor: str, container: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    pod = {"spec": {"containers": [container]}}
    template = {"metadata": {"labels": {ANCESTOR: ancestor}}, "spec": {"template": pod}}
    return {"name": name, "template": template, **extra}


def torch_runtime(name: str, torch: dict[str, Any], *rjobs: dict[str, Any], **spec: Any) -> dict:
    """A ClusterTrainingRuntime with the torch policy ``torch`` and the given replicated jobs;
    ``spec`` adds to the JobSet spec, ``numNodes`` to the ML policy."""
    policy: dict[str, Any] = {"torch": torch}
    if "numNodes" in spec:
        policy["numNodes"] = spec.pop("numNodes")
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": policy,
            "template": {"spec": {**spec, "replicatedJobs": list(rjobs)}},
        },
    }


def elastic_runtime(name: str) -> dict[str, Any]:
    node = {"name": "node", "image": "local", "command": ["torchrun"]}
    elastic = {"minNodes": 2, "maxNodes": 3, "maxRestarts": 5}
    return torch_runtime(
        name,
        {"numProcPerNode": 1, "elasticPolicy": elastic},
        replicated_job("node", "trainer", node),
    )


def test_an_elastic_trainjob_grows_from_two_to_three_nodes_while_training(
    kubeconfig: str, namespace: str, tmp_path: Path, plane: str
) -> None:
    local_only(plane, "elastic resizing runs on the real plane as test_elastic.py's PyTorchJob")
    runtime = f"torch-elastic-{namespace}"
    job = {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": "grow"},
        "spec": {
            "runtimeRef": {"name": runtime},
            "trainer": {
                "numNodes": 2,
                # Close a rendezvous round 1 s after the minimum joined (torch waits 30 s).
                "env": [{"name": "PET_RDZV_CONF", "value": "last_call_timeout=1"}],
                "args": [
                    TRAIN_ELASTIC,
                    "--epochs",
                    "40",
                    "--epoch-seconds",
                    "0.5",
                    "--checkpoint-dir",
                    str(tmp_path / "checkpoints"),
                ],
            },
        },
    }

    async def body() -> None:
        async with (
            await kube.Client.from_kubeconfig(kubeconfig) as client,
            cluster_runtime(client, elastic_runtime(runtime)),
        ):
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            await wait_log(client, namespace, "grow", r"^epoch \d+/40 world size 2 ")
            await client.patch(
                kinds.TRAINJOBS, "grow", {"spec": {"trainer": {"numNodes": 3}}}, namespace=namespace
            )
            await wait_log(client, namespace, "grow", r"^epoch \d+/40 world size 3 ")
            done = await wait_finished(client, namespace, "grow")
            logs = await logs_of(client, namespace, "grow")
            assert (condition(done, "Complete") or {}).get("status") == "True", explain(done, logs)
            assert set(logs) == {"grow-node-0-0", "grow-node-0-1", "grow-node-0-2"}
            assert re.search(r"^done: 40 epochs, last world size 3", "\n".join(logs.values()), re.M)
            first = {p["metadata"]["name"]: p for p in await pods_of(client, namespace, "grow")}
            for name in ("grow-node-0-0", "grow-node-0-1"):
                statuses = first[name]["status"]["containerStatuses"]
                previous = await log_of(client, namespace, name, previous=True)
                assert statuses[0]["restartCount"] == 0, f"{name} restarted:\n{previous[-3000:]}"

    run(body())


GROUP = "trainer.kubeflow.org"
ROLES = kube.Resource("rbac.authorization.k8s.io", "v1", "roles", kind="Role")
ROLE_BINDINGS = kube.Resource("rbac.authorization.k8s.io", "v1", "rolebindings", kind="RoleBinding")


async def allow_progress_reports(client: kube.Client, namespace: str) -> None:
    """What docs/progress.md tells a cluster's users to apply: the namespace's default
    ServiceAccount may patch ``trainjobs/status`` (the local control plane needs none)."""
    rbac = "rbac.authorization.k8s.io"
    rule = {"apiGroups": [GROUP], "resources": ["trainjobs/status"], "verbs": ["patch"]}
    role = {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": {"name": "progress"}}
    binding = {
        "apiVersion": f"{rbac}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "progress"},
        "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "progress"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": namespace}],
    }
    await client.create(ROLES, {**role, "rules": [rule]}, namespace=namespace)
    await client.create(ROLE_BINDINGS, binding, namespace=namespace)


REPORTER = """
import pathlib, sys, time
import kubetrain
gate = pathlib.Path(sys.argv[1])
kubetrain.report(progress=10, metrics={"loss": 2.5})
time.sleep(2.5)
kubetrain.report(progress=50, metrics={"loss": 0.75, "accuracy": 0.5})
while not gate.exists():
    time.sleep(0.1)
kubetrain.report(progress=100, metrics={"loss": 0.25})
print("reported", flush=True)
"""


def test_a_job_reporting_progress_shows_it_in_kubectl_get(
    kubeconfig: str,
    namespace: str,
    kubectl: Kubectl,
    tmp_path: Path,
) -> None:
    gate = tmp_path / "finish"
    job = {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": "reporter"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"command": [sys.executable, "-c", REPORTER, str(gate)], "numNodes": 1},
        },
    }

    def at(progress: int) -> Any:
        def check(found: dict[str, Any]) -> bool:
            status = (found.get("status") or {}).get("trainerStatus") or {}
            return status.get("progressPercentage") == progress

        return check

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await allow_progress_reports(client, namespace)
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            halfway = await wait_job(client, namespace, "reporter", at(50), "progress 50%")
            status = halfway["status"]["trainerStatus"]
            assert status["metrics"] == [
                {"name": "loss", "value": "0.75"},
                {"name": "accuracy", "value": "0.5"},
            ]
            assert isinstance(status["estimatedRemainingSeconds"], int)
            assert 0 < status["estimatedRemainingSeconds"] < 60, "40% in ~2.5 s: ~3 s left"
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", status["lastUpdatedTime"])

            table = kubectl("get", "trainjob", "reporter", "-n", namespace).stdout
            header, row = table.splitlines()[:2]
            assert header.split()[:5] == ["NAME", "STATE", "PROGRESS", "%", "ETA"], table
            assert (row.split()[0], row.split()[2]) == ("reporter", "50"), table
            assert row.split()[3] == str(status["estimatedRemainingSeconds"]), table

            gate.touch()
            done = await wait_job(client, namespace, "reporter", at(100), "progress 100%")
            done = await wait_finished(client, namespace, "reporter")
            assert (condition(done, "Complete") or {}).get("status") == "True"
            assert done["status"]["trainerStatus"]["estimatedRemainingSeconds"] == 0
            table = kubectl("get", "trainjob", "reporter", "-n", namespace).stdout
            assert table.splitlines()[1].split()[1:4] == ["Complete", "100", "0"], table

    run(body())


def initializer_runtime(name: str) -> dict[str, Any]:
    """A torch runtime whose dataset initializer fills /workspace/dataset before the nodes run,
    on the volume ``initializer`` that JobSet's volumeClaimPolicies share (as upstream's
    torchtune runtimes do), with kubetrain's initializer program."""
    mount = [{"name": "initializer", "mountPath": "/workspace"}]
    initializer = {
        "name": "dataset-initializer",
        "image": "ghcr.io/kubeflow/trainer/dataset-initializer",
        "command": ["python3", "-m", "kubetrain.initializers", "dataset"],
        "volumeMounts": mount,
    }
    node = {"name": "node", "image": "local", "command": ["torchrun"], "volumeMounts": mount}
    claim = {
        "metadata": {"name": "initializer"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    return torch_runtime(
        name,
        {"numProcPerNode": 1},
        replicated_job("dataset-initializer", "dataset-initializer", initializer),
        replicated_job(
            "node",
            "trainer",
            node,
            dependsOn=[{"name": "dataset-initializer", "status": "Complete"}],
        ),
        numNodes=2,
        volumeClaimPolicies=[{"templates": [claim]}],
    )


READER = """
import os, pathlib
rank = os.environ["PET_NODE_RANK"]
text = pathlib.Path("/workspace/dataset/samples/data.csv").read_text().strip()
print(f"node {rank} read {text!r}", flush=True)
"""


def test_a_file_dataset_initializer_fills_the_volume_every_node_reads(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    runtime = f"torch-init-{namespace}"
    source = tmp_path / "dataset"
    (source / "samples").mkdir(parents=True)
    (source / "samples" / "data.csv").write_text("x,y\n1,2\n")
    job = {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": "with-data"},
        "spec": {
            "runtimeRef": {"name": runtime},
            "initializer": {"dataset": {"storageUri": f"file://{source}"}},
            "trainer": {"command": [sys.executable, "-c", READER]},
        },
    }

    async def body() -> None:
        async with (
            await kube.Client.from_kubeconfig(kubeconfig) as client,
            cluster_runtime(client, initializer_runtime(runtime)),
        ):
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            done = await wait_finished(client, namespace, "with-data")
            logs = await logs_of(client, namespace, "with-data")
            assert (condition(done, "Complete") or {}).get("status") == "True", explain(done, logs)
            for rank, pod in enumerate(("with-data-node-0-0", "with-data-node-0-1")):
                assert f"node {rank} read 'x,y\\n1,2'" in logs[pod], explain(done, logs)
            claim = await client.get(
                kinds.PERSISTENT_VOLUME_CLAIMS, "initializer-with-data", namespace=namespace
            )
            assert claim["metadata"]["ownerReferences"][0]["name"] == "with-data"
            statuses = {s["name"]: s for s in done["status"]["jobsStatus"]}
            assert statuses["dataset-initializer"]["succeeded"] == 1

    run(body())
