"""Leader election between operator replicas, on a real coordination.k8s.io/v1 Lease: of two
managers exactly one reconciles; when it stops, it releases the lease and the other takes
over; a leader that cannot renew stops reconciling until it holds the lease again. Leases
here last 2 s (renew deadline 1.5 s, retries every 0.2 s) instead of 15 s."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubetrain import _aio, kube
from kubetrain.operator.runtime import leader, manager
from tests.apiserver.cascade import eventually, fetch, run
from tests.integration.operator.test_runtime import (
    CONFIGMAPS,
    configmap,
    mirror_manager,
    mirrored,
    running,
)

DEADLINE = 15.0


async def lease_spec(client: kube.Client, settings: manager.Settings) -> dict[str, Any]:
    lease = await client.get(leader.LEASES, settings.lease_name, namespace=settings.lease_namespace)
    return lease["spec"]


def test_of_two_managers_one_reconciles_and_the_other_takes_over_when_it_stops(
    kubeconfig: str, namespace: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    settings = manager_settings(leader_election=True)

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            pairs = [mirror_manager(client, settings) for _ in range(2)]
            async with _aio.TaskGroup() as group:
                tasks = [
                    group.create_task(m.run(), name=f"manager-{i}")
                    for i, (m, _) in enumerate(pairs)
                ]
                try:

                    async def one_leads() -> bool:
                        return any(m.leading for m, _ in pairs)

                    await eventually(one_leads, "one manager leads", timeout=DEADLINE)
                    first = 0 if pairs[0][0].leading else 1
                    (leader_m, leader_mirror), (standby, standby_mirror) = (
                        pairs[first],
                        pairs[1 - first],
                    )
                    await client.create(
                        CONFIGMAPS, configmap("p1", {"k": "1"}), namespace=namespace
                    )
                    await eventually(
                        lambda: mirrored(client, namespace, "p1", {"k": "1"}), "p1 is mirrored"
                    )
                    assert leader_m.leading
                    assert not standby.leading
                    assert leader_mirror.calls
                    assert standby_mirror.calls == {}, "the standby must not reconcile"
                    spec = await lease_spec(client, settings)
                    assert spec["holderIdentity"] == leader_m.identity
                    assert spec["leaseDurationSeconds"] == 2
                    transitions = spec["leaseTransitions"]

                    # the leader stops cleanly: it releases the lease, the standby takes it
                    tasks[first].cancel()
                    await asyncio.wait([tasks[first]])

                    async def standby_leads() -> bool:
                        return standby.leading

                    # taken at the standby's next try (0.2 to 0.44 s), not after the 2 s lease
                    await eventually(standby_leads, "the standby takes over", timeout=1.9)
                    spec = await lease_spec(client, settings)
                    assert spec["holderIdentity"] == standby.identity
                    assert spec["leaseTransitions"] == transitions + 1
                    await client.create(
                        CONFIGMAPS, configmap("p2", {"k": "2"}), namespace=namespace
                    )
                    await eventually(
                        lambda: mirrored(client, namespace, "p2", {"k": "2"}), "p2 is mirrored"
                    )
                    assert standby_mirror.calls
                finally:
                    for task in tasks:
                        task.cancel()

    run(body())


def test_a_leader_that_cannot_renew_stops_reconciling_until_it_leads_again(
    kubeconfig: str, namespace: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    settings = manager_settings(leader_election=True)

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            m, _ = mirror_manager(client, settings)
            async with running(m):

                async def leads() -> bool:
                    return m.leading

                async def follows() -> bool:
                    return not m.leading

                await eventually(leads, "the manager leads", timeout=DEADLINE)
                # someone else takes the lease (as a partitioned leader's successor would)
                lease = await client.get(
                    leader.LEASES, settings.lease_name, namespace=settings.lease_namespace
                )
                lease["spec"]["holderIdentity"] = "intruder"
                lease["spec"]["leaseDurationSeconds"] = 2
                await client.replace(leader.LEASES, lease, namespace=settings.lease_namespace)
                await eventually(follows, "the manager gives up leading", timeout=DEADLINE)
                await client.create(CONFIGMAPS, configmap("p", {"k": "1"}), namespace=namespace)
                assert await fetch(client, namespace, "p-mirror") is None
                # the intruder never renews: its lease runs out and the manager leads again
                await eventually(leads, "the manager leads again", timeout=DEADLINE)
                await eventually(
                    lambda: mirrored(client, namespace, "p", {"k": "1"}), "p is mirrored"
                )
                spec = await lease_spec(client, settings)
                assert spec["holderIdentity"] == m.identity

    run(body())
