"""Helpers for the TrainJob controller's integration tests: the operator in-process, the built-in
runtimes under per-test names, TrainJob manifests, and pod life simulated through pods/status.

No node agent runs: pods stay Pending until a test writes their status, the way a kubelet
would, through the ``pods/status`` subresource.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import yaml

from kubetrain import _aio, kube
from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import kinds
from kubetrain.operator.trainjob import setup as trainjob_setup
from tests import builders
from tests.apiserver.cascade import eventually, fetch

RUNTIMES = Path(__file__).resolve().parents[3] / "deploy" / "runtimes"
API_VERSION = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
STARTED = "2030-01-01T00:00:00Z"


def builtin_runtime(file: str, name: str) -> dict[str, Any]:
    """A runtime of ``deploy/runtimes`` under another name (cluster-scoped names are shared)."""
    doc = yaml.safe_load((RUNTIMES / file).read_text())
    doc["metadata"]["name"] = name
    return doc


def trainjob(name: str, runtime: str, **spec: Any) -> dict[str, Any]:
    return builders.trainjob(name, runtime, **spec)


@contextlib.asynccontextmanager
async def operator(
    kubeconfig: str,
    settings: manager.Settings,
    options: trainjob_setup.Settings | None = None,
) -> AsyncIterator[kube.Client]:
    """A client, and the TrainJob controller running on a manager beside the block."""
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        m = manager.Manager(client, settings)
        trainjob_setup.setup(m, options or trainjob_setup.Settings(workers=2))
        async with _aio.TaskGroup() as group:
            task = group.create_task(m.run(), name="manager")
            try:
                yield client
            finally:
                task.cancel()


@contextlib.asynccontextmanager
async def cluster_runtime(client: kube.Client, doc: dict[str, Any]) -> AsyncIterator[dict]:
    """A ClusterTrainingRuntime for the block, deleted after it."""
    created = await client.create(kinds.CLUSTER_TRAINING_RUNTIMES, doc)
    try:
        yield created
    finally:
        with contextlib.suppress(kube.NotFound):
            await client.delete(kinds.CLUSTER_TRAINING_RUNTIMES, doc["metadata"]["name"])


async def get_job(client: kube.Client, namespace: str, name: str) -> dict[str, Any]:
    return await client.get(kinds.TRAINJOBS, name, namespace=namespace)


def condition(job: dict[str, Any], type: str) -> dict[str, Any] | None:
    for item in (job.get("status") or {}).get("conditions") or []:
        if item.get("type") == type:
            return item
    return None


async def wait_condition(
    client: kube.Client,
    namespace: str,
    name: str,
    type: str,
    status: str = "True",
    *,
    timeout: float = 20.0,
) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        found = condition(await get_job(client, namespace, name), type)
        return found if found is not None and found.get("status") == status else None

    return await eventually(check, f"TrainJob {name}: {type}={status}", timeout=timeout)


async def pods_of(client: kube.Client, namespace: str) -> dict[str, dict[str, Any]]:
    found = await client.list(kinds.PODS, namespace=namespace)
    return {p["metadata"]["name"]: p for p in found.get("items") or []}


async def wait_pods(
    client: kube.Client,
    namespace: str,
    names: set[str],
    *,
    where: Callable[[dict[str, Any]], bool] = lambda pod: True,
    timeout: float = 20.0,
) -> dict[str, dict[str, Any]]:
    """Wait until exactly ``names`` exist (those passing ``where``); returns them."""

    async def check() -> list[dict[str, dict[str, Any]]]:
        pods = await pods_of(client, namespace)
        live = {n: p for n, p in pods.items() if not p["metadata"].get("deletionTimestamp")}
        chosen = {n: p for n, p in live.items() if where(p)}
        return [chosen] if set(chosen) == names and set(live) == names else []

    (found,) = await eventually(check, f"pods {sorted(names)}", timeout=timeout)
    return found


async def set_phase(
    client: kube.Client,
    namespace: str,
    name: str,
    phase: str,
    *,
    ready: bool = False,
    exit_code: int | None = None,
    started: str = STARTED,
) -> None:
    """Write a pod's status as a kubelet would (phase, Ready, the container's state)."""
    if phase == "Running":
        state: dict[str, Any] = {"running": {"startedAt": started}}
    elif phase in ("Succeeded", "Failed"):
        code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
        state = {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": started,
                "finishedAt": started,
            }
        }
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    status = {
        "phase": phase,
        "startTime": started,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        "containerStatuses": [
            {
                "name": "node",
                "ready": ready,
                "restartCount": 0,
                "image": "example",
                "imageID": "",
                "state": state,
            }
        ],
    }
    await client.patch(
        kinds.PODS, name, {"status": status}, namespace=namespace, subresource="status"
    )


def env_of(pod: dict[str, Any], container: str = "node") -> dict[str, Any]:
    for item in pod["spec"]["containers"]:
        if item["name"] == container:
            return {e["name"]: e.get("value", e.get("valueFrom")) for e in item.get("env") or []}
    raise AssertionError(f"no container {container} in pod {pod['metadata']['name']}")


async def fetch_object(
    client: kube.Client, resource: kube.Resource, namespace: str, name: str
) -> dict[str, Any] | None:
    return await fetch(client, namespace, name, resource)


def with_name(doc: dict[str, Any], name: str) -> dict[str, Any]:
    copied = copy.deepcopy(doc)
    copied["metadata"]["name"] = name
    return copied
