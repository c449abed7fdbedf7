"""The scheduler controller: watches the API server, decides with
:mod:`~kubetrain.local.scheduler.policy`, and writes what it decided. An ordinary API client,
as kube-scheduler is; on the local control plane it is the only scheduler.

What it watches: Pods (all of them: pods bound to a node count against it whoever placed
them), Nodes (those matching ``Settings.node_selector``), PodGroups of both kinds when their
CRDs are served (discovery, looked at again every ``rediscover_every`` seconds while one is
missing), PriorityClasses and ResourceQuotas. It schedules the pods that have no node, whose
``spec.schedulerName`` is one of ``Settings.scheduler_names`` (and, where
``Settings.namespaces`` is set, in those namespaces), that carry no scheduling gate, and that
are not being deleted.

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
  schedules (a group with no pods yet: the kind's usual scheduler name decides).

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
import contextlib
import logging
import socket
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain import _aio, kube
from kubetrain.kube import watch
from kubetrain.local import tasks
from kubetrain.local.scheduler import (
    amounts,
    estimates,
    events,
    fit,
    gangs,
    messages,
    policy,
    queue,
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
EVENTS: Final = kube.Resource("", "v1", "events", kind="Event")
POD_GROUP_KINDS: Final = (gangs.COSCHEDULING, gangs.VOLCANO)
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
    retry_initial: float = 0.1  # a watch that failed with an error retrying cannot fix
    retry_max: float = 10.0
    options: policy.Options = field(default_factory=policy.Options)
    watch: watch.Settings = field(default_factory=watch.Settings)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def _version(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("resourceVersion") or "")


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = _meta(obj)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _phase(pod: Mapping[str, Any]) -> str:
    return str(_status(pod).get("phase") or "")


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
        self.pods = _Store(_uid)
        self.nodes = _Store(lambda n: str(_meta(n).get("name") or ""))
        self.priority_classes = _Store(lambda c: str(_meta(c).get("name") or ""))
        self.quotas = _Store(_key)
        self.groups: dict[str, _Store] = {}  # by apiVersion, while served
        self.group_resources: dict[str, kube.Resource] = {}
        self.group_status_subresource: dict[str, bool] = {}
        self.cycles = 0
        self._wake = asyncio.Event()
        self._tasks: tasks.Tasks | None = None
        self._assumed: dict[str, tuple[str, float]] = {}  # pod uid → (node, until)
        self._shown: dict[str, tuple[str, str]] = {}  # pod uid → (resourceVersion, message)
        self._written: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = {}
        self._infos: dict[str, tuple[str, fit.PodInfo, amounts.Amounts]] = {}  # by pod uid
        self._writes = asyncio.Semaphore(self.settings.write_concurrency)
        self._next_deadline: float | None = None

    # -- running ---------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Schedule until cancelled (or until ``stop`` is set)."""
        log.info("scheduler starting for %s", ", ".join(sorted(self.settings.scheduler_names)))
        async with _aio.TaskGroup() as group:
            self._tasks = tasks.Tasks(group)
            await self._discover_groups()
            self._spawn(self._watch(PODS, self.pods, self._on_pod), "scheduler-watch-pods")
            self._spawn(
                self._watch(NODES, self.nodes, label_selector=self.settings.node_selector),
                "scheduler-watch-nodes",
            )
            self._spawn(
                self._watch(PRIORITY_CLASSES, self.priority_classes),
                "scheduler-watch-priorityclasses",
            )
            self._spawn(self._watch(RESOURCE_QUOTAS, self.quotas), "scheduler-watch-quotas")
            for api_version in list(self.group_resources):
                self._watch_groups(api_version)
            self._spawn(self._loop(), "scheduler-loop")
            self._spawn(self._rediscover(), "scheduler-rediscover")
            if stop is not None:
                group.create_task(self._tasks.cancel_on(stop), name="scheduler-stop")
        log.info("scheduler stopped")

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        assert self._tasks is not None, "spawned before run() started the group"
        self._tasks.spawn(coro, name)

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

    def _watch_groups(self, api_version: str) -> None:
        self._spawn(
            self._watch(
                self.group_resources[api_version],
                self.groups[api_version],
                optional_kind=api_version,
            ),
            f"scheduler-watch-podgroups-{api_version}",
        )

    async def _rediscover(self) -> None:
        while True:
            await asyncio.sleep(self.settings.rediscover_every)
            if all(k in self.group_resources for k in POD_GROUP_KINDS):
                continue
            known = set(self.group_resources)
            await self._discover_groups()
            for api_version in set(self.group_resources) - known:
                log.info("PodGroup %s is served now; watching it", api_version)
                self._watch_groups(api_version)

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
                    log.info("PodGroup %s is no longer served", optional_kind)
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
            for memo in (self._assumed, self._shown, self._infos):
                for uid in [u for u in memo if u not in live]:
                    memo.pop(uid, None)
            for uid, pod in self.pods.objects.items():
                if _spec(pod).get("nodeName"):
                    self._assumed.pop(uid, None)
            return True
        uid = _uid(obj)
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
            and not _meta(pod).get("deletionTimestamp")
            and _phase(pod) not in TERMINAL
        )

    async def cycle(self) -> policy.Plan:
        """One pass: decide from the caches, then write. Returns the plan (for tests)."""
        now = self.clock()
        self.cycles += 1
        pods = list(self.pods.objects.values())
        holding: dict[str, list[fit.PodInfo]] = {name: [] for name in self.nodes.objects}
        running: list[policy.Running] = []
        quota_used: dict[str, amounts.Amounts] = {}
        members: dict[gangs.GroupRef, list[dict[str, Any]]] = {}
        pending: list[dict[str, Any]] = []
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
            if _phase(pod) in TERMINAL:
                continue
            namespace = _key(pod)[0]
            if node in holding or namespace in quota_namespaces:
                info, usage = self._info(pod)
            if namespace in quota_namespaces:
                quota_used[namespace] = amounts.add(quota_used.get(namespace, {}), usage)
            if node in holding:
                holding[node].append(info)
                running.append(policy.Running(node, info, estimates.expected_end(pod, now)))
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
                    if self._node_of(p, now) is not None and _phase(p) != "Failed"
                ),
            )
            for ref in pending_groups
        }
        priority_values = {
            name: value
            for name, c in self.priority_classes.objects.items()
            if isinstance(value := c.get("value"), int)
        }
        units = queue.build(pending, group_states, priority_values, now)
        plan = policy.plan(
            units,
            nodes,
            running,
            now,
            quota_list=quota_list,
            quota_used=quota_used,
            options=self.settings.options,
        )
        by_uid = {_uid(p): p for p in pending}
        bound = await self._bind_all(plan, by_uid, now)
        told = await self._tell_waiting(plan, by_uid, now)
        await self._write_groups(plan, members, bound, told, nodes, now)
        log.debug(
            "cycle %d: %d pending, %d bound, %d waiting",
            self.cycles,
            len(pending),
            len(bound),
            len(pending) - len(bound),
        )
        return plan

    def _group(self, ref: gangs.GroupRef) -> dict[str, Any] | None:
        store = self.groups.get(ref.api_version)
        return None if store is None else store.objects.get((ref.namespace, ref.name))

    async def _guarded(self, coro: Coroutine[Any, Any, Any]) -> Any:
        async with self._writes:
            return await coro

    # -- binding ---------------------------------------------------------------------------

    async def _bind_all(
        self, plan: policy.Plan, by_uid: Mapping[str, dict[str, Any]], now: float
    ) -> set[str]:
        binds = [(by_uid[info.uid], node) for info, node in plan.binds if info.uid in by_uid]
        results = await asyncio.gather(*(self._guarded(self._bind(p, n, now)) for p, n in binds))
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
                    events.binding(pod, node),
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
            component=events.component_of(pod),
        )
        return True

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
            message = events.clip(outcome.message)
            for info in outcome.unit.pods:
                pod = by_uid.get(info.uid)
                if pod is None or info.uid in placed or not self._tell_needed(pod, message):
                    continue
                writes.append(self._guarded(self._tell(pod, message, now)))
                if outcome.unit.group is not None and not outcome.placed:
                    changed[outcome.unit.group] = message
        await asyncio.gather(*writes)
        return changed

    def _tell_needed(self, pod: Mapping[str, Any], message: str) -> bool:
        if events.shown_message(pod) == message:
            return False
        written = self._shown.get(_uid(pod))
        return written is None or written != (_version(pod), message)

    async def _tell(self, pod: dict[str, Any], message: str, now: float) -> None:
        namespace, name = _key(pod)
        try:
            await self.client.patch(
                PODS,
                name,
                events.unschedulable_patch(pod, message, now),
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
            component=events.component_of(pod),
        )

    async def _event(self, involved: Mapping[str, Any], **fields: Any) -> None:
        """Post an Event, stamped when it is sent (its name carries the time, so two events
        of one cycle about objects of the same name do not collide)."""
        body = events.event(involved, host=self.host, now=self.clock(), **fields)
        try:
            await self.client.create(EVENTS, body)
        except kube.ApiError as exc:  # an event is worth a try, never a retry
            log.debug("event %s not written: %s", fields.get("reason"), exc)

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

    async def _write_groups(
        self,
        plan: policy.Plan,
        members: Mapping[gangs.GroupRef, list[dict[str, Any]]],
        bound: set[str],
        told: Mapping[gangs.GroupRef, str],
        nodes: Iterable[fit.NodeInfo],
        now: float,
    ) -> None:
        outcomes = {o.unit.group: o for o in plan.outcomes if o.unit.group is not None}
        capacity = amounts.total(n.allocatable for n in nodes)
        stamp = timestamps.format_seconds(now)
        bound_now = frozenset(bound) | frozenset(self._assumed)  # bound, echo not yet seen
        deadlines: list[float] = []
        writes = []
        for api_version, store in list(self.groups.items()):
            for group in list(store.objects.values()):
                ref = gangs.ref_of(api_version, group)
                pods = members.get(ref, [])
                if not self._manages(api_version, group, pods):
                    continue
                spec = gangs.Spec.of(group)
                current = _status(group)
                outcome = outcomes.get(ref)
                waiting = None
                if outcome is not None and outcome.message is not None and not outcome.placed:
                    waiting = gangs.Waiting(outcome.message, outcome.unit.blocked_incomplete)
                enqueueable = spec.min_resources is None or not amounts.short(
                    spec.min_resources, capacity
                )
                if waiting is None and not pods and not enqueueable and spec.min_resources:
                    waiting = gangs.Waiting(
                        messages.never_fits_min_resources(
                            str(ref), amounts.format_amounts(spec.min_resources)
                        )
                    )
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
                if self._status_needed(api_version, group, wanted):
                    writes.append(self._guarded(self._write_status(api_version, group, wanted)))
                if ref in told:
                    writes.append(
                        self._guarded(
                            self._event(
                                group,
                                reason=messages.EVENT_GANG_UNSCHEDULABLE,
                                message=told[ref],
                                type="Warning",
                                action=messages.ACTION_SCHEDULING,
                                component=events.component_of(pods[0])
                                if pods
                                else events.DEFAULT_COMPONENT,
                            )
                        )
                    )
        self._next_deadline = min(deadlines) if deadlines else None
        live = {(v, *_key(g)) for v, store in self.groups.items() for g in store.objects.values()}
        for key in [k for k in self._written if k not in live]:
            del self._written[key]
        await asyncio.gather(*writes)

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


async def run(client: kube.Client, settings: Settings | None = None) -> None:
    """Run the scheduler until cancelled."""
    await Scheduler(client, settings).run()
