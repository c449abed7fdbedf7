"""kubetrain's scheduler and Volcano Queues against an API server: a queue at its capability
holds a gang Pending with a condition and an event that name it, a missing queue and a
closed one admit nothing, a higher-priority gang evicts a lower one (DisruptionTarget, a
delete, events on both sides), and the Queue's status follows its work.

The scheduler runs in-process beside the API server, as in test_scheduler.py (whose
isolation it shares: its own nodes, scheduler name and namespace). Queues are cluster-wide,
so each test names its own. Nothing runs the pods: a test marks them Running or finished,
and completes an eviction itself, as a node would once the pod's processes have stopped.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubetrain import kube
from tests.apiserver.cascade import PRIORITY_CLASSES, eventually
from tests.integration.local.test_scheduler import (
    EVENTS,
    PODS,
    VOLCANO,
    Cluster,
    cycles,
    scenario,
    scheduling,
)

QUEUES = kube.Resource("scheduling.volcano.sh", "v1beta1", "queues", namespaced=False, kind="Queue")


async def served(c: Cluster) -> None:
    found = await c.client.discover(refresh=True)
    if found.find("scheduling.volcano.sh", "queues", "v1beta1") is None:
        pytest.skip("this API server serves no Volcano Queue (the local one does)")


@contextlib.asynccontextmanager
async def queue(c: Cluster, name: str, **spec: Any) -> AsyncIterator[str]:
    """A Queue of the test's own (named after the test's token), deleted afterwards."""
    full = f"{name}-{c.token}"
    body = {
        "apiVersion": QUEUES.api_version,
        "kind": "Queue",
        "metadata": {"name": full},
        "spec": spec,
    }
    await c.client.create(QUEUES, body)
    try:
        yield full
    finally:
        with contextlib.suppress(kube.NotFound):
            await c.client.delete(QUEUES, full)


async def gang(
    c: Cluster,
    name: str,
    size: int,
    *,
    queue_name: str | None,
    cpu: str = "1",
    priority_class: str | None = None,
) -> list[str]:
    """A Volcano PodGroup in ``queue_name`` and its pods; its minResources are what its pods
    request, as the operator writes them."""
    total = float(cpu) * size
    spec: dict[str, Any] = {"minMember": size, "minResources": {"cpu": f"{total:g}"}}
    if queue_name is not None:
        spec["queue"] = queue_name
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    body = {"apiVersion": VOLCANO.api_version, "kind": "PodGroup", "metadata": {"name": name}}
    await c.client.create(VOLCANO, {**body, "spec": spec}, namespace=c.namespace)
    names = [f"{name}-{i}" for i in range(size)]
    for pod in names:
        await c.pod(pod, group=name, volcano=True, cpu=cpu, priority_class=priority_class)
    return names


async def condition(c: Cluster, group: str, reason: str) -> dict[str, Any]:
    """Wait until the Volcano PodGroup is Pending with an Unschedulable condition of
    ``reason``; the condition."""

    async def check() -> dict[str, Any] | None:
        status = await c.group_status(group, volcano=True)
        for found in status.get("conditions") or []:
            if found["type"] == "Unschedulable" and found["reason"] == reason:
                return found if status.get("phase") == "Pending" else None
        return None

    return await eventually(check, f"PodGroup {group} is Pending for {reason}")


async def queue_status(c: Cluster, name: str, **expected: Any) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        status = (await c.client.get(QUEUES, name)).get("status") or {}
        return status if all(status.get(k) == v for k, v in expected.items()) else None

    return await eventually(check, f"Queue {name} shows {expected}")


async def told(c: Cluster, involved: str, reason: str) -> list[dict[str, Any]]:
    """The events of ``reason`` about ``involved``, once there are any (the scheduler posts
    them after the writes they tell of)."""

    async def check() -> list[dict[str, Any]]:
        return await c.events(involved, reason)

    return await eventually(check, f"a {reason} event about {involved}")


async def run_pods(c: Cluster, *names: str) -> None:
    for name in names:
        await c.finish(name, "Running")


def test_a_queue_at_its_capability_holds_a_gang_pending_and_says_why(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await served(c)
        await c.node("cap", cpu="8")
        async with queue(c, "team", capability={"cpu": "2"}) as team, scheduling(c):
            first = await gang(c, "first", 2, queue_name=team)
            await c.bound(*first)
            await run_pods(c, *first)
            second = await gang(c, "second", 2, queue_name=team)
            expected = (
                f"queue resource quota insufficient: insufficient cpu: pod group "
                f"{c.namespace}/second: queue {team} has capability cpu=2, its running pods "
                "hold cpu=2, and this asks for cpu=2; waiting."
            )
            assert await c.waiting(second[0], "quota insufficient") == expected
            found = await condition(c, "second", "NotEnoughResources")
            assert found["message"] == expected
            told = await c.events("second", "Unschedulable")
            assert told[-1]["message"] == expected
            assert told[-1]["involvedObject"]["kind"] == "PodGroup"
            status = await queue_status(c, team, running=1, pending=1)
            assert status["state"] == "Open"
            assert status["allocated"]["cpu"] == "2"
            for name in first:
                await c.finish(name)
            await c.bound(*second)

    scenario(kubeconfig, body)


def test_a_gang_of_a_missing_queue_waits_until_the_queue_exists(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await served(c)
        await c.node("missing", cpu="4")
        name = f"later-{c.token}"
        async with scheduling(c):
            pods = await gang(c, "g", 2, queue_name=name)
            found = await condition(c, "g", "QueueNotFound")
            assert found["message"] == (
                f"pod group {c.namespace}/g: queue {name} not found; waiting for it to be created."
            )
            assert await c.node_of(pods[0]) is None
            async with queue(c, "later"):
                await c.bound(*pods)

    scenario(kubeconfig, body)


def test_a_closed_queue_admits_nothing_new(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await served(c)
        await c.node("closed", cpu="4")
        async with queue(c, "shut") as shut, scheduling(c) as s:
            await c.client.patch(
                QUEUES, shut, {"status": {"state": "Closed"}}, subresource="status"
            )
            pods = await gang(c, "g", 1, queue_name=shut)
            found = await condition(c, "g", "QueueClosed")
            assert f"queue {shut} is Closed and admits nothing new" in found["message"]
            await cycles(s)
            assert await c.node_of(pods[0]) is None
            assert (await queue_status(c, shut, pending=1))["state"] == "Closed"
            await c.client.patch(QUEUES, shut, {"status": {"state": "Open"}}, subresource="status")
            await c.bound(*pods)

    scenario(kubeconfig, body)


def test_a_higher_priority_gang_evicts_a_lower_one_whole(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await c.node("preempt", cpu="4")
        urgent = await c.priority_class("urgent", 1000)
        async with scheduling(c):
            low = await gang(c, "low", 2, queue_name=None, cpu="2")
            await c.bound(*low)
            await run_pods(c, *low)
            high = await gang(c, "high", 2, queue_name=None, cpu="2", priority_class=urgent)
            preemptor = await c.get(high[0])

            async def marked() -> list[dict[str, Any]] | None:
                pods = [await c.get(name) for name in low]
                gone = all(p["metadata"].get("deletionTimestamp") for p in pods)
                return pods if gone else None

            victims = await eventually(marked, "both low pods are being deleted")
            for victim in victims:
                (target,) = [
                    x for x in victim["status"]["conditions"] if x["type"] == "DisruptionTarget"
                ]
                assert (target["status"], target["reason"], target["message"]) == (
                    "True",
                    "PreemptionByScheduler",
                    f"{c.scheduler_name}: preempting to accommodate a higher priority pod",
                )
            node = victims[0]["spec"]["nodeName"]
            for name in low:
                (event,) = await told(c, name, "Preempted")
                assert event["message"] == (
                    f"Preempted by pod {preemptor['metadata']['uid']} on node {node}"
                )
            (lost,) = await told(c, "low", "Preempted")
            assert lost["type"] == "Warning"
            assert lost["message"] == (
                f"pod group {c.namespace}/low: evicted, every pod of it, to make room for pod "
                f"group {c.namespace}/high: priority 1000 over 0 in queue default."
            )
            await c.waiting(high[0], "being evicted")
            assert await c.node_of(high[0]) is None, "nothing starts before the victims end"
            for name in low:  # the node, once their processes have stopped
                await c.client.delete(PODS, name, namespace=c.namespace, grace_period_seconds=0)
            await c.bound(*high)
            (gained,) = await told(c, "high", "Preempting")
            assert f"evicting pod group {c.namespace}/low" in gained["message"]

    scenario(kubeconfig, body)


def test_a_gang_that_may_not_preempt_waits_instead(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await c.node("polite", cpu="2")
        never = f"never-{c.token}"
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": never},
            "value": 1000,
            "preemptionPolicy": "Never",
        }
        await c.client.create(PRIORITY_CLASSES, body)
        c.cluster_objects.append((PRIORITY_CLASSES, never))
        async with scheduling(c) as s:
            low = await gang(c, "low", 1, queue_name=None, cpu="2")
            await c.bound(*low)
            high = await gang(c, "high", 1, queue_name=None, cpu="2", priority_class=never)
            await c.waiting(high[0], "waiting for the whole gang")
            await cycles(s)
            assert not (await c.get(low[0]))["metadata"].get("deletionTimestamp")
            listed = await c.client.list(EVENTS, namespace=c.namespace)
            assert not [e for e in listed["items"] if e["reason"] == "Preempted"]

    scenario(kubeconfig, body)


def test_a_queue_below_its_share_reclaims_from_a_reclaimable_lender_only(
    kubeconfig: str,
) -> None:
    async def body(c: Cluster) -> None:
        await served(c)
        await c.node("reclaim", cpu="4")
        async with (
            queue(c, "lender") as lender,
            queue(c, "keeper", reclaimable=False) as keeper,
            queue(c, "owner") as owner,
            scheduling(c, usage_half_life=1.0),  # what was held a second ago is "lately"
        ):
            lent, kept = [], []
            for i in range(2):
                lent += await gang(c, f"lent{i}", 1, queue_name=lender)
                kept += await gang(c, f"kept{i}", 1, queue_name=keeper)
            await c.bound(*lent, *kept)
            await run_pods(c, *lent, *kept)

            async def held_lately() -> bool:
                for name in (lender, keeper):
                    status = (await c.client.get(QUEUES, name)).get("status") or {}
                    if status.get("allocated", {}).get("cpu") != "2":
                        return False
                return True

            await eventually(held_lately, "both queues hold their 2 CPUs")
            # owner asks for 1 CPU: it deserves 1, lender and keeper 1.5 each, and each holds
            # 2. Lender lent what owner is owed and gives it back; keeper keeps what it has.
            mine = await gang(c, "mine", 1, queue_name=owner)

            async def taken() -> list[str]:
                pods = [await c.get(name) for name in (*lent, *kept)]
                return [
                    p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp")
                ]

            (victim,) = await eventually(taken, "one of the lender's gangs is evicted")
            assert victim in lent
            group = victim.rsplit("-", 1)[0]
            (lost,) = await told(c, group, "Preempted")
            assert (
                f"queue {owner} (at 0% of its fair share) reclaims from queue {lender}"
                in (lost["message"])
            )
            await c.client.delete(PODS, victim, namespace=c.namespace, grace_period_seconds=0)
            await c.bound(*mine)
            for name in kept:
                pod = await c.get(name)
                assert not pod["metadata"].get("deletionTimestamp"), "keeper is not reclaimable"

    scenario(kubeconfig, body)
