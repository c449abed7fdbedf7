"""Helpers for the TrainJob end-to-end tests: runtimes for one test, waiting on a TrainJob, and
reading what its pods printed, all through the API of the e2e control plane.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from kubetrain import kube
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import eventually

REPOSITORY = Path(__file__).resolve().parents[2]
API_VERSION = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
JOB_TIMEOUT = 180.0  # seconds for a job: torch starts slowly on two busy cores
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
POLL = 0.5  # seconds between two reads of a job's logs


@contextlib.asynccontextmanager
async def cluster_runtime(client: kube.Client, doc: dict[str, Any]) -> AsyncIterator[None]:
    """A ClusterTrainingRuntime for the block (cluster-scoped: the name must be the test's)."""
    await client.create(kinds.CLUSTER_TRAINING_RUNTIMES, doc)
    try:
        yield
    finally:
        with contextlib.suppress(kube.NotFound):
            await client.delete(kinds.CLUSTER_TRAINING_RUNTIMES, doc["metadata"]["name"])


def condition(job: dict[str, Any], type: str) -> dict[str, Any] | None:
    for item in (job.get("status") or {}).get("conditions") or []:
        if item.get("type") == type:
            return dict(item)
    return None


async def wait_job(
    client: kube.Client,
    namespace: str,
    name: str,
    check: Callable[[dict[str, Any]], bool],
    what: str,
    *,
    timeout: float = JOB_TIMEOUT,
) -> dict[str, Any]:
    async def ready() -> dict[str, Any] | None:
        job = await client.get(kinds.TRAINJOBS, name, namespace=namespace)
        return job if check(job) else None

    return await eventually(ready, f"TrainJob {name}: {what}", timeout=timeout)


async def wait_finished(client: kube.Client, namespace: str, name: str) -> dict[str, Any]:
    """The TrainJob once Complete or Failed."""

    def done(job: dict[str, Any]) -> bool:
        return any(
            (condition(job, t) or {}).get("status") == "True" for t in ("Complete", "Failed")
        )

    return await wait_job(client, namespace, name, done, "finished")


async def pods_of(client: kube.Client, namespace: str, job: str) -> list[dict[str, Any]]:
    found = await client.list(
        kinds.PODS, namespace=namespace, label_selector=f"{JOBSET_NAME}={job}"
    )
    return sorted(found.get("items") or [], key=lambda p: p["metadata"]["name"])


async def log_of(
    client: kube.Client,
    namespace: str,
    pod: str,
    container: str = "node",
    *,
    previous: bool = False,
) -> str:
    path = kinds.PODS.path(namespace, pod, "log")
    query: dict[str, Any] = {"container": container}
    if previous:
        query["previous"] = "true"
    try:
        async with client.stream(path, query=query) as lines:
            return "\n".join([line.decode(errors="replace") async for line in lines])
    except kube.ApiError:
        return ""  # not started yet


async def logs_of(client: kube.Client, namespace: str, job: str) -> dict[str, str]:
    """Every pod's log of the job's ``node`` containers, by pod name."""
    return {
        p["metadata"]["name"]: await log_of(client, namespace, p["metadata"]["name"])
        for p in await pods_of(client, namespace, job)
        if any(c["name"] == "node" for c in p["spec"]["containers"])
    }


async def wait_log(
    client: kube.Client, namespace: str, job: str, pattern: str, *, timeout: float = JOB_TIMEOUT
) -> re.Match[str]:
    """The first match of ``pattern`` in any of the job's node logs."""
    compiled = re.compile(pattern, re.MULTILINE)

    async def found() -> re.Match[str] | None:
        for text in (await logs_of(client, namespace, job)).values():
            match = compiled.search(text)
            if match:
                return match
        await asyncio.sleep(POLL)  # logs cost a request per pod: no busy polling
        return None

    return await eventually(found, f"{job}: a log line /{pattern}/", timeout=timeout)


def explain(job: dict[str, Any], logs: dict[str, str]) -> str:
    """What to print when a job did not do what a test expected."""
    tails = "\n".join(f"--- {pod}\n{text[-1500:]}" for pod, text in logs.items())
    return f"status: {job.get('status')}\n{tails}"
