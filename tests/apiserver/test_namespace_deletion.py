"""Deleting a namespace, as the Kubernetes documentation describes it ("Namespaces" and the
Namespace API reference): the namespace turns Terminating at once, everything in it — built-in
and custom resources — is deleted, objects elsewhere are untouched, an object held by a
finalizer keeps the namespace Terminating until it goes, and then the namespace itself goes.

Every scenario is a coroutine over kubetrain's client so that tests/integration can run the
very same ones with kubetrain's own namespace controller doing the work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from kubetrain import kube
from tests.apiserver.cascade import (
    CONFIGMAPS,
    HOLD,
    NAMESPACES,
    configmap,
    create,
    fetch,
    new_namespace,
    release,
    run,
    wait_deleting,
    wait_gone,
    widget,
)

SECRETS = kube.Resource("", "v1", "secrets", kind="Secret")
SERVICES = kube.Resource("", "v1", "services", kind="Service")

Scenario = Callable[[kube.Client], Awaitable[None]]


async def terminating_then_empty_then_gone(client: kube.Client) -> None:
    ns = await new_namespace(client)
    await create(client, ns, configmap("a"))
    await create(client, ns, configmap("b"))
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}}
    await create(client, ns, secret, SECRETS)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {"ports": [{"port": 80}]},
    }
    await create(client, ns, service, SERVICES)

    await client.delete(NAMESPACES, ns)
    marked = await fetch(client, None, ns, NAMESPACES)
    if marked is not None:  # it may already be gone on a fast control plane
        assert marked["metadata"].get("deletionTimestamp")
        assert marked["status"]["phase"] == "Terminating"
    await wait_gone(client, None, ns, NAMESPACES)
    for name, resource in (("a", CONFIGMAPS), ("b", CONFIGMAPS), ("s", SECRETS), ("svc", SERVICES)):
        assert await fetch(client, ns, name, resource) is None


async def other_namespaces_are_untouched(client: kube.Client) -> None:
    doomed = await new_namespace(client)
    kept = await new_namespace(client)
    try:
        await create(client, doomed, configmap("same-name"))
        await create(client, kept, configmap("same-name"))
        await client.delete(NAMESPACES, doomed)
        await wait_gone(client, None, doomed, NAMESPACES)
        assert await fetch(client, kept, "same-name") is not None
    finally:
        await client.delete(NAMESPACES, kept)


async def a_finalizer_on_content_keeps_the_namespace_terminating(client: kube.Client) -> None:
    ns = await new_namespace(client)
    await create(client, ns, configmap("held", finalizers=[HOLD]))
    await create(client, ns, configmap("free"))
    await client.delete(NAMESPACES, ns)
    await wait_deleting(client, ns, "held")
    await wait_gone(client, ns, "free")
    still = await fetch(client, None, ns, NAMESPACES)
    assert still is not None, "the namespace waits for its last object"
    assert still["status"]["phase"] == "Terminating"
    await release(client, ns, "held")
    await wait_gone(client, None, ns, NAMESPACES)


def custom_resource_scenario(widgets: kube.Resource) -> Scenario:
    async def custom_resources_are_deleted_with_the_namespace(client: kube.Client) -> None:
        ns = await new_namespace(client)
        await create(client, ns, widget(widgets, "w1"), widgets)
        await create(client, ns, widget(widgets, "w2", finalizers=[HOLD]), widgets)
        await client.delete(NAMESPACES, ns)
        await wait_gone(client, ns, "w1", widgets)
        await wait_deleting(client, ns, "w2", widgets)
        assert await fetch(client, None, ns, NAMESPACES) is not None
        await release(client, ns, "w2", widgets)
        await wait_gone(client, None, ns, NAMESPACES)

    return custom_resources_are_deleted_with_the_namespace


SCENARIOS: dict[str, Scenario] = {
    "terminating, emptied, gone": terminating_then_empty_then_gone,
    "other namespaces untouched": other_namespaces_are_untouched,
    "finalizer keeps it terminating": a_finalizer_on_content_keeps_the_namespace_terminating,
}


async def _with_client(kubeconfig: str, scenario: Scenario) -> None:
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        await scenario(client)


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_namespace_deletion(kubeconfig: str, scenario: Scenario) -> None:
    run(_with_client(kubeconfig, scenario))


def test_custom_resources_are_deleted_with_their_namespace(
    kubeconfig: str, widgets: kube.Resource
) -> None:
    run(_with_client(kubeconfig, custom_resource_scenario(widgets)))
