"""The scheduler's cache: what it watches, kept equal to what the API server holds, as
kube-scheduler's informers keep theirs. Pods, Nodes (those matching a label selector),
PriorityClasses and ResourceQuotas always; PodGroups of both kinds and Volcano Queues while
their CRDs are served, found by discovery and looked for again while one is missing.

Must not: decide or write anything. A change is reported to its ``on_event`` hook and wakes
the scheduler's loop; what it means is the scheduler's business.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain import accessors, kube
from kubetrain.kube import tasks, watch
from kubetrain.local.scheduler import gangs

log = logging.getLogger(__name__)

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

OnEvent = Callable[[str, dict[str, Any], dict[str, Any] | None], bool]


def key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """A namespaced object's key in its store."""
    return accessors.namespace_of(obj), accessors.name_of(obj)


def version(obj: Mapping[str, Any]) -> str:
    """Its resourceVersion: what tells a write's echo from a later change."""
    return str(accessors.metadata(obj).get("resourceVersion") or "")


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    found = obj.get("spec")
    return found if isinstance(found, Mapping) else {}


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    found = obj.get("status")
    return found if isinstance(found, Mapping) else {}


@dataclass
class Store:
    """One watched resource's objects, by key."""

    key: Callable[[Mapping[str, Any]], Any]
    objects: dict[Any, dict[str, Any]] = field(default_factory=dict)
    synced: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class Retry:
    """How long to wait before asking again after an error retrying cannot fix."""

    initial: float = 0.1
    max: float = 10.0
    rediscover_every: float = 30.0  # seconds between looks for kinds not served


class Cache:
    """The watched stores and the watches that fill them."""

    def __init__(
        self,
        client: kube.Client,
        wake: asyncio.Event,
        *,
        retry: Retry,
        watch_settings: watch.Settings,
        node_selector: str | None = None,
    ) -> None:
        self.client = client
        self.wake = wake
        self.retry = retry
        self.watch_settings = watch_settings
        self.node_selector = node_selector
        self.pods = Store(accessors.uid_of)
        self.nodes = Store(accessors.name_of)
        self.priority_classes = Store(accessors.name_of)
        self.quotas = Store(key)
        self.groups: dict[str, Store] = {}  # by apiVersion, while served
        self.group_resources: dict[str, kube.Resource] = {}
        self.group_status_subresource: dict[str, bool] = {}
        self.queues: Store | None = None  # while the Queue kind is served
        self.queue_status_subresource = False
        self._tasks: tasks.Tasks | None = None

    def start(self, group: tasks.Tasks, on_pod: OnEvent) -> None:
        """Start every watch (after :meth:`discover`) and the look for kinds not served."""
        self._tasks = group
        group.spawn(self._watch(PODS, self.pods, on_pod), "scheduler-watch-pods")
        group.spawn(
            self._watch(NODES, self.nodes, label_selector=self.node_selector),
            "scheduler-watch-nodes",
        )
        group.spawn(
            self._watch(PRIORITY_CLASSES, self.priority_classes),
            "scheduler-watch-priorityclasses",
        )
        group.spawn(self._watch(RESOURCE_QUOTAS, self.quotas), "scheduler-watch-quotas")
        for api_version in list(self.group_resources):
            self._watch_groups(api_version)
        if self.queues is not None:
            self._watch_queues()
        group.spawn(self._rediscover(), "scheduler-rediscover")

    def group(self, ref: gangs.GroupRef) -> dict[str, Any] | None:
        store = self.groups.get(ref.api_version)
        return None if store is None else store.objects.get((ref.namespace, ref.name))

    async def synced(self) -> None:
        """Wait until every watch has listed once."""
        stores = [self.pods, self.nodes, self.priority_classes, self.quotas]
        stores += list(self.groups.values())
        if self.queues is not None:
            stores.append(self.queues)
        for store in stores:
            await store.synced.wait()

    async def discover(self) -> None:
        """Which PodGroup kinds are served (retrying until discovery answers)."""
        delay = self.retry.initial
        while True:
            try:
                found = await self.client.discover(refresh=True)
                break
            except kube.ApiError as exc:
                log.warning("discovery failed: %s; retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(self.retry.max, delay * 2)
        for api_version in POD_GROUP_KINDS:
            group, version = kube.split_api_version(api_version)
            resource = found.find(group, "podgroups", version)
            if resource is not None and api_version not in self.group_resources:
                self.group_resources[api_version] = resource
                subresources = found.subresources.get(resource, frozenset())
                self.group_status_subresource[api_version] = "status" in subresources
                self.groups[api_version] = Store(key)
        queue_resource = found.find(QUEUES.group, QUEUES.plural, QUEUES.version)
        if self.queues is None and queue_resource is not None:
            subresources = found.subresources.get(queue_resource, frozenset())
            self.queue_status_subresource = "status" in subresources
            self.queues = Store(accessors.name_of)

    def _spawn(self, coro: Any, name: str) -> None:
        assert self._tasks is not None, "start() spawns the watches"
        self._tasks.spawn(coro, name)

    def _watch_groups(self, api_version: str) -> None:
        self._spawn(
            self._watch(
                self.group_resources[api_version],
                self.groups[api_version],
                optional_kind=api_version,
            ),
            f"scheduler-watch-podgroups-{api_version}",
        )

    def _watch_queues(self) -> None:
        assert self.queues is not None
        self._spawn(
            self._watch(QUEUES, self.queues, optional_kind=QUEUES.api_version),
            "scheduler-watch-queues",
        )

    async def _rediscover(self) -> None:
        while True:
            await asyncio.sleep(self.retry.rediscover_every)
            served = all(k in self.group_resources for k in POD_GROUP_KINDS)
            if served and self.queues is not None:
                continue
            known = set(self.group_resources)
            had_queues = self.queues is not None
            await self.discover()
            for api_version in set(self.group_resources) - known:
                log.info("PodGroup %s is served now; watching it", api_version)
                self._watch_groups(api_version)
            if self.queues is not None and not had_queues:
                log.info("Queue %s is served now; watching it", QUEUES.api_version)
                self._watch_queues()

    async def _watch(
        self,
        resource: kube.Resource,
        store: Store,
        on_event: OnEvent | None = None,
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
                    resource, label_selector=label_selector, settings=self.watch_settings
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
                    self.wake.set()
                    return
                delay = min(self.retry.max, self.retry.initial * 2**failures)
                failures += 1
                log.warning("cannot watch %s: %s; retrying in %.1fs", resource, exc, delay)
                await asyncio.sleep(delay)

    def _apply(self, store: Store, event: kube.Event, on_event: OnEvent | None) -> None:
        """Record one event; wake the loop unless ``on_event`` says it cannot matter."""
        if event.type == watch.SYNC:
            items = [i for i in event.object.get("items") or [] if isinstance(i, dict)]
            store.objects = {store.key(i): i for i in items}
            store.synced.set()
            matters = on_event is None or on_event(watch.SYNC, event.object, None)
        else:
            k = store.key(event.object)
            before = store.objects.get(k)
            if event.type == watch.DELETED:
                store.objects.pop(k, None)
            else:
                store.objects[k] = event.object
            matters = on_event is None or on_event(event.type, event.object, before)
        if matters:
            self.wake.set()
