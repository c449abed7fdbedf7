"""Where a job's pods go: gang scheduling through a PodGroup (Volcano, scheduler-plugins), and
host-network pods with a port each (what the local control plane runs the operator with).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kubetrain import kube
from kubetrain.operator import hostports
from kubetrain.operator.jobs import gang
from kubetrain.operator.jobs.settings import Settings as JobSettings
from kubetrain.operator.runtime import manager
from tests.apiserver.cascade import eventually, run
from tests.builders import pytorchjob, tfjob, values
from tests.integration.operator.jobs_fixtures import (
    PYTORCHJOBS,
    SERVICES,
    TFJOBS,
    exactly,
    get,
    operator,
    set_pod,
    wait_condition,
    wait_pods,
)

Settings = Callable[..., manager.Settings]


def test_volcano_pods_wait_for_their_pod_group_and_join_it(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        jobs = JobSettings(gang_scheduler="volcano")
        async with operator(kubeconfig, manager_settings(), jobs) as client:
            doc = pytorchjob(namespace, "a").master().workers(1)
            doc = doc.run_policy(schedulingPolicy={"queue": "research"})
            await client.create(PYTORCHJOBS, doc.doc(), namespace=namespace)
            group = await eventually(
                lambda: get(client, gang.VOLCANO_POD_GROUPS, namespace, "a"), "the PodGroup"
            )
            assert group["spec"]["minMember"] == 2
            assert group["spec"]["queue"] == "research"
            await wait_condition(client, PYTORCHJOBS, namespace, "a", "Created")
            assert await exactly(client, kube.resource.PODS, namespace, set()) == {}

            group["status"] = {"phase": "Inqueue"}
            await client.replace(gang.VOLCANO_POD_GROUPS, group, namespace=namespace)
            pods = await wait_pods(client, namespace, {"a-master-0", "a-worker-0"})
            pod = pods["a-worker-0"]
            assert pod["spec"]["schedulerName"] == "volcano"
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "a"

            for name in sorted(pods):
                await set_pod(
                    client, namespace, name, "Succeeded", container="pytorch", exit_code=0
                )
            await wait_condition(client, PYTORCHJOBS, namespace, "a", "Succeeded")

            async def dropped() -> bool:
                return await get(client, gang.VOLCANO_POD_GROUPS, namespace, "a") is None

            await eventually(dropped, "the PodGroup is deleted once the job finished")

    run(body())


def test_host_network_pods_get_a_port_each_and_peers_are_told_the_masters(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        jobs = JobSettings(force_host_network=True, host_port_range=(21000, 21999))
        async with operator(kubeconfig, manager_settings(), jobs) as client:
            job = pytorchjob(namespace, "a").master().workers(2).doc()
            await client.create(PYTORCHJOBS, job, namespace=namespace)
            names = {"a-master-0", "a-worker-0", "a-worker-1"}
            pods = await wait_pods(client, namespace, names)
            services = await exactly(client, SERVICES, namespace, names)
            recorded = {name: hostports.recorded(service) for name, service in services.items()}
            assert len(set(recorded.values())) == 3
            master = recorded["a-master-0"]
            assert master is not None
            assert 21000 <= master <= 21999
            for name, pod in pods.items():
                assert pod["spec"]["hostNetwork"] is True
                assert pod["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
                container = pod["spec"]["containers"][0]
                assert container["ports"][0]["hostPort"] == recorded[name]
                assert values(container["env"])["MASTER_PORT"] == str(master)
            stored = await get(client, PYTORCHJOBS, namespace, "a")
            assert stored is not None
            template = stored["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
            assert "hostNetwork" not in template

    run(body())


def test_host_network_tf_pods_get_a_port_each_and_tf_config_lists_exactly_those(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        jobs = JobSettings(force_host_network=True, host_port_range=(22000, 22999))
        async with operator(kubeconfig, manager_settings(), jobs) as client:
            job = tfjob(namespace, "t").workers(2).replica("PS", 1).doc()
            await client.create(TFJOBS, job, namespace=namespace)
            names = {"t-worker-0", "t-worker-1", "t-ps-0"}
            pods = await wait_pods(client, namespace, names)
            services = await exactly(client, SERVICES, namespace, names)
            recorded = {name: hostports.recorded(service) for name, service in services.items()}
            assert len(set(recorded.values())) == 3
            assert all(p is not None and 22000 <= p <= 22999 for p in recorded.values())
            cluster = {
                "ps": [f"t-ps-0.{namespace}.svc:{recorded['t-ps-0']}"],
                "worker": [
                    f"t-worker-{i}.{namespace}.svc:{recorded[f't-worker-{i}']}" for i in range(2)
                ],
            }
            for name, pod in pods.items():
                container = pod["spec"]["containers"][0]
                assert container["ports"][0]["containerPort"] == recorded[name]
                assert container["ports"][0]["hostPort"] == recorded[name]
                config = json.loads(values(container["env"])["TF_CONFIG"])
                assert config["cluster"] == cluster, name
                rtype, index = name.split("-")[1:]
                assert config["task"] == {"type": rtype, "index": int(index)}

    run(body())
