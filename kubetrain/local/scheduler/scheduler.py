"""The scheduler controller: watches the API server, decides with
:mod:`~kubetrain.local.scheduler.policy`, and writes what it decided. An ordinary API client,
as kube-scheduler is; on the local control plane it is the only scheduler.

What it watches: Pods (all of them: pods bound to a node count against it whoever placed
them), Nodes (those matching ``Settings.node_selector``), PodGroups of both kinds and Volcano
Queues when their CRDs are served (discovery, looked at again every ``rediscover_every``
seconds while one is missing), PriorityClasses and ResourceQuotas. It schedules the pods that
have no node, whose ``spec.schedulerName`` is one of ``Settings.scheduler_names`` (and, where
``Settings.namespaces`` is set, in those namespaces), that carry no scheduling gate, and that
are not being deleted; those same pods, once they hold a node, are the ones it counts in
their queues and may evict.

What it writes:

- a ``pods/binding`` (a v1 Binding, with the pod's uid as precondition) per pod placed, and a
  Normal ``Scheduled`` event "Successfully assigned ns/pod to node". A gang's pods are bound
  together in one cycle. A bind is never repeated once answered: a pod it bound counts as
  bound (kube's "assumed" pods) until the watch shows its node, and a 409 means it is bound
  already. One whose answer was lost is sent again at once (the 409 tells it got through),
  and only when that fails too is it assumed done for ``ASSUME_TTL``;
- for a pod that waits, ``PodScheduled=False`` reason ``Unschedulable`` with kube's message
  through ``pods/status``, and a Warning ``FailedScheduling`` event, both only when the
  message differs from what the pod shows (or what this scheduler just wrote): a repeated
  cycle or a restart sends nothing new; for a gang also a Warning ``Unschedulable`` event on
  its PodGroup;
- PodGroup status (:mod:`~kubetrain.local.scheduler.gangs`), written whole, only when it
  differs from what is stored, through ``/status`` where the CRD has that subresource (the
  scheduler-plugins one does, the Volcano one does not), for the groups whose pods it
  schedules (a group with no pods yet: the kind's usual scheduler name decides). A Volcano
  group is enqueued (``Inqueue``) only once its queue admits its ``minResources``
  (:mod:`~kubetrain.local.scheduler.queues`); until then it stays ``Pending`` with an
  ``Unschedulable`` condition and a Warning event that say which queue and why;
- Queue status (state, PodGroups per phase, allocated), through ``/status``, when it
  changes;
- evictions (:mod:`~kubetrain.local.scheduler.preemption`): for each victim pod a
  ``DisruptionTarget`` condition (reason ``PreemptionByScheduler``) through ``pods/status``,
  then a delete (with its uid as precondition, and its own grace period), and kube's Normal
  ``Preempted`` event; a Warning ``Preempted`` event on a victim gang's PodGroup and a Normal
  ``Preempting`` one on the preemptor's, naming each other and why. A pod it evicted counts
  as being deleted until the watch shows it so (or ``ASSUME_TTL`` passes), so no later cycle
  evicts it again or counts on its room twice.

When: a cycle runs once every watch has listed, then after each change it hears of (with a
short debounce, so pods created together are seen together; a gang created pod by pod simply
waits, with a message that does not change, until its last pod is there), and every
``resync`` seconds or at the next scheduleTimeoutSeconds deadline, whichever comes first. A
cycle never runs more often than it takes, so a large cluster costs at most half the loop.

Restart-safe and level-triggered: everything comes from the watches; nothing is kept that
the API server does not hold, apart from the short-lived memory of its own writes that the
watch has not yet echoed.

Must not: bind a pod twice, write a pod's spec, or place pods of another scheduler.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import logging
import socket
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain import _aio, accessors, kube
from kubetrain.kube import record, tasks, watch
from kubetrain.local.scheduler import (
    amounts,
    bodies,
    estimates,
    fit,
    gangs,
    messages,
    policy,
    preemption,
    queue,
    queues,
    quotas,
    timestamps,
)

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAMES: Final = frozenset(
    {"default-scheduler", "volcano", "scheduler-plugins-scheduler", "kube-batch"}
)
PODS: Final = kube.resource.PODS
NODES: Final = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")
PRIORITY_CLASSES: Final = kube.Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass"
)
RESOURCE_QUOTAS: Final = kube.Resource("", "v1", "resourcequotas", kind="ResourceQuota")
POD_GROUP_KINDS: Final = (gangs.COSCHEDULING, gangs.VOLCANO)
QUEUES: Final = kube.Resource(
    "scheduling.volcano.sh", "v1beta1", "queues", namespaced=False, kind="Queue"
)
ASSUME_TTL: Final = 30.0  # seconds a bind whose answer was lost counts as done
BIND_ATTEMPTS: Final = 3  # sends of one bind whose answer is lost, before assuming it done
TERMINAL: Final = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class Settings:
    scheduler_names: frozenset[str] = DEFAULT_SCHEDULER_NAMES
    namespaces: frozenset[str] | None = None  # None: every namespace
    node_selector: str | None = None  # a label selector; None: every node
    debounce: float = 0.005  # seconds to let a burst of changes arrive before a cycle
    resync: float = 5.0  # seconds between cycles when nothing happens
    rediscover_every: float = 30.0  # seconds between looks for PodGroup kinds not served
    write_concurrency: int = 16
    preemption: bool = True  # evict lower-priority or over-share work (preemption, reclaim)
    usage_half_life: float = 600.0  # seconds: how fast what a queue held lately is forgotten
    retry_initial: float = 0.1  # a watch that failed with an error retrying cannot fix
    retry_max: float = 10.0
    options: policy.Options = field(default_factory=policy.Options)
    watch: watch.Settings = field(default_factory=watch.Settings)


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _uid(obj: Mapping[str, Any]) -> str:
    return str(accessors.metadata(obj).get("uid") or "")


def _version(obj: Mapping[str, Any]) -> str:
    return str(accessors.metadata(obj).get("resourceVersion") or "")


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = accessors.metadata(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


@dataclass
class _Store:
    """One watched resource's objects, by key."""

    key: Callable[[Mapping[str, Any]], Any]
    objects: dict[Any, dict[str, Any]] = field(default_factory=dict)
    synced: asyncio.Event = field(default_factory=asyncio.Event)


class Scheduler:
    def __init__(
        self,
        client: kube.Client,
        settings: Settings | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.settings = settings or Settings()
        self.clock = clock
        self.host = socket.gethostname()
        # the events of every profile, written in the background while run() runs
        self.events = record.Broadcaster(client)
        self._recorders: dict[str, record.Recorder] = {}
        self.pods = _Store(_uid)
        self.nodes = _Store(lambda n: str(accessors.metadata(n).get("name") or ""))
        self.priority_classes = _Store(lambda c: str(accessors.metadata(c).get("name") or ""))
        self.quotas = _Store(_key)
        self.groups: dict[str, _Store] = {}  # by apiVersion, while served
        self.group_resources: dict[str, kube.Resource] = {}
        self.group_status_subresource: dict[str, bool] = {}
        self.queues: _Store | None = None  # while the Queue kind is served
        self.queue_status_subresource = False
        self.cycles = 0
        self._wake = asyncio.Event()
        self._tasks = tasks.Tasks()
        self._assumed: dict[str, tuple[str, float]] = {}  # pod uid → (node, until)
        self._shown: dict[str, tuple[str, str]] = {}  # pod uid → (resourceVersion, message)
        self._written: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = {}
        self._infos: dict[str, tuple[str, fit.PodInfo, amounts.Amounts]] = {}  # by pod uid
        self._evicting: dict[str, float] = {}  # pod uid → until when it counts as deleted
        self._queue_written: dict[str, tuple[str, dict[str, Any]]] = {}
        self._writes = asyncio.Semaphore(self.settings.write_concurrency)
        self._next_deadline: float | None = None

    # -- running ---------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Schedule until cancelled (or until ``stop`` is set)."""
        log.info("scheduler starting for %s", ", ".join(sorted(self.settings.scheduler_names)))
        async with self._tasks.running(stop, "scheduler"):
            await self._discover_groups()
            self._tasks.spawn(self._watch(PODS, self.pods, self._on_pod), "scheduler-watch-pods")
            self._tasks.spawn(
                self._watch(NODES, self.nodes, label_selector=self.settings.node_selector),
                "scheduler-watch-nodes",
            )
            self._tasks.spawn(
                self._watch(PRIORITY_CLASSES, self.priority_classes),
                "scheduler-watch-priorityclasses",
            )
            self._tasks.spawn(self._watch(RESOURCE_QUOTAS, self.quotas), "scheduler-watch-quotas")
            for api_version in list(self.group_resources):
                self._watch_groups(api_version)
            if self.queues is not None:
                self._watch_queues()
            self._tasks.spawn(self._loop(), "scheduler-loop")
            self._tasks.spawn(self._rediscover(), "scheduler-rediscover")
            self._tasks.spawn(
                tasks.guarded("scheduler events", self.events.run()), "scheduler-events"
            )
        log.info("scheduler stopped")

    async def _discover_groups(self) -> None:
        """Which PodGroup kinds are served (retrying until discovery answers)."""
        delay = self.settings.retry_initial
        while True:
            try:
                found = await self.client.discover(refresh=True)
                break
            except kube.ApiError as exc:
                log.warning("discovery failed: %s; retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(self.settings.retry_max, delay * 2)
        for api_version in POD_GROUP_KINDS:
            group, version = kube.split_api_version(api_version)
            resource = found.find(group, "podgroups", version)
            if resource is not None and api_version not in self.group_resources:
                self.group_resources[api_version] = resource
                subresources = found.subresources.get(resource, frozenset())
                self.group_status_subresource[api_version] = "status" in subresources
                self.groups[api_version] = _Store(_key)
        queue_resource = found.find(QUEUES.group, QUEUES.plural, QUEUES.version)
        if self.queues is None and queue_resource is not None:
            subresources = found.subresources.get(queue_resource, frozenset())
            self.queue_status_subresource = "status" in subresources
            self.queues = _Store(lambda q: str(accessors.metadata(q).get("name") or ""))

    def _watch_groups(self, api_version: str) -> None:
        self._tasks.spawn(
            self._watch(
                self.group_resources[api_version],
                self.groups[api_version],
                optional_kind=api_version,
            ),
            f"scheduler-watch-podgroups-{api_version}",
        )

    def _watch_queues(self) -> None:
        assert self.queues is not None
        self._tasks.spawn(
            self._watch(QUEUES, self.queues, optional_kind=QUEUES.api_version),
            "scheduler-watch-queues",
        )

    async def _rediscover(self) -> None:
        while True:
            await asyncio.sleep(self.settings.rediscover_every)
            served = all(k in self.group_resources for k in POD_GROUP_KINDS)
            if served and self.queues is not None:
                continue
            known = set(self.group_resources)
            had_queues = self.queues is not None
            await self._discover_groups()
            for api_version in set(self.group_resources) - known:
                log.info("PodGroup %s is served now; watching it", api_version)
                self._watch_groups(api_version)
            if self.queues is not None and not had_queues:
                log.info("Queue %s is served now; watching it", QUEUES.api_version)
                self._watch_queues()

    async def _watch(
        self,
        resource: kube.Resource,
        store: _Store,
        on_event: Callable[[str, dict[str, Any], dict[str, Any] | None], bool] | None = None,
        *,
        label_selector: str | None = None,
        optional_kind: str | None = None,
    ) -> None:
        """Keep ``store`` equal to what the server holds. A watch that ends on an error
        retrying cannot fix is started again (with a fresh list) after a growing delay; a
        PodGroup kind that is no longer served is forgotten until discovery finds it again."""
        failures = 0
        while True:
            try:
                w = self.client.watch(
                    resource, label_selector=label_selector, settings=self.settings.watch
                )
                async with contextlib.aclosing(aiter(w)) as stream:
                    async for event in stream:
                        failures = 0
                        self._apply(store, event, on_event)
            except kube.ApiError as exc:
                if isinstance(exc, kube.NotFound) and optional_kind is not None:
                    log.info("%s %s is no longer served", resource.kind, optional_kind)
                    if resource == QUEUES:
                        self.queues = None
                    else:
                        self.group_resources.pop(optional_kind, None)
                        self.groups.pop(optional_kind, None)
                    store.synced.set()  # nothing to wait for: the first cycle need not wait
                    self._wake.set()
                    return
                delay = min(self.settings.retry_max, self.settings.retry_initial * 2**failures)
                failures += 1
                log.warning("cannot watch %s: %s; retrying in %.1fs", resource, exc, delay)
                await asyncio.sleep(delay)

    def _apply(
        self,
        store: _Store,
        event: kube.Event,
        on_event: Callable[[str, dict[str, Any], dict[str, Any] | None], bool] | None,
    ) -> None:
        """Record one event; wake the loop unless ``on_event`` says it cannot matter."""
        if event.type == watch.SYNC:
            items = [i for i in event.object.get("items") or [] if isinstance(i, dict)]
            store.objects = {store.key(i): i for i in items}
            store.synced.set()
            matters = on_event is None or on_event(watch.SYNC, event.object, None)
        else:
            key = store.key(event.object)
            before = store.objects.get(key)
            if event.type == watch.DELETED:
                store.objects.pop(key, None)
            else:
                store.objects[key] = event.object
            matters = on_event is None or on_event(event.type, event.object, before)
        if matters:
            self._wake.set()

    def _on_pod(self, kind: str, obj: dict[str, Any], before: dict[str, Any] | None) -> bool:
        """Forget assumptions and remembered writes the watch has now caught up with; say
        whether the change can matter to a cycle. Pods that neither wait for this scheduler
        nor hold a node nor belong to a gang (pods of other schedulers, gated pods) do not,
        so a flood of them costs no cycles."""
        if kind == watch.SYNC:
            live = set(self.pods.objects)
            for memo in (self._assumed, self._shown, self._infos, self._evicting):
                for uid in [u for u in memo if u not in live]:
                    memo.pop(uid, None)
            for uid, pod in self.pods.objects.items():
                if _spec(pod).get("nodeName"):
                    self._assumed.pop(uid, None)
            return True
        uid = _uid(obj)
        if kind == watch.DELETED or accessors.metadata(obj).get("deletionTimestamp"):
            self._evicting.pop(uid, None)
        if kind == watch.DELETED:
            self._assumed.pop(uid, None)
            self._shown.pop(uid, None)
            self._infos.pop(uid, None)
        elif _spec(obj).get("nodeName"):
            self._assumed.pop(uid, None)
            self._shown.pop(uid, None)
        return any(
            p is not None
            and (
                bool(_spec(p).get("nodeName"))
                or uid in self._assumed
                or self._mine(p)
                or gangs.group_of(p) is not None
            )
            for p in (obj, before)
        )

    async def _synced(self) -> None:
        stores = [self.pods, self.nodes, self.priority_classes, self.quotas]
        stores += list(self.groups.values())
        if self.queues is not None:
            stores.append(self.queues)
        for store in stores:
            await store.synced.wait()

    async def _loop(self) -> None:
        await self._synced()
        log.info("scheduler: caches filled; scheduling")
        failures = 0
        while True:
            started = time.monotonic()
            try:
                await self.cycle()
                failures = 0
            except Exception:  # the worker loop: a bad cycle is logged and retried, slower
                delay = min(self.settings.retry_max, self.settings.retry_initial * 2**failures)
                failures += 1
                log.exception("scheduling cycle failed; trying again in %.1fs", delay)
                await asyncio.sleep(delay)
            await self._wait_for_work(time.monotonic() - started)

    async def _wait_for_work(self, spent: float) -> None:
        limit = self.settings.resync
        if self._next_deadline is not None:
            limit = max(0.0, min(limit, self._next_deadline - self.clock()))
        if not self._wake.is_set():
            with contextlib.suppress(TimeoutError):
                async with _aio.timeout(limit):
                    await self._wake.wait()
        await asyncio.sleep(max(self.settings.debounce, spent))
        self._wake.clear()

    # -- one cycle -------------------------------------------------------------------------

    def _info(self, pod: Mapping[str, Any]) -> tuple[fit.PodInfo, amounts.Amounts]:
        """What fit and quotas need of a pod, computed once per version of it."""
        uid, version = _uid(pod), _version(pod)
        cached = self._infos.get(uid)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        info, usage = fit.PodInfo.of(pod), quotas.usage(pod)
        self._infos[uid] = (version, info, usage)
        return info, usage

    def _node_of(self, pod: Mapping[str, Any], now: float) -> str | None:
        node = _spec(pod).get("nodeName")
        if node:
            return str(node)
        assumed = self._assumed.get(_uid(pod))
        if assumed is None:
            return None
        if assumed[1] < now:
            self._assumed.pop(_uid(pod), None)
            return None
        return assumed[0]

    def _mine(self, pod: Mapping[str, Any]) -> bool:
        spec = _spec(pod)
        namespaces = self.settings.namespaces
        return (
            spec.get("schedulerName") in self.settings.scheduler_names
            and (namespaces is None or _key(pod)[0] in namespaces)
            and not spec.get("schedulingGates")
            and not accessors.metadata(pod).get("deletionTimestamp")
            and accessors.phase(pod) not in TERMINAL
        )

    def _counted(self, pod: Mapping[str, Any]) -> bool:
        """A pod holding a node that this scheduler counts in its queues and may evict: one
        it would have scheduled (its scheduler name, in its namespaces)."""
        namespaces = self.settings.namespaces
        return _spec(pod).get("schedulerName") in self.settings.scheduler_names and (
            namespaces is None or _key(pod)[0] in namespaces
        )

    def _in_namespaces(self, obj: Mapping[str, Any]) -> bool:
        namespaces = self.settings.namespaces
        return namespaces is None or _key(obj)[0] in namespaces

    def _deleting(self, pod: Mapping[str, Any], now: float) -> bool:
        if accessors.metadata(pod).get("deletionTimestamp"):
            return True
        until = self._evicting.get(_uid(pod))
        return until is not None and until >= now

    def _queue_of(self, pod: Mapping[str, Any]) -> str:
        ref = gangs.group_of(pod)
        if ref is None or ref.api_version != gangs.VOLCANO:
            return queues.DEFAULT
        group = self._group(ref)
        return queues.queue_of(gangs.Spec.of(group).queue if group is not None else None)

    async def cycle(self) -> policy.Plan:
        """One pass: decide from the caches, then write. Returns the plan (for tests)."""
        now = self.clock()
        self.cycles += 1
        for uid in [u for u, until in self._evicting.items() if until < now]:
            del self._evicting[uid]
        pods = list(self.pods.objects.values())
        holding: dict[str, list[fit.PodInfo]] = {name: [] for name in self.nodes.objects}
        running: list[policy.Running] = []
        quota_used: dict[str, amounts.Amounts] = {}
        members: dict[gangs.GroupRef, list[dict[str, Any]]] = {}
        pending: list[dict[str, Any]] = []
        holders: list[tuple[dict[str, Any], str]] = []  # counted pods holding a node
        quota_list = [quotas.Quota.of(q) for q in self.quotas.objects.values()]
        quota_namespaces = {q.namespace for q in quota_list}
        for pod in pods:
            ref = gangs.group_of(pod)
            if ref is not None:
                members.setdefault(ref, []).append(pod)
            node = self._node_of(pod, now)
            if node is None:
                if self._mine(pod):
                    pending.append(pod)
                continue
            if accessors.phase(pod) in TERMINAL:
                continue
            namespace = _key(pod)[0]
            if node in holding or namespace in quota_namespaces:
                info, usage = self._info(pod)
            if namespace in quota_namespaces:
                quota_used[namespace] = amounts.add(quota_used.get(namespace, {}), usage)
            if node in holding:
                holding[node].append(info)
                running.append(policy.Running(node, info, estimates.expected_end(pod, now)))
                if self._counted(pod):
                    holders.append((pod, node))
        nodes = [
            fit.NodeInfo.of(self.nodes.objects[name], infos) for name, infos in holding.items()
        ]
        pending_groups = {ref for p in pending if (ref := gangs.group_of(p)) is not None}
        group_states = {
            ref: queue.GroupState(
                self._group(ref),
                served=ref.api_version in self.group_resources,
                holding=sum(
                    1
                    for p in members.get(ref, ())
                    if self._node_of(p, now) is not None and accessors.phase(p) != "Failed"
                ),
            )
            for ref in pending_groups
        }
        priority_values = {
            name: value
            for name, c in self.priority_classes.objects.items()
            if isinstance(value := c.get("value"), int)
        }
        never = frozenset(
            name
            for name, c in self.priority_classes.objects.items()
            if c.get("preemptionPolicy") == queue.NEVER
        )
        units = queue.build(pending, group_states, priority_values, now, never)
        fair = self._fair(units, holders, members, nodes, now)
        plan = policy.plan(
            units,
            nodes,
            running,
            now,
            quota_list=quota_list,
            quota_used=quota_used,
            options=self.settings.options,
            fair=fair.copy(),
        )
        decision = preemption.Decision()
        if self.settings.preemption:
            decision = self._decide_evictions(plan, nodes, holders, fair, priority_values, now)
        by_uid = {_uid(p): p for p in pending}
        bound = await self._bind_all(plan, by_uid, now)
        _annotate(plan, decision)
        told = await self._tell_waiting(plan, by_uid, now)
        await self._evict(decision, by_uid, now)
        phases = await self._write_groups(
            plan, members, bound, told, nodes, now, fair, priority_values
        )
        await self._write_queues(fair, plan, phases, now)
        log.debug(
            "cycle %d: %d pending, %d bound, %d waiting, %d evictions",
            self.cycles,
            len(pending),
            len(bound),
            len(pending) - len(bound),
            len(decision.evictions),
        )
        return plan

    def _fair(
        self,
        units: Iterable[queue.Unit],
        holders: Iterable[tuple[dict[str, Any], str]],
        members: Mapping[gangs.GroupRef, list[dict[str, Any]]],
        nodes: Iterable[fit.NodeInfo],
        now: float,
    ) -> queues.Fair:
        """The queues this cycle: what each holds, held lately and asks for, against the
        nodes."""
        allocated: dict[str, amounts.Amounts] = {}
        for pod, _ in holders:
            name = self._queue_of(pod)
            allocated[name] = amounts.add(allocated.get(name, {}), self._info(pod)[0].request)
        waiting: dict[str, amounts.Amounts] = {}
        for unit in units:
            if unit.blocked is None:
                waiting[unit.queue] = amounts.add(waiting.get(unit.queue, {}), unit.request)
        # A Volcano gang whose pods are not created yet (the v1 operator waits for Inqueue)
        # asks for its minResources.
        for group in (self.groups.get(gangs.VOLCANO) or _Store(_key)).objects.values():
            ref = gangs.ref_of(gangs.VOLCANO, group)
            spec = gangs.Spec.of(group)
            phase = _status(group).get("phase")
            if members.get(ref) or not spec.min_resources or phase == messages.COMPLETED:
                continue
            name = queues.queue_of(spec.queue)
            waiting[name] = amounts.add(waiting.get(name, {}), spec.min_resources)
        served = self.queues is not None
        objs = list(self.queues.objects.values()) if self.queues is not None else []
        history = {}
        for obj in objs:
            lately = queues.history_of(obj, now, self.settings.usage_half_life)
            if lately is not None:
                history[str(accessors.metadata(obj).get("name") or "")] = lately
        total = amounts.total(n.allocatable for n in nodes)
        known = [queues.Queue.of(q) for q in objs]
        return queues.Fair.build(known, total, allocated, waiting, served=served, history=history)

    def _decide_evictions(
        self,
        plan: policy.Plan,
        nodes: list[fit.NodeInfo],
        holders: list[tuple[dict[str, Any], str]],
        fair: queues.Fair,
        priority_values: Mapping[str, int],
        now: float,
    ) -> preemption.Decision:
        if not any(
            not o.placed and o.why in (policy.RESOURCES, policy.QUEUE) for o in plan.outcomes
        ):
            return preemption.Decision()  # nothing waits for room: no one to evict for
        deleting = [(p, n) for p, n in holders if self._deleting(p, now)]
        candidates = [(p, n) for p, n in holders if not self._deleting(p, now)]
        groups = {
            ref: self._group(ref) for p, _ in candidates if (ref := gangs.group_of(p)) is not None
        }
        running = preemption.victims(candidates, groups, priority_values, now)
        terminating = [(self._info(p)[0], n) for p, n in deleting]
        return preemption.decide(plan.outcomes, nodes, terminating, running, fair)

    def _group(self, ref: gangs.GroupRef) -> dict[str, Any] | None:
        store = self.groups.get(ref.api_version)
        return None if store is None else store.objects.get((ref.namespace, ref.name))

    async def _throttled(self, coro: Coroutine[Any, Any, Any]) -> Any:
        async with self._writes:
            return await coro

    # -- binding ---------------------------------------------------------------------------

    async def _bind_all(
        self, plan: policy.Plan, by_uid: Mapping[str, dict[str, Any]], now: float
    ) -> set[str]:
        binds = [(by_uid[info.uid], node) for info, node in plan.binds if info.uid in by_uid]
        results = await asyncio.gather(*(self._throttled(self._bind(p, n, now)) for p, n in binds))
        for outcome in plan.outcomes:
            if outcome.placed and outcome.unit.gang:
                log.info(
                    "%s: %d pods bound together%s",
                    outcome.unit.label,
                    len(outcome.placed),
                    " (backfilled)" if outcome.backfilled else "",
                )
        return {_uid(p) for (p, _), ok in zip(binds, results, strict=True) if ok}

    async def _bind(self, pod: dict[str, Any], node: str, now: float) -> bool:
        namespace, name = _key(pod)
        uid = _uid(pod)
        for attempt in range(BIND_ATTEMPTS):
            try:
                await self.client.create(
                    PODS,
                    bodies.binding(pod, node),
                    namespace=namespace,
                    name=name,
                    subresource="binding",
                )
            except (kube.Conflict, kube.AlreadyExists):
                if attempt:  # after a lost answer: most likely that bind got through
                    self._assumed[uid] = (node, now + ASSUME_TTL)
                log.info(
                    "pod %s/%s is bound already (or was replaced); not binding it", namespace, name
                )
                return False
            except kube.NotFound:
                return False
            except kube.Unavailable as exc:
                # The bind may have happened. Sending the same one again finds out (a bound
                # pod answers 409), instead of leaving the pod unbound for ASSUME_TTL when the
                # request never reached the server.
                if attempt + 1 < BIND_ATTEMPTS:
                    log.warning("binding %s/%s to %s: %s; asking again", namespace, name, node, exc)
                    await asyncio.sleep(self.settings.retry_initial * 2**attempt)
                    continue
                # still no answer: count it as done until the watch says otherwise
                log.warning("binding %s/%s to %s: %s", namespace, name, node, exc)
                self._assumed[uid] = (node, now + ASSUME_TTL)
                return False
            except kube.ApiError as exc:
                log.warning("binding %s/%s to %s failed: %s", namespace, name, node, exc)
                return False
            break
        self._assumed[uid] = (node, now + ASSUME_TTL)
        self._shown.pop(uid, None)
        log.info("bound %s/%s to %s", namespace, name, node)
        await self._event(
            pod,
            reason=messages.EVENT_SCHEDULED,
            message=messages.scheduled(namespace, name, node),
            type="Normal",
            action=messages.ACTION_BINDING,
            component=bodies.component_of(pod),
        )
        return True

    # -- evicting --------------------------------------------------------------------------

    async def _evict(
        self, decision: preemption.Decision, pending: Mapping[str, dict[str, Any]], now: float
    ) -> None:
        """Evict every victim decided, as kube-scheduler does, and tell both sides."""
        for eviction in decision.evictions:
            preemptor = eviction.preemptor
            first = next((pending[p.uid] for p in preemptor.pods if p.uid in pending), None)
            names = ", ".join(v.label for v in eviction.victims)
            log.info("%s: evicting %s", preemptor.label, names)
            writes = []
            for victim in eviction.victims:
                for info, node in victim.pods:
                    pod = self.pods.objects.get(info.uid)
                    if pod is not None:
                        writes.append(self._throttled(self._evict_pod(pod, first, node, now)))
                group = self._group(victim.group) if victim.group is not None else None
                if group is not None:
                    message = messages.preempted(
                        victim.label, preemptor.label, eviction.why[victim.key]
                    )
                    writes.append(
                        self._throttled(
                            self._event(
                                group,
                                reason=messages.EVENT_GANG_PREEMPTED,
                                message=message,
                                type="Warning",
                                action=messages.ACTION_PREEMPTING,
                                component=bodies.DEFAULT_COMPONENT,
                            )
                        )
                    )
            group = self._group(preemptor.group) if preemptor.group is not None else None
            if group is not None:
                writes.append(
                    self._throttled(
                        self._event(
                            group,
                            reason=messages.EVENT_GANG_PREEMPTING,
                            message=messages.preempting(preemptor.label, _victims_text(eviction)),
                            type="Normal",
                            action=messages.ACTION_PREEMPTING,
                            component=bodies.component_of(first)
                            if first
                            else bodies.DEFAULT_COMPONENT,
                        )
                    )
                )
            await asyncio.gather(*writes)

    async def _evict_pod(
        self,
        pod: dict[str, Any],
        preemptor: Mapping[str, Any] | None,
        node: str,
        now: float,
    ) -> None:
        namespace, name = _key(pod)
        uid = _uid(pod)
        component = bodies.component_of(pod)
        try:
            await self.client.patch(
                PODS,
                name,
                bodies.disruption_patch(pod, messages.preempting_condition(component), now),
                namespace=namespace,
                type="strategic",
                subresource="status",
            )
            await self.client.delete(PODS, name, namespace=namespace, preconditions={"uid": uid})
        except (kube.NotFound, kube.Conflict):
            return  # gone already, or another pod by now
        except kube.ApiError as exc:
            log.warning("pod %s/%s: cannot evict: %s", namespace, name, exc)
            return
        self._evicting[uid] = now + ASSUME_TTL
        preemptor_uid = _uid(preemptor) if preemptor is not None else ""
        await self._event(
            pod,
            reason=messages.EVENT_PREEMPTED,
            message=messages.preempted_by(preemptor_uid, node),
            type="Normal",
            action=messages.ACTION_PREEMPTING,
            component=component,
            related=preemptor,
        )

    # -- telling why pods wait -------------------------------------------------------------

    async def _tell_waiting(
        self, plan: policy.Plan, by_uid: Mapping[str, dict[str, Any]], now: float
    ) -> dict[gangs.GroupRef, str]:
        """Write each waiting pod's condition and event where its message changed; returns
        the gangs whose message changed (with it), for their PodGroup event."""
        writes = []
        changed: dict[gangs.GroupRef, str] = {}
        for outcome in plan.outcomes:
            if outcome.message is None:
                continue
            placed = {info.uid for info, _ in outcome.placed}
            message = record.clip(outcome.message)
            for info in outcome.unit.pods:
                pod = by_uid.get(info.uid)
                if pod is None or info.uid in placed or not self._tell_needed(pod, message):
                    continue
                writes.append(self._throttled(self._tell(pod, message, now)))
                if outcome.unit.group is not None and not outcome.placed:
                    changed[outcome.unit.group] = message
        await asyncio.gather(*writes)
        return changed

    def _tell_needed(self, pod: Mapping[str, Any], message: str) -> bool:
        if bodies.shown_message(pod) == message:
            return False
        written = self._shown.get(_uid(pod))
        return written is None or written != (_version(pod), message)

    async def _tell(self, pod: dict[str, Any], message: str, now: float) -> None:
        namespace, name = _key(pod)
        try:
            await self.client.patch(
                PODS,
                name,
                bodies.unschedulable_patch(pod, message, now),
                namespace=namespace,
                type="strategic",
                subresource="status",
            )
        except (kube.NotFound, kube.Conflict, kube.Invalid):
            return  # gone, or replaced by a pod of the same name: the next cycle sees it
        except kube.ApiError as exc:
            log.warning("pod %s/%s: cannot write why it waits: %s", namespace, name, exc)
            return
        self._shown[_uid(pod)] = (_version(pod), message)
        log.debug("pod %s/%s waits: %s", namespace, name, message)
        await self._event(
            pod,
            reason=messages.EVENT_FAILED,
            message=message,
            type="Warning",
            action=messages.ACTION_SCHEDULING,
            component=bodies.component_of(pod),
        )

    async def _event(
        self,
        involved: Mapping[str, Any],
        *,
        component: str,
        type: record.EventType,
        reason: str,
        message: str,
        action: str,
        related: Mapping[str, Any] | None = None,
    ) -> None:
        """Record an Event as ``component`` (the pod's scheduler profile): queued for the
        writer while :meth:`run` runs, else written before this returns."""
        found = self._recorders.get(component)
        if found is None:
            found = recorder(self.client, component, self.host, self.events, self.clock)
            self._recorders[component] = found
        await found.event(involved, type, reason, message, action=action, related=related)

    # -- PodGroup status -------------------------------------------------------------------

    def _manages(
        self, api_version: str, group: Mapping[str, Any], pods: list[dict[str, Any]]
    ) -> bool:
        namespaces = self.settings.namespaces
        if namespaces is not None and _key(group)[0] not in namespaces:
            return False
        names = self.settings.scheduler_names
        if pods:
            return any(_spec(p).get("schedulerName") in names for p in pods)
        return gangs.DEFAULT_SCHEDULER[api_version] in names

    def _enqueue_verdicts(
        self,
        plan: policy.Plan,
        members: Mapping[gangs.GroupRef, list[dict[str, Any]]],
        bound_now: frozenset[str],
        fair: queues.Fair,
        priority_values: Mapping[str, int],
    ) -> dict[gangs.GroupRef, queues.Refusal | None]:
        """Whether each Volcano group not yet enqueued may be (Volcano's enqueue action):
        its queue must admit its minResources beside what the queue holds and what the
        groups already enqueued but not running will take. Groups are taken by priority,
        then age, each one admitted counting for the next."""
        store = self.groups.get(gangs.VOLCANO)
        if store is None:
            return {}
        enqueue = fair.copy()
        for name, request in plan.started():
            enqueue.charge(name, request)
        waiting: list[tuple[tuple[int, float, str], gangs.GroupRef, gangs.Spec, int]] = []
        for group in store.objects.values():
            ref = gangs.ref_of(gangs.VOLCANO, group)
            spec = gangs.Spec.of(group)
            held = gangs.Members.of(members.get(ref, []), bound_now).bound
            phase = _status(group).get("phase")
            if phase == messages.COMPLETED or held >= spec.min_member:
                continue
            name = queues.queue_of(spec.queue)
            if phase == messages.INQUEUE:
                enqueue.charge(name, spec.min_resources or {})
                continue
            priority = priority_values.get(spec.priority_class or "", 0)
            rank = (-priority, spec.created or 0.0, str(ref))
            waiting.append((rank, ref, spec, held))
        verdicts: dict[gangs.GroupRef, queues.Refusal | None] = {}
        for _, ref, spec, held in sorted(waiting, key=lambda w: w[0]):
            name = queues.queue_of(spec.queue)
            request = spec.min_resources or {}
            refusal = enqueue.admit(f"pod group {ref}", name, request, new=held == 0)
            if refusal is None:
                enqueue.charge(name, request)
            verdicts[ref] = refusal
        return verdicts

    async def _write_groups(
        self,
        plan: policy.Plan,
        members: Mapping[gangs.GroupRef, list[dict[str, Any]]],
        bound: set[str],
        told: Mapping[gangs.GroupRef, str],
        nodes: Iterable[fit.NodeInfo],
        now: float,
        fair: queues.Fair,
        priority_values: Mapping[str, int],
    ) -> dict[str, collections.Counter[str]]:
        """Write the PodGroups' status; returns, per queue, how many of its Volcano groups
        are in each phase (for the Queues' status)."""
        outcomes = {o.unit.group: o for o in plan.outcomes if o.unit.group is not None}
        capacity = amounts.total(n.allocatable for n in nodes)
        stamp = timestamps.format_seconds(now)
        bound_now = frozenset(bound) | frozenset(self._assumed)  # bound, echo not yet seen
        verdicts = self._enqueue_verdicts(plan, members, bound_now, fair, priority_values)
        phases: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        deadlines: list[float] = []
        writes = []
        for api_version, store in list(self.groups.items()):
            for group in list(store.objects.values()):
                ref = gangs.ref_of(api_version, group)
                pods = members.get(ref, [])
                spec = gangs.Spec.of(group)
                current = _status(group)
                if not self._manages(api_version, group, pods):
                    if api_version == gangs.VOLCANO and self._in_namespaces(group):
                        phases[queues.queue_of(spec.queue)][str(current.get("phase") or "")] += 1
                    continue
                outcome = outcomes.get(ref)
                waiting = None
                if outcome is not None and outcome.message is not None and not outcome.placed:
                    reason = outcome.refusal.reason if outcome.refusal is not None else None
                    waiting = gangs.Waiting(
                        outcome.message, outcome.unit.blocked_incomplete, reason=reason
                    )
                enqueueable = spec.min_resources is None or not amounts.short(
                    spec.min_resources, capacity
                )
                refusal = verdicts.get(ref)
                if waiting is None and not pods and not enqueueable and spec.min_resources:
                    waiting = gangs.Waiting(
                        messages.never_fits_min_resources(
                            str(ref), amounts.format_amounts(spec.min_resources)
                        )
                    )
                if refusal is not None:
                    enqueueable = False
                    if waiting is None:
                        waiting = gangs.Waiting(refusal.message, reason=refusal.reason)
                context = gangs.Context(
                    now=stamp,
                    waiting=waiting,
                    placed=bool(outcome is not None and outcome.placed),
                    enqueueable=enqueueable,
                )
                member_state = gangs.Members.of(pods, bound_now)
                if api_version == gangs.COSCHEDULING:
                    wanted = gangs.coscheduling_status(current, spec, member_state, context)
                    deadline = gangs.timeout_at(wanted, spec)
                    if (
                        deadline is not None
                        and deadline > now
                        and wanted["phase"] == messages.PENDING
                    ):
                        deadlines.append(deadline)
                else:
                    wanted = gangs.volcano_status(current, spec, member_state, context)
                    phases[queues.queue_of(spec.queue)][str(wanted.get("phase") or "")] += 1
                needed = self._status_needed(api_version, group, wanted)
                if needed:
                    writes.append(self._throttled(self._write_status(api_version, group, wanted)))
                message = told.get(ref)
                if (
                    message is None
                    and not pods
                    and waiting is not None
                    and needed
                    and _unschedulable_message(current) != waiting.message
                ):
                    message = record.clip(waiting.message)  # no pods to tell: tell the group
                if message is not None:
                    writes.append(
                        self._throttled(
                            self._event(
                                group,
                                reason=messages.EVENT_GANG_UNSCHEDULABLE,
                                message=message,
                                type="Warning",
                                action=messages.ACTION_SCHEDULING,
                                component=bodies.component_of(pods[0])
                                if pods
                                else bodies.DEFAULT_COMPONENT,
                            )
                        )
                    )
        self._next_deadline = min(deadlines) if deadlines else None
        live = {(v, *_key(g)) for v, store in self.groups.items() for g in store.objects.values()}
        for key in [k for k in self._written if k not in live]:
            del self._written[key]
        await asyncio.gather(*writes)
        return phases

    # -- Queue status ----------------------------------------------------------------------

    async def _write_queues(
        self,
        fair: queues.Fair,
        plan: policy.Plan,
        phases: Mapping[str, collections.Counter[str]],
        now: float,
    ) -> None:
        """Each Queue's status: its state, its groups per phase, what its pods hold (those
        bound in this cycle included), and with any change of those, what it held lately.
        A scheduler that handles only some namespaces sees only part of a queue: it writes
        the status of the queues it has work in, no other."""
        if self.queues is None:
            return
        held = fair.copy()
        for name, request in plan.started():
            held.charge(name, request)
        writes = []
        partial = self.settings.namespaces is not None
        for obj in list(self.queues.objects.values()):
            name = str(accessors.metadata(obj).get("name") or "")
            if partial and name not in phases and name not in held.allocated:
                continue
            base = queues.status(_status(obj), phases.get(name, {}), held.allocated.get(name, {}))
            if not gangs.differs(_status(obj), base):
                continue
            if self._queue_written.get(name) == (_version(obj), base):
                continue
            stamp = timestamps.format_seconds(now)
            lately = queues.fair_sharing(fair.history.get(name, {}), stamp)
            writes.append(self._throttled(self._write_queue(obj, base, lately)))
        live = set(self.queues.objects)
        for name in [n for n in self._queue_written if n not in live]:
            del self._queue_written[name]
        await asyncio.gather(*writes)

    async def _write_queue(
        self, obj: Mapping[str, Any], base: dict[str, Any], lately: dict[str, Any]
    ) -> None:
        name = str(accessors.metadata(obj).get("name") or "")
        wanted = {**base, "fairSharing": lately}
        subresource = "status" if self.queue_status_subresource else None
        try:
            await self.client.patch(
                QUEUES,
                name,
                {"metadata": {"uid": _uid(obj)}, "status": wanted},
                subresource=subresource,
            )
        except (kube.NotFound, kube.Conflict, kube.Invalid):
            return
        except kube.ApiError as exc:
            log.warning("Queue %s: cannot write status: %s", name, exc)
            return
        self._queue_written[name] = (_version(obj), base)
        log.info("Queue %s: %s", name, wanted.get("state"))

    def _status_needed(
        self, api_version: str, group: Mapping[str, Any], wanted: dict[str, Any]
    ) -> bool:
        if not gangs.differs(_status(group), wanted):
            return False
        key = (api_version, *_key(group))
        return self._written.get(key) != (_version(group), wanted)

    async def _write_status(
        self, api_version: str, group: Mapping[str, Any], wanted: dict[str, Any]
    ) -> None:
        resource = self.group_resources.get(api_version)
        if resource is None:
            return
        namespace, name = _key(group)
        subresource = "status" if self.group_status_subresource.get(api_version) else None
        try:
            await self.client.patch(
                resource,
                name,
                {"metadata": {"uid": _uid(group)}, "status": wanted},
                namespace=namespace,
                subresource=subresource,
            )
        except (kube.NotFound, kube.Conflict, kube.Invalid):
            return
        except kube.ApiError as exc:
            log.warning("PodGroup %s/%s: cannot write status: %s", namespace, name, exc)
            return
        self._written[(api_version, namespace, name)] = (_version(group), wanted)
        log.info("PodGroup %s/%s: %s", namespace, name, wanted.get("phase"))


def _unschedulable_message(status: Mapping[str, Any]) -> str | None:
    for condition in status.get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == messages.CONDITION_TYPE_UNSCHEDULABLE
            and condition.get("status") == "True"
        ):
            return str(condition.get("message") or "")
    return None


def _victims_text(eviction: preemption.Eviction) -> str:
    return ", ".join(f"{v.label} ({eviction.why[v.key]})" for v in eviction.victims)


def _annotate(plan: policy.Plan, decision: preemption.Decision) -> None:
    """Add to the waiting messages of preemptors whom they evict, and of units that wait
    for evicted pods to end, that they do."""
    evicting = {id(e.preemptor): e for e in decision.evictions}
    for outcome in plan.outcomes:
        if outcome.message is None or outcome.placed:
            continue
        eviction = evicting.get(id(outcome.unit))
        if eviction is not None:
            note = messages.preempting(outcome.unit.label, _victims_text(eviction))
            outcome.message = f"{outcome.message} {note}"
        elif id(outcome.unit) in decision.notes:
            outcome.message = f"{outcome.message} {decision.notes[id(outcome.unit)]}"


async def run(client: kube.Client, settings: Settings | None = None) -> None:
    """Run the scheduler until cancelled."""
    await Scheduler(client, settings).run()


def recorder(
    client: kube.Client,
    component: str,
    host: str,
    broadcaster: record.Broadcaster,
    clock: Callable[[], float],
) -> record.Recorder:
    """The recorder of one scheduler profile, writing as kube-scheduler's do: ``component``
    (the profile) in ``source.component`` and ``reportingComponent``, ``<profile>-<host>`` as
    ``reportingInstance``, an ``eventTime``, and times from the scheduler's clock."""
    return record.Recorder(
        client,
        component,
        broadcaster=broadcaster,
        instance=f"{component}-{host}" if host else component,
        assumed=("v1", "Pod"),
        event_time=True,
        wall=lambda: datetime.datetime.fromtimestamp(clock(), datetime.timezone.utc),
    )
