"""Real distributed jobs on both planes: the operator makes the pods, the scheduler binds them,
the node runs them as processes of this machine, and the job's status tells the truth about
what they did.

Each test submits a job through the API (the first through ``kubetrain run``, as a user
would) and reads back only what the API shows: conditions, pods, container states, logs and
events. The scripts are in tests/e2e/scripts/ and take a few seconds each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kubetrain import kube
from kubetrain.operator.jobs import reasons
from tests.apiserver.cascade import eventually, run
from tests.builders import pytorchjob, tfjob
from tests.e2e.conftest import script
from tests.integration.operator.jobs_fixtures import (
    EVENTS,
    PODS,
    PYTORCHJOBS,
    TFJOBS,
    condition,
    get,
    wait_condition,
)

JOB_TIMEOUT = 60.0  # seconds for a job to finish: a few for the scripts, the rest is slack
ALLREDUCE = ["python3", script("allreduce.py")]


def sum_of_ranks(world: int) -> int:
    """What the all-reduce prints: every rank contributes rank + 1."""
    return world * (world + 1) // 2


async def log_of(client: kube.Client, namespace: str, pod: str, container: str) -> str:
    path = PODS.path(namespace, pod, "log")
    async with client.stream(path, query={"container": container}) as lines:
        return "\n".join([line.decode(errors="replace") async for line in lines])


def container_status(pod: dict[str, Any], name: str) -> dict[str, Any]:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == name:
            return dict(status)
    raise AssertionError(f"no status for container {name}: {pod.get('status')}")


async def wait_finished(
    client: kube.Client, resource: kube.Resource, namespace: str, name: str
) -> dict[str, Any]:
    """The job once it Succeeded or Failed."""

    async def finished() -> dict[str, Any] | None:
        job = await get(client, resource, namespace, name)
        done = any(
            (condition(job, t) or {}).get("status") == "True" for t in ("Succeeded", "Failed")
        )
        return job if done else None

    return await eventually(finished, f"{name} finished", timeout=JOB_TIMEOUT)


def allreduce_job(namespace: str, name: str, workers: int, *args: str, **replica: Any) -> Any:
    command = [*ALLREDUCE, *args]
    return (
        pytorchjob(namespace, name)
        .master(command=command, **replica)
        .workers(workers, command=command, **replica)
        .run_policy(cleanPodPolicy="None")  # keep the pods, to read their logs
    )


def test_a_pytorchjob_all_reduces_over_gloo_and_succeeds(
    torch_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "allreduce.yaml"
    job = allreduce_job(namespace, "allreduce", 2, restart_policy="OnFailure").doc()
    manifest.write_text(yaml.safe_dump(job), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(KUBETRAIN_KUBECONFIG=kubeconfig, KUBETRAIN_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-m", "kubetrain", "run", "-f", str(manifest), "-n", namespace],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT + 30,
        env=env,
    )
    expected = f"all-reduce sum {sum_of_ranks(3)}"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "[master-0] rank 0/3 port" in done.stdout, done.stdout
    assert expected in done.stdout, done.stdout

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            finished = await get(client, PYTORCHJOBS, namespace, "allreduce")
            succeeded = condition(finished, "Succeeded")
            assert succeeded is not None, finished
            assert succeeded["status"] == "True", finished
            assert succeeded["reason"] == reasons.reason("PyTorchJob", reasons.SUCCEEDED)
            master_log = await log_of(client, namespace, "allreduce-master-0", "pytorch")
            assert "rank 0/3 port" in master_log, master_log
            assert expected in master_log, master_log
            for index in (0, 1):
                worker_log = await log_of(client, namespace, f"allreduce-worker-{index}", "pytorch")
                assert f"rank {index + 1}/3" in worker_log, worker_log
                assert expected in worker_log, worker_log

    run(body())


def test_a_worker_killed_with_sigkill_restarts_in_place_and_the_job_succeeds(
    torch_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    held = tmp_path / "hold"
    held.mkdir()
    job = allreduce_job(
        namespace, "killed", 2, "--hold-dir", str(held), "--hold-rank", "1",
        restart_policy="OnFailure",
    ).doc()  # fmt: skip

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(PYTORCHJOBS, job, namespace=namespace)
            marker = held / "rank-1.pid"  # rank 1 is worker-0; it waits there to be killed

            async def pid_written() -> int | None:
                return int(marker.read_text()) if marker.exists() else None

            pid = await eventually(pid_written, "worker-0 wrote its pid", timeout=JOB_TIMEOUT)
            before = await get(client, PODS, namespace, "killed-worker-0")
            assert before is not None
            os.kill(pid, signal.SIGKILL)

            await wait_condition(
                client, PYTORCHJOBS, namespace, "killed", "Succeeded", timeout=JOB_TIMEOUT
            )

            async def worker_done() -> dict[str, Any] | None:  # the master may finish first
                pod = await get(client, PODS, namespace, "killed-worker-0")
                phase = ((pod or {}).get("status") or {}).get("phase")
                return pod if phase in ("Succeeded", "Failed") else None

            after = await eventually(worker_done, "worker-0 finished", timeout=JOB_TIMEOUT)
            assert after["metadata"]["uid"] == before["metadata"]["uid"]  # restarted in place
            status = container_status(after, "pytorch")
            assert status["restartCount"] == 1, status
            assert status["lastState"]["terminated"]["exitCode"] == 137, status
            assert status["state"]["terminated"]["exitCode"] == 0, status
            job_now = await get(client, PYTORCHJOBS, namespace, "killed")
            assert condition(job_now, "Failed") is None, job_now
            master_log = await log_of(client, namespace, "killed-master-0", "pytorch")
            assert f"all-reduce sum {sum_of_ranks(3)}" in master_log, master_log
            worker_log = await log_of(client, namespace, "killed-worker-0", "pytorch")
            assert "restarted; joining" in worker_log, worker_log

    run(body())


def test_exit_code_1_under_the_exit_code_policy_fails_the_job_for_good(
    kubeconfig: str, namespace: str
) -> None:
    job = (
        pytorchjob(namespace, "exits")
        .master(command=["python3", "-c", "import time; time.sleep(60)"], restart_policy="ExitCode")
        .workers(1, command=["python3", "-c", "import sys; sys.exit(1)"], restart_policy="ExitCode")
        .run_policy(cleanPodPolicy="Running")
        .doc()
    )

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(PYTORCHJOBS, job, namespace=namespace)
            finished = await wait_finished(client, PYTORCHJOBS, namespace, "exits")
            failed = condition(finished, "Failed")
            assert failed is not None, finished
            assert failed["status"] == "True", finished
            assert failed["reason"] == reasons.reason("PyTorchJob", reasons.FAILED)
            assert failed["message"] == 'job "exits" is failing because "Worker" replica(s) failed.'
            assert condition(finished, "Succeeded") is None
            assert finished["status"].get("completionTime"), finished["status"]

            worker = await get(client, PODS, namespace, "exits-worker-0")
            assert worker is not None
            assert worker["status"]["phase"] == "Failed", worker
            assert container_status(worker, "pytorch")["state"]["terminated"]["exitCode"] == 1

            async def events() -> list[tuple[str, str]] | None:
                listed = await client.list(EVENTS, namespace=namespace)
                found = [
                    (e.get("reason", ""), e.get("message", ""))
                    for e in listed.get("items") or []
                    if (e.get("involvedObject") or {}).get("name") == "exits"
                ]
                exited = reasons.EXITED_WITH_CODE_MESSAGE.format(
                    namespace=namespace, pod="exits-worker-0", code=1
                )
                wanted = (reasons.EXITED_WITH_CODE, exited)
                return found if wanted in found else None

            await eventually(events, "the ExitedWithCode event", timeout=JOB_TIMEOUT)

            async def master_gone() -> bool:  # cleanPodPolicy Running stops the master
                return await get(client, PODS, namespace, "exits-master-0") is None

            await eventually(master_gone, "the running master cleaned up", timeout=JOB_TIMEOUT)
            # a permanent exit code is not retried: the failed worker is the only one there was
            again = await get(client, PODS, namespace, "exits-worker-0")
            assert again is not None
            assert again["metadata"]["uid"] == worker["metadata"]["uid"]

    run(body())


def test_tfjob_ps_and_workers_resolve_every_address_of_their_tf_config_and_reach_each_other(
    kubeconfig: str, namespace: str
) -> None:
    """The TF_CONFIG handshake of a parameter-server TFJob, without TensorFlow (the examples of
    test_tensorflow.py train with it): one PS and two Workers each resolve every address of the
    cluster spec and exchange their names with every other replica."""
    command = ["python3", script("tf_config.py")]
    job = (
        tfjob(namespace, "tfconfig")
        .replica("PS", 1, command=command, restart_policy="Never")
        .replica("Worker", 2, command=command, restart_policy="Never")
        .run_policy(cleanPodPolicy="None")
        .doc()
    )
    replicas = ("ps-0", "worker-0", "worker-1")

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(TFJOBS, job, namespace=namespace)
            finished = await wait_finished(client, TFJOBS, namespace, "tfconfig")
            logs = {
                replica: await log_of(client, namespace, f"tfconfig-{replica}", "tensorflow")
                for replica in replicas
            }
            assert condition(finished, "Succeeded") is not None, (finished["status"], logs)
            for replica, text in logs.items():
                assert text.count(" resolves to ") == 3, text
                others = sorted(r for r in replicas if r != replica)
                assert f"heard from {others}" in text, text
            pod = await get(client, PODS, namespace, "tfconfig-worker-1")
            assert pod is not None
            env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
            config = json.loads(env["TF_CONFIG"])
            assert config["task"] == {"type": "worker", "index": 1}, config
            cluster = config["cluster"]
            hosts = {role: [a.rsplit(":", 1)[0] for a in v] for role, v in cluster.items()}
            assert hosts == {
                "ps": [f"tfconfig-ps-0.{namespace}.svc"],
                "worker": [f"tfconfig-worker-{i}.{namespace}.svc" for i in (0, 1)],
            }, config

    run(body())


def test_two_pytorchjobs_declaring_the_same_port_run_side_by_side(
    torch_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    port = [{"name": "pytorchjob-port", "containerPort": 23456}]
    jobs = [
        allreduce_job(
            namespace, name, 1, "--barrier-dir", str(barrier), "--barrier-count", "4",
            restart_policy="Never", ports=port,
        ).doc()
        for name in ("left", "right")
    ]  # fmt: skip

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            for job in jobs:
                await client.create(PYTORCHJOBS, job, namespace=namespace)
            master_ports = {}
            for name in ("left", "right"):
                finished = await wait_finished(client, PYTORCHJOBS, namespace, name)
                master_log = await log_of(client, namespace, f"{name}-master-0", "pytorch")
                assert condition(finished, "Succeeded") is not None, (finished, master_log)
                assert f"all-reduce sum {sum_of_ranks(2)}" in master_log, master_log
                master_ports[name] = master_log.split(" port ")[1].split()[0]
            # all four processes were up at once (the barrier), each job on a port of its own
            assert len(list(barrier.glob("*.ready"))) == 4
            assert master_ports["left"] != master_ports["right"], master_ports

    run(body())
