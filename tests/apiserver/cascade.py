"""Helpers for the cascading-deletion tests (garbage collection and namespace deletion),
written with kubetrain's async client: object builders with ownerReferences, a
wait-for-condition with a deadline, and a throwaway CRD so custom resources are covered too.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kubetrain import kube

T = TypeVar("T")

CONFIGMAPS = kube.resource.CONFIGMAPS
NAMESPACES = kube.resource.NAMESPACES
PRIORITY_CLASSES = kube.Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass"
)
CRDS = kube.Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    namespaced=False,
    kind="CustomResourceDefinition",
)
HOLD = "example.com/hold"  # a finalizer nothing removes but the test itself
DEADLINE = 30.0
# kube's garbage collector learns a new resource from discovery, which it resyncs every 30 s,
# and retries with back-off what it could not resolve until then: about a minute at worst
NEW_RESOURCE_DEADLINE = 120.0


def run(coro: Awaitable[T]) -> T:
    """Run one test's coroutine, with asyncio debug on."""

    async def main() -> T:
        return await coro

    return asyncio.run(main(), debug=True)


async def eventually(
    check: Callable[[], Awaitable[T]], what: str, *, timeout: float = DEADLINE
) -> T:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after
    ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"within {timeout:.0f}s: {what}")
        await asyncio.sleep(0.05)


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


async def create_widget_crd(client: kube.Client) -> kube.Resource:
    """A namespaced CRD of a fresh group, served once this returns."""
    group = f"kt{secrets.token_hex(3)}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    await client.create(CRDS, crd)

    async def served() -> kube.Resource | None:
        return (await client.discover(refresh=True)).find(group, "widgets", "v1")

    return await eventually(served, f"widgets.{group} is served")


async def delete_crd(client: kube.Client, resource: kube.Resource) -> None:
    with contextlib.suppress(kube.NotFound):
        await client.delete(CRDS, f"{resource.plural}.{resource.group}")


def widget(
    resource: kube.Resource, name: str, *owners: dict[str, Any], finalizers: list[str] | None = None
) -> dict[str, Any]:
    body = configmap(name, *owners, finalizers=finalizers)
    del body["data"]
    return {**body, "apiVersion": resource.api_version, "kind": "Widget", "spec": {"size": 1}}


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
