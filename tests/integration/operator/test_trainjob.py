"""The TrainJob controller against a real API server, the operator in-process, no node agent:
pods are only created, and their life is written through pods/status as a kubelet would.

Scenarios (reference §5.2, ``trainjob_controller_test.go``, plus kubetrain's guarantees): a torch
TrainJob gets JobSet-named pods with the PET_* env and a headless Service, runs and completes;
a failure beyond ``maxRestarts`` fails it for good; suspend and resume; a runtime edited after
creation does not change the job; the coscheduling and Volcano PodGroups; ``managedBy``; the
active deadline; ``dependsOn``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import eventually, run
from tests.integration.operator.trainjob_fixtures import (
    STARTED,
    builtin_runtime,
    cluster_runtime,
    condition,
    env_of,
    fetch_object,
    get_job,
    operator,
    pods_of,
    set_phase,
    trainjob,
    wait_condition,
    wait_pods,
)

Settings = Callable[..., manager.Settings]
RANK_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def test_a_torch_trainjob_gets_jobset_pods_env_and_service_and_completes(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            job = trainjob(
                "ddp",
                runtime_name,
                trainer={
                    "args": ["train.py"],
                    "numNodes": 2,
                    "resourcesPerNode": {"requests": {"cpu": "2"}},
                    "env": [{"name": "EPOCHS", "value": "3"}],
                },
            )
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            pods = await wait_pods(client, namespace, {"ddp-node-0-0", "ddp-node-0-1"})
            for index, name in enumerate(sorted(pods)):
                pod = pods[name]
                env = env_of(pod)
                assert env["PET_NNODES"] == "2"
                assert env["PET_NPROC_PER_NODE"] == "2", "auto → the CPU request"
                assert env["PET_MASTER_ADDR"] == "ddp-node-0-0.ddp"
                assert env["PET_MASTER_PORT"] == "29500"
                assert env["PET_NODE_RANK"]["fieldRef"]["fieldPath"] == RANK_FIELD
                assert env["EPOCHS"] == "3"
                spec = pod["spec"]
                assert (spec["hostname"], spec["subdomain"]) == (name, "ddp")
                container = spec["containers"][0]
                assert container["command"] == ["torchrun"]
                assert container["args"] == ["train.py"]
                assert {"containerPort": 29500} in [
                    {"containerPort": p["containerPort"]} for p in container["ports"]
                ]
                meta = pod["metadata"]
                assert meta["annotations"]["batch.kubernetes.io/job-completion-index"] == str(index)
                assert meta["labels"]["jobset.sigs.k8s.io/jobset-name"] == "ddp"
                assert meta["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
                assert meta["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "0"
                (owner,) = meta["ownerReferences"]
                assert (owner["kind"], owner["name"], owner["controller"]) == (
                    "TrainJob",
                    "ddp",
                    True,
                )
            service = await fetch_object(client, kinds.SERVICES, namespace, "ddp")
            assert service is not None
            assert service["spec"]["clusterIP"] == "None"
            assert service["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "ddp"}
            frozen = await fetch_object(client, kinds.CONFIGMAPS, namespace, "ddp-runtime-snapshot")
            assert frozen is not None
            assert runtime_name in frozen["data"]["runtime"]

            for name in pods:
                await set_phase(client, namespace, name, "Running", ready=True)
            running = await wait_condition(client, namespace, "ddp", "Running")
            assert running["lastTransitionTime"] == STARTED, "when training started"
            stored = await get_job(client, namespace, "ddp")
            assert stored["status"]["jobsStatus"] == [
                {
                    "name": "node",
                    "ready": 1,
                    "succeeded": 0,
                    "failed": 0,
                    "active": 1,
                    "suspended": 0,
                }
            ]
            for name in pods:
                await set_phase(client, namespace, name, "Succeeded")
            complete = await wait_condition(client, namespace, "ddp", "Complete")
            assert (complete["reason"], complete["message"]) == (
                "AllJobsCompleted",
                "jobset completed successfully",
            )
            done = await get_job(client, namespace, "ddp")
            assert done["status"]["conditions"][-1]["type"] == "Complete", "printed State"
            assert condition(done, "Running")["status"] == "False"  # type: ignore[index]

    run(body())


def _failing_runtime(name: str, max_restarts: int) -> dict[str, Any]:
    doc = builtin_runtime("torch_distributed.yaml", name)
    doc["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": max_restarts}
    return doc


def test_a_failure_beyond_max_restarts_fails_the_trainjob_for_good(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-restarts-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, _failing_runtime(runtime_name, 1)),
        ):
            job = trainjob("flaky", runtime_name, trainer={"numNodes": 2})
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            names = {"flaky-node-0-0", "flaky-node-0-1"}
            await wait_pods(client, namespace, names)
            await set_phase(client, namespace, "flaky-node-0-0", "Running", ready=True)
            await set_phase(client, namespace, "flaky-node-0-1", "Failed", exit_code=1)

            def attempt(value: str) -> Callable[[dict[str, Any]], bool]:
                label = "jobset.sigs.k8s.io/restart-attempt"
                return lambda pod: pod["metadata"]["labels"][label] == value

            await wait_pods(client, namespace, names, where=attempt("1"))
            service = await fetch_object(client, kinds.SERVICES, namespace, "flaky")
            assert service is not None
            assert service["metadata"]["annotations"]["kubetrain.io/jobset-restarts"] == "1"
            assert condition(await get_job(client, namespace, "flaky"), "Failed") is None

            await set_phase(client, namespace, "flaky-node-0-0", "Running", ready=True)
            await set_phase(client, namespace, "flaky-node-0-0", "Failed", exit_code=3)
            failed = await wait_condition(client, namespace, "flaky", "Failed")
            assert failed["reason"] == "ReachedMaxRestarts"
            assert failed["message"] == (
                "jobset failed due to reaching max number of restarts "
                "(first failed job: flaky-node-0)"
            )

            async def active_pods_gone() -> bool:
                pods = await pods_of(client, namespace)
                return set(pods) == {"flaky-node-0-0"}  # the running one was deleted

            await eventually(active_pods_gone, "the still-running pod is deleted")
            # Another reconcile (any change to the job) must not revive it.
            await client.patch(
                kinds.TRAINJOBS,
                "flaky",
                {"metadata": {"labels": {"poke": "1"}}},
                namespace=namespace,
            )

            async def poked() -> bool:
                job = await get_job(client, namespace, "flaky")
                return job["metadata"].get("labels", {}).get("poke") == "1"

            await eventually(poked, "the job was changed")
            await wait_condition(client, namespace, "flaky", "Failed")
            assert set(await pods_of(client, namespace)) == {"flaky-node-0-0"}
            final = await get_job(client, namespace, "flaky")
            assert condition(final, "Complete") is None

    run(body())
