"""The local control plane as one process: the API server and the components beside it, started
under one asyncio TaskGroup and stopped together.

Layout of the state directory (``$KUBETRAIN_HOME``, default ``~/.kubetrain``), private to its
owner: every directory kubetrain creates there is 0700 and every file 0600 (the daemon runs
with umask 077), since the database holds Secrets and pod logs may print them::

    kubeconfig          context "kubetrain": the URL, the CA and the bearer token (0600)
    state.db            SQLite (WAL) with every object and the event log
    pki/                CA, serving certificate and key, token (0600)
    kubetrain.pid       the daemon's pid; locked (flock) for as long as it runs
    status.json         pid, URL, port, start time, state dir: what ``kubetrain status`` shows
    port                the port chosen on first start, reused later so kubeconfigs stay valid
    volumes/            directories backing PersistentVolumeClaims
    node/               the node agent's pods: their directories, volumes and logs
    logs/daemon.log     the daemon's output when started by ``kubetrain up``

:func:`run` is the process's whole life; :func:`start_background`, :func:`stop` and
:func:`read_status` are what the CLI verbs use. The API server's own controllers are listed in
:func:`components`; the workloads (scheduler, node agent, operator) are handed in by the
command line (``kubetrain.cli.controlplane``), which alone may import both ``local`` and
``operator``.

This module reads no argv or environment of its own: the CLI resolves them into a
:class:`Config`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import gc as collector
import json
import logging
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kubetrain import _aio, kube, timefmt
from kubetrain.errors import KubetrainError
from kubetrain.local import eventttl, gc, namespaces, tls
from kubetrain.local.apiserver import (
    bootstrap,
    crds,
    registry,
    resources,
    server,
    store,
    strategies,
    watch,
)
from kubetrain.local.statedir import Paths, read_pid, read_status, running_pid
from kubetrain.local.statedir import resolve_home as resolve_home  # daemon.resolve_home too

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
STOP_GRACE = 10.0
READY_TIMEOUT = 60.0
SHUTDOWN_TIMEOUT = 15.0
COMPONENTS_READY_TIMEOUT = 20.0  # seconds the control plane waits for its components' start-up
# gc.set_threshold for the daemon: generation 0 at 50,000 allocations instead of 700.
GC_THRESHOLDS = (50_000, 20, 100)
RELEASE_EVERY = 15.0  # seconds between looks at whether a burst of writes is over
RELEASE_AFTER = 100  # writes since the last release that make another worth doing
# Resources the store keeps encoded in memory (store.Item): Events, nine for each job, are
# written once or twice and read seldom (describe, the hourly expiry), and decoded they were
# the largest share of the memory a burst of jobs leaves behind (bench/soak.py).
ENCODED = ("events",)


class DaemonError(KubetrainError):
    """The control plane could not be started, reached or stopped; the message says why."""


class AlreadyRunning(DaemonError):
    def __init__(self, pid: int | None) -> None:
        super().__init__(f"the local control plane is already running (pid {pid})")
        self.pid = pid


@dataclass(frozen=True)
class Config:
    home: str
    memory: bool = False  # keep objects in memory only (tests)
    port: int | None = None  # None: the remembered port, else a free one; 0: a free one
    host: str = DEFAULT_HOST
    watch_window: int = store.DEFAULT_WINDOW
    bookmark_interval: float = 60.0
    workloads: bool = False  # also the scheduler, a node agent and the operator (`kubetrain up`)
    container_runtime: str = "none"  # the node's container engine for images (docker, podman)

    @property
    def paths(self) -> Paths:
        return Paths(self.home)


@dataclass
class Component:
    """A long-lived part of the control plane: a name and the coroutine that runs it, and,
    for one whose start-up work users rely on at once (the built-in runtimes), ``ready``: the
    control plane reports itself ready only once that returns."""

    name: str
    run: Callable[[], Awaitable[None]]
    ready: Callable[[], Awaitable[object]] | None = None


def client_component(
    name: str,
    kubeconfig: str,
    body: Callable[[kube.Client], Awaitable[None]],
    *,
    user_agent: str | None = None,
    field_manager: str | None = None,
    ready: Callable[[], Awaitable[object]] | None = None,
) -> Component:
    """A component that is an ordinary API client of the control plane: ``body`` gets a client
    of its own (user agent and field manager named after it), as it would on a cluster."""

    async def run() -> None:
        cluster = await kube.from_kubeconfig(kubeconfig)
        agent = user_agent or name
        async with kube.Client(
            cluster, user_agent=agent, field_manager=field_manager or agent
        ) as client:
            await body(client)

    return Component(name, run, ready)


class MemoryRelease:
    """Hands freed memory back to the operating system once a burst of writes is over.

    After a burst (a few hundred jobs, a namespace deleted), the store lets the burst's
    history go within its window age (:mod:`kubetrain.local.apiserver.store`) and the objects
    are freed, but glibc's allocator keeps the freed pages in its heaps: the daemon's resident
    memory stays where the burst took it. Once at least ``after`` writes have come since the
    last release and the store's history is back at its resting size, one full collection and
    ``malloc_trim(0)`` give those pages back (about 30 MiB after ``bench/soak.py --quick``).
    Python's own small-object arenas go back only when wholly empty; nothing here changes
    that. Without glibc (``trim`` is None) there is nothing to do and no component is made.
    """

    def __init__(
        self,
        db: store.Store,
        trim: Callable[[], object],
        *,
        every: float = RELEASE_EVERY,
        after: int = RELEASE_AFTER,
    ) -> None:
        self.db = db
        self.trim = trim
        self.every = every
        self.after = after
        self.releases = 0
        self._released_at = db.resource_version

    def due(self) -> bool:
        """Whether a burst of writes has come and gone since the last release."""
        busy = self.db.resource_version - self._released_at >= self.after
        return busy and self.db.history[0] <= store.KEEP

    def release(self) -> None:
        started = time.monotonic()
        collector.collect()
        self.trim()
        self.releases += 1
        self._released_at = self.db.resource_version
        log.debug("memory given back in %.3fs", time.monotonic() - started)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            if self.due():
                self.release()


def glibc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)``, or None where the C library is not glibc."""
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return None
        trim = ctypes.CDLL(None).malloc_trim  # the process's own C library
    except (ValueError, OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


def components(reg: registry.Registry, kubeconfig: str) -> list[Component]:
    """What runs beside the API server in every mode, in start order: the API server's own
    controllers, in-process on the registry or as ordinary API clients, as on a cluster. The
    workloads (scheduler, node agent, operator) come from the caller of :func:`run`."""
    cleanup = crds.Cleanup(reg)
    return [
        Component("crd-cleanup", cleanup.run),
        client_component(
            "garbage-collector", kubeconfig, gc.run, user_agent="generic-garbage-collector"
        ),
        client_component("namespace-controller", kubeconfig, namespaces.run),
        client_component("event-expiry", kubeconfig, eventttl.run, user_agent="kube-apiserver"),
    ]


async def supervised(component: Component, *, backoff: float = 1.0, limit: float = 30.0) -> None:
    """Run a component until cancelled; restart it, with growing delays, when it fails or
    returns, so one failing component does not take the API server down with it."""
    delay = backoff
    while True:
        started = time.monotonic()
        try:
            await component.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s failed; restarting in %.1fs", component.name, delay)
        else:
            log.warning("%s exited though it should run until stopped; restarting", component.name)
        if time.monotonic() - started > limit:
            delay = backoff
        await asyncio.sleep(delay)
        delay = min(delay * 2, limit)


# --- the daemon's life ------------------------------------------------------------------------


PRIVATE_UMASK = 0o077  # files 0600, directories 0700


@contextlib.contextmanager
def private_files() -> Iterator[None]:
    """Create every file and directory readable by the owner only (umask 077) until exit.

    The state directory holds the token, the CA key, every Secret (in the database) and pod
    logs that may print them. Explicit modes at each ``open`` would miss what SQLite, the
    node's pod directories and log files create; the umask covers them all. A container's
    own process gets a container runtime's umask back (:mod:`kubetrain.local.node.shim`).
    """
    before = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(before)


@contextlib.contextmanager
def _pid_lock(paths: Paths) -> Any:
    """Hold the pid file's lock for the daemon's lifetime; AlreadyRunning if another has it."""
    os.makedirs(paths.home, mode=0o700, exist_ok=True)
    fd = os.open(paths.pid, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise AlreadyRunning(read_pid(paths)) from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        yield
    finally:
        os.close(fd)


def _choose_port(config: Config) -> int:
    if config.port is not None:
        return config.port
    with contextlib.suppress(OSError, ValueError), open(config.paths.port, encoding="utf-8") as f:
        return int(f.read().strip())
    return 0


@contextlib.contextmanager
def _long_lived_collector() -> Iterator[None]:
    """Tune CPython's garbage collector for a process that holds every stored object.

    Each full collection walks all tracked objects, and the store keeps tens of thousands of
    long-lived dicts: with the default thresholds a full pass every few seconds stalls every
    watch for a quarter of a second once 10,000 Pods exist. A higher generation-0 threshold
    makes passes rarer (requests allocate many short-lived containers), and :func:`run`
    freezes what start-up built so no pass walks it again. Undone on exit, for callers that
    run the daemon inside a longer process (tests).
    """
    before = collector.get_threshold()
    collector.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        collector.unfreeze()
        collector.set_threshold(*before)


Workloads = Callable[[Paths], Sequence[Component]]


async def run(
    config: Config,
    *,
    on_ready: Callable[[str], None] | None = None,
    workloads: Workloads | None = None,
) -> None:
    """Run the control plane until SIGTERM or SIGINT (or cancellation). ``workloads`` gives
    the components that make pods run (scheduler, node agent, operator); the command line
    composes them, since this layer may not import the operator."""
    paths = config.paths
    with private_files(), _pid_lock(paths), _long_lived_collector():
        credentials = await asyncio.to_thread(tls.ensure, paths.pki)
        os.makedirs(paths.volumes, mode=0o700, exist_ok=True)
        db_path = None if config.memory else paths.database
        async with store.opened(db_path, window=config.watch_window, encoded=ENCODED) as db:
            hub = watch.Hub(db)
            catalog = resources.Catalog()
            root_ca = await asyncio.to_thread(Path(credentials.ca_cert).read_text, "utf-8")
            settings = strategies.Settings(volume_dir=paths.volumes, root_ca=root_ca)
            reg = registry.Registry(db, catalog, hub, settings=settings)
            fresh = db.resource_version == 0
            await bootstrap.install(reg)
            if fresh:
                await db.compact()  # the initial state is not history to resume from
            node_tls = await asyncio.to_thread(credentials.client_context)
            # /readyz (what a command that started it in the background waits for) answers
            # ok once the components that say so are ready: the built-in runtimes installed
            components_ready = asyncio.Event()
            api = server.ApiServer(
                reg,
                token=credentials.token,
                bookmark_interval=config.bookmark_interval,
                node_tls=node_tls,  # nodes serve certificates from the control plane's CA
                ready=components_ready.is_set,
            )
            port = _choose_port(config)
            try:
                runner, port = await server.serve(
                    api, config.host, port, credentials.server_context()
                )
            except OSError:
                if config.port is not None or port == 0:
                    raise
                runner, port = await server.serve(api, config.host, 0, credentials.server_context())
            try:
                url = f"https://{config.host}:{port}"
                api.server_address = f"{config.host}:{port}"
                parts = components(reg, paths.kubeconfig)
                trim = glibc_trim()
                if trim is not None:
                    parts.append(Component("memory-release", MemoryRelease(db, trim).run))
                if workloads is not None:
                    parts += workloads(paths)
                names = ["apiserver", *(c.name for c in parts)]
                collector.freeze()  # start-up state (bootstrap, schemas, modules) lives on
                await asyncio.to_thread(_write_state, config, credentials, url, port, names)
                log.info("local control plane serving at %s", url)
                await _serve_until_stopped(parts, on_ready, url, components_ready)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(paths.status)
                hub.close_all()
                try:
                    async with _aio.timeout(SHUTDOWN_TIMEOUT):
                        await runner.cleanup()
                except TimeoutError:
                    log.warning(
                        "requests still open after %.0fs; stopping anyway", SHUTDOWN_TIMEOUT
                    )


async def _serve_until_stopped(
    parts: list[Component],
    on_ready: Callable[[str], None] | None,
    url: str,
    components_ready: asyncio.Event,
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        async with _aio.TaskGroup() as group:
            tasks = [group.create_task(supervised(c), name=c.name) for c in parts]
            await _components_ready(parts)
            components_ready.set()
            if on_ready is not None:
                on_ready(url)
            await stop.wait()
            log.info("stopping the local control plane")
            for task in tasks:
                task.cancel()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


async def _components_ready(parts: list[Component]) -> None:
    """Wait for the components that say when they are ready, for a bounded time: a component
    that cannot get ready (it keeps failing) must not keep the control plane from serving."""
    waits = [c.ready() for c in parts if c.ready is not None]
    if not waits:
        return
    try:
        async with _aio.timeout(COMPONENTS_READY_TIMEOUT):
            await asyncio.gather(*waits)
    except _aio.TIMEOUT_ERRORS:
        log.warning("components not ready after %.0fs; serving anyway", COMPONENTS_READY_TIMEOUT)


def _write_state(
    config: Config, credentials: tls.Credentials, url: str, port: int, names: list[str]
) -> None:
    paths = config.paths
    tls.write_kubeconfig(paths.kubeconfig, credentials, url)
    if not config.memory and config.port is None:
        tls.write_private(paths.port, f"{port}\n".encode())
    status = {
        "pid": os.getpid(),
        "url": url,
        "port": port,
        "home": paths.home,
        "kubeconfig": paths.kubeconfig,
        "memory": config.memory,
        "started": timefmt.seconds(datetime.now(timezone.utc)),
        "components": names,
    }
    tls.write_private(paths.status, json.dumps(status, indent=2).encode())


# --- the CLI's side: start, stop, ask -------------------------------------------------------


def probe_ready(paths: Paths, url: str, timeout: float = 2.0) -> bool:
    """Whether ``/readyz`` answers ok over TLS verified with the control plane's CA."""
    ca = os.path.join(paths.pki, tls.CA_CERT)
    try:
        context = ssl.create_default_context(cafile=ca)
        with urllib.request.urlopen(f"{url}/readyz", timeout=timeout, context=context) as resp:
            return resp.status == 200 and resp.read().strip() == b"ok"
    except (OSError, ValueError):
        return False


def start_background(config: Config, *, timeout: float = READY_TIMEOUT) -> dict[str, Any]:
    """Start the daemon detached from this process and wait until it is ready.

    Raises :class:`AlreadyRunning` if one runs, :class:`DaemonError` if it does not become
    ready (the message points at its log).
    """
    paths = config.paths
    pid = running_pid(paths)
    if pid is not None:
        raise AlreadyRunning(pid)
    os.makedirs(paths.home, mode=0o700, exist_ok=True)  # makedirs gives parents 0755
    os.makedirs(os.path.dirname(paths.log), mode=0o700, exist_ok=True)
    command = [sys.executable, "-m", "kubetrain", "apiserver", "--home", paths.home]
    if config.memory:
        command.append("--memory")
    if config.port is not None:
        command += ["--port", str(config.port)]
    if config.workloads:
        command.append("--with-workloads")
    if config.container_runtime != "none":
        command += ["--container-runtime", config.container_runtime]
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # may hold Secrets
    with open(log_fd, "ab") as log_file:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise DaemonError(
                f"the local control plane exited with status {code} while starting; see {paths.log}"
            )
        status = read_status(paths)
        mine = bool(status) and status.get("pid") == process.pid and status.get("url")
        if mine and status is not None and probe_ready(paths, status["url"]):
            return status
        time.sleep(0.1)
    raise DaemonError(
        f"the local control plane did not become ready within {timeout:.0f}s; see {paths.log}"
    )


def stop(paths: Paths, *, grace: float = STOP_GRACE) -> int | None:
    """Stop the running daemon: SIGTERM, then SIGKILL after ``grace`` seconds, then SIGKILL
    to whatever is left in its process group. Returns the pid stopped, or None if none ran."""
    pid = running_pid(paths)
    if pid is None:
        return None
    group = _group_led_by(pid)
    _send(pid, group, signal.SIGTERM)
    if not _wait_gone(pid, grace):
        _send(pid, group, signal.SIGKILL)
        _wait_gone(pid, 5.0)
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.unlink(paths.status)
    return pid


def _group_led_by(pid: int) -> int | None:
    """The daemon's process group if it leads one (``kubetrain up`` starts it so)."""
    try:
        return pid if os.getpgid(pid) == pid else None
    except ProcessLookupError:
        return None


def _send(pid: int, group: int | None, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group is not None:
            os.killpg(group, sig)
        else:
            os.kill(pid, sig)


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
