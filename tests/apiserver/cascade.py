"""Helpers for the cascading-deletion tests (garbage collection and namespace deletion),
written with kubetrain's async client: object builders with ownerReferences and ways to
wait on them (the throwaway CRD and the waits themselves are tests.fixtures').
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable
from typing import Any, TypeVar

from kubetrain import kube
from tests.fixtures.waits import eventually

T = TypeVar("T")

CONFIGMAPS = kube.resource.CONFIGMAPS
NAMESPACES = kube.resource.NAMESPACES
PRIORITY_CLASSES = kube.Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass"
)
HOLD = "example.com/hold"  # a finalizer nothing removes but the test itself
# kube's garbage collector learns a new resource from discovery, which it resyncs every 30 s,
# and retries with back-off what it could not resolve until then: about a minute at worst
NEW_RESOURCE_DEADLINE = 120.0


def run(coro: Awaitable[T]) -> T:
    """Run one test's coroutine, with asyncio debug on."""

    async def main() -> T:
        return await coro

    return asyncio.run(main(), debug=True)


def ref(owner: dict[str, Any], *, block: bool | None = None, uid: str | None = None) -> dict:
    """An ownerReference to ``owner`` (``uid`` overrides its uid, for dangling references)."""
    reference = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": uid or owner["metadata"]["uid"],
    }
    if block is not None:
        reference["blockOwnerDeletion"] = block
    return reference


def configmap(
    name: str, *owners: dict[str, Any], finalizers: list[str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if owners:
        metadata["ownerReferences"] = list(owners)
    if finalizers:
        metadata["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": name}}


async def create(
    client: kube.Client,
    namespace: str | None,
    body: dict[str, Any],
    resource: kube.Resource = CONFIGMAPS,
) -> dict[str, Any]:
    created = await client.create(resource, body, namespace=namespace)
    created.setdefault("apiVersion", resource.api_version)
    created.setdefault("kind", resource.kind)
    return created


async def fetch(
    client: kube.Client, namespace: str | None, name: str, resource: kube.Resource = CONFIGMAPS
) -> dict[str, Any] | None:
    """The object, or None if there is none."""
    try:
        return await client.get(resource, name, namespace=namespace)
    except kube.NotFound:
        return None


async def wait_gone(
    client: kube.Client, namespace: str | None, name: str, resource: kube.Resource = CONFIGMAPS
) -> None:
    async def gone() -> bool:
        return await fetch(client, namespace, name, resource) is None

    await eventually(gone, f"{resource.group_resource} {namespace or ''}/{name} is deleted")


async def wait_deleting(
    client: kube.Client, namespace: str | None, name: str, resource: kube.Resource = CONFIGMAPS
) -> dict[str, Any]:
    """Wait until the object carries a deletionTimestamp; return it."""

    async def deleting() -> dict[str, Any] | None:
        obj = await fetch(client, namespace, name, resource)
        assert obj is not None, f"{name} vanished instead of waiting in deletion"
        return obj if obj["metadata"].get("deletionTimestamp") else None

    return await eventually(deleting, f"{name} is marked for deletion")


async def release(
    client: kube.Client, namespace: str | None, name: str, resource: kube.Resource = CONFIGMAPS
) -> None:
    """Remove the test's own finalizer, letting the object go."""
    obj = await client.get(resource, name, namespace=namespace)
    kept = [f for f in obj["metadata"].get("finalizers") or [] if f != HOLD]
    patch = {
        "metadata": {
            "resourceVersion": obj["metadata"]["resourceVersion"],
            "finalizers": kept or None,
        }
    }
    await client.patch(resource, name, patch, namespace=namespace)


async def new_namespace(client: kube.Client, prefix: str = "kt-") -> str:
    name = prefix + secrets.token_hex(4)
    await client.create(
        NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def widget(
    resource: kube.Resource, name: str, *owners: dict[str, Any], finalizers: list[str] | None = None
) -> dict[str, Any]:
    body = configmap(name, *owners, finalizers=finalizers)
    del body["data"]
    return {**body, "apiVersion": resource.api_version, "kind": "Widget", "spec": {"replicas": 1}}


async def wait_collected(client: kube.Client, resource: kube.Resource) -> None:
    """Wait until the garbage collector collects objects of ``resource`` (a new CRD's): an
    owner goes, and its dependent of that resource follows, within
    :data:`NEW_RESOURCE_DEADLINE`. Until then a collector that does not yet watch the
    resource neither collects nor orphans its objects."""
    ns = await new_namespace(client)
    try:
        owner = await create(client, ns, configmap("owner"))
        await create(client, ns, widget(resource, "dependent", ref(owner)), resource)
        await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Background")

        async def collected() -> bool:
            return await fetch(client, ns, "dependent", resource) is None

        await eventually(
            collected,
            f"the garbage collector collects {resource.group_resource}",
            timeout=NEW_RESOURCE_DEADLINE,
        )
    finally:
        with contextlib.suppress(kube.NotFound):
            await client.delete(NAMESPACES, ns)
