"""One SDK client's link to an API server: the private event loop, the kube client on it,
the namespace jobs go to, and the tasks that watch and stream for it.

Created from a backend configuration (:class:`~kubetrain.sdk.LocalBackendConfig` by
default, or :class:`~kubetrain.sdk.KubernetesBackendConfig`) and the environment the client
was constructed in; see :mod:`kubetrain.sdk._target` for the rule. Watches and log streams
run as named tasks of the connection's TaskGroup (its one long-lived coroutine), and forward
what they see, errors included, to the iterator that asked for them, which cancels them when
it is done.

Must not: know about job kinds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kubetrain import _aio, kube
from kubetrain.kube import tasks, watch
from kubetrain.sdk import _target, _types
from kubetrain.sdk._errors import InvalidTrainer
from kubetrain.sdk._loop import Loop

log = logging.getLogger(__name__)

USER_AGENT: Final = "kubetrain-sdk"
DEFAULT_INTERVAL: Final = 2.0  # seconds a change-waiter looks again even without an event
CLOSE_GRACE: Final = 5.0  # seconds the connection's tasks get to end on close


@dataclass(frozen=True)
class Where:
    """Where a connection points (for messages and ``repr``)."""

    kubeconfig: str
    context: str | None
    local: bool


class Connection:
    """The loop, the client and the namespace of one SDK client; :meth:`close` ends them."""

    def __init__(
        self,
        backend: _types.BackendConfig | None,
        *,
        environ: Mapping[str, str] | None = None,
        namespace: str | None = None,
        name: str = "kubetrain-sdk",
    ) -> None:
        environ = os.environ if environ is None else environ
        if backend is None:  # the command line's rule: KUBETRAIN_KUBECONFIG, else local
            chosen = _target.kubeconfig_path(None, None, environ)
            backend = (
                _types.KubernetesBackendConfig(namespace, chosen)
                if chosen
                else _types.LocalBackendConfig(namespace=namespace)
            )
        if isinstance(backend, _types.KubernetesBackendConfig):
            path = _target.kubeconfig_path(backend.config_file, backend.context, environ)
            self.where = Where(path or _target.default_kubeconfig(environ), backend.context, False)
        elif isinstance(backend, _types.LocalBackendConfig):
            local = _target.ensure_local(environ, home=backend.home, start=backend.start)
            if local.started is not None:
                log.info(
                    "started the local control plane at %s (pid %s); `kubetrain down` stops it",
                    local.started.get("url"),
                    local.started.get("pid"),
                )
            self.where = Where(local.kubeconfig, None, True)
        else:
            raise InvalidTrainer(
                f"backend_config: {type(backend).__name__}; accepted: LocalBackendConfig, "
                "KubernetesBackendConfig"
            )
        self.loop = Loop(name)
        try:
            self.client, default_namespace = self.loop.run(self._open())
        except BaseException:
            self.loop.close()
            raise
        self.namespace: str = backend.namespace or default_namespace
        self._group = _Group()
        self.loop.run(self._group.start())
        self._finalizer = weakref.finalize(self, _shutdown, self.loop, self.client, self._group)

    async def _open(self) -> tuple[kube.Client, str]:
        cluster = await kube.from_kubeconfig(self.where.kubeconfig, context=self.where.context)
        return kube.Client(cluster, user_agent=USER_AGENT), cluster.namespace

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Start a task in the connection's group (call on the loop)."""
        return self._group.spawn(coro, name)

    def close(self) -> None:
        """Stop the connection's tasks, close the client, end the loop's thread."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive


_Client = TypeVar("_Client", bound="Connected")


class Connected:
    """What both SDK clients do with their connection, written once: its namespace, ``with``
    and :meth:`close` to end it early, and where it points (for their ``repr``)."""

    _conn: Connection

    @property
    def namespace(self) -> str:
        return self._conn.namespace

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    def _where(self) -> str:
        return "local control plane" if self._conn.where.local else self._conn.where.kubeconfig


class _Group:
    """The connection's TaskGroup, run by one task on the loop until stopped."""

    def __init__(self) -> None:
        self._tasks: tasks.Tasks | None = None
        self._stop: asyncio.Event | None = None
        self._runner: asyncio.Task[None] | None = None

    async def start(self) -> None:
        ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._runner = asyncio.get_running_loop().create_task(
            self._run(ready, self._stop), name="sdk: connection"
        )
        await ready.wait()

    async def _run(self, ready: asyncio.Event, stop: asyncio.Event) -> None:
        async with _aio.TaskGroup() as group:
            self._tasks = tasks.Tasks(group)
            group.create_task(self._tasks.cancel_on(stop), name="sdk: stop")
            ready.set()

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        if self._tasks is None or self._stop is None or self._stop.is_set():
            coro.close()
            raise RuntimeError("the connection is closed")
        return self._tasks.spawn(coro, name)

    async def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._runner is not None:
            await asyncio.wait([self._runner], timeout=CLOSE_GRACE)


def _shutdown(loop: Loop, client: kube.Client, group: _Group) -> None:
    async def last() -> None:
        try:
            await group.stop()
        finally:
            await client.close()

    loop.close(last())


# --- waking up on changes ----------------------------------------------------------------------

Source = tuple[kube.Resource, Mapping[str, Any]]  # a resource and Watch options


class Changes:
    """Wakes a waiter when one of its watches sees an event, or after ``interval`` seconds,
    whichever comes first. An error a watch ends with is raised by :meth:`wait`.

    ``async with Changes(conn, sources) as changes: ... await changes.wait()``
    """

    def __init__(
        self,
        conn: Connection,
        sources: Sequence[Source],
        *,
        interval: float = DEFAULT_INTERVAL,
        settings: watch.Settings | None = None,
    ) -> None:
        self._conn = conn
        self._sources = sources
        self._interval = interval
        self._settings = settings
        self._queue: asyncio.Queue[BaseException | None] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._seen: dict[str, dict[str, Any]] = {}  # uid -> the latest version an event showed

    async def __aenter__(self) -> Changes:
        for resource, options in self._sources:
            self._tasks.append(
                self._conn.spawn(self._pump(resource, options), f"sdk: watch {resource.plural}")
            )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await _cancel(self._tasks)

    async def _pump(self, resource: kube.Resource, options: Mapping[str, Any]) -> None:
        stream = self._conn.client.watch(resource, settings=self._settings, **options)
        try:
            async with contextlib.aclosing(aiter(stream)) as events:
                async for event in events:
                    obj = event.object if isinstance(event.object, dict) else {}
                    uid = (obj.get("metadata") or {}).get("uid")
                    if isinstance(uid, str):
                        self._seen[uid] = obj
                    self._queue.put_nowait(None)
        except kube.ApiError as exc:  # handed to the waiter, who decides
            self._queue.put_nowait(exc)

    def gone(self, present: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Objects events showed since the last call that are not in ``present`` any more, in
        the last state seen: a pod that failed and was replaced between two reads still tells
        its exit code."""
        uids = {(o.get("metadata") or {}).get("uid") for o in present}
        gone = [obj for uid, obj in self._seen.items() if uid not in uids]
        self._seen.clear()
        return gone

    async def wait(self) -> None:
        """Until something changed (or the interval passed); then forget the backlog."""
        try:
            async with _aio.timeout(self._interval):
                item = await self._queue.get()
        except TimeoutError:
            item = None
        while item is None and not self._queue.empty():
            item = self._queue.get_nowait()
        if item is not None:
            raise item


# --- several streams as one ----------------------------------------------------------------------

_END: Final = object()


async def merged(
    conn: Connection,
    streams: Mapping[str, Callable[[], AsyncIterator[str]]],
) -> AsyncIterator[tuple[str, str]]:
    """``(key, line)`` from every stream, in the order lines arrive; ends when all have.
    A stream's :class:`kube.ApiError` ends that stream only (logged)."""
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def pump(key: str, open_stream: Callable[[], AsyncIterator[str]]) -> None:
        try:
            async with contextlib.aclosing(open_stream()) as lines:
                async for line in lines:
                    queue.put_nowait((key, line))
        except kube.ApiError as exc:
            log.info("log of %s ended: %s", key, exc)
        finally:
            queue.put_nowait(_END)

    running = [conn.spawn(pump(k, s), f"sdk: log {k}") for k, s in streams.items()]
    try:
        left = len(running)
        while left:
            item = await queue.get()
            if item is _END:
                left -= 1
                continue
            yield item
    finally:
        await _cancel(running)


async def _cancel(running: Sequence[asyncio.Task[Any]]) -> None:
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running)
