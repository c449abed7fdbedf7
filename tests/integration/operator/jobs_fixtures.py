"""Helpers for the v1 job controller tests: the operator (a Manager with every job controller)
running in-process beside a test, and playing the node by writing pod status.

No scheduler or node agent runs: pods the operator creates stay Pending until a test moves
them with :func:`set_pod` through the ``pods/status`` subresource, as a kubelet would.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from kubetrain import _aio, kube
from kubetrain.operator.jobs import children, setup
from kubetrain.operator.jobs.settings import Settings
from kubetrain.operator.runtime import manager
from tests.apiserver.cascade import eventually

PODS = children.PODS
SERVICES = children.SERVICES
EVENTS = kube.Resource("", "v1", "events", kind="Event")


def jobs_of(kind_plural: str) -> kube.Resource:
    kinds = {
        "pytorchjobs": "PyTorchJob",
        "tfjobs": "TFJob",
        "mpijobs": "MPIJob",
        "xgboostjobs": "XGBoostJob",
        "jaxjobs": "JAXJob",
        "paddlejobs": "PaddleJob",
        "mxjobs": "MXJob",
    }
    return kube.Resource("kubeflow.org", "v1", kind_plural, kind=kinds[kind_plural])


PYTORCHJOBS = jobs_of("pytorchjobs")
TFJOBS = jobs_of("tfjobs")
MPIJOBS = jobs_of("mpijobs")


@contextlib.asynccontextmanager
async def operator(
    kubeconfig: str, settings: manager.Settings, jobs: Settings | None = None
) -> AsyncIterator[kube.Client]:
    """The job controllers running beside the block; yields a client for the test's own calls."""
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        mgr = manager.Manager(client, settings)
        setup.setup(mgr, jobs or Settings())
        async with _aio.TaskGroup() as group:
            task = group.create_task(mgr.run(), name="manager")
            try:
                yield client
            finally:
                task.cancel()


async def get(
    client: kube.Client, resource: kube.Resource, namespace: str, name: str
) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, namespace=namespace)
    except kube.NotFound:
        return None


async def items(
    client: kube.Client, resource: kube.Resource, namespace: str
) -> dict[str, dict[str, Any]]:
    listed = await client.list(resource, namespace=namespace)
    return {i["metadata"]["name"]: i for i in listed.get("items") or []}


def condition(job: Mapping[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for c in ((job or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


async def wait_condition(
    client: kube.Client,
    resource: kube.Resource,
    namespace: str,
    name: str,
    type_: str,
    status: str = "True",
    *,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """The job once its ``type_`` condition has ``status``."""

    async def check() -> dict[str, Any] | None:
        job = await get(client, resource, namespace, name)
        found = condition(job, type_)
        return job if found is not None and found.get("status") == status else None

    return await eventually(check, f"{name} has {type_}={status}", timeout=timeout)


async def wait_pods(
    client: kube.Client, namespace: str, names: set[str], *, timeout: float = 30.0
) -> dict[str, dict[str, Any]]:
    """Exactly these pods exist (none being deleted); returns them by name."""

    return await exactly(client, PODS, namespace, names, timeout=timeout)


async def exactly(
    client: kube.Client,
    resource: kube.Resource,
    namespace: str,
    names: set[str],
    *,
    timeout: float = 30.0,
) -> dict[str, dict[str, Any]]:
    """Exactly these objects exist (none being deleted); returns them by name."""

    async def check() -> tuple[dict[str, dict[str, Any]]] | None:
        found = await items(client, resource, namespace)
        live = {n: o for n, o in found.items() if not o["metadata"].get("deletionTimestamp")}
        return (live,) if set(live) == names else None  # a tuple: truthy even when empty

    what = f"{resource.plural} are exactly {sorted(names)}"
    return (await eventually(check, what, timeout=timeout))[0]


async def set_pod(
    client: kube.Client,
    namespace: str,
    name: str,
    phase: str,
    *,
    container: str,
    exit_code: int | None = None,
    restarts: int = 0,
) -> None:
    """What a kubelet reports: the phase, and the default container's state."""
    if exit_code is None:
        state: dict[str, Any] = {"running": {"startedAt": "2024-05-01T12:00:00Z"}}
    else:
        state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
                "startedAt": "2024-05-01T12:00:00Z",
                "finishedAt": "2024-05-01T12:00:01Z",
            }
        }
    status = {
        "phase": phase,
        "containerStatuses": [
            {
                "name": container,
                "image": "example/train:1",
                "imageID": "",
                "ready": phase == "Running",
                "restartCount": restarts,
                "state": state,
            }
        ],
    }
    await client.patch(PODS, name, {"status": status}, namespace=namespace, subresource="status")


async def event_reasons(client: kube.Client, namespace: str, name: str) -> list[str]:
    """Reasons of the events about the object ``name`` in ``namespace``."""
    listed = await client.list(EVENTS, namespace=namespace)
    return [
        e.get("reason", "")
        for e in listed.get("items") or []
        if (e.get("involvedObject") or {}).get("name") == name
    ]
