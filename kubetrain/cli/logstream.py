"""A job's logs, merged from all its pods through the ``pods/log`` API, each line prefixed by
its replica: ``[master-0] epoch 1 loss 0.31``.

Without follow, each replica's log is printed whole, one replica after the other, in the
framework's order. With follow, every replica's log streams as lines arrive; pods that appear
later (a gang scheduled late, a replacement after a failure) and containers that restart join
as they start, and the whole ends once the job has finished and the last streams have
drained. A pod whose container has not started has no log yet; followers wait for it.

Owns: reading logs and merging them into a :class:`Sink`. Must not: decide how lines look on
a terminal (the sink does) or when a job has finished (:mod:`kubetrain.cli.jobstate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TextIO

from kubetrain import _aio, kube
from kubetrain.cli import jobkinds, jobs, jobstate, replicas
from kubetrain.kube import resource, watch

log = logging.getLogger(__name__)

DRAIN_GRACE = 10.0  # seconds streams may take to deliver their last lines after the job ends


@dataclass(frozen=True)
class Options:
    """What to read of each container's log (the ``pods/log`` query)."""

    follow: bool = False
    tail: int | None = None
    since_seconds: int | None = None
    timestamps: bool = False
    previous: bool = False
    container: str | None = None

    def query(self, container: str) -> dict[str, Any]:
        return {
            "container": container,
            "follow": "true" if self.follow else None,
            "tailLines": self.tail,
            "sinceSeconds": self.since_seconds,
            "timestamps": "true" if self.timestamps else None,
            "previous": "true" if self.previous else None,
        }


class Sink(Protocol):
    """Where merged log lines go."""

    def line(self, replica: str, text: str) -> None: ...

    def note(self, text: str) -> None: ...


class Writer:
    """Lines to a text stream as ``[replica] text`` (or bare), notes to stderr."""

    def __init__(self, out: TextIO | None = None, *, prefix: bool = True) -> None:
        self.out = out or sys.stdout
        self.prefix = prefix

    def line(self, replica: str, text: str) -> None:
        self.out.write(f"[{replica}] {text}\n" if self.prefix else f"{text}\n")
        self.out.flush()

    def note(self, text: str) -> None:
        print(f"kubetrain: {text}", file=sys.stderr, flush=True)


def selects(replica: replicas.Replica, wanted: Sequence[str]) -> bool:
    """Whether ``--replica`` values select a replica: its id (``worker-1``) or its type
    (``worker``), case-insensitively; no values select all."""
    if not wanted:
        return True
    names = {w.strip().lower() for w in wanted}
    return replica.id in names or replica.rtype.lower() in names


async def lines(
    client: kube.Client, pod: Mapping[str, Any], container: str, options: Options
) -> AsyncIterator[str]:
    """The lines of one container's log."""
    path = resource.PODS.path(jobs.namespace_of(pod), jobs.name_of(pod), "log")
    async with client.stream(path, query=options.query(container)) as body:
        async for raw in body:
            yield raw.decode("utf-8", errors="replace").rstrip("\r")


def _why_no_log(pod: Mapping[str, Any]) -> str | None:
    """Why a pod has no log to read yet, or None when it may have one."""
    if replicas.node(pod) is None:
        reason = replicas.waiting_reason(pod)
        detail = f" ({reason})" if reason else ""
        return f"pod {jobs.name_of(pod)} is {replicas.phase(pod)}, not scheduled to a node{detail}"
    return None


async def print_logs(
    client: kube.Client,
    job: Mapping[str, Any],
    wanted: Sequence[str],
    options: Options,
    sink: Sink,
) -> tuple[int, list[str]]:
    """Print each selected replica's log whole, in order. Returns how many logs were read and
    why the others could not be."""
    kind = jobkinds.of(job)
    pods = await jobs.pods(client, job)
    chosen = [r for r in replicas.of_job(job, pods) if r.pod is not None and selects(r, wanted)]
    read, missing = 0, []
    for replica in chosen:
        pod = replica.pod
        assert pod is not None
        why = _why_no_log(pod)
        container = options.container or replicas.default_container(pod, kind)
        if why is None and container is None:
            why = f"pod {jobs.name_of(pod)} has no containers"
        if why is not None or container is None:
            missing.append(f"{replica.id}: {why}")
            continue
        try:
            async for text in lines(client, pod, container, options):
                sink.line(replica.id, text)
        except kube.ApiError as exc:
            missing.append(f"{replica.id}: {exc.message}")
            continue
        read += 1
    return read, missing


Instance = tuple[str, str, int]  # (pod uid, container, restart count)


def instance(
    pod: Mapping[str, Any], kind: jobkinds.JobKind, container: str | None = None
) -> tuple[Instance, str, int] | None:
    """The container instance of ``pod`` whose log can be followed now (``container``, else
    the replica's own), with its container name and restart count; None while the pod is
    not on a node or the container waits (no log yet: a later change of the pod tells).
    Each instance's log is followed once: a restart is a new instance."""
    if replicas.node(pod) is None:
        return None
    container = container or replicas.default_container(pod, kind)
    if container is None:
        return None
    status = next(
        (
            s
            for s in (pod.get("status") or {}).get("containerStatuses") or []
            if isinstance(s, Mapping) and s.get("name") == container
        ),
        None,
    )
    if status is not None:
        state = status.get("state") or {}
        if "running" not in state and "terminated" not in state:
            return None
        restarts = int(status.get("restartCount") or 0)
    elif replicas.phase(pod) in ("Running", "Succeeded", "Failed"):
        restarts = 0
    else:
        return None
    uid = str((pod.get("metadata") or {}).get("uid") or jobs.name_of(pod))
    return (uid, container, restarts), container, restarts


class Follower:
    """Streams the logs of a job's pods into a sink until the job finishes.

    ``run`` returns the job as last seen (None if it was deleted). Each container instance
    (pod uid, container, restart count) is streamed once.
    """

    def __init__(
        self,
        client: kube.Client,
        job: Mapping[str, Any],
        sink: Sink,
        *,
        wanted: Sequence[str] = (),
        options: Options | None = None,
        watch_settings: watch.Settings | None = None,
        drain_grace: float = DRAIN_GRACE,
    ) -> None:
        self.client = client
        self.job: dict[str, Any] | None = dict(job)
        self.kind = jobkinds.of(job)
        self.sink = sink
        self.wanted = wanted
        self.options = replace(options or Options(), follow=True)
        self.watch_settings = watch_settings
        self.drain_grace = drain_grace
        self._started: set[tuple[str, str, int]] = set()
        self._streams: set[asyncio.Task[None]] = set()
        self._first_sync = True

    async def run(self) -> dict[str, Any] | None:
        done = asyncio.Event()
        async with _aio.TaskGroup() as group:
            watchers = [
                group.create_task(self._watch_job(done), name="logs: job watch"),
                group.create_task(self._watch_pods(group), name="logs: pod watch"),
            ]
            await done.wait()
            for task in watchers:
                task.cancel()
            if self.job is not None:
                await self._final_pods(group)
            await self._drain()
        return self.job

    async def _watch_job(self, done: asyncio.Event) -> None:
        assert self.job is not None
        async for current in jobs.follow(self.client, self.job, settings=self.watch_settings):
            self.job = current
            if current is None or jobstate.of(current).finished:
                done.set()
                return

    async def _watch_pods(self, group: _aio.TaskGroup) -> None:
        assert self.job is not None
        stream = self.client.watch(
            resource.PODS,
            namespace=jobs.namespace_of(self.job),
            label_selector=self.kind.pod_selector(jobs.name_of(self.job)),
            settings=self.watch_settings,
        )
        async with contextlib.aclosing(aiter(stream)) as events:
            async for event in events:
                if event.type == watch.SYNC:
                    for pod in event.object.get("items") or []:
                        self._consider(pod, group)
                    self._first_sync = False
                elif event.type != watch.DELETED:
                    self._consider(event.object, group)

    async def _final_pods(self, group: _aio.TaskGroup) -> None:
        """After the job ended: catch pods whose last change the pod watch had not seen."""
        assert self.job is not None
        try:
            for pod in await jobs.pods(self.client, self.job):
                self._consider(pod, group)
        except kube.ApiError as exc:
            self.sink.note(f"could not list the pods of {jobs.ref_of(self.job)}: {exc.message}")

    def _consider(self, pod: dict[str, Any], group: _aio.TaskGroup) -> None:
        replica = replicas.of_pod(pod, self.kind)
        if not selects(replica, self.wanted):
            return
        found = instance(pod, self.kind, self.options.container)
        if found is None:
            return
        key, container, restarts = found
        if key in self._started:
            return
        self._started.add(key)
        # Tail and since apply to what was there when following began; later containers
        # (restarts, replacements) are shown whole.
        options = self.options
        if not self._first_sync:
            options = replace(options, tail=None, since_seconds=None)
        task = group.create_task(
            self._stream(replica.id, pod, container, options),
            name=f"logs: {jobs.name_of(pod)}/{container}#{restarts}",
        )
        self._streams.add(task)
        task.add_done_callback(self._streams.discard)

    async def _stream(
        self, replica: str, pod: Mapping[str, Any], container: str, options: Options
    ) -> None:
        try:
            async for text in lines(self.client, pod, container, options):
                self.sink.line(replica, text)
        except kube.ApiError as exc:
            log.debug("log of %s/%s ended: %s", jobs.name_of(pod), container, exc)
            self.sink.note(f"[{replica}] log unavailable: {exc.message}")

    async def _drain(self) -> None:
        pending = set(self._streams)
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=self.drain_grace)
        for task in late:
            task.cancel()
