"""kubetrain's scheduler against an API server: gangs bound all or nothing, priority,
backfill that delays no reservation, node selectors and taints, quotas, PodGroup status, and
kube's Unschedulable condition and events.

The scheduler runs in-process on kube.Client; nodes are plain Node objects created through
the API (no node agent: a bound pod just stays bound, and a pod "finishes" when the test
patches its phase). The API server may be shared with other tests, and may run a scheduler of
its own, so each test isolates itself: its nodes carry a label the test's scheduler selects
and a taint only the test's pods tolerate, its pods name a scheduler of their own, and the
scheduler handles only the test's namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kubetrain import _aio, kube
from kubetrain.kube import record, watch
from kubetrain.local.scheduler import scheduler
from tests.apiserver.cascade import NAMESPACES, PRIORITY_CLASSES, eventually, run

# The ``kubeconfig`` fixture (the session's API server) comes from this directory's conftest,
# which shares tests/apiserver's.

PODS = scheduler.PODS
NODES = scheduler.NODES
EVENTS = record.EVENTS
QUOTAS = scheduler.RESOURCE_QUOTAS
SERVICE_ACCOUNTS = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
COSCHEDULING = kube.Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", kind="PodGroup")
VOLCANO = kube.Resource("scheduling.volcano.sh", "v1beta1", "podgroups", kind="PodGroup")
TEST_KEY = "scheduler-test.kubetrain.io/id"
RUNTIME = "kubetrain.io/expected-runtime-seconds"
GANG_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
# On a real cluster the node lifecycle controller taints Node objects no kubelet backs.
NODE_LIFECYCLE_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
]


@dataclass
class Cluster:
    """One test's slice of the API server: a namespace, its nodes, its scheduler name."""

    client: kube.Client
    namespace: str
    token: str
    nodes: list[str] = field(default_factory=list)
    cluster_objects: list[tuple[kube.Resource, str]] = field(default_factory=list)

    @property
    def scheduler_name(self) -> str:
        return f"test-scheduler-{self.token}"

    def settings(self, **overrides: Any) -> scheduler.Settings:
        base = scheduler.Settings(
            scheduler_names=frozenset({self.scheduler_name}),
            namespaces=frozenset({self.namespace}),
            node_selector=f"{TEST_KEY}={self.token}",
            resync=0.2,
            watch=watch.Settings(timeout_seconds=60),
        )
        return replace(base, **overrides)

    async def node(
        self,
        name: str,
        *,
        cpu: str = "4",
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
    ) -> str:
        full = f"{name}-{self.token}"
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": full, "labels": {TEST_KEY: self.token, **(labels or {})}},
            "spec": {
                "taints": [
                    {"key": TEST_KEY, "value": self.token, "effect": "NoSchedule"},
                    *(taints or []),
                ]
            },
        }
        await self.client.create(NODES, body)
        self.nodes.append(full)
        await self.capacity(full, cpu)
        return full

    async def capacity(self, node: str, cpu: str) -> None:
        """Set the node's capacity and allocatable (a kubelet reports them as status)."""
        resources = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
        status = {"capacity": resources, "allocatable": resources}
        await self.client.patch(NODES, node, {"status": status}, subresource="status")

    async def pod(
        self,
        name: str,
        *,
        cpu: str = "1",
        group: str | None = None,
        volcano: bool = False,
        runtime: float | None = None,
        priority_class: str | None = None,
        node_selector: dict[str, str] | None = None,
        tolerations: list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        labels: dict[str, str] = {}
        annotations: dict[str, str] = {}
        if group is not None and volcano:
            annotations[VOLCANO_ANNOTATION] = group
        elif group is not None:
            labels[GANG_LABEL] = group
        if runtime is not None:
            annotations[RUNTIME] = str(runtime)
        spec: dict[str, Any] = {
            "schedulerName": self.scheduler_name,
            "containers": [
                {
                    "name": "main",
                    "image": "example/train:1",
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
            "tolerations": [
                {"key": TEST_KEY, "operator": "Equal", "value": self.token, "effect": "NoSchedule"},
                *NODE_LIFECYCLE_TOLERATIONS,
                *(tolerations or []),
            ],
        }
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        if node_selector is not None:
            spec["nodeSelector"] = node_selector
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": spec,
        }
        return await self.client.create(PODS, body, namespace=self.namespace)

    async def podgroup(
        self,
        name: str,
        min_member: int,
        *,
        volcano: bool = False,
        min_resources: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {"minMember": min_member}
        if min_resources is not None:
            spec["minResources"] = min_resources
        resource = VOLCANO if volcano else COSCHEDULING
        body = {
            "apiVersion": resource.api_version,
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": spec,
        }
        return await self.client.create(resource, body, namespace=self.namespace)

    async def priority_class(self, name: str, value: int) -> str:
        full = f"{name}-{self.token}"
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": full},
            "value": value,
        }
        await self.client.create(PRIORITY_CLASSES, body)
        self.cluster_objects.append((PRIORITY_CLASSES, full))
        return full

    async def get(self, name: str, resource: kube.Resource = PODS) -> dict[str, Any]:
        return await self.client.get(resource, name, namespace=self.namespace)

    async def finish(self, name: str, phase: str = "Succeeded") -> None:
        await self.client.patch(
            PODS, name, {"status": {"phase": phase}}, namespace=self.namespace, subresource="status"
        )

    async def node_of(self, name: str) -> str | None:
        return (await self.get(name))["spec"].get("nodeName")

    async def bound(self, *names: str) -> dict[str, str]:
        """Wait until every pod named is bound; their nodes."""

        async def check() -> dict[str, str] | None:
            nodes = {n: await self.node_of(n) for n in names}
            return nodes if all(nodes.values()) else None  # type: ignore[return-value]

        return await eventually(check, f"{', '.join(names)} are bound")

    async def waiting(self, name: str, part: str = "") -> str:
        """Wait until the pod shows PodScheduled=False Unschedulable (with ``part`` in its
        message); the message."""

        async def check() -> str | None:
            pod = await self.get(name)
            assert not pod["spec"].get("nodeName"), f"{name} was bound"
            for c in pod["status"].get("conditions") or []:
                if (
                    c["type"] == "PodScheduled"
                    and c["status"] == "False"
                    and c.get("reason") == "Unschedulable"
                    and part in (c.get("message") or "")
                ):
                    return str(c["message"])
            return None

        return await eventually(check, f"{name} shows why it waits ({part!r})")

    async def events(self, involved: str, reason: str) -> list[dict[str, Any]]:
        listed = await self.client.list(EVENTS, namespace=self.namespace)
        return [
            e
            for e in listed["items"]
            if e["involvedObject"]["name"] == involved and e["reason"] == reason
        ]

    async def group_status(self, name: str, volcano: bool = False) -> dict[str, Any]:
        group = await self.get(name, VOLCANO if volcano else COSCHEDULING)
        return group.get("status") or {}

    async def group_phase(self, name: str, phase: str, volcano: bool = False) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            status = await self.group_status(name, volcano)
            return status if status.get("phase") == phase else None

        return await eventually(check, f"PodGroup {name} is {phase}")


@contextlib.asynccontextmanager
async def cluster(kubeconfig: str) -> AsyncIterator[Cluster]:
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        token = secrets.token_hex(4)
        namespace = f"kt-sched-{token}"
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await client.create(NAMESPACES, body)
        c = Cluster(client, namespace, token)

        async def account() -> bool:
            try:
                await client.get(SERVICE_ACCOUNTS, "default", namespace=namespace)
            except kube.NotFound:
                return False
            return True

        await eventually(account, "the namespace's default ServiceAccount exists")
        try:
            yield c
        finally:
            for resource, name in c.cluster_objects:
                with contextlib.suppress(kube.NotFound):
                    await client.delete(resource, name)
            listed = await client.list(PODS, namespace=namespace)
            for pod in listed["items"]:
                with contextlib.suppress(kube.NotFound):
                    await client.delete(
                        PODS, pod["metadata"]["name"], namespace=namespace, grace_period_seconds=0
                    )
            for node in c.nodes:
                with contextlib.suppress(kube.NotFound):
                    await client.delete(NODES, node)
            with contextlib.suppress(kube.NotFound):
                await client.delete(NAMESPACES, namespace)


@contextlib.asynccontextmanager
async def scheduling(c: Cluster, **overrides: Any) -> AsyncIterator[scheduler.Scheduler]:
    """Run a scheduler for the test's slice until the block ends."""
    s = scheduler.Scheduler(c.client, c.settings(**overrides))
    stop = asyncio.Event()
    async with _aio.TaskGroup() as group:
        group.create_task(s.run(stop), name="test-scheduler")
        try:
            yield s
        finally:
            stop.set()


async def cycles(s: scheduler.Scheduler, count: int = 3) -> None:
    """Wait for ``count`` more scheduling cycles (they come at least every resync)."""
    target = s.cycles + count

    async def done() -> bool:
        return s.cycles >= target

    await eventually(done, f"{count} more scheduling cycles")


def scenario(kubeconfig: str, body: Callable[[Cluster], Awaitable[None]]) -> None:
    async def main() -> None:
        async with cluster(kubeconfig) as c:
            await body(c)

    run(main())


# --- the tests --------------------------------------------------------------------------------


def test_a_gang_waits_as_a_whole_until_it_fits_then_binds_together(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        node = await c.node("gang", cpu="4")
        async with scheduling(c) as s:
            await c.pod("blocker", cpu="1")
            await c.bound("blocker")
            await c.podgroup("g", 4)
            names = [f"g-{i}" for i in range(4)]
            for name in names:
                await c.pod(name, group="g")
            expected = (
                "0/1 nodes are available: 1 Insufficient cpu. "
                "pod group "
                f"{c.namespace}/g: 3/4 pods can be placed; waiting for the whole gang."
            )
            for name in names:
                assert await c.waiting(name, "3/4 pods can be placed") == expected
            assert [await c.node_of(n) for n in names] == [None] * 4, "no member bound alone"
            failed = await c.events("g-0", "FailedScheduling")
            assert [e["message"] for e in failed][-1] == expected
            assert failed[-1]["type"] == "Warning"
            assert failed[-1]["source"]["component"] == c.scheduler_name
            assert failed[-1]["reportingComponent"] == c.scheduler_name
            gang_events = await c.events("g", "Unschedulable")
            assert gang_events, "the PodGroup gets an event too"
            assert gang_events[-1]["involvedObject"]["kind"] == "PodGroup"
            await cycles(s)
            assert len(await c.events("g-0", "FailedScheduling")) == len(failed), (
                "an unchanged message is not sent again"
            )

            await c.finish("blocker")
            assert set((await c.bound(*names)).values()) == {node}
            scheduled = await c.events("g-0", "Scheduled")
            assert [e["message"] for e in scheduled] == [
                f"Successfully assigned {c.namespace}/g-0 to {node}"
            ]
        async with scheduling(c) as s:  # a restart rebuilds from lists and binds nothing again
            await cycles(s)
            assert len(await c.events("g-0", "Scheduled")) == 1

    scenario(kubeconfig, body)


def test_a_restarted_scheduler_repeats_nothing_for_pods_that_still_wait(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await c.node("restart", cpu="1")
        async with scheduling(c):
            await c.pod("too-big", cpu="2")
            first = await c.waiting("too-big", "Insufficient cpu")

            async def sent() -> list[dict[str, Any]]:
                return await c.events("too-big", "FailedScheduling")

            events = await eventually(sent, "the FailedScheduling event is sent")
            assert [e["message"] for e in events] == [first]
        async with scheduling(c) as s:
            await cycles(s)
        assert len(await c.events("too-big", "FailedScheduling")) == 1

    scenario(kubeconfig, body)


def test_a_higher_priority_gang_goes_first(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await c.node("prio", cpu="2")
        high = await c.priority_class("high", 1000)
        await c.podgroup("low", 2)
        await c.podgroup("high", 2)
        for i in range(2):
            await c.pod(f"low-{i}", group="low")
        for i in range(2):
            await c.pod(f"high-{i}", group="high", priority_class=high)
        async with scheduling(c):  # started with both gangs waiting: one cycle sees them all
            await c.bound("high-0", "high-1")
            await c.waiting("low-0", "pod group")
            assert await c.node_of("low-1") is None
            for i in range(2):
                await c.finish(f"high-{i}")
            await c.bound("low-0", "low-1")

    scenario(kubeconfig, body)


def test_backfill_starts_a_small_job_only_when_it_cannot_delay_the_head(kubeconfig: str) -> None:
    def denied(c: Cluster, name: str) -> str:
        return (
            f"pod {c.namespace}/{name} fits now, but starting it could delay pod group "
            f"{c.namespace}/a-head, which is ahead of it in the queue and has the resources "
            "reserved; waiting."
        )

    async def body(c: Cluster) -> None:
        await c.node("backfill", cpu="5")
        async with scheduling(c):
            await c.pod("running", cpu="2", runtime=300)
            await c.bound("running")
            await c.podgroup("a-head", 2)
            for i in range(2):
                await c.pod(f"a-head-{i}", cpu="2", group="a-head")
            await c.waiting("a-head-0", "waiting for the whole gang")
            # Reserved from when "running" is expected to end: 4 of the 5 CPUs.
            await c.pod("b-beside", cpu="1", runtime=1000)
            await c.bound("b-beside")  # it leaves the head's 4 CPUs free
            await c.pod("c-long", cpu="1", runtime=1000)
            await c.pod("d-short", cpu="1", runtime=120)
            # c-long would still run when the head is to start, in its room.
            assert await c.waiting("c-long", "could delay") == denied(c, "c-long")
            # d-short would end before that, but the head has waited far less than 120 s:
            # were "running" to end early, d-short could hold the head up for longer than
            # it has waited.
            assert await c.waiting("d-short", "could delay") == denied(c, "d-short")
            await c.finish("running")
            await c.bound("a-head-0", "a-head-1")
            await c.waiting("c-long", "Insufficient cpu")
            await c.waiting("d-short", "Insufficient cpu")

    scenario(kubeconfig, body)


def test_node_selectors_and_taints_choose_the_node(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        ssd = await c.node("ssd", labels={"disk": "ssd"})
        gpu = await c.node(
            "gpu",
            labels={"accelerator": "gpu"},
            taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        )
        async with scheduling(c):
            await c.pod("wants-ssd", node_selector={"disk": "ssd"})
            await c.pod(
                "wants-gpu",
                node_selector={"accelerator": "gpu"},
                tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            )
            await c.pod("wants-hdd", node_selector={"disk": "hdd"})
            assert await c.bound("wants-ssd", "wants-gpu") == {"wants-ssd": ssd, "wants-gpu": gpu}
            assert await c.waiting("wants-hdd") == (
                "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                "1 node(s) had untolerated taint {gpu: true}."
            )

    scenario(kubeconfig, body)


def test_podgroup_status_follows_the_gang(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        node = await c.node("status", cpu="1")
        async with scheduling(c):
            await c.podgroup("g", 2)
            await c.pod("g-0", group="g")
            await c.pod("g-1", group="g")
            await c.waiting("g-0", "1/2 pods can be placed")
            pending = await c.group_phase("g", "Pending")
            assert pending["scheduleStartTime"]
            await c.capacity(node, "2")
            await c.bound("g-0", "g-1")
            await c.group_phase("g", "Scheduling")
            for name in ("g-0", "g-1"):
                await c.finish(name, "Running")
            running = await c.group_phase("g", "Running")
            assert running["running"] == 2
            for name in ("g-0", "g-1"):
                await c.finish(name)
            finished = await c.group_phase("g", "Finished")
            assert (finished["succeeded"], finished["running"]) == (2, 0)

    scenario(kubeconfig, body)


def test_volcano_podgroups_are_enqueued_and_run(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await c.node("volcano", cpu="2")
        names = frozenset({c.scheduler_name, "volcano"})  # "volcano" adopts groups with no pods
        async with scheduling(c, scheduler_names=names):
            await c.podgroup("v", 2, volcano=True)
            await c.podgroup("huge", 1, volcano=True, min_resources={"cpu": "100k"})
            await c.group_phase("v", "Inqueue", volcano=True)
            pending = await c.group_phase("huge", "Pending", volcano=True)
            (condition,) = pending["conditions"]
            assert (condition["type"], condition["reason"]) == (
                "Unschedulable",
                "NotEnoughResources",
            )
            await c.pod("v-0", group="v", volcano=True)
            await c.pod("v-1", group="v", volcano=True)
            await c.bound("v-0", "v-1")
            running = await c.group_phase("v", "Running", volcano=True)
            assert [x["type"] for x in running["conditions"]] == ["Scheduled"]

    scenario(kubeconfig, body)


def test_a_gang_over_its_namespace_quota_waits(kubeconfig: str) -> None:
    async def body(c: Cluster) -> None:
        await c.node("quota", cpu="8")
        quota = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "cpu"},
            "spec": {"hard": {"requests.cpu": "4"}},
        }
        await c.client.create(QUOTAS, quota, namespace=c.namespace)
        await c.podgroup("g", 3)
        for i in range(3):
            await c.pod(f"g-{i}", group="g")
        # The quota shrinks after the pods were admitted: the gang no longer fits it.
        await c.client.patch(
            QUOTAS, "cpu", {"spec": {"hard": {"requests.cpu": "2"}}}, namespace=c.namespace
        )
        async with scheduling(c):
            message = await c.waiting("g-0", "exceeded quota")
            assert message == (
                f"pod group {c.namespace}/g: exceeded quota: cpu, requested: requests.cpu=3, "
                "used: requests.cpu=0, limited: requests.cpu=2"
            )
            await c.client.patch(
                QUOTAS, "cpu", {"spec": {"hard": {"requests.cpu": "3"}}}, namespace=c.namespace
            )
            await c.bound("g-0", "g-1", "g-2")

    scenario(kubeconfig, body)
