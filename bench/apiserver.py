"""How fast the local API server is, next to a reference: creates, big lists, watch fan-out.

What it measures (every API call goes through kubetrain's own client, :mod:`kubetrain.kube`):

1. **Creates per second**, Pods, one client creating one after another and then N clients
   (asyncio tasks, each with its own client and connection) creating at once. Each client
   first does a few untimed creates (connections, TLS, caches), then the clock runs over a
   fixed number of creates. Pods need no node: they carry a scheduling gate, so no scheduler
   (kubetrain's later, or a real cluster's) ever places them.
2. **List latency**: a namespace is filled with 10,000 Pods (untimed), then full lists of it
   are timed, one request each (p50 and max), and, for information, the same list in pages of
   500 as client-go's pager and kubectl fetch it. Client-side decoding is included: it is
   what a caller waits for; the footer shows how long decoding such a body takes on its own.
   Where the server's processes are ours to read (the local one, and ``--real``'s), the
   server's CPU time per list, whole and paged, is shown too: on a busy machine latencies
   swing with what else runs, the CPU a list costs much less.
3. **Watch fan-out**: 20 watchers (each its own client and connection) watch one namespace;
   one writer creates a Pod, then updates its annotations, alternately, at a steady rate. The
   writer stamps the time just before sending into an annotation; each watcher computes
   ``now - stamp`` for the first event that carries each write. So a delivery's latency is
   the write (with its commit to disk) plus the fan-out. p50 and p99 over all deliveries to
   all watchers; a delivery that does not come within a minute fails the run.

Against what: the local control plane is started fresh for the run (``kubetrain apiserver``
in a temporary ``KUBETRAIN_HOME``, SQLite on disk as users get it, or ``--memory``) and stopped
at the end, also on Ctrl-C or SIGTERM. The temporary home is made beside the state directory
``kubetrain up`` would use (``--dir`` to choose), so commits reach the same disk as they would
there; the header names its file system. When ``KUBETRAIN_BENCH_KUBECONFIG`` names another API
server (a real kube-apiserver, say), the same workloads run there afterwards, one server at a
time, in fresh namespaces that are deleted at the end, and every figure is printed with the
ratio kubetrain / other. ``--real`` does the same against a real kube-apiserver it starts
itself once the local server is stopped: etcd, kube-apiserver and kube-controller-manager
from ``KUBEBUILDER_ASSETS`` through :mod:`kubetrain.envtest` (its server CPU is kube-apiserver's
and etcd's together). Without either, the reference is the goals set for the local API server
(at least 1,000 creates/s, a 10,000-pod list under 300 ms, watch p99 under 50 ms, on 2 cores),
labelled as goals: they are targets, not a measurement. A goal is shown only next to a figure
measured as the goal is stated (the list goal is for 10,000 pods, so ``--quick`` lists show
none).

Both servers run on the same machine as the benchmark's clients when they are local, so the
figures are for "one machine, all of it"; the footer shows how the CPU time was split between
the server and the benchmark process during each workload.

Usage::

    .venv/bin/python bench/apiserver.py [--quick] [--only create|list|watch] [--memory]
                                        [--real] [--dir DIR] [--json]

This is not a test: it asserts nothing and exits 0 whatever the figures are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _processes  # this directory's, as the script runs from here
import _realcluster

from kubetrain import _aio, kube
from kubetrain.errors import KubetrainError
from kubetrain.kube import client as kube_client
from kubetrain.kube import resource
from kubetrain.kube import watch as kube_watch
from kubetrain.local import daemon

OTHER_KUBECONFIG_ENV = "KUBETRAIN_BENCH_KUBECONFIG"
PODS = resource.PODS
NAMESPACES = resource.NAMESPACES
SERVICE_ACCOUNTS = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")

STAMP = "bench.kubetrain.io/sent"  # the writer's clock, in seconds, just before sending
PHASE = "bench.kubetrain.io/phase"  # "warmup" or "measure"
WRITE = "bench.kubetrain.io/write"  # which write this is: "<phase>-<index>"
GATE = "bench.kubetrain.io/never-schedule"
IMAGE = "registry.k8s.io/pause:3.10"

START_TIMEOUT = 60.0  # seconds for the local control plane to serve
STOP_TIMEOUT = 20.0  # seconds for it to stop after SIGTERM before SIGKILL
NAMESPACE_TIMEOUT = 30.0  # seconds for a new namespace's default ServiceAccount
DELIVERY_TIMEOUT = 60.0  # seconds for every watcher to get the last write
WATCH_WARMUP_WRITES = 10
LIST_PAGE_SIZE = 500
DECODE_REPEATS = 3  # timings of the client's JSON decoding of a list body, alone

GOAL_CREATES_PER_S = 1_000.0
GOAL_LIST_MS = 300.0
GOAL_LIST_PODS = 10_000
GOAL_WATCH_P99_MS = 50.0
GOAL_WATCHERS = 20

WORKLOADS = ("create", "list", "watch")

Clock = Callable[[], float]
Progress = Callable[[str], None]


class BenchError(KubetrainError):
    """The benchmark could not run (a server that does not start, a lost delivery, ...)."""


@dataclass(frozen=True)
class Sizes:
    """How much work each workload does."""

    name: str  # "full" or "quick"
    create_warmup: int  # untimed creates, spread over the clients
    creates: int  # timed creates, for each of the two client counts
    clients: int  # concurrent clients in the second create run
    list_pods: int
    lists: int  # timed lists of each kind
    watchers: int
    watch_rate: float  # writes per second
    watch_writes: int  # timed writes (creates and updates, alternately)


FULL = Sizes(
    name="full",
    create_warmup=200,
    creates=2_000,
    clients=8,
    list_pods=GOAL_LIST_PODS,
    lists=10,
    watchers=GOAL_WATCHERS,
    watch_rate=50.0,
    watch_writes=1_000,
)
QUICK = Sizes(
    name="quick",
    create_warmup=16,
    creates=200,
    clients=8,
    list_pods=1_000,
    lists=3,
    watchers=GOAL_WATCHERS,
    watch_rate=50.0,
    watch_writes=100,
)


@dataclass(frozen=True)
class Target:
    """An API server to measure."""

    name: str
    kubeconfig: str
    pids: tuple[int, ...] = ()  # the server's processes when they are ours, for CPU accounting
    delete_namespaces: bool = True  # False when the whole server is thrown away afterwards
    description: str = ""  # what the report calls it, beside its URL


@dataclass(frozen=True)
class Figure:
    """One measured number; ``goal`` is set only when the workload is the one the goal is for."""

    key: str
    label: str
    unit: str  # "/s" or "ms"
    value: float
    higher_is_better: bool
    goal: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Usage:
    """Wall and CPU seconds one workload took (server CPU only for a server we started)."""

    workload: str
    wall_s: float
    bench_cpu_s: float
    server_cpu_s: float | None


@dataclass(frozen=True)
class Measurement:
    target: Target
    server: str  # the URL the kubeconfig points at
    figures: list[Figure]
    usage: list[Usage]


# --- the local control plane ------------------------------------------------------------------


@contextlib.contextmanager
def local_control_plane(memory: bool, parent: str | None) -> Iterator[Target]:
    """Start ``kubetrain apiserver`` in a temporary home under ``parent`` on a free port, yield
    it as a Target, and stop it (SIGTERM, then SIGKILL) however the block ends. It runs in its
    own session, so a Ctrl-C reaches only this process, which then stops it here."""
    with tempfile.TemporaryDirectory(prefix=".kubetrain-bench-", dir=parent) as home:
        paths = daemon.Paths(home)
        log_path = Path(home) / "apiserver.log"
        command = [sys.executable, "-m", "kubetrain", "apiserver", "--home", home, "--port", "0"]
        if memory:
            command.append("--memory")
        process = _processes.spawn(command, log_path, home)
        try:
            _processes.wait_for_file(
                paths.kubeconfig,
                process,
                START_TIMEOUT,
                lambda why: BenchError(f"the local control plane: {why}"),
            )
            yield Target(
                "kubetrain", paths.kubeconfig, pids=(process.pid,), delete_namespaces=False
            )
        except BaseException:
            if process.poll() is not None:
                print(_processes.tail(log_path), file=sys.stderr)
            raise
        finally:
            _processes.stop(process, STOP_TIMEOUT)


@contextlib.contextmanager
def real_control_plane() -> Iterator[Target]:
    """Start a real kube-apiserver as the reference: etcd, kube-apiserver and
    kube-controller-manager (which gives each new namespace the ServiceAccount pods need) from
    ``KUBEBUILDER_ASSETS``, through :mod:`kubetrain.envtest`, in a temporary directory; stop it
    however the block ends. Its CPU time is kube-apiserver's and etcd's together."""
    with _realcluster.control_plane(controllers=True, crds=False) as plane:
        pids = tuple(pid for pid in (plane.pid("kube-apiserver"), plane.pid("etcd")) if pid)
        version = _realcluster.version(plane.assets)
        description = f"{version} kube-apiserver and etcd, started by --real"
        yield Target("other", plane.kubeconfig, pids, False, description)


def state_parent(environ: dict[str, str], given: str | None) -> str | None:
    """Where the temporary home goes: ``given``, else beside the state directory
    ``kubetrain up`` would use, so SQLite commits to the disk it would commit to there (a
    tmpfs ``/tmp`` would make every fsync free). None (the system's temporary directory) if
    that directory does not exist."""
    parent = given or os.path.dirname(daemon.resolve_home(environ))
    return parent if os.path.isdir(parent) else None


def filesystem_type(path: str) -> str:
    """The type of the file system holding ``path`` (``ext4``, ``tmpfs``, ...), from
    /proc/mounts; "unknown" where that cannot be read."""
    real = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount_point = fields[1]
                inside = real == mount_point or real.startswith(mount_point.rstrip("/") + "/")
                if inside and len(mount_point) >= len(best):
                    best, kind = mount_point, fields[2]
    except OSError:
        pass
    return kind


# --- clients, namespaces, pods ----------------------------------------------------------------


@contextlib.asynccontextmanager
async def open_clients(kubeconfig: str, count: int) -> AsyncIterator[list[kube.Client]]:
    """``count`` independent clients, each with its own connection pool."""
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for _ in range(count):
            client = await kube.Client.from_kubeconfig(kubeconfig, user_agent="kubetrain-bench")
            clients.append(await stack.enter_async_context(client))
        yield clients


async def wait_until_serving(client: kube.Client, timeout: float = START_TIMEOUT) -> None:
    async with _aio.timeout(timeout):
        while True:
            try:
                await client.request("GET", "/version")
                return
            except kube.Unavailable:
                await asyncio.sleep(0.1)


async def create_namespace(client: kube.Client, name: str) -> str:
    """Create a namespace and wait for its ``default`` ServiceAccount, without which pods are
    refused (the ServiceAccount controller creates it shortly after the namespace)."""
    await client.create(NAMESPACES, {"metadata": {"name": name, "labels": {"app": "bench"}}})
    async with _aio.timeout(NAMESPACE_TIMEOUT):
        while True:
            try:
                await client.get(SERVICE_ACCOUNTS, "default", namespace=name)
                return name
            except kube.NotFound:
                await asyncio.sleep(0.05)


async def delete_namespace(client: kube.Client, name: str) -> None:
    with contextlib.suppress(kube.ApiError):
        await client.delete(NAMESPACES, name, timeout=10.0)


def pod(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A small pod that no scheduler will place (it carries a scheduling gate)."""
    metadata: dict[str, Any] = {"name": name, "labels": {"app": "bench"}}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulingGates": [{"name": GATE}],
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": IMAGE}],
        },
    }


# --- statistics -------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def ms(seconds: float) -> float:
    return seconds * 1000.0


# --- workload 1: creates ----------------------------------------------------------------------


async def bench_create(
    target: Target, namespace: str, sizes: Sizes, clock: Clock, progress: Progress
) -> list[Figure]:
    kubeconfig = target.kubeconfig
    figures = []
    for clients in (1, sizes.clients):
        progress(f"{sizes.creates:,} pod creates with {clients} client(s)")
        rate, latencies = await timed_creates(
            kubeconfig, namespace, clients, sizes.creates, sizes.create_warmup, clock
        )
        figures.append(
            Figure(
                key=f"create_{clients}",
                label=f"pod creates/s, {clients} client{'s' if clients > 1 else ''}",
                unit="/s",
                value=rate,
                higher_is_better=True,
                goal=GOAL_CREATES_PER_S,
                detail={
                    "creates": sizes.creates,
                    "latency_p50_ms": ms(percentile(latencies, 50)),
                    "latency_p99_ms": ms(percentile(latencies, 99)),
                },
            )
        )
    return figures


async def timed_creates(
    kubeconfig: str, namespace: str, clients: int, count: int, warmup: int, clock: Clock
) -> tuple[float, list[float]]:
    """Creates per second over ``count`` creates shared by ``clients`` clients, timed from the
    moment all of them finished their warm-up; also each create's latency."""
    warmed = [asyncio.Event() for _ in range(clients)]
    start = asyncio.Event()
    latencies: list[float] = []

    async def creator(client: kube.Client, index: int) -> None:
        prefix = f"c{clients}-{index}"
        for i in range(max(1, warmup // clients)):
            await client.create(PODS, pod(f"{prefix}-warm-{i}"), namespace=namespace)
        warmed[index].set()
        await start.wait()
        for i in range(index, count, clients):
            sent = clock()
            await client.create(PODS, pod(f"{prefix}-{i}"), namespace=namespace)
            latencies.append(clock() - sent)

    async with open_clients(kubeconfig, clients) as pool:
        async with _aio.TaskGroup() as group:
            for index, client in enumerate(pool):
                group.create_task(creator(client, index), name=f"creator-{index}")
            await asyncio.gather(*(event.wait() for event in warmed))
            started = clock()
            start.set()
        elapsed = clock() - started  # before the clients close
    return count / elapsed, latencies


# --- workload 2: lists ------------------------------------------------------------------------


async def bench_list(
    target: Target, namespace: str, sizes: Sizes, clock: Clock, progress: Progress
) -> list[Figure]:
    kubeconfig = target.kubeconfig
    progress(f"filling a namespace with {sizes.list_pods:,} pods ({sizes.clients} clients)")
    await fill(kubeconfig, namespace, sizes.list_pods, sizes.clients)
    async with open_clients(kubeconfig, 1) as (client,):
        body = await listed_body(client, namespace, sizes.list_pods)  # also a warm-up
        decoding = [timed_call(clock, kube_client.decode, body) for _ in range(DECODE_REPEATS)]
        progress(f"{sizes.lists} full lists of {sizes.list_pods:,} pods, then paged ones")
        cpu_before = server_cpu_seconds(target)
        whole = [
            await timed(clock, client.list(PODS, namespace=namespace)) for _ in range(sizes.lists)
        ]
        cpu_between = server_cpu_seconds(target)
        paged = [
            await timed(clock, client.list_all(PODS, namespace=namespace, page_size=LIST_PAGE_SIZE))
            for _ in range(sizes.lists)
        ]
        cpu_after = server_cpu_seconds(target)
    goal = GOAL_LIST_MS if sizes.list_pods == GOAL_LIST_PODS else None
    what = f"list {sizes.list_pods:,} pods"
    detail = {
        "pods": sizes.list_pods,
        "lists": sizes.lists,
        "body_mb": len(body) / 1e6,
        "client_decode_p50_ms": ms(percentile(decoding, 50)),
    }
    # The server's CPU time per list, where the server is ours to read: on a busy machine
    # the latencies swing with what else runs, the CPU a list costs much less.
    cpu: list[Figure] = []
    if cpu_before is not None and cpu_between is not None and cpu_after is not None:
        for key, label, spent in (
            ("list_server_cpu", f"{what}, server CPU per list", cpu_between - cpu_before),
            (
                "list_paged_server_cpu",
                f"{what} in pages of {LIST_PAGE_SIZE}, server CPU per list",
                cpu_after - cpu_between,
            ),
        ):
            cpu.append(Figure(key, label, "ms", ms(spent / sizes.lists), False, None, detail))
    return [
        Figure("list_p50", f"{what}, p50", "ms", ms(percentile(whole, 50)), False, goal, detail),
        Figure("list_max", f"{what}, max", "ms", ms(max(whole)), False, goal, detail),
        Figure(
            "list_paged_p50",
            f"{what} in pages of {LIST_PAGE_SIZE}, p50",
            "ms",
            ms(percentile(paged, 50)),
            False,
            None,
            {**detail, "page_size": LIST_PAGE_SIZE},
        ),
        *cpu,
    ]


async def fill(kubeconfig: str, namespace: str, count: int, clients: int) -> None:
    async def creator(client: kube.Client, index: int) -> None:
        for i in range(index, count, clients):
            await client.create(PODS, pod(f"p-{i:05d}"), namespace=namespace)

    async with open_clients(kubeconfig, clients) as pool, _aio.TaskGroup() as group:
        for index, client in enumerate(pool):
            group.create_task(creator(client, index), name=f"filler-{index}")


async def listed_body(client: kube.Client, namespace: str, expected: int) -> bytes:
    """List once, check that every pod is there, and return the list as JSON text, so the
    client's decoding of such a body can be timed on its own (the list itself is dropped: a
    big live heap slows Python's garbage collector, which would skew the timed lists)."""
    listed = await client.list(PODS, namespace=namespace)
    count = len(listed.get("items") or [])
    if count != expected:
        raise BenchError(f"namespace {namespace}: listed {count} pods, created {expected}")
    return json.dumps(listed, separators=(",", ":")).encode()


def timed_call(clock: Clock, function: Callable[[bytes], Any], argument: bytes) -> float:
    started = clock()
    function(argument)
    return clock() - started


async def timed(clock: Clock, call: Awaitable[Any]) -> float:
    started = clock()
    await call
    return clock() - started


# --- workload 3: watch fan-out ----------------------------------------------------------------


@dataclass
class Watcher:
    """What one watcher saw: the writes that reached it, each counted once (a later event
    that still carries a write's annotations, such as a scheduler's status update on a real
    cluster, is not a delivery), and the latencies of the measured ones."""

    ready: asyncio.Event = field(default_factory=asyncio.Event)
    writes: set[str] = field(default_factory=set)
    latencies: list[float] = field(default_factory=list)

    @property
    def seen(self) -> int:
        return len(self.writes)


async def bench_watch(
    target: Target, namespace: str, sizes: Sizes, clock: Clock, progress: Progress
) -> list[Figure]:
    kubeconfig = target.kubeconfig
    watchers = [Watcher() for _ in range(sizes.watchers)]
    async with (
        open_clients(kubeconfig, sizes.watchers + 1) as (writer, *readers),
        _aio.TaskGroup() as group,
    ):
        tasks = [
            group.create_task(watch_pods(client, namespace, watcher, clock), name=f"watcher-{i}")
            for i, (client, watcher) in enumerate(zip(readers, watchers, strict=True))
        ]
        async with _aio.timeout(NAMESPACE_TIMEOUT):
            await asyncio.gather(*(w.ready.wait() for w in watchers))
        progress(f"{sizes.watchers} watchers; warming up with {WATCH_WARMUP_WRITES} writes")
        await write_steadily(
            writer, namespace, "warmup", WATCH_WARMUP_WRITES, sizes.watch_rate, clock
        )
        await wait_for_deliveries(watchers, WATCH_WARMUP_WRITES)
        progress(f"{sizes.watch_writes:,} writes at {sizes.watch_rate:g}/s")
        started = clock()
        writes = await write_steadily(
            writer, namespace, "measure", sizes.watch_writes, sizes.watch_rate, clock
        )
        rate = sizes.watch_writes / (clock() - started)
        missing = await wait_for_deliveries(watchers, WATCH_WARMUP_WRITES + sizes.watch_writes)
        for task in tasks:
            task.cancel()
    if missing:
        raise BenchError(
            f"{missing} watch deliveries did not arrive within {DELIVERY_TIMEOUT:.0f}s"
        )
    delivered = [latency for w in watchers for latency in w.latencies]
    goal = GOAL_WATCH_P99_MS if sizes.watchers == GOAL_WATCHERS else None
    what = f"watch delivery, {sizes.watchers} watchers"
    detail = {
        "watchers": sizes.watchers,
        "writes": sizes.watch_writes,
        "write_rate_per_s": rate,
        "deliveries": len(delivered),
        "delivery_max_ms": ms(max(delivered)),
        "write_p50_ms": ms(percentile(writes, 50)),
        "write_p99_ms": ms(percentile(writes, 99)),
    }
    return [
        Figure(
            "watch_p50", f"{what}, p50", "ms", ms(percentile(delivered, 50)), False, None, detail
        ),
        Figure(
            "watch_p99", f"{what}, p99", "ms", ms(percentile(delivered, 99)), False, goal, detail
        ),
    ]


async def watch_pods(client: kube.Client, namespace: str, watcher: Watcher, clock: Clock) -> None:
    """Watch until cancelled; the first (list) event makes the watcher ready."""
    async with contextlib.aclosing(aiter(client.watch(PODS, namespace=namespace))) as events:
        async for event in events:
            if event.type == kube_watch.SYNC:
                watcher.ready.set()
                continue
            annotations = (event.object.get("metadata") or {}).get("annotations") or {}
            write, stamp = annotations.get(WRITE), annotations.get(STAMP)
            if write is None or stamp is None or write in watcher.writes:
                continue
            received = clock()
            watcher.writes.add(write)
            if annotations.get(PHASE) == "measure":
                watcher.latencies.append(received - float(stamp))


async def write_steadily(
    client: kube.Client, namespace: str, phase: str, count: int, rate: float, clock: Clock
) -> list[float]:
    """``count`` writes, one every ``1/rate`` seconds on a fixed schedule (a slow write delays
    the next, never makes a burst): even ones create a pod, odd ones update its annotations.
    Returns each write's latency."""
    latencies = []
    started = clock()
    for i in range(count):
        delay = started + i / rate - clock()
        if delay > 0:
            await asyncio.sleep(delay)
        name = f"{phase}-{i // 2}"
        sent = clock()
        annotations = {STAMP: f"{sent:.6f}", PHASE: phase, WRITE: f"{phase}-{i}"}
        if i % 2 == 0:
            await client.create(PODS, pod(name, annotations), namespace=namespace)
        else:
            patch = {"metadata": {"annotations": annotations}}
            await client.patch(PODS, name, patch, namespace=namespace)
        latencies.append(clock() - sent)
    return latencies


async def wait_for_deliveries(watchers: list[Watcher], expected: int) -> int:
    """Wait until every watcher has seen ``expected`` stamped events; return how many are
    still missing when the deadline passes (0 when all arrived)."""
    deadline = time.monotonic() + DELIVERY_TIMEOUT
    while time.monotonic() < deadline:
        missing = sum(max(0, expected - w.seen) for w in watchers)
        if not missing:
            return 0
        await asyncio.sleep(0.01)
    return sum(max(0, expected - w.seen) for w in watchers)


# --- running the workloads against one server -------------------------------------------------

Workload = Callable[[Target, str, Sizes, Clock, Progress], Awaitable[list[Figure]]]
WORKLOAD_FUNCTIONS: dict[str, Workload] = {
    "create": bench_create,
    "list": bench_list,
    "watch": bench_watch,
}


async def measure(
    target: Target, sizes: Sizes, workloads: Sequence[str], clock: Clock, progress: Progress
) -> Measurement:
    """Run the workloads, each in a fresh namespace, one after another."""
    prefix = f"kubetrain-bench-{secrets.token_hex(3)}"
    figures: list[Figure] = []
    usage: list[Usage] = []
    async with contextlib.AsyncExitStack() as stack:
        (admin,) = await stack.enter_async_context(open_clients(target.kubeconfig, 1))
        await wait_until_serving(admin)
        for name in workloads:
            namespace = await create_namespace(admin, f"{prefix}-{name}")
            if target.delete_namespaces:
                stack.push_async_callback(delete_namespace, admin, namespace)
            found, used = await run_workload(name, target, namespace, sizes, clock, progress)
            figures += found
            usage.append(used)
    return Measurement(target, admin.host, figures, usage)


async def run_workload(
    name: str, target: Target, namespace: str, sizes: Sizes, clock: Clock, progress: Progress
) -> tuple[list[Figure], Usage]:
    """One workload's figures, and the wall and CPU time it took."""

    def say(message: str) -> None:
        progress(f"{target.name} {name}: {message}")

    wall, cpu, server = clock(), time.process_time(), server_cpu_seconds(target)
    figures = await WORKLOAD_FUNCTIONS[name](target, namespace, sizes, clock, say)
    server_after = server_cpu_seconds(target)
    server_used = None if server is None or server_after is None else server_after - server
    return figures, Usage(name, clock() - wall, time.process_time() - cpu, server_used)


def server_cpu_seconds(target: Target) -> float | None:
    """CPU time of the server's processes together (kube-apiserver and its etcd), or None
    where the server is not ours or one cannot be read."""
    times = [_processes.cpu_seconds(pid) for pid in target.pids]
    if not times or None in times:
        return None
    return sum(t for t in times if t is not None)


# --- the report -------------------------------------------------------------------------------


def compare(ours: Figure, reference: float | None, measured: bool) -> dict[str, Any]:
    """One row: our figure, the reference, the ratio ours / reference, and what it means."""
    row: dict[str, Any] = {
        "key": ours.key,
        "label": ours.label,
        "unit": ours.unit,
        "kubetrain": ours.value,
        "higher_is_better": ours.higher_is_better,
        "reference": reference,
        "ratio": None,
        "verdict": "",
        "detail": ours.detail,
    }
    if reference:
        row["ratio"] = ours.value / reference
        ahead = ours.value >= reference if ours.higher_is_better else ours.value <= reference
        if measured:
            row["verdict"] = "kubetrain faster" if ahead else "kubetrain slower"
        else:
            row["verdict"] = "meets goal" if ahead else "misses goal"
    return row


def usable_cpus() -> int | None:
    """CPUs this process may run on (the affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def build_report(
    ours: Measurement, other: Measurement | None, sizes: Sizes, memory: bool, filesystem: str
) -> dict[str, Any]:
    theirs = {f.key: f for f in other.figures} if other else {}
    rows = []
    for figure in ours.figures:
        if other is not None:
            match = theirs.get(figure.key)
            rows.append(compare(figure, match.value if match else None, measured=True))
        else:
            rows.append(compare(figure, figure.goal, measured=False))
    return {
        "storage": "memory" if memory else "sqlite",
        "filesystem": filesystem,
        "sizes": sizes.name,
        "cpus": usable_cpus(),
        "python": platform.python_version(),
        "reference": "measured" if other else "goals",
        "servers": {m.target.name: m.server for m in (ours, other) if m is not None},
        "reference_description": other.target.description if other else "",
        "rows": rows,
        "usage": {
            m.target.name: [vars(u) for u in m.usage] for m in (ours, other) if m is not None
        },
        "other_detail": {f.key: f.detail for f in other.figures} if other else {},
    }


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f} /s" if unit == "/s" else f"{value:,.1f} ms"


def render(report: dict[str, Any]) -> str:
    storage = (
        f"SQLite on disk ({report['filesystem']}, durable)"
        if report["storage"] == "sqlite"
        else "in memory"
    )
    measured = report["reference"] == "measured"
    reference = "other" if measured else "goal"
    lines = [
        f"kubetrain API server: {storage}; {report['cpus']} CPUs; {report['sizes']} sizes",
        "reference: "
        + (
            f"{report['servers']['other']} ({report['reference_description']}), "
            "measured in this run"
            if measured
            else "goals for the local API server (targets, not a measured baseline)"
        ),
        "",
    ]
    header = ["figure", "kubetrain", reference, f"kubetrain/{reference}", ""]
    table = [header]
    for row in report["rows"]:
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        better = "higher is better" if row["higher_is_better"] else "lower is better"
        verdict = f"{row['verdict']} ({better})" if row["verdict"] else f"({better})"
        table.append(
            [
                row["label"],
                format_value(row["kubetrain"], row["unit"]),
                format_value(row["reference"], row["unit"]),
                ratio,
                verdict,
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:4], widths[1:4], strict=True)
        ]
        lines.append("  ".join([*cells, r[4]]).rstrip())
    lines.append("")
    lines += render_details(report)
    return "\n".join(lines)


def render_details(report: dict[str, Any]) -> list[str]:
    lines = []
    for row in report["rows"]:
        d = row["detail"]
        if row["key"].startswith("create_"):
            lines.append(
                f"{row['label']}: latency p50 {d['latency_p50_ms']:.1f} ms, "
                f"p99 {d['latency_p99_ms']:.1f} ms"
            )
        elif row["key"] == "list_max":
            lines.append(
                f"list: {d['body_mb']:.1f} MB of JSON per full list; the client's decoding of "
                f"it alone: p50 {d['client_decode_p50_ms']:.0f} ms (the rest is the server and "
                "the transfer)"
            )
        elif row["key"] == "watch_p99":
            lines.append(
                f"watch: {d['deliveries']:,} deliveries ({d['writes']:,} writes at "
                f"{d['write_rate_per_s']:.0f}/s), max {d['delivery_max_ms']:.1f} ms; "
                f"the writes alone: p50 {d['write_p50_ms']:.1f} ms, p99 {d['write_p99_ms']:.1f} ms"
            )
    for name, usages in report["usage"].items():
        for u in usages:
            server = "" if u["server_cpu_s"] is None else f"server {u['server_cpu_s']:.1f} s, "
            lines.append(
                f"{name} {u['workload']}: {u['wall_s']:.1f} s wall; CPU: {server}"
                f"benchmark process {u['bench_cpu_s']:.1f} s"
            )
    return lines


# --- entry point ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/apiserver.py",
        description="Measure the local API server (creates/s, 10,000-pod lists, watch fan-out) "
        f"against the goals, against the server named by ${OTHER_KUBECONFIG_ENV}, or against "
        "a real kube-apiserver it starts (--real).",
    )
    parser.add_argument("--quick", action="store_true", help="smaller counts: a smoke run")
    parser.add_argument("--only", choices=WORKLOADS, help="run one workload")
    parser.add_argument(
        "--memory", action="store_true", help="run the local server in memory, not on SQLite"
    )
    parser.add_argument(
        "--dir",
        help="where to put the temporary state directory (default: beside $KUBETRAIN_HOME "
        "or ~/.kubetrain, on the disk a real one uses)",
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="start a real kube-apiserver (with etcd, from $KUBEBUILDER_ASSETS) as the "
        f"reference, instead of the server named by ${OTHER_KUBECONFIG_ENV}",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.real and os.environ.get(OTHER_KUBECONFIG_ENV):
        parser.error(f"--real and ${OTHER_KUBECONFIG_ENV} name two references; give one")
    return args


def progress_to_stderr(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def expected_failure(exc: BaseException) -> BaseException | None:
    """The API or benchmark error behind ``exc`` (task groups wrap them in groups), or None
    for a bug, which should show its traceback."""
    if isinstance(exc, (KubetrainError, TimeoutError, _realcluster.Unavailable)):
        return exc
    for inner in getattr(exc, "exceptions", ()):  # an exception group, from a task group
        if (found := expected_failure(inner)) is not None:
            return found
    return None


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM outside the event loop: unwind as Ctrl-C does, so the server is stopped."""
    raise KeyboardInterrupt


async def cancelled_on_sigterm(work: Awaitable[Measurement]) -> Measurement:
    """Await ``work``; SIGTERM cancels it, as Ctrl-C does under ``asyncio.run``, so cleanup
    (closing clients, deleting namespaces) runs in the tasks rather than being cut short."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await work
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, interrupt)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    workloads = [args.only] if args.only else list(WORKLOADS)
    other_kubeconfig = os.environ.get(OTHER_KUBECONFIG_ENV)
    clock = time.perf_counter
    parent = state_parent(dict(os.environ), args.dir)
    filesystem = filesystem_type(parent or tempfile.gettempdir())
    signal.signal(signal.SIGTERM, interrupt)
    try:
        with local_control_plane(args.memory, parent) as local:
            ours = asyncio.run(
                cancelled_on_sigterm(measure(local, sizes, workloads, clock, progress_to_stderr))
            )
        other = None
        if args.real:
            progress_to_stderr("starting the reference: etcd, kube-apiserver")
            with real_control_plane() as target:
                other = asyncio.run(
                    cancelled_on_sigterm(
                        measure(target, sizes, workloads, clock, progress_to_stderr)
                    )
                )
        elif other_kubeconfig:
            target = Target("other", other_kubeconfig, description=f"from {OTHER_KUBECONFIG_ENV}")
            other = asyncio.run(
                cancelled_on_sigterm(measure(target, sizes, workloads, clock, progress_to_stderr))
            )
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("bench: interrupted; the servers it started are stopped", file=sys.stderr)
        return 130
    except Exception as exc:
        failure = expected_failure(exc)
        if failure is None:
            raise
        print(f"bench: {failure or type(failure).__name__}", file=sys.stderr)
        return 1
    report = build_report(ours, other, sizes, args.memory, filesystem)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
