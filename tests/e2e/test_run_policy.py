"""A v1 job's ``runPolicy`` end to end, on both planes: ``suspend`` and resume,
``activeDeadlineSeconds``, ``backoffLimit``, and ``ttlSecondsAfterFinished`` with
``cleanPodPolicy``. The containers are short Python programs (wait for a file, sleep, exit with
a code), so what is tested is the operator, the node and the control plane around them: which
pods and Services exist, what the node did to their processes, and the conditions and messages
the job ends with, the same on either plane. On the real one the garbage collection after a
TTL is kube-controller-manager's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubetrain import kube
from kubetrain.operator import hostports
from kubetrain.operator.jobs import backoff, reasons
from tests.apiserver.cascade import eventually, run
from tests.builders import pytorchjob
from tests.integration.operator.jobs_fixtures import (
    PODS,
    PYTORCHJOBS,
    SERVICES,
    condition,
    exactly,
    get,
    items,
    wait_condition,
)

JOB_TIMEOUT = 60.0  # seconds for a job to reach a state: its programs take one or two
# kube-controller-manager's garbage collector learns a new kind of owner at its next discovery
# (every 30 s), so the first collection of a job's children there may wait that long.
COLLECTED_TIMEOUT = 90.0
JOB_NAME = "training.kubeflow.org/job-name"
WAIT_FOR_FILE = """
import pathlib, sys, time
gate = pathlib.Path(sys.argv[1])
while not gate.exists():
    time.sleep(0.1)
"""
SLEEP = ["python3", "-c", "import time; time.sleep(300)"]
SUCCEED = ["python3", "-c", "print('done')"]


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env") or []}


async def of_job(client: kube.Client, resource: kube.Resource, ns: str, job: str) -> set[str]:
    """Names of the job's pods or Services, terminating ones included."""
    found = await client.list(resource, namespace=ns, label_selector=f"{JOB_NAME}={job}")
    return {o["metadata"]["name"] for o in found.get("items") or []}


async def none_left(client: kube.Client, namespace: str, job: str, *, timeout: float) -> None:
    """Neither pods nor Services of ``job`` exist any more: on a pod, that means its node stopped
    the processes and confirmed (a pod being deleted lasts until then)."""

    async def gone() -> bool:
        pods = await of_job(client, PODS, namespace, job)
        return not pods and not await of_job(client, SERVICES, namespace, job)

    await eventually(gone, f"{job}: its pods and Services are gone", timeout=timeout)


async def running(client: kube.Client, namespace: str, names: set[str]) -> dict[str, Any]:
    """Exactly these pods exist, each with its container running."""

    async def check() -> dict[str, Any] | None:
        found = await items(client, PODS, namespace)
        if set(found) != names:
            return None
        ok = all((p.get("status") or {}).get("phase") == "Running" for p in found.values())
        return found if ok else None

    return await eventually(check, f"{sorted(names)} running", timeout=JOB_TIMEOUT)


def test_a_job_created_suspended_starts_on_resume_and_suspending_it_stops_its_pods(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    gate = tmp_path / "release"
    command = ["python3", "-c", WAIT_FOR_FILE, str(gate)]
    job = (
        pytorchjob(namespace, "held")
        .master(command=command, restart_policy="Never")
        .workers(1, command=command, restart_policy="Never")
        .run_policy(suspend=True, cleanPodPolicy="None")
        .doc()
    )
    names = {"held-master-0", "held-worker-0"}
    suspend = {"spec": {"runPolicy": {"suspend": True}}}
    resume = {"spec": {"runPolicy": {"suspend": False}}}

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(PYTORCHJOBS, job, namespace=namespace)
            held = await wait_condition(
                client, PYTORCHJOBS, namespace, "held", reasons.SUSPENDED, timeout=JOB_TIMEOUT
            )
            found = condition(held, reasons.SUSPENDED) or {}
            assert (found["reason"], found["message"]) == (
                "PyTorchJobSuspended",
                "PyTorchJob held is suspended.",
            )
            assert await of_job(client, PODS, namespace, "held") == set()

            await client.patch(PYTORCHJOBS, "held", resume, namespace=namespace)
            first = await running(client, namespace, names)
            resumed = await wait_condition(
                client, PYTORCHJOBS, namespace, "held", reasons.RUNNING, timeout=JOB_TIMEOUT
            )
            found = condition(resumed, reasons.SUSPENDED) or {}
            assert (found["status"], found["reason"]) == ("False", "PyTorchJobResumed")
            services = await exactly(client, SERVICES, namespace, names)
            worker = env_of(first["held-worker-0"])
            assert worker["MASTER_ADDR"] == "held-master-0", worker
            assert worker["MASTER_PORT"] == str(hostports.recorded(services["held-master-0"]))
            assert (worker["WORLD_SIZE"], worker["RANK"]) == ("2", "1"), worker
            assert env_of(first["held-master-0"])["RANK"] == "0"

            await client.patch(PYTORCHJOBS, "held", suspend, namespace=namespace)
            stopped = await wait_condition(
                client, PYTORCHJOBS, namespace, "held", reasons.SUSPENDED, timeout=JOB_TIMEOUT
            )
            found = condition(stopped, reasons.RUNNING) or {}
            assert (found["status"], found["reason"]) == ("False", "PyTorchJobSuspended")
            await none_left(client, namespace, "held", timeout=JOB_TIMEOUT)

            await client.patch(PYTORCHJOBS, "held", resume, namespace=namespace)
            second = await running(client, namespace, names)
            for name in names:
                assert second[name]["metadata"]["uid"] != first[name]["metadata"]["uid"]
            gate.touch()
            done = await wait_condition(
                client, PYTORCHJOBS, namespace, "held", reasons.SUCCEEDED, timeout=JOB_TIMEOUT
            )
            assert condition(done, reasons.FAILED) is None, done["status"]

    run(body())


def test_past_its_active_deadline_a_job_fails_and_its_running_pods_are_stopped(
    kubeconfig: str, namespace: str
) -> None:
    job = (
        pytorchjob(namespace, "late")
        .master(command=SLEEP, restart_policy="Never")
        .workers(1, command=SLEEP, restart_policy="Never")
        .run_policy(activeDeadlineSeconds=4, cleanPodPolicy="Running")
        .doc()
    )

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(PYTORCHJOBS, job, namespace=namespace)
            await running(client, namespace, {"late-master-0", "late-worker-0"})
            failed = await wait_condition(
                client, PYTORCHJOBS, namespace, "late", reasons.FAILED, timeout=JOB_TIMEOUT
            )
            found = condition(failed, reasons.FAILED) or {}
            assert (found["reason"], found["message"]) == (
                "PyTorchJobFailed",
                reasons.DEADLINE_MESSAGE.format(name="late"),
            )
            assert failed["status"].get("completionTime"), failed["status"]
            await none_left(client, namespace, "late", timeout=JOB_TIMEOUT)

    run(body())


def test_a_job_whose_worker_keeps_failing_fails_at_its_backoff_limit(
    kubeconfig: str, namespace: str
) -> None:
    # 137 is a retryable exit code: under ExitCode the operator recreates the pod each time.
    crash = ["python3", "-c", "import os; os._exit(137)"]
    job = (
        pytorchjob(namespace, "flaky")
        .master(command=SLEEP, restart_policy="Never")
        .workers(1, command=crash, restart_policy="ExitCode")
        .run_policy(backoffLimit=1, cleanPodPolicy="All")
        .doc()
    )

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(PYTORCHJOBS, job, namespace=namespace)

            async def retried() -> dict[str, Any] | None:
                service = await get(client, SERVICES, namespace, "flaky-worker-0")
                return service if service and backoff.recorded(service) >= 1 else None

            await eventually(retried, "flaky-worker-0 recreated once", timeout=JOB_TIMEOUT)
            failed = await wait_condition(
                client, PYTORCHJOBS, namespace, "flaky", reasons.FAILED, timeout=JOB_TIMEOUT
            )
            found = condition(failed, reasons.FAILED) or {}
            assert (found["reason"], found["message"]) == (
                "PyTorchJobFailed",
                reasons.BACKOFF_LIMIT_MESSAGE.format(name="flaky"),
            )
            assert condition(failed, reasons.SUCCEEDED) is None
            await none_left(client, namespace, "flaky", timeout=JOB_TIMEOUT)

    run(body())


def test_a_finished_job_keeps_or_cleans_its_pods_by_policy_and_goes_after_its_ttl(
    kubeconfig: str, namespace: str
) -> None:
    kept = (
        pytorchjob(namespace, "kept")
        .master(command=SUCCEED, restart_policy="Never")
        .run_policy(cleanPodPolicy="None", ttlSecondsAfterFinished=5)
        .doc()
    )
    cleaned = (
        pytorchjob(namespace, "cleaned")
        .master(command=SUCCEED, restart_policy="Never")
        .run_policy(cleanPodPolicy="All")
        .doc()
    )

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(PYTORCHJOBS, kept, namespace=namespace)
            await client.create(PYTORCHJOBS, cleaned, namespace=namespace)
            await wait_condition(
                client, PYTORCHJOBS, namespace, "kept", reasons.SUCCEEDED, timeout=JOB_TIMEOUT
            )
            # cleanPodPolicy None: the finished pod and its Service stay, until the TTL.
            pod = await get(client, PODS, namespace, "kept-master-0")
            assert pod is not None
            assert pod["status"]["phase"] == "Succeeded", pod["status"]
            assert await get(client, SERVICES, namespace, "kept-master-0") is not None

            # cleanPodPolicy All: the job stays, its pods and Services go.
            done = await wait_condition(
                client, PYTORCHJOBS, namespace, "cleaned", reasons.SUCCEEDED, timeout=JOB_TIMEOUT
            )
            await none_left(client, namespace, "cleaned", timeout=JOB_TIMEOUT)
            assert await get(client, PYTORCHJOBS, namespace, "cleaned") is not None
            assert condition(done, reasons.FAILED) is None

            # The TTL: the operator deletes the job, the garbage collector its children.
            async def job_gone() -> bool:
                return await get(client, PYTORCHJOBS, namespace, "kept") is None

            await eventually(job_gone, "kept deleted after its TTL", timeout=JOB_TIMEOUT)
            await none_left(client, namespace, "kept", timeout=COLLECTED_TIMEOUT)

    run(body())
