"""Deleting the namespace of a running job, on both planes: the job, its pods and Services go,
the node stops the pods' processes, and the namespace itself goes once it is empty. On the
real plane the namespace controller and the garbage collector are kube-controller-manager's,
and a pod goes only once the node has stopped it and confirmed.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from kubetrain import kube
from tests.apiserver.cascade import eventually, run
from tests.builders import pytorchjob
from tests.integration.operator.jobs_fixtures import PODS, PYTORCHJOBS, get

TIMEOUT = 90.0  # seconds: a namespace's deletion walks every kind it may hold
WRITE_PID_AND_WAIT = """
import os, pathlib, sys, time
pathlib.Path(sys.argv[1], os.environ["RANK"]).write_text(str(os.getpid()))
time.sleep(300)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_deleting_the_namespace_of_a_running_job_stops_its_processes_and_removes_it_all(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    command = ["python3", "-c", WRITE_PID_AND_WAIT, str(tmp_path)]
    job = (
        pytorchjob(namespace, "doomed")
        .master(command=command, restart_policy="OnFailure")
        .workers(1, command=command, restart_policy="OnFailure")
        .doc()
    )

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(PYTORCHJOBS, job, namespace=namespace)

            async def both_started() -> list[int] | None:
                files = await asyncio.to_thread(lambda: sorted(tmp_path.glob("[01]")))
                return [int(f.read_text()) for f in files] if len(files) == 2 else None

            pids = await eventually(both_started, "both replicas started", timeout=TIMEOUT)
            assert all(alive(pid) for pid in pids)
            await client.delete(kube.resource.NAMESPACES, namespace)

            async def namespace_gone() -> bool:
                try:
                    await client.get(kube.resource.NAMESPACES, namespace)
                except kube.NotFound:
                    return True
                return False

            await eventually(namespace_gone, f"namespace {namespace} deleted", timeout=TIMEOUT)
            assert await get(client, PODS, namespace, "doomed-master-0") is None
            assert await get(client, PYTORCHJOBS, namespace, "doomed") is None
            still = [pid for pid in pids if alive(pid)]
            assert not still, f"processes of deleted pods still run: {still}"

    run(body())
