"""A controller's long-lived tasks: named, owned by its TaskGroup, and all cancelled on stop.

Controllers (the garbage collector, the namespace controller) start tasks as they find work:
one watch per resource, one finalizer per namespace. Each belongs to the component's
TaskGroup, so a crash ends the component where the daemon's supervisor sees it, and a stop
event cancels them all so the group ends cleanly: cancellation means stop (house rule 10).

Must not: swallow errors or outlive the group it was given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from kubetrain import _aio


class Tasks:
    """The tasks a component spawned into its group, so that a stop can cancel them."""

    def __init__(self, group: _aio.TaskGroup) -> None:
        self._group = group
        self._running: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = self._group.create_task(coro, name=name)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def cancel_on(self, stop: asyncio.Event) -> None:
        """Cancel every spawned task once ``stop`` is set; the group then ends cleanly."""
        await stop.wait()
        for task in list(self._running):
            task.cancel()
