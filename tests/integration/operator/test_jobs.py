"""The v1 job controllers against an API server, with no scheduler or node: the operator runs
in-process, creates pods and services, and the tests play the kubelet by writing pod status
(upstream's controller suites: "Test Normal Path", ExitCode retries, scale down, suspend
semantics, deadline, TTL, TFJob status rules, managed by an external controller).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from kubetrain import kube
from kubetrain.operator.jobs import backoff, companions
from kubetrain.operator.runtime import manager
from tests.apiserver.cascade import eventually, run
from tests.builders import mpijob, pytorchjob, tfjob, values
from tests.integration.operator.jobs_fixtures import (
    MPIJOBS,
    PYTORCHJOBS,
    SERVICES,
    TFJOBS,
    condition,
    event_reasons,
    exactly,
    get,
    items,
    operator,
    set_pod,
    wait_condition,
    wait_pods,
)

Settings = Callable[..., manager.Settings]
LABELS = "training.kubeflow.org/"
TRIO = {"a-master-0", "a-worker-0", "a-worker-1"}
TORCH, TF = "pytorch", "tensorflow"


def pytorch(namespace: str, **run_policy: Any) -> dict[str, Any]:
    builder = pytorchjob(namespace, "a").master().workers(2)
    if run_policy:
        builder = builder.run_policy(**run_policy)
    return builder.doc()


async def start(client: kube.Client, namespace: str, doc: dict[str, Any]) -> dict[str, Any]:
    return await client.create(PYTORCHJOBS, doc, namespace=namespace)


def test_a_pytorchjob_gets_its_pods_and_services_and_succeeds(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            job = await start(client, namespace, pytorch(namespace))
            pods = await wait_pods(client, namespace, TRIO)

            services = await exactly(client, SERVICES, namespace, TRIO)
            worker = pods["a-worker-1"]
            assert worker["metadata"]["labels"] == {
                f"{LABELS}operator-name": "pytorchjob-controller",
                f"{LABELS}job-name": "a",
                f"{LABELS}replica-type": "worker",
                f"{LABELS}replica-index": "1",
            }
            (owner,) = worker["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
                "PyTorchJob",
                "a",
                job["metadata"]["uid"],
                True,
            )
            env = values(worker["spec"]["containers"][0]["env"])
            assert {k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")} == {
                "MASTER_ADDR": "a-master-0",
                "MASTER_PORT": "23456",
                "WORLD_SIZE": "3",
                "RANK": "2",
            }
            assert env["PET_NNODES"] == "3"
            assert pods["a-master-0"]["metadata"]["labels"][f"{LABELS}job-role"] == "master"
            assert services["a-worker-1"]["spec"]["clusterIP"] == "None"
            assert (
                services["a-worker-1"]["metadata"]["ownerReferences"][0]["uid"]
                == (job["metadata"]["uid"])
            )
            created = await wait_condition(client, PYTORCHJOBS, namespace, "a", "Created")
            assert condition(created, "Created")["reason"] == "PyTorchJobCreated"  # type: ignore[index]

            for name in sorted(TRIO):
                await set_pod(client, namespace, name, "Running", container="pytorch")
            await wait_condition(client, PYTORCHJOBS, namespace, "a", "Running")
            for name in sorted(TRIO):
                await set_pod(
                    client, namespace, name, "Succeeded", container="pytorch", exit_code=0
                )
            done = await wait_condition(client, PYTORCHJOBS, namespace, "a", "Succeeded")
            succeeded = condition(done, "Succeeded")
            assert succeeded is not None
            assert (succeeded["reason"], succeeded["message"]) == (
                "PyTorchJobSucceeded",
                "PyTorchJob a is successfully completed.",
            )
            assert done["status"]["completionTime"]
            assert done["status"]["replicaStatuses"]["Worker"]["succeeded"] == 2

            async def reported() -> bool:
                reasons = await event_reasons(client, namespace, "a")
                wanted = {"SuccessfulCreatePod", "SuccessfulCreateService", "ExitedWithCode"}
                return wanted <= set(reasons) and "PyTorchJobSucceeded" in reasons

            await eventually(reported, "upstream's events are recorded")

    run(body())


def test_exit_code_137_restarts_the_worker_until_the_backoff_limit(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            doc = pytorchjob(namespace, "a").master().workers(2, restart_policy="ExitCode")
            await start(client, namespace, doc.run_policy(backoffLimit=1).doc())
            pods = await wait_pods(client, namespace, TRIO)
            for name in sorted(TRIO):
                await set_pod(client, namespace, name, "Running", container="pytorch")
            await wait_condition(client, PYTORCHJOBS, namespace, "a", "Running")

            first_uid = pods["a-worker-1"]["metadata"]["uid"]
            await set_pod(
                client, namespace, "a-worker-1", "Failed", container="pytorch", exit_code=137
            )

            async def recreated() -> dict[str, Any] | None:
                pod = await get(client, kube.resource.PODS, namespace, "a-worker-1")
                return pod if pod is not None and pod["metadata"]["uid"] != first_uid else None

            await eventually(recreated, "a-worker-1 is recreated")

            async def restarting() -> bool:
                return "PyTorchJobRestarting" in await event_reasons(client, namespace, "a")

            await eventually(restarting, "the restart is reported")
            service = await get(client, SERVICES, namespace, "a-worker-1")
            assert service is not None
            assert backoff.recorded(service) == 1

            await set_pod(
                client, namespace, "a-worker-1", "Failed", container="pytorch", exit_code=137
            )
            failed = await wait_condition(client, PYTORCHJOBS, namespace, "a", "Failed")
            found = condition(failed, "Failed")
            assert found is not None
            assert (found["reason"], found["message"]) == (
                "PyTorchJobFailed",
                "Job a has failed because it has reached the specified backoff limit",
            )

    run(body())


def test_scaling_down_deletes_the_surplus_pod_and_service(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            await start(client, namespace, pytorch(namespace))
            await wait_pods(client, namespace, TRIO)
            patch = {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1}}}}
            await client.patch(PYTORCHJOBS, "a", patch, namespace=namespace)
            await wait_pods(client, namespace, {"a-master-0", "a-worker-0"})
            await exactly(client, SERVICES, namespace, {"a-master-0", "a-worker-0"})

    run(body())


def test_suspend_deletes_the_pods_and_resume_recreates_them_with_a_new_start_time(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            await start(client, namespace, pytorch(namespace))
            await wait_pods(client, namespace, TRIO)
            running = await wait_condition(client, PYTORCHJOBS, namespace, "a", "Created")
            started = running["status"]["startTime"]

            suspend = {"spec": {"runPolicy": {"suspend": True}}}
            await client.patch(PYTORCHJOBS, "a", suspend, namespace=namespace)
            suspended = await wait_condition(client, PYTORCHJOBS, namespace, "a", "Suspended")
            assert condition(suspended, "Suspended")["message"] == "PyTorchJob a is suspended."  # type: ignore[index]
            await wait_pods(client, namespace, set())
            await exactly(client, SERVICES, namespace, set())

            resume = {"spec": {"runPolicy": {"suspend": False}}}
            await eventually(lambda: _later(started), "a second passes")
            await client.patch(PYTORCHJOBS, "a", resume, namespace=namespace)
            resumed = await wait_condition(
                client, PYTORCHJOBS, namespace, "a", "Suspended", status="False"
            )
            assert condition(resumed, "Suspended")["reason"] == "PyTorchJobResumed"  # type: ignore[index]
            assert resumed["status"]["startTime"] > started
            await wait_pods(client, namespace, TRIO)

    run(body())


def test_past_its_active_deadline_a_job_fails(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            doc = pytorch(namespace, activeDeadlineSeconds=2, cleanPodPolicy="All")
            await start(client, namespace, doc)
            await wait_pods(client, namespace, TRIO)
            failed = await wait_condition(client, PYTORCHJOBS, namespace, "a", "Failed")
            found = condition(failed, "Failed")
            assert found is not None
            assert found["message"] == (
                "Job a has failed because it was active longer than specified deadline"
            )
            await wait_pods(client, namespace, set())

    run(body())


def test_a_finished_job_is_deleted_after_its_ttl(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            doc = pytorchjob(namespace, "a").workers(1).run_policy(ttlSecondsAfterFinished=1)
            await start(client, namespace, doc.doc())
            await wait_pods(client, namespace, {"a-worker-0"})
            await set_pod(
                client, namespace, "a-worker-0", "Succeeded", container="pytorch", exit_code=0
            )
            await wait_condition(client, PYTORCHJOBS, namespace, "a", "Succeeded")

            async def gone() -> bool:
                return await get(client, PYTORCHJOBS, namespace, "a") is None

            await eventually(gone, "the job is deleted after its TTL")

    run(body())


def test_tfjob_success_follows_the_chief_or_else_worker_0(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            with_chief = tfjob(namespace, "c").replica("Chief", 1).workers(2).doc()
            without = tfjob(namespace, "w").workers(2).doc()
            await client.create(TFJOBS, with_chief, namespace=namespace)
            await client.create(TFJOBS, without, namespace=namespace)
            pods = await wait_pods(
                client,
                namespace,
                {"c-chief-0", "c-worker-0", "c-worker-1", "w-worker-0", "w-worker-1"},
            )
            env = values(pods["c-worker-1"]["spec"]["containers"][0]["env"])
            assert f"c-worker-1.{namespace}.svc:2222" in env["TF_CONFIG"]
            for name in sorted(pods):
                await set_pod(client, namespace, name, "Running", container="tensorflow")
            await set_pod(
                client, namespace, "c-worker-0", "Succeeded", container="tensorflow", exit_code=0
            )
            await set_pod(
                client, namespace, "c-chief-0", "Succeeded", container="tensorflow", exit_code=0
            )
            await set_pod(
                client, namespace, "w-worker-0", "Succeeded", container="tensorflow", exit_code=0
            )
            chief_done = await wait_condition(client, TFJOBS, namespace, "c", "Succeeded")
            assert condition(chief_done, "Succeeded")["message"] == (  # type: ignore[index]
                f"TFJob {namespace}/c successfully completed."
            )
            await wait_condition(client, TFJOBS, namespace, "w", "Succeeded")

    run(body())


def test_a_job_managed_by_another_controller_is_left_alone(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            theirs = pytorchjob(namespace, "theirs").workers(1)
            theirs = theirs.run_policy(managedBy="kueue.x-k8s.io/multikueue")
            await start(client, namespace, theirs.doc())
            await start(client, namespace, pytorchjob(namespace, "ours").workers(1).doc())
            # the controller saw both (it created the later one's pods and wrote its status)
            await wait_condition(client, PYTORCHJOBS, namespace, "ours", "Created")
            await wait_pods(client, namespace, {"ours-worker-0"})
            left = await get(client, PYTORCHJOBS, namespace, "theirs")
            assert left is not None
            assert "status" not in left or not left["status"].get("conditions")

    run(body())


def test_an_mpijob_gets_its_launcher_workers_and_hostfile(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            doc = mpijob(namespace, "m").replica("Launcher", 1).workers(2).doc()
            await client.create(MPIJOBS, doc, namespace=namespace)
            pods = await wait_pods(client, namespace, {"m-launcher", "m-worker-0", "m-worker-1"})
            assert pods["m-launcher"]["spec"]["serviceAccountName"] == "m-launcher"
            config = await eventually(
                lambda: get(client, kube.resource.CONFIGMAPS, namespace, "m-config"),
                "the hostfile ConfigMap",
            )
            assert config["data"]["hostfile"] == "m-worker-0 slots=1\nm-worker-1 slots=1\n"
            account = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
            assert await get(client, account, namespace, "m-launcher") is not None
            assert await items(client, SERVICES, namespace) == {}

            await set_pod(client, namespace, "m-worker-0", "Running", container="mpi")

            async def discovered() -> bool:
                found = await get(client, kube.resource.CONFIGMAPS, namespace, "m-config")
                return found is not None and "echo m-worker-0:1" in found["data"].get(
                    "discover_hosts.sh", ""
                )

            await eventually(discovered, "a running worker is in discover_hosts.sh")

    run(body())


async def _later(stamp: str) -> bool:
    """True once the wall clock's second differs from ``stamp``'s (whole-second timestamps)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") > stamp


def test_an_elastic_pytorchjob_gets_an_autoscaler_that_goes_while_suspended(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            cpu = {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization"}},
            }
            policy = {"minReplicas": 1, "maxReplicas": 3, "metrics": [cpu]}
            doc = pytorchjob(namespace, "a").workers(2).spec(elasticPolicy=policy).doc()
            await start(client, namespace, doc)
            found = await eventually(
                lambda: get(client, companions.HORIZONTAL_POD_AUTOSCALERS, namespace, "a"),
                "the autoscaler",
            )
            assert found["spec"]["scaleTargetRef"]["name"] == "a"
            assert found["spec"]["maxReplicas"] == 3
            suspend = {"spec": {"runPolicy": {"suspend": True}}}
            await client.patch(PYTORCHJOBS, "a", suspend, namespace=namespace)

            async def gone() -> bool:
                hpa = companions.HORIZONTAL_POD_AUTOSCALERS
                return await get(client, hpa, namespace, "a") is None

            await eventually(gone, "the autoscaler is deleted while suspended")

    run(body())
