"""A component's long-lived tasks: named, owned by its TaskGroup, all cancelled on stop, and
guarded so that a crash is logged once (kopf's aiokits).

Controllers (the garbage collector, the namespace controller, the scheduler, the node agent,
the operator's manager) start tasks as they find work: one watch per resource, one finalizer
per namespace, one worker per pod. Each belongs to the component's TaskGroup, so a crash ends
the component where the daemon's supervisor sees it, and a stop event cancels them all so
the group ends cleanly: cancellation means stop.

    async with self.tasks.running(stop, "gc"):      # the group, and its stop watcher
        self.tasks.spawn(self._watch(), "gc-watch")   # from here or any task of the group

:func:`guarded` wraps a task meant to run until it is cancelled: a failure is logged with the
task's name before it ends the group, and an early return is logged as the fault it is.

Must not: swallow errors or outlive the group it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Coroutine
from typing import Any

from kubetrain import _aio

log = logging.getLogger(__name__)


class Tasks:
    """The tasks a component spawned into its group, so that a stop can cancel them."""

    def __init__(self, group: _aio.TaskGroup | None = None) -> None:
        self._group = group
        self._running: set[asyncio.Task[None]] = set()

    @contextlib.asynccontextmanager
    async def running(self, stop: asyncio.Event | None, name: str) -> AsyncIterator[_aio.TaskGroup]:
        """Open the component's group; once ``stop`` is set, every spawned task is cancelled
        and the group ends when the body and those tasks have. Spawning works until then."""
        try:
            async with _aio.TaskGroup() as group:
                self._group = group
                if stop is not None:
                    group.create_task(self.cancel_on(stop), name=f"{name}-stop")
                yield group
        finally:
            self._group = None

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        if self._group is None:
            coro.close()
            raise RuntimeError(f"task {name} spawned while its component is not running")
        task = self._group.create_task(coro, name=name)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def cancel_on(self, stop: asyncio.Event) -> None:
        """Cancel every spawned task once ``stop`` is set; the group then ends cleanly."""
        await stop.wait()
        for task in list(self._running):
            task.cancel()


async def guarded(name: str, coro: Awaitable[None]) -> None:
    """Run a task meant to run until cancelled; a crash is logged once, then ends the group."""
    try:
        await coro
    except asyncio.CancelledError:
        raise  # a stop, not a failure
    except Exception:
        log.exception("%s failed", name)
        raise
    log.warning("%s ended though it should run until stopped", name)
