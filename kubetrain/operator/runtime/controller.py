"""The reconcile contract and the worker loop that runs it (controller-runtime's reconcile
package and internal/controller, STYLE.md §1).

A reconciler gets a :class:`Key`, never an event or an object: it re-reads the cache, acts,
and returns a :class:`Result` (``requeue_after`` seconds, or None to wait for the next event).
Raising retries the key with back-off; raising :class:`TerminalError` says it will not fix
itself and is not retried.

The worker loop, not the reconciler, owns the shared concerns: one key at a time per key
(the work queue), a timeout per reconcile, a reconcile ID and the key in the log context
(:mod:`.logcontext`), one log line per failure (the traceback once per run of failures of a
key), and one metric per outcome (``controller_runtime_reconcile_total{result}`` with
success, error, requeue_after).

Owns: :class:`Key`, :class:`Result`, :class:`TerminalError`, the :class:`Reconciler` protocol
and :class:`Controller`. Must not: map events to keys (:mod:`.handler`), watch, or decide
when it may run (the manager starts it while holding the leader lease).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Protocol

from kubetrain import _aio, kube
from kubetrain.errors import KubetrainError
from kubetrain.kube import workqueue
from kubetrain.operator.runtime import logcontext
from kubetrain.operator.runtime import metrics as metrics_

log = logging.getLogger(__name__)

RECONCILE_TIMEOUT: Final = 60.0  # seconds; a reconcile longer than this is cut and retried

SUCCESS: Final = "success"
ERROR: Final = "error"
REQUEUE_AFTER: Final = "requeue_after"


@dataclass(frozen=True, order=True)
class Key:
    """What to reconcile: an object's namespace (``""`` for cluster-scoped) and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None  # seconds; None = wait for the next event


class TerminalError(KubetrainError):
    """A reconcile failed for a reason retrying cannot fix (an invalid spec, say). The worker
    logs it once and does not retry; the next event for the key reconciles it again. The
    reconciler records the condition and event before raising it."""


class Reconciler(Protocol):
    async def reconcile(self, key: Key) -> Result: ...


class Controller:
    """Runs ``reconciler`` on the keys :meth:`enqueue` gives it, with ``workers`` workers,
    while :meth:`run` runs (one leadership term); keys enqueued while it is not running are
    dropped, since :meth:`run` starts from every key there is."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        workers: int = 1,
        reconcile_timeout: float | None = RECONCILE_TIMEOUT,
        metrics: metrics_.Metrics | None = metrics_.METRICS,
        clock: workqueue.Clock = time.monotonic,
        rate_limiter: Callable[[], workqueue.RateLimiter[Key]] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be at least 1, not {workers}")
        self.name = name
        self.reconciler = reconciler
        self.workers = workers
        self.reconcile_timeout = reconcile_timeout
        self._metrics = metrics
        self._clock = clock
        self._new_rate_limiter = rate_limiter or (lambda: workqueue.default_rate_limiter(clock))
        self.queue: workqueue.WorkQueue[Key] | None = None

    @property
    def busy(self) -> bool:
        """Whether keys wait for a worker or are being reconciled now."""
        return self.queue is not None and self.queue.busy

    def enqueue(self, key: Key) -> None:
        """Reconcile ``key`` soon (once, however often it is enqueued before it runs)."""
        if self.queue is not None:
            self.queue.add(key)

    async def run(self, initial: Callable[[], Iterable[Key]] = tuple) -> None:
        """Reconcile until cancelled, starting with the keys ``initial`` returns; it is called
        once the queue takes keys, so no event between the two is lost."""
        queue: workqueue.WorkQueue[Key] = workqueue.WorkQueue(
            self.name,
            rate_limiter=self._new_rate_limiter(),
            clock=self._clock,
            metrics=self._metrics,
        )
        self.queue = queue
        for key in initial():
            queue.add(key)
        if self._metrics is not None:
            self._metrics.max_concurrent_reconciles.labels(self.name).set(self.workers)
        log.info("controller %s: starting %d workers", self.name, self.workers)
        try:
            async with _aio.TaskGroup() as group:
                for i in range(self.workers):
                    group.create_task(self._worker(queue), name=f"{self.name}-worker-{i}")
        finally:
            self.queue = None
            log.info("controller %s: stopped", self.name)

    async def _worker(self, queue: workqueue.WorkQueue[Key]) -> None:
        while True:
            key = await queue.get()
            try:
                await self.process(queue, key)
            finally:
                queue.done(key)

    async def process(self, queue: workqueue.WorkQueue[Key], key: Key) -> str:
        """Reconcile ``key`` once and settle its place in ``queue``; returns the outcome."""
        reconcile_id = str(uuid.uuid4())
        with logcontext.bound(
            controller=self.name,
            namespace=key.namespace,
            name=key.name,
            reconcile_id=reconcile_id,
        ):
            started = self._clock()
            if self._metrics is not None:
                self._metrics.active_workers.labels(self.name).inc()
            try:
                outcome = await self._reconcile(queue, key)
            finally:
                if self._metrics is not None:
                    self._metrics.active_workers.labels(self.name).dec()
                    elapsed = max(0.0, self._clock() - started)
                    self._metrics.reconcile_time.labels(self.name).observe(elapsed)
            if self._metrics is not None:
                self._metrics.reconcile_total.labels(self.name, outcome).inc()
                if outcome == ERROR:
                    self._metrics.reconcile_errors.labels(self.name).inc()
            return outcome

    async def _reconcile(self, queue: workqueue.WorkQueue[Key], key: Key) -> str:
        timer = _aio.timeout(self.reconcile_timeout)
        try:
            async with timer:
                result = await self.reconciler.reconcile(key)
        except asyncio.CancelledError:
            raise
        except TerminalError as exc:
            queue.forget(key)
            if self._metrics is not None:
                self._metrics.terminal_reconcile_errors.labels(self.name).inc()
            log.error("%s %s: %s (terminal; not retried)", self.name, key, exc)
            return ERROR
        except TimeoutError as exc:
            if not timer.expired():
                return self._failed(queue, key, exc)  # raised inside, not our limit
            delay = queue.add_rate_limited(key)
            log.warning(
                "%s %s: reconcile took longer than %ss; retrying in %s",
                self.name,
                key,
                self.reconcile_timeout,
                _seconds(delay),
            )
            return ERROR
        except Exception as exc:
            return self._failed(queue, key, exc)
        queue.forget(key)
        if result.requeue_after is None:
            return SUCCESS
        queue.add_after(key, result.requeue_after)
        return REQUEUE_AFTER

    def _failed(self, queue: workqueue.WorkQueue[Key], key: Key, exc: Exception) -> str:
        """Retry with back-off; the traceback is logged on the first failure of a run (API
        errors describe themselves and get none), a warning line on each one after."""
        first = queue.num_requeues(key) == 0
        delay = queue.add_rate_limited(key)
        if first and not isinstance(exc, kube.ApiError):
            log.error(
                "%s %s: reconcile failed; retrying in %s",
                self.name,
                key,
                _seconds(delay),
                exc_info=exc,
            )
        else:
            log.warning(
                "%s %s: reconcile failed (%d in a row): %s; retrying in %s",
                self.name,
                key,
                queue.num_requeues(key),
                exc,
                _seconds(delay),
            )
        return ERROR


def _seconds(delay: float) -> str:
    return f"{delay * 1000:.0f}ms" if delay < 1 else f"{delay:.1f}s"
