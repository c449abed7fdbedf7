"""The scheduler controller: watches the API server, decides with
:mod:`~kubetrain.local.scheduler.policy`, and writes what it decided. An ordinary API client,
as kube-scheduler is; on the local control plane it is the only scheduler.

What it watches (:mod:`~kubetrain.local.scheduler.cache`): Pods (all of them: pods bound to
a node count against it whoever placed them), Nodes (those matching
``Settings.node_selector``), PodGroups of both kinds and Volcano Queues when their CRDs are
served (discovery, looked at again every ``rediscover_every`` seconds while one is missing),
PriorityClasses and ResourceQuotas. It schedules the pods that
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
- PodGroup status (:mod:`~kubetrain.local.scheduler.gangs`, written by
  :mod:`~kubetrain.local.scheduler.groupstatus`), written whole, only when it
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
    cache,
    estimates,
    fit,
    gangs,
    groupstatus,
    messages,
    policy,
    preemption,
    queue,
    queues,
    quotas,
)

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAMES: Final = frozenset(
    {"default-scheduler", "volcano", "scheduler-plugins-scheduler", "kube-batch"}
)
PODS: Final = cache.PODS
NODES: Final = cache.NODES
RESOURCE_QUOTAS: Final = cache.RESOURCE_QUOTAS
QUEUES: Final = cache.QUEUES
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
        self.cycles = 0
        self._wake = asyncio.Event()
        self.cache = cache.Cache(
            client,
            self._wake,
            retry=cache.Retry(
                self.settings.retry_initial,
                self.settings.retry_max,
                self.settings.rediscover_every,
            ),
            watch_settings=self.settings.watch,
            node_selector=self.settings.node_selector,
        )
        self.status = groupstatus.Writer(
            client,
            self.cache,
            scheduler_names=self.settings.scheduler_names,
            namespaces=self.settings.namespaces,
            throttled=self._throttled,
            event=self._event,
        )
        self._tasks = tasks.Tasks()
        self._assumed: dict[str, tuple[str, float]] = {}  # pod uid → (node, until)
        self._shown: dict[str, tuple[str, str]] = {}  # pod uid → (resourceVersion, message)
        self._infos: dict[str, tuple[str, fit.PodInfo, amounts.Amounts]] = {}  # by pod uid
        self._evicting: dict[str, float] = {}  # pod uid → until when it counts as deleted
        self._writes = asyncio.Semaphore(self.settings.write_concurrency)

    # -- running ---------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Schedule until cancelled (or until ``stop`` is set)."""
        log.info("scheduler starting for %s", ", ".join(sorted(self.settings.scheduler_names)))
        async with self._tasks.running(stop, "scheduler"):
            await self.cache.discover()
            self.cache.start(self._tasks, self._on_pod)
            self._tasks.spawn(self._loop(), "scheduler-loop")
            self._tasks.spawn(
                tasks.guarded("scheduler events", self.events.run()), "scheduler-events"
            )
        log.info("scheduler stopped")

    def _on_pod(self, kind: str, obj: dict[str, Any], before: dict[str, Any] | None) -> bool:
        """Forget assumptions and remembered writes the watch has now caught up with; say
        whether the change can matter to a cycle. Pods that neither wait for this scheduler
        nor hold a node nor belong to a gang (pods of other schedulers, gated pods) do not,
        so a flood of them costs no cycles."""
        if kind == watch.SYNC:
            live = set(self.cache.pods.objects)
            for memo in (self._assumed, self._shown, self._infos, self._evicting):
                for uid in [u for u in memo if u not in live]:
                    memo.pop(uid, None)
            for uid, pod in self.cache.pods.objects.items():
                if cache.spec(pod).get("nodeName"):
                    self._assumed.pop(uid, None)
            return True
        uid = accessors.uid_of(obj)
        if kind == watch.DELETED or accessors.metadata(obj).get("deletionTimestamp"):
            self._evicting.pop(uid, None)
        if kind == watch.DELETED:
            self._assumed.pop(uid, None)
            self._shown.pop(uid, None)
            self._infos.pop(uid, None)
        elif cache.spec(obj).get("nodeName"):
            self._assumed.pop(uid, None)
            self._shown.pop(uid, None)
        return any(
            p is not None
            and (
                bool(cache.spec(p).get("nodeName"))
                or uid in self._assumed
                or self._mine(p)
                or gangs.group_of(p) is not None
            )
            for p in (obj, before)
        )

    async def _loop(self) -> None:
        await self.cache.synced()
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
        if self.status.next_deadline is not None:
            limit = max(0.0, min(limit, self.status.next_deadline - self.clock()))
        if not self._wake.is_set():
            with contextlib.suppress(TimeoutError):
                async with _aio.timeout(limit):
                    await self._wake.wait()
        await asyncio.sleep(max(self.settings.debounce, spent))
        self._wake.clear()

    # -- one cycle -------------------------------------------------------------------------

    def _info(self, pod: Mapping[str, Any]) -> tuple[fit.PodInfo, amounts.Amounts]:
        """What fit and quotas need of a pod, computed once per version of it."""
        uid, version = accessors.uid_of(pod), cache.version(pod)
        cached = self._infos.get(uid)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        info, usage = fit.PodInfo.of(pod), quotas.usage(pod)
        self._infos[uid] = (version, info, usage)
        return info, usage

    def _node_of(self, pod: Mapping[str, Any], now: float) -> str | None:
        node = cache.spec(pod).get("nodeName")
        if node:
            return str(node)
        assumed = self._assumed.get(accessors.uid_of(pod))
        if assumed is None:
            return None
        if assumed[1] < now:
            self._assumed.pop(accessors.uid_of(pod), None)
            return None
        return assumed[0]

    def _mine(self, pod: Mapping[str, Any]) -> bool:
        spec = cache.spec(pod)
        namespaces = self.settings.namespaces
        return (
            spec.get("schedulerName") in self.settings.scheduler_names
            and (namespaces is None or cache.key(pod)[0] in namespaces)
            and not spec.get("schedulingGates")
            and not accessors.metadata(pod).get("deletionTimestamp")
            and accessors.phase(pod) not in TERMINAL
        )

    def _counted(self, pod: Mapping[str, Any]) -> bool:
        """A pod holding a node that this scheduler counts in its queues and may evict: one
        it would have scheduled (its scheduler name, in its namespaces)."""
        namespaces = self.settings.namespaces
        return cache.spec(pod).get("schedulerName") in self.settings.scheduler_names and (
            namespaces is None or cache.key(pod)[0] in namespaces
        )

    def _deleting(self, pod: Mapping[str, Any], now: float) -> bool:
        if accessors.metadata(pod).get("deletionTimestamp"):
            return True
        until = self._evicting.get(accessors.uid_of(pod))
        return until is not None and until >= now

    def _queue_of(self, pod: Mapping[str, Any]) -> str:
        ref = gangs.group_of(pod)
        if ref is None or ref.api_version != gangs.VOLCANO:
            return queues.DEFAULT
        group = self.cache.group(ref)
        return queues.queue_of(gangs.Spec.of(group).queue if group is not None else None)

    async def cycle(self) -> policy.Plan:
        """One pass: decide from the caches, then write. Returns the plan (for tests)."""
        now = self.clock()
        self.cycles += 1
        for uid in [u for u, until in self._evicting.items() if until < now]:
            del self._evicting[uid]
        pods = list(self.cache.pods.objects.values())
        holding: dict[str, list[fit.PodInfo]] = {name: [] for name in self.cache.nodes.objects}
        running: list[policy.Running] = []
        quota_used: dict[str, amounts.Amounts] = {}
        members: dict[gangs.GroupRef, list[dict[str, Any]]] = {}
        pending: list[dict[str, Any]] = []
        holders: list[tuple[dict[str, Any], str]] = []  # counted pods holding a node
        quota_list = [quotas.Quota.of(q) for q in self.cache.quotas.objects.values()]
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
            namespace = cache.key(pod)[0]
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
            fit.NodeInfo.of(self.cache.nodes.objects[name], infos)
            for name, infos in holding.items()
        ]
        pending_groups = {ref for p in pending if (ref := gangs.group_of(p)) is not None}
        group_states = {
            ref: queue.GroupState(
                self.cache.group(ref),
                served=ref.api_version in self.cache.group_resources,
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
            for name, c in self.cache.priority_classes.objects.items()
            if isinstance(value := c.get("value"), int)
        }
        never = frozenset(
            name
            for name, c in self.cache.priority_classes.objects.items()
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
        by_uid = {accessors.uid_of(p): p for p in pending}
        bound = await self._bind_all(plan, by_uid, now)
        _annotate(plan, decision)
        told = await self._tell_waiting(plan, by_uid, now)
        await self._evict(decision, by_uid, now)
        bound_now = frozenset(bound) | frozenset(self._assumed)  # bound, echo not yet seen
        phases = await self.status.write_groups(
            plan, members, bound_now, told, nodes, now, fair, priority_values
        )
        await self.status.write_queues(fair, plan, phases, now)
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
        for group in (
            self.cache.groups.get(gangs.VOLCANO) or cache.Store(cache.key)
        ).objects.values():
            ref = gangs.ref_of(gangs.VOLCANO, group)
            spec = gangs.Spec.of(group)
            phase = cache.status(group).get("phase")
            if members.get(ref) or not spec.min_resources or phase == messages.COMPLETED:
                continue
            name = queues.queue_of(spec.queue)
            waiting[name] = amounts.add(waiting.get(name, {}), spec.min_resources)
        served = self.cache.queues is not None
        objs = list(self.cache.queues.objects.values()) if self.cache.queues is not None else []
        history = {}
        for obj in objs:
            lately = queues.history_of(obj, now, self.settings.usage_half_life)
            if lately is not None:
                history[accessors.name_of(obj)] = lately
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
            ref: self.cache.group(ref)
            for p, _ in candidates
            if (ref := gangs.group_of(p)) is not None
        }
        running = preemption.victims(candidates, groups, priority_values, now)
        terminating = [(self._info(p)[0], n) for p, n in deleting]
        return preemption.decide(plan.outcomes, nodes, terminating, running, fair)

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
        return {accessors.uid_of(p) for (p, _), ok in zip(binds, results, strict=True) if ok}

    async def _bind(self, pod: dict[str, Any], node: str, now: float) -> bool:
        namespace, name = cache.key(pod)
        uid = accessors.uid_of(pod)
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
                    pod = self.cache.pods.objects.get(info.uid)
                    if pod is not None:
                        writes.append(self._throttled(self._evict_pod(pod, first, node, now)))
                group = self.cache.group(victim.group) if victim.group is not None else None
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
            group = self.cache.group(preemptor.group) if preemptor.group is not None else None
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
        namespace, name = cache.key(pod)
        uid = accessors.uid_of(pod)
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
        preemptor_uid = accessors.uid_of(preemptor) if preemptor is not None else ""
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
        written = self._shown.get(accessors.uid_of(pod))
        return written is None or written != (cache.version(pod), message)

    async def _tell(self, pod: dict[str, Any], message: str, now: float) -> None:
        namespace, name = cache.key(pod)
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
        self._shown[accessors.uid_of(pod)] = (cache.version(pod), message)
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
