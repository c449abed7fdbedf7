"""An informer: one resource's list + watch, kept going for the life of the operator, feeding
a :class:`~kubetrain.kube.cache.Store`.

:class:`kubetrain.kube.watch.Watch` already lists, resumes from the last resourceVersion with
bookmarks, lists again on 410 and reconnects a silent stream ;
this loop turns what it yields into cache changes: a ``SYNC`` (each list) replaces the store's
contents, which the store diffs into ADDED / MODIFIED / DELETED, and every other event is
applied as it comes. When the watch gives up (401, 403, 404: a resource whose CRD is not
installed yet, say) the informer waits, with a growing delay, and starts over with a list;
the store stays unsynced until a list succeeds, which /readyz reports.

Owns: that loop and its restart counters. Must not: cache objects itself (the store does),
map events to keys, or swallow cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from kubetrain import kube
from kubetrain.kube import cache, instruments, watch

log = logging.getLogger(__name__)

RETRY_INITIAL: Final = 1.0  # seconds before restarting a watch that gave up
RETRY_MAX: Final = 60.0


class Informer:
    def __init__(
        self,
        client: kube.Client,
        store: cache.Store,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        settings: watch.Settings | None = None,
        metrics: instruments.InformerMetrics | None = None,
        retry_initial: float = RETRY_INITIAL,
        retry_max: float = RETRY_MAX,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.store = store
        self.namespace = namespace if store.resource.namespaced else None
        self.label_selector = label_selector
        self.settings = settings or watch.Settings()
        self._metrics = metrics
        self._retry_initial = retry_initial
        self._retry_max = retry_max
        self._sleep = sleep

    @property
    def resource(self) -> kube.Resource:
        return self.store.resource

    async def run(self) -> None:
        """Keep the store in step with the API server until cancelled."""
        failures = 0
        what = self.resource.group_resource
        while True:
            w = self.client.watch(
                self.resource,
                namespace=self.namespace,
                label_selector=self.label_selector,
                settings=self.settings,
            )
            counted = (0, 0)
            try:
                async with contextlib.aclosing(aiter(w)) as events:
                    async for event in events:
                        failures = 0
                        counted = self._count(w, counted)
                        if event.type == watch.SYNC:
                            self.store.replace(event.object.get("items") or [])
                        else:
                            self.store.apply(event.type, event.object)
            except kube.ApiError as exc:
                delay = min(self._retry_max, self._retry_initial * 2**failures)
                failures += 1
                if self._metrics is not None:
                    self._metrics.watch_restarts.labels(what).inc()
                log.warning("informer %s: %s; starting over in %.1fs", what, exc, delay)
                await self._sleep(delay)
            finally:
                self._count(w, counted)

    def _count(self, w: kube.Watch, counted: tuple[int, int]) -> tuple[int, int]:
        """Add the watch's new restarts and relists to the metrics."""
        if self._metrics is not None:
            label = self.resource.group_resource
            restarts, relists = w.restarts - counted[0], w.relists - counted[1]
            if restarts:
                self._metrics.watch_restarts.labels(label).inc(restarts)
            if relists:
                self._metrics.relists.labels(label).inc(relists)
        return (w.restarts, w.relists)
