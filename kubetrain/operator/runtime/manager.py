"""The manager: starts and stops everything a controller process runs (controller-runtime's
manager), in this order:

1. the event writer of the recorders it hands out (``kube.record.Broadcaster``: one per
   manager, so reconciles queue their events and never wait for them; on a stop it writes
   what is queued, for a bounded time), and the informers of every resource a controller
   reads (one shared store per resource, on every replica, so a standby is warm when it
   takes over);
2. its runnables (the admission webhook), on every replica, and the metrics and probe
   endpoints (/readyz fails until every store has synced and every runnable is ready);
3. once every runnable is ready (upstream starts no controller before the webhook's
   certificates are ready), leader election on the Lease ``--leader-election-id`` of upstream
   (``1ca428e5.training-operator.kubeflow.org``), and while this replica holds it, the
   controllers, each once the stores it reads have synced, starting from every object of its
   kind. When the lease is lost the controllers are stopped at once and the replica goes back
   to being a candidate; a clean stop (cancellation) stops them, then releases the lease.

Events of a controller's own kind enqueue the object's key; events of the kinds it ``owns``
enqueue the key of the controller owner (:mod:`.handler`); ``watches`` map anything else.

Owns: that wiring and the lifecycle. Must not: reconcile, or keep state beyond the caches.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from kubetrain import _aio, kube
from kubetrain.kube import cache, informer, record
from kubetrain.kube.tasks import guarded
from kubetrain.operator.runtime import controller, handler, leader, server
from kubetrain.operator.runtime import metrics as metrics_

log = logging.getLogger(__name__)

LEASE_NAME: Final = "1ca428e5.training-operator.kubeflow.org"  # upstream's --leader-election-id
LEASE_NAMESPACE: Final = "kubeflow"
SYNC_WARNING: Final = 30.0  # seconds: log which caches a controller still waits for


@dataclass(frozen=True)
class Settings:
    namespace: str | None = None  # watch one namespace, or all
    leader_election: bool = True
    lease_name: str = LEASE_NAME
    lease_namespace: str = LEASE_NAMESPACE
    identity: str = ""  # default: <hostname>_<uuid>, as controller-runtime
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_address: str = ":8080"  # "" or "0" disables
    probe_address: str = ":8081"
    workers: int = 4  # per controller, unless the controller says otherwise
    reconcile_timeout: float | None = controller.RECONCILE_TIMEOUT
    watch: kube.watch.Settings = field(default_factory=kube.watch.Settings)


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Runnable(Protocol):
    """Something the manager runs beside its controllers, from its start until it stops, on
    every replica (leader or not): the admission webhook. ``ready`` is set once it serves;
    until then /readyz says ``<name> not ready`` and no controller starts."""

    name: str
    ready: asyncio.Event

    async def run(self) -> None: ...


@dataclass(frozen=True)
class _Registered:
    controller: controller.Controller
    for_: kube.Resource
    reads: tuple[kube.Resource, ...]


class Manager:
    def __init__(
        self,
        client: kube.Client,
        settings: Settings | None = None,
        *,
        metrics: metrics_.Metrics | None = None,
    ) -> None:
        self.client = client
        self.settings = settings = settings or Settings()
        self.identity = settings.identity or default_identity()
        # a registry per manager: two operators in one process never share a series
        self.metrics = metrics = metrics if metrics is not None else metrics_.Metrics()
        self._stores: dict[kube.Resource, cache.Store] = {}
        self._informers: dict[kube.Resource, informer.Informer] = {}
        self._controllers: list[_Registered] = []
        self._runnables: list[Runnable] = []
        self._group: _aio.TaskGroup | None = None
        self._leading = False
        self.elector: leader.Elector | None = None
        if settings.leader_election:
            self.elector = leader.Elector(
                client,
                name=settings.lease_name,
                namespace=settings.lease_namespace,
                identity=self.identity,
                timing=leader.Timing(
                    settings.lease_duration, settings.renew_deadline, settings.retry_period
                ),
            )
        self.events = record.Broadcaster(
            client, dropped=metrics.events_dropped, busy=self.controllers_busy
        )
        self.metrics_endpoint = server.Endpoint(
            "metrics", settings.metrics_address, server.metrics_routes(metrics.registry)
        )
        self.probe_endpoint = server.Endpoint(
            "health probes", settings.probe_address, server.probe_routes(self.unready)
        )

    # -- wiring --------------------------------------------------------------------------------

    def recorder(self, component: str) -> record.Recorder:
        """An event recorder writing as ``component`` (upstream: the controller's name),
        through the manager's queue: its events are written in the background while the
        manager runs."""
        return record.Recorder(self.client, component, broadcaster=self.events)

    def store(self, resource: kube.Resource) -> cache.Store:
        """The shared store of ``resource``, its informer started with the manager (or at
        once, if the manager runs already)."""
        found = self._stores.get(resource)
        if found is not None:
            return found
        made = self._stores[resource] = cache.Store(resource)
        self._informers[resource] = informer.Informer(
            self.client,
            made,
            namespace=self.settings.namespace,
            settings=self.settings.watch,
            metrics=self.metrics,
        )
        if self._group is not None:
            self._start_informer(resource)
        return made

    def add(self, runnable: Runnable) -> None:
        """Run ``runnable`` with the manager (see :class:`Runnable`)."""
        if self._group is not None:
            raise RuntimeError(f"{runnable.name}: add runnables before the manager runs")
        self._runnables.append(runnable)

    def controller(
        self,
        name: str,
        reconciler: controller.Reconciler,
        *,
        for_: kube.Resource,
        owns: Sequence[kube.Resource] = (),
        watches: Sequence[tuple[kube.Resource, handler.Mapper]] = (),
        workers: int | None = None,
    ) -> None:
        """Reconcile ``for_`` objects with ``reconciler``: on their own events, on events of
        ``owns`` objects whose controller owner is one, and on the keys each ``watches``
        mapper returns for an event of its resource."""
        if self._group is not None:
            raise RuntimeError(f"controller {name}: add controllers before the manager runs")
        if any(r.controller.name == name for r in self._controllers):
            raise ValueError(f"controller {name} is already registered")
        if owns and not for_.kind:
            raise ValueError(f"controller {name}: {for_.group_resource} needs its kind to own")
        made = controller.Controller(
            name,
            reconciler,
            workers=workers or self.settings.workers,
            reconcile_timeout=self.settings.reconcile_timeout,
            metrics=self.metrics,
        )

        def own(type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            if (key := handler.own_key(obj)) is not None:
                made.enqueue(key)

        self.store(for_).add_enqueuer(own)
        for resource in owns:

            def owned(type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
                for key in handler.owner_keys(obj, old, for_):
                    made.enqueue(key)

            self.store(resource).add_enqueuer(owned)
        for resource, mapper in watches:

            def mapped(
                type: str,
                obj: dict[str, Any],
                old: dict[str, Any] | None,
                mapper: handler.Mapper = mapper,
            ) -> None:
                for key in mapper(obj):
                    made.enqueue(key)

            self.store(resource).add_enqueuer(mapped)
        reads = (for_, *owns, *(r for r, _ in watches))
        self._controllers.append(_Registered(made, for_, tuple(dict.fromkeys(reads))))

    # -- state ---------------------------------------------------------------------------------

    @property
    def leading(self) -> bool:
        """Whether this replica runs its controllers now."""
        return self._leading

    def controllers_busy(self) -> bool:
        """Whether any controller has keys to reconcile or reconciles one now (its writes go
        before the event writer's)."""
        return any(r.controller.busy for r in self._controllers)

    def unsynced(self) -> list[str]:
        """The resources whose caches have not synced yet (what /readyz waits for)."""
        return sorted(r.group_resource for r, s in self._stores.items() if not s.synced.is_set())

    def unready(self) -> list[str]:
        """What /readyz waits for, one reason each: caches not synced, runnables not ready."""
        waiting = [f"{name} not synced" for name in self.unsynced()]
        return waiting + [f"{r.name} not ready" for r in self._runnables if not r.ready.is_set()]

    @property
    def metrics_port(self) -> int | None:
        return self.metrics_endpoint.port

    @property
    def probe_port(self) -> int | None:
        return self.probe_endpoint.port

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled (see the module docstring for what runs when)."""
        log.info("manager %s starting: %d controllers", self.identity, len(self._controllers))
        async with _aio.TaskGroup() as group:
            self._group = group
            group.create_task(guarded("event writer", self.events.run()), name="event-writer")
            for resource in self._informers:
                self._start_informer(resource)
            for runnable in self._runnables:
                group.create_task(guarded(runnable.name, runnable.run()), name=runnable.name)
            endpoints = (self.metrics_endpoint, self.probe_endpoint)
            try:
                for endpoint in endpoints:
                    await endpoint.start()
                await self._wait_for_runnables()
                await self._lead()
                await asyncio.get_running_loop().create_future()  # no controllers: serve on
            finally:
                self._group = None
                self._leading = False
                for endpoint in endpoints:
                    await endpoint.stop()

    async def _wait_for_runnables(self) -> None:
        for runnable in self._runnables:
            while not runnable.ready.is_set():
                try:
                    async with _aio.timeout(SYNC_WARNING):
                        await runnable.ready.wait()
                except TimeoutError:
                    log.warning("controllers wait for %s to be ready", runnable.name)

    def _start_informer(self, resource: kube.Resource) -> None:
        assert self._group is not None
        self._group.create_task(
            guarded(f"informer {resource.group_resource}", self._informers[resource].run()),
            name=f"informer-{resource.group_resource}",
        )

    async def _lead(self) -> None:
        elector = self.elector
        if elector is None:
            self._leading = True
            await self._run_controllers()
            return
        gauge = self.metrics.leader.labels(self.settings.lease_name)
        while True:
            lost = False
            try:
                # inside the try: a stop while acquiring may cut short a claim that landed
                await elector.acquire()
                gauge.set(1)
                self._leading = True
                async with _aio.TaskGroup() as group:
                    running = group.create_task(self._run_controllers(), name="controllers")
                    await elector.hold()
                    lost = True
                    log.error("manager %s lost leadership; stopping controllers", self.identity)
                    running.cancel()
            finally:
                gauge.set(0)
                self._leading = False
                if not lost:  # stopping (cancelled): let a standby take over at once
                    await elector.release()

    async def _run_controllers(self) -> None:
        async with _aio.TaskGroup() as group:
            for registered in self._controllers:
                group.create_task(
                    guarded(f"controller {registered.controller.name}", self._run_one(registered)),
                    name=f"controller-{registered.controller.name}",
                )

    async def _run_one(self, registered: _Registered) -> None:
        for store in (self._stores[r] for r in registered.reads):
            while not store.synced.is_set():
                try:
                    async with _aio.timeout(SYNC_WARNING):
                        await store.synced.wait()
                except TimeoutError:
                    log.warning(
                        "controller %s waits for the cache of %s to sync",
                        registered.controller.name,
                        store.resource.group_resource,
                    )
        for_store = self._stores[registered.for_]
        await registered.controller.run(initial=lambda: _keys(for_store.list()))


def _keys(objects: Iterable[dict[str, Any]]) -> list[controller.Key]:
    return [key for obj in objects if (key := handler.own_key(obj)) is not None]
