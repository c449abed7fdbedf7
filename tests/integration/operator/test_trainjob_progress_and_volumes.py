"""What the TrainJob controller adds for progress reports and initializers, against a real API
server with the operator in-process: the trainer learns its TrainJob, a trainerStatus written by
the training process survives the controller's own status writes and shows in the printed
columns, and a runtime's volumeClaimPolicies become one claim owned by the job whose volume every
mounting pod gets (with a pvc:// dataset's claim mounted read-only for the initializer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import eventually, run
from tests.fixtures.cluster import Kubectl
from tests.integration.operator.trainjob_fixtures import (
    ANCESTOR,
    builtin_runtime,
    cluster_runtime,
    env_of,
    get_job,
    operator,
    set_phase,
    trainjob,
    wait_condition,
    wait_pods,
)

Settings = Callable[..., manager.Settings]


def test_a_reported_trainer_status_survives_the_controller_and_prints(
    kubeconfig: str, namespace: str, manager_settings: Settings, kubectl: Kubectl
) -> None:
    runtime_name = f"torch-report-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            job = trainjob("rep", runtime_name, trainer={"numNodes": 2})
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            pods = await wait_pods(client, namespace, {"rep-node-0-0", "rep-node-0-1"})
            for name, pod in pods.items():
                env = env_of(pod)
                assert (env["KUBETRAIN_TRAINJOB_NAME"], env["KUBETRAIN_TRAINJOB_NAMESPACE"]) == (
                    "rep",
                    namespace,
                ), name

            reported = {
                "progressPercentage": 40,
                "estimatedRemainingSeconds": 90,
                "metrics": [{"name": "loss", "value": "0.5"}],
                "lastUpdatedTime": "2030-01-01T00:00:00Z",
            }
            # What kubetrain.report sends, as the training process would.
            await client.patch(
                kinds.TRAINJOBS,
                "rep",
                {"status": {"trainerStatus": reported}},
                namespace=namespace,
                subresource="status",
            )
            for name in sorted(pods):  # the controller writes Running and jobsStatus after it
                await set_phase(client, namespace, name, "Running", ready=True)
            await wait_condition(client, namespace, "rep", "Running")
            stored = await get_job(client, namespace, "rep")
            assert stored["status"]["trainerStatus"] == reported

            table = kubectl("get", "trainjob", "rep", "-n", namespace).stdout.splitlines()
            assert table[0].split() == ["NAME", "STATE", "PROGRESS", "%", "ETA", "AGE"]
            assert table[1].split()[:4] == ["rep", "Running", "40", "90"]

    run(body())


def volumes_of(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's volumes but the API credentials the ServiceAccount admission adds."""
    volumes = pod["spec"].get("volumes") or []
    return [v for v in volumes if not v["name"].startswith("kube-api-access-")]


def initializer_runtime(name: str) -> dict[str, Any]:
    doc = builtin_runtime("torch_distributed.yaml", name)
    spec = doc["spec"]["template"]["spec"]
    mount = [{"name": "initializer", "mountPath": "/workspace"}]
    spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "volumeMounts"
    ] = mount
    spec["replicatedJobs"][0]["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
    container = {
        "name": "dataset-initializer",
        "image": "ghcr.io/kubeflow/trainer/dataset-initializer",
        "command": ["python3", "-m", "kubetrain.initializers", "dataset"],
        "volumeMounts": mount,
    }
    spec["replicatedJobs"].insert(
        0,
        {
            "name": "dataset-initializer",
            "template": {
                "metadata": {"labels": {ANCESTOR: "dataset-initializer"}},
                "spec": {"template": {"spec": {"containers": [container]}}},
            },
        },
    )
    claim = {
        "metadata": {"name": "initializer", "labels": {"content": "data"}},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    spec["volumeClaimPolicies"] = [{"templates": [claim]}]
    return doc


def test_volume_claim_policies_share_one_claim_between_initializer_and_nodes(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-volumes-{namespace}"
    volume = {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-data"}}

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, initializer_runtime(runtime_name)),
        ):
            job = trainjob(
                "data",
                runtime_name,
                trainer={"numNodes": 2},
                initializer={"dataset": {"storageUri": "pvc://shared-data/digits"}},
            )
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            pods = await wait_pods(client, namespace, {"data-dataset-initializer-0-0"})
            init = pods["data-dataset-initializer-0-0"]
            assert volumes_of(init) == [
                {
                    "name": "storage-source",
                    "persistentVolumeClaim": {"claimName": "shared-data", "readOnly": True},
                },
                volume,
            ]
            assert env_of(init, "dataset-initializer")["STORAGE_URI"] == "pvc://shared-data/digits"

            claim = await client.get(
                kinds.PERSISTENT_VOLUME_CLAIMS, "initializer-data", namespace=namespace
            )
            assert claim["metadata"]["labels"] == {
                "content": "data",
                "jobset.sigs.k8s.io/jobset-name": "data",
            }
            (owner,) = claim["metadata"]["ownerReferences"]
            stored = await get_job(client, namespace, "data")
            assert (owner["kind"], owner["uid"]) == ("TrainJob", stored["metadata"]["uid"])

            await set_phase(client, namespace, "data-dataset-initializer-0-0", "Succeeded")
            names = {"data-dataset-initializer-0-0", "data-node-0-0", "data-node-0-1"}
            pods = await wait_pods(client, namespace, names)
            for name in ("data-node-0-0", "data-node-0-1"):
                assert volumes_of(pods[name]) == [volume], name

            async def one_claim() -> bool:
                found = await client.list(kinds.PERSISTENT_VOLUME_CLAIMS, namespace=namespace)
                return [c["metadata"]["name"] for c in found["items"]] == ["initializer-data"]

            await eventually(one_claim, "exactly one claim")

    run(body())
