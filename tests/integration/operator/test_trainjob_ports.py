"""TrainJobs on a shared host network (what the local control plane runs the operator with):
each TrainJob is given its own port for rank 0, recorded on its Service and named by its env,
so two TrainJobs never both listen on 29500.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from kubetrain.operator import hostports
from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import hostport, kinds
from kubetrain.operator.trainjob import setup as trainjob_setup
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
HOST_NETWORK = trainjob_setup.Settings(
    workers=2, force_host_network=True, host_port_range=(23000, 23999)
)


def same_start(namespace: str, low: int, high: int) -> tuple[str, str]:
    """Two job names whose port search starts at the same port of ``low..high``."""
    start = {}
    for i in itertools.count():
        name = f"j{i}"
        first = hostports.choose(hostport.seed(namespace, name), set(), low, high)
        if first in start:
            return start[first], name
        start[first] = name
    raise AssertionError("unreachable")


def declared(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's container ports, as (container port, host port) only."""
    return [
        {"containerPort": port.get("containerPort"), "hostPort": port.get("hostPort")}
        for c in pod["spec"]["containers"]
        for port in c.get("ports") or []
    ]


def test_two_torch_trainjobs_at_once_get_different_ports_named_by_their_env(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-ports-{namespace}"
    # Two ports, and two jobs whose search starts at the same one: only one job may take it.
    two_ports = trainjob_setup.Settings(
        workers=2, force_host_network=True, host_port_range=(23000, 23001)
    )
    jobs = same_start(namespace, 23000, 23001)

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings(), two_ports) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            await asyncio.gather(
                *(
                    client.create(
                        kinds.TRAINJOBS,
                        trainjob(name, runtime_name, trainer={"numNodes": 2}),
                        namespace=namespace,
                    )
                    for name in jobs
                )
            )
            names = {f"{job}-node-0-{i}" for job in jobs for i in range(2)}
            pods = await wait_pods(client, namespace, names)

            async def recorded(name: str) -> int | None:
                service = await fetch_object(client, kinds.SERVICES, namespace, name)
                return hostports.recorded(service)

            ports = {
                job: await eventually(lambda job=job: recorded(job), f"Service {job}'s port")
                for job in jobs
            }
            assert sorted(ports.values()) == [23000, 23001]
            for job, port in ports.items():
                for index in range(2):
                    pod = pods[f"{job}-node-0-{index}"]
                    spec = pod["spec"]
                    assert (spec["hostNetwork"], spec["dnsPolicy"]) == (
                        True,
                        "ClusterFirstWithHostNet",
                    )
                    env = env_of(pod)
                    assert env["PET_MASTER_ADDR"] == f"{job}-node-0-0.{job}"
                    assert env["PET_MASTER_PORT"] == str(port)
                    rank0 = [{"containerPort": port, "hostPort": port}]
                    assert declared(pod) == (rank0 if index == 0 else [])

    run(body())


def test_a_jax_trainjob_is_told_its_coordinator_at_the_jobs_port(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"jax-ports-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings(), HOST_NETWORK) as client,
            cluster_runtime(client, builtin_runtime("jax_distributed.yaml", runtime_name)),
        ):
            job = trainjob("j", runtime_name, trainer={"numNodes": 2})
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            pods = await wait_pods(client, namespace, {"j-node-0-0", "j-node-0-1"})
            service = await fetch_object(client, kinds.SERVICES, namespace, "j")
            port = hostports.recorded(service)
            assert port is not None
            for pod in pods.values():
                assert env_of(pod)["JAX_COORDINATOR_ADDRESS"] == f"j-node-0-0.j:{port}"

    run(body())
