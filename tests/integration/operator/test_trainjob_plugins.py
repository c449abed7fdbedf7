"""What the runtime plugins create, through the API (reference §4.5, §4.9, scheduling.md §1.4,
§2): the coscheduling and Volcano PodGroups and the pod label/annotation that joins them, and
the MPI SSH Secret, hostfile ConfigMap, volumes and OMPI env.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import eventually, run
from tests.integration.operator.trainjob_fixtures import (
    builtin_runtime,
    cluster_runtime,
    env_of,
    fetch_object,
    operator,
    trainjob,
    wait_pods,
)

Settings = Callable[..., manager.Settings]


def test_coscheduling_podgroup_counts_every_pod_and_what_they_request(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-gang-{namespace}"

    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            doc = builtin_runtime("torch_distributed.yaml", runtime_name)
            doc["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 100}}
            async with cluster_runtime(client, doc):
                job = trainjob(
                    "gang",
                    runtime_name,
                    trainer={
                        "numNodes": 3,
                        "resourcesPerNode": {
                            "requests": {"cpu": "2", "memory": "1Gi"},
                            "limits": {"cpu": "2", "memory": "1Gi", "example.com/gpu": "1"},
                        },
                    },
                )
                await client.create(kinds.TRAINJOBS, job, namespace=namespace)
                pods = await wait_pods(
                    client, namespace, {"gang-node-0-0", "gang-node-0-1", "gang-node-0-2"}
                )
                for pod in pods.values():
                    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "gang"
                group = await eventually(
                    lambda: fetch_object(client, kinds.COSCHEDULING_POD_GROUPS, namespace, "gang"),
                    "the coscheduling PodGroup",
                )
                assert group["spec"] == {
                    "minMember": 3,
                    "minResources": {"cpu": "6", "example.com/gpu": "3", "memory": "3Gi"},
                    "scheduleTimeoutSeconds": 100,
                }
                (owner,) = group["metadata"]["ownerReferences"]
                assert (owner["kind"], owner["name"], owner["controller"]) == (
                    "TrainJob",
                    "gang",
                    True,
                )

    run(body())


def test_volcano_podgroup_has_the_queue_priority_and_network_topology(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-volcano-{namespace}"

    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            doc = builtin_runtime("torch_distributed.yaml", runtime_name)
            doc["spec"]["podGroupPolicy"] = {
                "volcano": {"networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
            }
            doc["spec"]["template"]["metadata"] = {
                "annotations": {"scheduling.volcano.sh/queue-name": "runtime-queue"}
            }
            pod_spec = doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
                "template"
            ]["spec"]
            pod_spec["schedulerName"] = "volcano"
            async with cluster_runtime(client, doc):
                job = trainjob(
                    "vc",
                    runtime_name,
                    trainer={"numNodes": 2},
                    annotations={"scheduling.volcano.sh/queue-name": "team-a"},
                )
                await client.create(kinds.TRAINJOBS, job, namespace=namespace)
                pods = await wait_pods(client, namespace, {"vc-node-0-0", "vc-node-0-1"})
                for pod in pods.values():
                    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vc"
                    assert pod["spec"]["schedulerName"] == "volcano"
                group = await eventually(
                    lambda: fetch_object(client, kinds.VOLCANO_POD_GROUPS, namespace, "vc"),
                    "the Volcano PodGroup",
                )
                spec = group["spec"]
                assert spec["minMember"] == 2
                assert spec["queue"] == "team-a", "the TrainJob's annotation wins"
                assert spec["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}

    run(body())


def test_mpi_trainjob_gets_ssh_keys_hostfile_and_launcher_env(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"mpi-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("mpi_distributed.yaml", runtime_name)),
        ):
            job = trainjob(
                "pi",
                runtime_name,
                trainer={"numNodes": 3, "numProcPerNode": 2, "args": ["python3", "pi.py"]},
            )
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            pods = await wait_pods(
                client, namespace, {"pi-launcher-0-0", "pi-node-0-0", "pi-node-0-1"}
            )
            launcher = pods["pi-launcher-0-0"]
            env = env_of(launcher)
            assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
            assert env["OMPI_MCA_orte_set_default_slots"] == "2"
            volumes = {v["name"] for v in launcher["spec"]["volumes"]}
            assert {"mpi-ssh-auth", "mpi-hostfile"} <= volumes
            container = launcher["spec"]["containers"][0]
            assert container["command"] == ["mpirun", "--allow-run-as-root"]
            assert container["args"] == ["python3", "pi.py"]
            hostfile = await fetch_object(client, kinds.CONFIGMAPS, namespace, "pi-mpi-hostfile")
            assert hostfile is not None
            assert hostfile["data"]["hostfile"] == (
                "pi-launcher-0-0.pi slots=2\npi-node-0-0.pi slots=2\npi-node-0-1.pi slots=2\n"
            )
            secret = await fetch_object(client, kinds.SECRETS, namespace, "pi-mpi-ssh-auth")
            assert secret is not None
            assert secret["type"] == "kubernetes.io/ssh-auth"
            assert secret["immutable"] is True
            private = base64.b64decode(secret["data"]["ssh-privatekey"])
            public = base64.b64decode(secret["data"]["ssh-publickey"])
            assert private.startswith(b"-----BEGIN EC PRIVATE KEY-----")
            assert public.startswith(b"ecdsa-sha2-nistp521 ")

    run(body())
