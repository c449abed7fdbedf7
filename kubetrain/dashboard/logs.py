"""A job's merged logs for a browser tab: every replica's lines as they are written, and the
whole text for a download or the previous containers.

Following takes its pods from the hub's shared pod watch (no watch of its own) and opens one
``pods/log?follow=true`` stream per container instance, as ``kubetrain logs -f`` does: the
rule for which container of a pod has a log to follow, and when a restart is a new one, is
:func:`kubetrain.cli.logstream.instance`'s. Lines go out in batches: whatever arrived while
the last batch was being sent.

Owns: the per-tab follow and the text reads. Must not: decide how lines look (the browser
does) or watch anything itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain import _aio, kube
from kubetrain.cli import jobkinds, jobs, logstream, replicas
from kubetrain.dashboard import hub

log = logging.getLogger(__name__)

FIRST_TAIL: Final = 5000  # lines of each log already written when following starts
BATCH: Final = 500  # lines sent at most in one message
QUEUE: Final = 10_000  # lines waiting for the browser before the streams wait for it


@dataclass(frozen=True)
class Line:
    replica: str
    text: str


@dataclass(frozen=True)
class Note:
    text: str


@dataclass
class Follow:
    """One tab's follow of one job's logs."""

    client: kube.Client
    source: hub.Hub
    key: hub.JobKey
    container: str | None = None
    tail: int | None = FIRST_TAIL
    _queue: asyncio.Queue[Line | Note] = field(default_factory=lambda: asyncio.Queue(QUEUE))
    _started: set[logstream.Instance] = field(default_factory=set)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self, send: Callable[[list[Line | Note]], Awaitable[bool]]) -> None:
        """Send batches of lines and notes until ``send`` says the tab has gone (False), or
        the caller is cancelled."""
        kind = jobkinds.find(self.key[0])
        async with _aio.TaskGroup() as group:
            self._track(group.create_task(self._watch(kind, group), name="dashboard: log pods"))
            try:
                while True:
                    batch = [await self._queue.get()]
                    while len(batch) < BATCH and not self._queue.empty():
                        batch.append(self._queue.get_nowait())
                    if not await send(batch):
                        return
            finally:
                for task in self._tasks:
                    task.cancel()

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _watch(self, kind: jobkinds.JobKind, group: _aio.TaskGroup) -> None:
        async with self.source.listen() as listener:
            first = True
            while True:
                for pod in self.source.pods_of(self.key):
                    self._consider(pod, kind, group, first)
                first = False
                while (hub.JOB, self.key) not in await listener.next():
                    pass

    def _consider(
        self, pod: Mapping[str, Any], kind: jobkinds.JobKind, group: _aio.TaskGroup, first: bool
    ) -> None:
        found = logstream.instance(pod, kind, self.container)
        if found is None or found[0] in self._started:
            return
        instance, container, restarts = found
        self._started.add(instance)
        replica = replicas.of_pod(pod, kind).id
        options = logstream.Options(follow=True, tail=self.tail if first else None)
        self._track(
            group.create_task(
                self._stream(replica, pod, container, options),
                name=f"dashboard: log {jobs.name_of(pod)}/{container}#{restarts}",
            )
        )

    async def _stream(
        self, replica: str, pod: Mapping[str, Any], container: str, options: logstream.Options
    ) -> None:
        try:
            async for text in logstream.lines(self.client, pod, container, options):
                await self._queue.put(Line(replica, text))
        except kube.ApiError as exc:
            log.debug("log of %s/%s ended: %s", jobs.name_of(pod), container, exc)
            await self._queue.put(Note(f"[{replica}] log unavailable: {exc.message}"))


class _Collect:
    """A :class:`kubetrain.cli.logstream.Sink` that keeps what it is given."""

    def __init__(self) -> None:
        self.lines: list[Line] = []
        self.notes: list[str] = []

    def line(self, replica: str, text: str) -> None:
        self.lines.append(Line(replica, text))

    def note(self, text: str) -> None:
        self.notes.append(text)


async def text(
    client: kube.Client,
    job: Mapping[str, Any],
    *,
    previous: bool = False,
    wanted: Sequence[str] = (),
) -> tuple[list[Line], list[str]]:
    """Each selected replica's whole log (of its previous container with ``previous``), and
    why the others have none, as ``kubetrain logs [--previous]`` reads them."""
    sink = _Collect()
    options = logstream.Options(previous=previous)
    _, missing = await logstream.print_logs(client, job, wanted, options, sink)
    return sink.lines, [*missing, *sink.notes]
