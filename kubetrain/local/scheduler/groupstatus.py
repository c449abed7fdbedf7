"""What the scheduler writes about its gangs and queues: each PodGroup's status (and its
Warning ``Unschedulable`` event where no pod can carry the message), whether a Volcano group
may be enqueued (Volcano's enqueue action), and each Volcano Queue's status.

Everything is computed from one cycle's plan and the cache, written whole and only when it
differs from what is stored or from what this writer wrote and the watch has not echoed yet.

Must not: write pods, bind or evict (:mod:`~kubetrain.local.scheduler.scheduler` does).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any

from kubetrain import accessors, kube
from kubetrain.kube import record
from kubetrain.local.scheduler import (
    amounts,
    bodies,
    cache,
    fit,
    gangs,
    messages,
    policy,
    queues,
    timestamps,
)

log = logging.getLogger(__name__)


# a write sent while fewer than the scheduler's limit are in flight
Throttled = Callable[[Coroutine[Any, Any, Any]], Awaitable[Any]]
# the scheduler's event recording: (involved, *, component, type, reason, message, action)
Event = Callable[..., Coroutine[Any, Any, None]]


class Writer:
    """Writes PodGroup and Queue status, remembering its writes until the watch echoes them."""

    def __init__(
        self,
        client: kube.Client,
        watched: cache.Cache,
        *,
        scheduler_names: frozenset[str],
        namespaces: frozenset[str] | None,
        throttled: Throttled,
        event: Event,
    ) -> None:
        self.client = client
        self.cache = watched
        self.scheduler_names = scheduler_names
        self.namespaces = namespaces
        self._throttled = throttled
        self._event = event
        self._written: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = {}
        self._queue_written: dict[str, tuple[str, dict[str, Any]]] = {}
        self.next_deadline: float | None = None  # the next scheduleTimeoutSeconds to check

    def _in_namespaces(self, obj: Mapping[str, Any]) -> bool:
        return self.namespaces is None or cache.key(obj)[0] in self.namespaces

    def _manages(
        self, api_version: str, group: Mapping[str, Any], pods: list[dict[str, Any]]
    ) -> bool:
        if not self._in_namespaces(group):
            return False
        names = self.scheduler_names
        if pods:
            return any(cache.spec(p).get("schedulerName") in names for p in pods)
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
        store = self.cache.groups.get(gangs.VOLCANO)
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
            phase = cache.status(group).get("phase")
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

    async def write_groups(
        self,
        plan: policy.Plan,
        members: Mapping[gangs.GroupRef, list[dict[str, Any]]],
        bound_now: frozenset[str],
        told: Mapping[gangs.GroupRef, str],
        nodes: Iterable[fit.NodeInfo],
        now: float,
        fair: queues.Fair,
        priority_values: Mapping[str, int],
    ) -> dict[str, collections.Counter[str]]:
        """Write the PodGroups' status (``bound_now``: the pods bound, by the watch or by
        this scheduler before the watch shows it); returns, per queue, how many of its
        Volcano groups are in each phase (for the Queues' status)."""
        outcomes = {o.unit.group: o for o in plan.outcomes if o.unit.group is not None}
        capacity = amounts.total(n.allocatable for n in nodes)
        stamp = timestamps.format_seconds(now)
        verdicts = self._enqueue_verdicts(plan, members, bound_now, fair, priority_values)
        phases: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        deadlines: list[float] = []
        writes = []
        for api_version, store in list(self.cache.groups.items()):
            for group in list(store.objects.values()):
                ref = gangs.ref_of(api_version, group)
                pods = members.get(ref, [])
                spec = gangs.Spec.of(group)
                current = cache.status(group)
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
        self.next_deadline = min(deadlines) if deadlines else None
        live = {
            (v, *cache.key(g))
            for v, store in self.cache.groups.items()
            for g in store.objects.values()
        }
        for key in [k for k in self._written if k not in live]:
            del self._written[key]
        await asyncio.gather(*writes)
        return phases

    async def write_queues(
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
        if self.cache.queues is None:
            return
        held = fair.copy()
        for name, request in plan.started():
            held.charge(name, request)
        writes = []
        partial = self.namespaces is not None
        for obj in list(self.cache.queues.objects.values()):
            name = accessors.name_of(obj)
            if partial and name not in phases and name not in held.allocated:
                continue
            base = queues.status(
                cache.status(obj), phases.get(name, {}), held.allocated.get(name, {})
            )
            if not gangs.differs(cache.status(obj), base):
                continue
            if self._queue_written.get(name) == (cache.version(obj), base):
                continue
            stamp = timestamps.format_seconds(now)
            lately = queues.fair_sharing(fair.history.get(name, {}), stamp)
            writes.append(self._throttled(self._write_queue(obj, base, lately)))
        live = set(self.cache.queues.objects)
        for name in [n for n in self._queue_written if n not in live]:
            del self._queue_written[name]
        await asyncio.gather(*writes)

    async def _write_queue(
        self, obj: Mapping[str, Any], base: dict[str, Any], lately: dict[str, Any]
    ) -> None:
        name = accessors.name_of(obj)
        wanted = {**base, "fairSharing": lately}
        subresource = "status" if self.cache.queue_status_subresource else None
        try:
            await self.client.patch(
                cache.QUEUES,
                name,
                {"metadata": {"uid": accessors.uid_of(obj)}, "status": wanted},
                subresource=subresource,
            )
        except (kube.NotFound, kube.Conflict, kube.Invalid):
            return
        except kube.ApiError as exc:
            log.warning("Queue %s: cannot write status: %s", name, exc)
            return
        self._queue_written[name] = (cache.version(obj), base)
        log.info("Queue %s: %s", name, wanted.get("state"))

    def _status_needed(
        self, api_version: str, group: Mapping[str, Any], wanted: dict[str, Any]
    ) -> bool:
        if not gangs.differs(cache.status(group), wanted):
            return False
        key = (api_version, *cache.key(group))
        return self._written.get(key) != (cache.version(group), wanted)

    async def _write_status(
        self, api_version: str, group: Mapping[str, Any], wanted: dict[str, Any]
    ) -> None:
        resource = self.cache.group_resources.get(api_version)
        if resource is None:
            return
        namespace, name = cache.key(group)
        subresource = "status" if self.cache.group_status_subresource.get(api_version) else None
        try:
            await self.client.patch(
                resource,
                name,
                {"metadata": {"uid": accessors.uid_of(group)}, "status": wanted},
                namespace=namespace,
                subresource=subresource,
            )
        except (kube.NotFound, kube.Conflict, kube.Invalid):
            return
        except kube.ApiError as exc:
            log.warning("PodGroup %s/%s: cannot write status: %s", namespace, name, exc)
            return
        self._written[(api_version, namespace, name)] = (cache.version(group), wanted)
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
