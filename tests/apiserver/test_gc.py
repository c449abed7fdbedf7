"""Garbage collection of dependents, as the Kubernetes documentation describes it
("Garbage Collection" and "Owners and Dependents", concepts/architecture and
concepts/overview/working-with-objects):

- Background cascading deletion: the owner goes at once, the garbage collector deletes the
  dependents afterwards. It is the default for most resources.
- Foreground cascading deletion: the owner stays, "deletion in progress" (deletionTimestamp
  and the ``foregroundDeletion`` finalizer), while the dependents are deleted; it goes once
  every dependent with ``ownerReference.blockOwnerDeletion=true`` is gone.
- Orphan: the dependents stay, without the reference to the deleted owner.
- A dependent whose owner reference cannot be resolved (no such object, or an object of that
  name with another uid, or in another namespace) is collected; one that still has a live
  owner is not.

Every scenario is a coroutine over kubetrain's client so that tests/integration can run the
very same ones with kubetrain's own garbage collector as the only collector.
"""

from __future__ import annotations

import contextlib
import secrets
import uuid
from collections.abc import Awaitable, Callable

import pytest

from kubetrain import kube
from tests.apiserver.cascade import (
    CONFIGMAPS,
    HOLD,
    PRIORITY_CLASSES,
    configmap,
    create,
    eventually,
    fetch,
    new_namespace,
    ref,
    release,
    run,
    wait_collected,
    wait_deleting,
    wait_gone,
    widget,
)

Scenario = Callable[[kube.Client, str], Awaitable[None]]


async def background_deletion_removes_the_dependents(client: kube.Client, ns: str) -> None:
    owner = await create(client, ns, configmap("owner"))
    for name in ("dep-1", "dep-2"):
        await create(client, ns, configmap(name, ref(owner)))
    await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Background")
    await wait_gone(client, ns, "owner")
    await wait_gone(client, ns, "dep-1")
    await wait_gone(client, ns, "dep-2")


async def deletion_without_a_policy_cascades_in_the_background(
    client: kube.Client, ns: str
) -> None:
    owner = await create(client, ns, configmap("owner"))
    await create(client, ns, configmap("dep", ref(owner, block=True)))
    await client.delete(CONFIGMAPS, "owner", namespace=ns)
    await wait_gone(client, ns, "owner")
    await wait_gone(client, ns, "dep")


async def cascading_is_transitive(client: kube.Client, ns: str) -> None:
    owner = await create(client, ns, configmap("a"))
    child = await create(client, ns, configmap("b", ref(owner)))
    await create(client, ns, configmap("c", ref(child)))
    await client.delete(CONFIGMAPS, "a", namespace=ns, propagation_policy="Background")
    await wait_gone(client, ns, "b")
    await wait_gone(client, ns, "c")


async def foreground_keeps_the_owner_until_blocking_dependents_are_gone(
    client: kube.Client, ns: str
) -> None:
    owner = await create(client, ns, configmap("owner"))
    await create(client, ns, configmap("blocking", ref(owner, block=True), finalizers=[HOLD]))
    await create(client, ns, configmap("plain", ref(owner, block=True)))
    await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Foreground")

    marked = await fetch(client, ns, "owner")
    assert marked is not None, "a foreground deletion keeps the owner for now"
    assert marked["metadata"].get("deletionTimestamp")
    assert "foregroundDeletion" in marked["metadata"]["finalizers"]

    await wait_gone(client, ns, "plain")
    await wait_deleting(client, ns, "blocking")  # the collector deleted it; HOLD keeps it
    still = await fetch(client, ns, "owner")
    assert still is not None, "the owner must wait for its blocking dependent"
    assert "foregroundDeletion" in still["metadata"]["finalizers"]

    await release(client, ns, "blocking")
    await wait_gone(client, ns, "blocking")
    await wait_gone(client, ns, "owner")


async def foreground_does_not_wait_for_non_blocking_dependents(
    client: kube.Client, ns: str
) -> None:
    owner = await create(client, ns, configmap("owner"))
    await create(client, ns, configmap("loose", ref(owner, block=False), finalizers=[HOLD]))
    await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Foreground")
    await wait_gone(client, ns, "owner")
    await wait_deleting(client, ns, "loose")  # deleted too, just not waited for
    await release(client, ns, "loose")
    await wait_gone(client, ns, "loose")


async def foreground_waits_through_a_chain_of_blocking_dependents(
    client: kube.Client, ns: str
) -> None:
    top = await create(client, ns, configmap("top"))
    middle = await create(client, ns, configmap("middle", ref(top, block=True)))
    await create(client, ns, configmap("bottom", ref(middle, block=True), finalizers=[HOLD]))
    await client.delete(CONFIGMAPS, "top", namespace=ns, propagation_policy="Foreground")
    await wait_deleting(client, ns, "bottom")
    assert await fetch(client, ns, "middle") is not None, "middle waits for bottom"
    assert await fetch(client, ns, "top") is not None, "top waits for middle"
    await release(client, ns, "bottom")
    await wait_gone(client, ns, "bottom")
    await wait_gone(client, ns, "middle")
    await wait_gone(client, ns, "top")


async def orphan_keeps_the_dependents_without_the_reference(client: kube.Client, ns: str) -> None:
    owner = await create(client, ns, configmap("owner"))
    other = await create(client, ns, configmap("other"))
    await create(client, ns, configmap("only", ref(owner, block=True)))
    await create(client, ns, configmap("shared", ref(owner), ref(other)))
    await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Orphan")
    await wait_gone(client, ns, "owner")

    only = await fetch(client, ns, "only")
    shared = await fetch(client, ns, "shared")
    assert only is not None, "an orphaned dependent stays"
    assert shared is not None, "an orphaned dependent stays"
    assert not only["metadata"].get("ownerReferences")
    assert [r["uid"] for r in shared["metadata"]["ownerReferences"]] == [other["metadata"]["uid"]]


async def a_dependent_with_another_live_owner_stays(client: kube.Client, ns: str) -> None:
    first = await create(client, ns, configmap("first"))
    second = await create(client, ns, configmap("second"))
    await create(client, ns, configmap("dep", ref(first), ref(second)))
    await client.delete(CONFIGMAPS, "first", namespace=ns, propagation_policy="Background")
    await wait_gone(client, ns, "first")

    async def reference_dropped() -> bool:
        dep = await fetch(client, ns, "dep")
        assert dep is not None, "a dependent with a live owner is not collected"
        uids = [r["uid"] for r in dep["metadata"].get("ownerReferences") or []]
        return uids == [second["metadata"]["uid"]]

    await eventually(reference_dropped, "the reference to the deleted owner is removed")


async def a_dependent_of_an_owner_that_never_existed_is_collected(
    client: kube.Client, ns: str
) -> None:
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost"}}
    await create(client, ns, configmap("orphaned", ref(ghost, uid=str(uuid.uuid4()))))
    await wait_gone(client, ns, "orphaned")


async def a_reference_whose_uid_does_not_match_the_named_owner_is_absent(
    client: kube.Client, ns: str
) -> None:
    owner = await create(client, ns, configmap("owner"))
    await create(client, ns, configmap("mismatched", ref(owner, uid=str(uuid.uuid4()))))
    await wait_gone(client, ns, "mismatched")
    assert await fetch(client, ns, "owner") is not None, "the named object is not touched"


async def an_owner_in_another_namespace_counts_as_absent(client: kube.Client, ns: str) -> None:
    elsewhere = await new_namespace(client)
    try:
        owner = await create(client, elsewhere, configmap("owner"))
        await create(client, ns, configmap("cross", ref(owner)))
        await wait_gone(client, ns, "cross")
        assert await fetch(client, elsewhere, "owner") is not None
    finally:
        await client.delete(kube.resource.NAMESPACES, elsewhere)


async def a_cluster_scoped_owner_collects_namespaced_dependents(
    client: kube.Client, ns: str
) -> None:
    name = f"kt-gc-{secrets.token_hex(4)}"
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": 7,
    }
    owner = await create(client, None, body, PRIORITY_CLASSES)
    try:
        await create(client, ns, configmap("dep", ref(owner)))
        await client.delete(PRIORITY_CLASSES, name, propagation_policy="Background")
        await wait_gone(client, ns, "dep")
    finally:
        with contextlib.suppress(kube.NotFound):
            await client.delete(PRIORITY_CLASSES, name)


def custom_resource_scenarios(widgets: kube.Resource) -> dict[str, Scenario]:
    """Scenarios over custom resources, which take no strategic merge patch."""

    async def custom_resources_cascade_both_ways(client: kube.Client, ns: str) -> None:
        owner = await create(client, ns, widget(widgets, "owner"), widgets)
        await create(client, ns, configmap("cm", ref(owner)))
        await create(client, ns, widget(widgets, "w", ref(owner)), widgets)
        await client.delete(widgets, "owner", namespace=ns, propagation_policy="Background")
        await wait_gone(client, ns, "cm")
        await wait_gone(client, ns, "w", widgets)

    async def custom_resources_can_be_orphaned(client: kube.Client, ns: str) -> None:
        owner = await create(client, ns, configmap("owner"))
        await create(client, ns, widget(widgets, "w", ref(owner, block=True)), widgets)
        await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Orphan")
        await wait_gone(client, ns, "owner")
        kept = await fetch(client, ns, "w", widgets)
        assert kept is not None
        assert not kept["metadata"].get("ownerReferences")

    async def a_custom_owner_in_the_foreground_waits(client: kube.Client, ns: str) -> None:
        owner = await create(client, ns, widget(widgets, "owner"), widgets)
        await create(
            client, ns, widget(widgets, "w", ref(owner, block=True), finalizers=[HOLD]), widgets
        )
        await client.delete(widgets, "owner", namespace=ns, propagation_policy="Foreground")
        await wait_deleting(client, ns, "w", widgets)
        assert await fetch(client, ns, "owner", widgets) is not None
        await release(client, ns, "w", widgets)
        await wait_gone(client, ns, "owner", widgets)

    return {
        "custom resources cascade": custom_resources_cascade_both_ways,
        "custom resources orphaned": custom_resources_can_be_orphaned,
        "custom owner in the foreground": a_custom_owner_in_the_foreground_waits,
    }


SCENARIOS: dict[str, Scenario] = {
    "background": background_deletion_removes_the_dependents,
    "default is background": deletion_without_a_policy_cascades_in_the_background,
    "transitive": cascading_is_transitive,
    "foreground waits for blocking": foreground_keeps_the_owner_until_blocking_dependents_are_gone,
    "foreground skips non-blocking": foreground_does_not_wait_for_non_blocking_dependents,
    "foreground chain": foreground_waits_through_a_chain_of_blocking_dependents,
    "orphan": orphan_keeps_the_dependents_without_the_reference,
    "another live owner": a_dependent_with_another_live_owner_stays,
    "owner never existed": a_dependent_of_an_owner_that_never_existed_is_collected,
    "uid mismatch": a_reference_whose_uid_does_not_match_the_named_owner_is_absent,
    "owner in another namespace": an_owner_in_another_namespace_counts_as_absent,
    "cluster-scoped owner": a_cluster_scoped_owner_collects_namespaced_dependents,
}


async def _with_client(kubeconfig: str, scenario: Scenario, namespace: str) -> None:
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        await scenario(client, namespace)


@pytest.fixture(scope="module")
def widgets(kubeconfig: str, widgets: kube.Resource) -> kube.Resource:
    """The module's CRD, once the garbage collector collects its objects (kube's learns of it
    within about a minute): the scenarios test collection, not that delay."""

    async def collected() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await wait_collected(client, widgets)

    run(collected())
    return widgets


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_garbage_collection(kubeconfig: str, namespace: str, scenario: Scenario) -> None:
    run(_with_client(kubeconfig, scenario, namespace))


@pytest.mark.parametrize(
    "name",
    ["custom resources cascade", "custom resources orphaned", "custom owner in the foreground"],
)
def test_garbage_collection_of_custom_resources(
    kubeconfig: str, namespace: str, widgets: kube.Resource, name: str
) -> None:
    run(_with_client(kubeconfig, custom_resource_scenarios(widgets)[name], namespace))
