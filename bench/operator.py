"""How fast the operator turns submitted jobs into their pods and Services, next to a plain
client creating the same objects in the same run; how many writes it makes per job; how much
memory it holds.

What it measures: N PyTorchJobs (default 500; ``--quick`` 50), each 1 Master + 3 Workers, are
submitted to a local API server with no node and no scheduler, so the pods stay Pending and
nothing but the operator reacts to them. Two runs, each on a fresh ``kubetrain apiserver
--memory`` started for it:

1. **operator**: ``kubetrain operator`` runs as its own process (all its controllers, as
   deployed, ``--controller-threads`` W), and has synced its caches (``/readyz``) before the
   clock starts. The clock runs from the first submission until every pod and Service of every
   job exists and every job shows the condition Created.
2. **baseline**: the same submissions; a plain client (its own connection pool, like the
   operator's) takes each job as its create returns and creates the same 4 Services and 4
   pods (bodies copied from what the operator created in run 1, with the new job's name and
   uid), W jobs at a time and each job's Service-then-pod pairs side by side, as the
   operator's workers do. No watch, no cache, no status. The clock runs from the first
   submission until every pod and Service exists.

Both clocks stop on what a watch of the namespace shows (one watch per kind, opened before
the clock starts), so both include the same delivery delay. The ratio operator / baseline is
printed next to its goal (at most 1.3).

**Writes per job** are counted from the API server's side: every event of those watches
(ADDED, MODIFIED, DELETED on pods, Services, PyTorchJobs and Events in the namespace) is one
write that changed an object, taken until nothing has changed for a while after the clock
stopped. The server's resourceVersion, which every successful write anywhere advances by one,
is read before and after as a check that nothing was missed. Writes the server refused (a
409 on a create or a stale compare-and-swap) or that changed nothing are not seen this way,
and are not counted; the operator's own metrics (reconciles, retries, failed creates) are
printed beside them for that. The goal, "no more writes per job than the objects it creates
plus two status updates", is judged on the writes to pods, Services and the job; the Events
the operator records (upstream's SuccessfulCreatePod, SuccessfulCreateService, Created) are
writes too and are shown on their own line.

**On a real kube-apiserver** (``--real``): each run gets a fresh etcd, kube-apiserver and
kube-controller-manager from ``KUBEBUILDER_ASSETS`` (through :mod:`kubetrain.envtest`, the
CRDs installed with kubectl) instead of kubetrain's server; the server's CPU is
kube-apiserver's and etcd's together. Before each clock starts the server is left to settle
(a kube-apiserver given CRDs spends seconds publishing their OpenAPI).

**What an operator must ask** (``--required``): each round also times the plain client making,
besides its creates, the requests no operator can do without: a watch of pods, Services and
jobs held open (synced before the clock starts, every event decoded) and each job's Created
status written beside its creates, its clock also waiting for every Created. ``operator /
required`` is what the operator adds beyond those requests; ``required / baseline`` is what
the server charges for them. On a real kube-apiserver, 2 cores, quiet machine, two runs of 5
rounds: required / baseline 1.21 and 1.45; operator / required 1.13 (overall 1.37) in the run
of this code. The second factor alone is about the goal: the status write of a custom resource
(decoding, schema validation and managed fields for the whole object) and the watch events
delivered to one more client cost kube-apiserver about as much as the goal allows.

**What the server answered** while the clock ran, per job and run, where it says so itself
(kube-apiserver's ``apiserver_request_total`` by verb, resource and code, and
``apiserver_watch_events_total`` by kind, read from its ``/metrics`` before and after): the
requests the operator run makes beyond the baseline's, without guessing from its writes.

**Operator memory**: its resident set size (VmRSS) when its caches synced and when the run
is over, and its peak (VmHWM), from /proc; goal: under 250 MB at 500 jobs.

**Rounds**: the two runs are repeated (``--rounds``, default 3; every other round runs the
baseline first, on the bodies of the round before) and the ratio reported is the median of
the rounds' ratios; single rounds of the same code on the same machine differ by up to a
quarter, so one round says little.

**Figures** (500 jobs, 2 cores, quiet machine, 15 rounds): ratio median 1.22 (rounds 0.86 to
1.54; 11 of 15 at 1.3 or less); the same run with watch events written one per send, as
before, just after it: median 1.27 (1.14 to 1.44). Medians of 6 and 7 rounds on other days
were 1.32 to 1.36: the median moves with the machine by about as much as any change since.
9 writes to pods, Services and the job per job, 9 Events; 146 MB at the end. The runs are
bound by the API server's one core; within the clock it spends about the same CPU in both
runs (3.4 to 4.3 s in the operator run, 3.0 to 4.4 s in the baseline's, 4 rounds each). What
the operator run asks of it beyond the baseline's writes: the status update (0.64 ms of
server CPU), the watch events delivered to the operator (written a burst at a time), and the
cost of requests that arrive less bunched together (a create costs the server 0.87 ms when 4
arrive at a time, 0.68 ms at 16). The operator writes a job's status beside its creates, not
after them, and holds its Events back while it has reconciles to do, so they are written once
the burst is over.

Usage::

    .venv/bin/python bench/operator.py [--quick] [--jobs N] [--threads W]
                                       [--submitters K] [--rounds R] [--real] [--required]
                                       [--json]

This is not a test: it asserts nothing and exits 0 whatever the figures are. (Run it as a
script, as above: the file's name is also that of a standard library module, which a script's
own directory on ``sys.path`` would shadow for anything imported later; Python has imported
the real one before the script starts.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import _processes  # this directory's, as the script runs from here
import _realcluster
import aiohttp

from kubetrain import _aio, kube
from kubetrain.errors import KubetrainError
from kubetrain.kube import resource
from kubetrain.kube import watch as kube_watch
from kubetrain.local import daemon

PODS = resource.PODS
NAMESPACES = resource.NAMESPACES
SERVICES = kube.Resource("", "v1", "services", kind="Service")
EVENTS = kube.Resource("", "v1", "events", kind="Event")
PYTORCHJOBS = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
SERVICE_ACCOUNTS = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
WATCHED = (PODS, SERVICES, PYTORCHJOBS, EVENTS)

JOBS = 500
QUICK_JOBS = 50
WORKERS = 3  # per job, beside its Master
OBJECTS_PER_JOB = 2 * (1 + WORKERS)  # a pod and a headless Service per replica
THREADS = 4  # the operator's workers per controller, and the baseline's jobs at a time
SUBMITTERS = 8  # concurrent job submissions, in both runs
NAMESPACE = "bench"  # the same in both runs (each on its own server), so bodies carry over

START_TIMEOUT = 60.0  # seconds for a server to serve, or the operator to sync
RUN_TIMEOUT = 600.0  # seconds for one run to create everything
QUIET = 2.0  # seconds without a write after which a run's writes are counted
QUIET_TIMEOUT = 60.0
SETTLE_WINDOW = 1.0  # seconds over which the server's CPU use is sampled before the clock
SETTLE_CPU = 0.1  # ... and below which share of a core it counts as idle
SETTLE_TIMEOUT = 30.0

ROUNDS = 3  # operator and baseline runs, in turn; the ratio is their median
GOAL_RATIO = 1.3
GOAL_STATUS_WRITES = 2
GOAL_RSS_MB = 250.0
GOAL_JOBS = 500  # the job count the RSS goal is stated for

Clock = Callable[[], float]


class BenchError(KubetrainError):
    """The benchmark could not run; the message says why."""


# --- processes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    home: str  # a temporary directory, also for the operator's log
    kubeconfig: str
    pids: tuple[int, ...]  # the server's processes, whose CPU time is counted together


def cpu_seconds(server: Server) -> float | None:
    times = [_processes.cpu_seconds(pid) for pid in server.pids]
    return None if not times or None in times else sum(t for t in times if t is not None)


@contextlib.contextmanager
def api_server(real: bool = False) -> Iterator[Server]:
    """A fresh API server with no node, scheduler or operator, stopped however the block
    ends: ``kubetrain apiserver --memory`` in a temporary home on a free port, or with
    ``real`` etcd, kube-apiserver and kube-controller-manager (which gives each namespace
    the ServiceAccount pods need) through :mod:`kubetrain.envtest`, kubetrain's CRDs
    installed."""
    if real:
        with _realcluster.control_plane(controllers=True) as plane:
            pids = tuple(p for p in (plane.pid("kube-apiserver"), plane.pid("etcd")) if p)
            yield Server(str(plane.directory), plane.kubeconfig, pids)
        return
    with tempfile.TemporaryDirectory(prefix="kubetrain-bench-operator-") as home:
        paths = daemon.Paths(home)
        log = Path(home) / "apiserver.log"
        command = [sys.executable, "-m", "kubetrain", "apiserver", "--home", home]
        process = _processes.spawn([*command, "--memory", "--port", "0"], log, home)
        try:
            _processes.wait_for_file(
                paths.kubeconfig,
                process,
                START_TIMEOUT,
                lambda why: BenchError(f"the API server: {why}:\n{_processes.tail(log)}"),
            )
            yield Server(home, paths.kubeconfig, (process.pid,))
        finally:
            _processes.stop(process)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Operator:
    process: subprocess.Popen[bytes]
    metrics: str  # URL of /metrics
    ready: str  # URL of /readyz
    log: Path


@contextlib.contextmanager
def operator_process(server: Server, namespace: str, threads: int) -> Iterator[Operator]:
    """``kubetrain operator`` against ``server``, watching ``namespace``, with its metrics and
    probes on free local ports; stopped however the block ends."""
    metrics, probes = free_port(), free_port()
    log = Path(server.home) / "operator.log"
    command = [
        sys.executable, "-m", "kubetrain", "operator",
        "--kubeconfig", server.kubeconfig,
        "--namespace", namespace,
        "--metrics-bind-address", f"127.0.0.1:{metrics}",
        "--health-probe-bind-address", f"127.0.0.1:{probes}",
        "--controller-threads", str(threads),
        "--log-level", "WARNING",
    ]  # fmt: skip
    process = _processes.spawn(command, log, server.home)
    try:
        yield Operator(
            process,
            f"http://127.0.0.1:{metrics}/metrics",
            f"http://127.0.0.1:{probes}/readyz",
            log,
        )
    finally:
        _processes.stop(process)


def proc_status_kb(pid: int, field_name: str) -> float | None:
    """A ``kB`` field of /proc/<pid>/status (VmRSS, VmHWM), or None where unreadable."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field_name}:\s+(\d+) kB", text, re.MULTILINE)
    return float(found.group(1)) if found else None


async def http_get(url: str) -> tuple[int, str]:
    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession() as session, session.get(url, timeout=timeout) as response:
        return response.status, await response.text()


async def wait_ready(operator: Operator) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if operator.process.poll() is not None:
            raise BenchError(f"the operator exited:\n{_processes.tail(operator.log)}")
        with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
            if (await http_get(operator.ready))[0] == 200:
                return
        if time.monotonic() > deadline:
            raise BenchError(f"the operator did not sync in {START_TIMEOUT:.0f}s")
        await asyncio.sleep(0.1)


def metric_sums(text: str) -> dict[str, float]:
    """Prometheus samples summed over their labels, by name (and by ``result`` for the
    reconcile counter)."""
    sums: dict[str, float] = Counter()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        result = re.search(r'result="([^"]*)"', name_labels)
        key = f"{name}:{result.group(1)}" if result else name
        with contextlib.suppress(ValueError):
            sums[key] += float(value)
    return dict(sums)


# --- jobs and the objects a job gets ----------------------------------------------------------


def job_name(number: int) -> str:
    return f"bench-{number:05d}"


def pytorchjob(number: int) -> dict[str, Any]:
    def replica(count: int) -> dict[str, Any]:
        container = {
            "name": "pytorch",
            "image": "example/train:1",
            "command": ["python3", "train.py"],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        }
        return {
            "replicas": count,
            "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [container]}},
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": job_name(number)},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(WORKERS)}},
    }


SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


@dataclass(frozen=True)
class Templates:
    """One job's pods and Services as the operator created them, for the baseline to copy."""

    job: str
    job_uid: str
    pairs: tuple[tuple[dict[str, Any], dict[str, Any]], ...]  # (Service, pod) per replica

    def render(self, job: str, uid: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        text = json.dumps(self.pairs).replace(self.job_uid, uid)
        text = re.sub(rf"\b{re.escape(self.job)}\b", job, text)
        return [tuple(pair) for pair in json.loads(text)]  # type: ignore[misc]


def template_of(obj: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(obj)
    body.pop("status", None)
    for key in SERVER_FIELDS:
        body["metadata"].pop(key, None)
    spec = body.get("spec") or {}
    for key in ("clusterIP", "clusterIPs"):  # headless "None" stays; allocated ones go
        if spec.get(key) not in (None, "None", ["None"]):
            spec.pop(key, None)
    spec.pop("nodeName", None)
    return body


async def capture_templates(client: kube.Client, namespace: str) -> Templates:
    name = job_name(0)
    job = await client.get(PYTORCHJOBS, name, namespace=namespace)
    selector = f"training.kubeflow.org/job-name={name}"
    pods = await client.list(PODS, namespace=namespace, label_selector=selector)
    services = await client.list(SERVICES, namespace=namespace, label_selector=selector)
    by_name = {s["metadata"]["name"]: template_of(s) for s in services.get("items") or []}
    pairs = tuple(
        (by_name[p["metadata"]["name"]], template_of(p))
        for p in sorted(pods.get("items") or [], key=lambda p: p["metadata"]["name"])
    )
    if len(pairs) != OBJECTS_PER_JOB // 2:
        raise BenchError(f"{name}: found {len(pairs)} pod and Service pairs")
    return Templates(name, job["metadata"]["uid"], pairs)


# --- watching the namespace -------------------------------------------------------------------


@dataclass
class Monitor:
    """What the watches of the namespace show: objects by kind, jobs with Created, every
    write seen, and when the last one came."""

    jobs: int
    need_created: bool
    clock: Clock
    synced: dict[str, asyncio.Event] = field(default_factory=dict)
    names: dict[str, set[str]] = field(default_factory=lambda: {r.plural: set() for r in WATCHED})
    created: set[str] = field(default_factory=set)  # jobs whose Created is True
    writes: Counter[tuple[str, str]] = field(default_factory=Counter)  # (plural, type)
    last_write: float = 0.0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    done_at: float | None = None

    def complete(self) -> bool:
        want = self.jobs * (OBJECTS_PER_JOB // 2)
        objects = len(self.names["pods"]) >= want and len(self.names["services"]) >= want
        return objects and (not self.need_created or len(self.created) >= self.jobs)

    def on_event(self, plural: str, event: kube_watch.Event) -> None:
        obj = event.object
        name = (obj.get("metadata") or {}).get("name", "")
        self.writes[(plural, event.type)] += 1
        self.last_write = self.clock()
        if event.type == kube_watch.DELETED:
            self.names[plural].discard(name)
        else:
            self.names[plural].add(name)
        if plural == "pytorchjobs" and any(
            c.get("type") == "Created" and c.get("status") == "True"
            for c in (obj.get("status") or {}).get("conditions") or []
        ):
            self.created.add(name)
        if not self.done.is_set() and self.complete():
            self.done_at = self.clock()
            self.done.set()


async def watch_kind(
    client: kube.Client, namespace: str, kind: kube.Resource, monitor: Monitor
) -> None:
    synced = monitor.synced.setdefault(kind.plural, asyncio.Event())
    async for event in client.watch(kind, namespace=namespace):
        if event.type == kube_watch.SYNC:
            synced.set()
            continue
        monitor.on_event(kind.plural, event)


@contextlib.asynccontextmanager
async def watching(kubeconfig: str, namespace: str, monitor: Monitor) -> AsyncIterator[None]:
    """The namespace watched (one client, one watch per kind) for the block's duration."""
    async with (
        await kube.Client.from_kubeconfig(kubeconfig, user_agent="bench-monitor") as client,
        _aio.TaskGroup() as group,
    ):
        for kind in WATCHED:
            monitor.synced[kind.plural] = asyncio.Event()
        tasks = [
            group.create_task(watch_kind(client, namespace, kind, monitor), name=kind.plural)
            for kind in WATCHED
        ]
        try:
            async with _aio.timeout(START_TIMEOUT):
                await asyncio.gather(*(e.wait() for e in monitor.synced.values()))
            yield
        finally:
            for task in tasks:
                task.cancel()


async def quiet(monitor: Monitor, clock: Clock) -> None:
    """Wait until no write has been seen for ``QUIET`` seconds."""
    deadline = clock() + QUIET_TIMEOUT
    while clock() - monitor.last_write < QUIET:
        if clock() > deadline:
            raise BenchError(f"writes still going on {QUIET_TIMEOUT:.0f}s after the run")
        await asyncio.sleep(0.1)


async def settled(server: Server) -> None:
    """Wait (up to ``SETTLE_TIMEOUT``) until the server is idle: a kube-apiserver that has
    just been given CRDs spends seconds of CPU publishing their OpenAPI, which would slow
    whichever run's clock it overlaps."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last = cpu_seconds(server)
    while last is not None and time.monotonic() < deadline:
        await asyncio.sleep(SETTLE_WINDOW)
        now = cpu_seconds(server)
        if now is None or now - last <= SETTLE_CPU * SETTLE_WINDOW:
            return
        last = now


_REQUEST_SAMPLE = re.compile(r"^apiserver_request_total\{([^}]*)\} (\S+)$", re.MULTILINE)
_WATCH_SAMPLE = re.compile(r"^apiserver_watch_events_total\{([^}]*)\} (\S+)$", re.MULTILINE)


async def server_requests(server: Server) -> Counter[str] | None:
    """What the server has answered so far, from its own ``/metrics`` (kube-apiserver's
    ``apiserver_request_total`` by verb and resource, ``apiserver_watch_events_total`` by
    kind), or None where it serves no such metrics (kubetrain's server)."""
    process = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", server.kubeconfig, "get", "--raw", "/metrics",
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = await process.communicate()
    if process.returncode != 0:
        return None
    text = out.decode()
    counts: Counter[str] = Counter()
    for labels, value in _REQUEST_SAMPLE.findall(text):
        tags = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        resource_ = "/".join(filter(None, (tags.get("resource"), tags.get("subresource"))))
        counts[f"{tags.get('verb')} {resource_ or '-'} {tags.get('code')}"] += int(float(value))
    for labels, value in _WATCH_SAMPLE.findall(text):
        kind = dict(re.findall(r'(\w+)="([^"]*)"', labels)).get("kind", "?")
        counts[f"WATCH-EVENT {kind}"] += int(float(value))
    return counts or None


async def resource_version(client: kube.Client) -> int:
    """The server's current resourceVersion (a list's), which every write advances."""
    listed = await client.list(NAMESPACES, limit=1)
    return int(listed["metadata"]["resourceVersion"])


# --- the two runs -----------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    jobs: int
    seconds: float
    writes: dict[str, int]  # "<plural> <TYPE>": count
    version_delta: int  # resourceVersion advanced by, from before the first submission
    server_cpu_s: float | None
    operator_cpu_s: float | None = None
    rss_ready_mb: float | None = None
    rss_end_mb: float | None = None
    rss_peak_mb: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    server_cpu_clocked_s: float | None = None  # the server's CPU while the clock ran
    clocked_writes: dict[str, int] = field(default_factory=dict)  # writes seen by then
    # what the server answered while the clock ran ("VERB resource code", and watch events
    # delivered by kind), where it says (kube-apiserver's /metrics)
    clocked_requests: dict[str, int] = field(default_factory=dict)


async def create_namespace(client: kube.Client, name: str) -> str:
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    async with _aio.timeout(START_TIMEOUT):  # pods are refused until the default account is
        while True:
            try:
                await client.get(SERVICE_ACCOUNTS, "default", namespace=name)
                return name
            except kube.NotFound:
                await asyncio.sleep(0.05)


async def submit(
    client: kube.Client,
    namespace: str,
    jobs: int,
    submitters: int,
    on_created: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Create the jobs, ``submitters`` at a time."""
    numbers = iter(range(jobs))

    async def submitter() -> None:
        for number in numbers:
            created = await client.create(PYTORCHJOBS, pytorchjob(number), namespace=namespace)
            if on_created is not None:
                on_created(created)

    async with _aio.TaskGroup() as group:
        for i in range(submitters):
            group.create_task(submitter(), name=f"submitter-{i}")


async def timed_run(
    name: str,
    server: Server,
    namespace: str,
    monitor: Monitor,
    clock: Clock,
    work: Callable[[kube.Client], Awaitable[None]],
) -> Run:
    """Run ``work`` (the submissions and whatever answers them) with the clock running from
    its start until the monitor is satisfied; then count the writes once all is quiet."""
    async with (
        await kube.Client.from_kubeconfig(server.kubeconfig, user_agent="bench") as client,
        watching(server.kubeconfig, namespace, monitor),
    ):
        await settled(server)
        before = await resource_version(client)
        requests_before = await server_requests(server)
        cpu_before = cpu_seconds(server)
        started = clock()
        async with _aio.timeout(RUN_TIMEOUT):
            await work(client)
            await monitor.done.wait()
        assert monitor.done_at is not None
        seconds = monitor.done_at - started
        cpu_clocked = cpu_seconds(server)
        requests_clocked = await server_requests(server)
        clocked_writes = {f"{p} {t}": n for (p, t), n in sorted(monitor.writes.items())}
        await quiet(monitor, clock)
        after = await resource_version(client)
        cpu_after = cpu_seconds(server)
    server_cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return Run(
        name,
        monitor.jobs,
        seconds,
        {f"{p} {t}": n for (p, t), n in sorted(monitor.writes.items())},
        after - before,
        server_cpu,
        server_cpu_clocked_s=(
            None if cpu_before is None or cpu_clocked is None else cpu_clocked - cpu_before
        ),
        clocked_writes=clocked_writes,
        clocked_requests=(
            {}
            if requests_before is None or requests_clocked is None
            else {k: n for k, n in (requests_clocked - requests_before).items() if n}
        ),
    )


async def operator_run(
    server: Server,
    jobs: int,
    threads: int,
    submitters: int,
    clock: Clock,
    say: Callable[[str], None],
) -> tuple[Run, Templates]:
    async with await kube.Client.from_kubeconfig(server.kubeconfig) as admin:
        namespace = await create_namespace(admin, NAMESPACE)
    with operator_process(server, namespace, threads) as operator:
        await wait_ready(operator)
        pid = operator.process.pid
        rss_ready = proc_status_kb(pid, "VmRSS")
        cpu_before = _processes.cpu_seconds(pid)
        say(f"operator: synced; submitting {jobs:,} jobs ({submitters} at a time)")
        monitor = Monitor(jobs, need_created=True, clock=clock)

        async def work(client: kube.Client) -> None:
            await submit(client, namespace, jobs, submitters)

        run = await timed_run("operator", server, namespace, monitor, clock, work)
        cpu_after = _processes.cpu_seconds(pid)
        run.rss_ready_mb = None if rss_ready is None else rss_ready / 1024
        rss_end, peak = proc_status_kb(pid, "VmRSS"), proc_status_kb(pid, "VmHWM")
        run.rss_end_mb = None if rss_end is None else rss_end / 1024
        run.rss_peak_mb = None if peak is None else peak / 1024
        if cpu_before is not None and cpu_after is not None:
            run.operator_cpu_s = cpu_after - cpu_before
        with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
            run.metrics = metric_sums((await http_get(operator.metrics))[1])
        if operator.process.poll() is not None:
            log = _processes.tail(operator.log)
            raise BenchError(f"the operator exited during the run:\n{log}")
        async with await kube.Client.from_kubeconfig(server.kubeconfig) as client:
            templates = await capture_templates(client, namespace)
    return run, templates


async def baseline_run(
    server: Server,
    jobs: int,
    threads: int,
    submitters: int,
    templates: Templates,
    clock: Clock,
    say: Callable[[str], None],
    required: bool = False,
) -> Run:
    """The plain client's run. ``required`` adds the requests any operator must make besides
    the creates, and nothing else: a watch of pods, Services and jobs held open (synced before
    the clock starts, every event decoded, as an operator's informers are) and each job's
    Created status written beside its creates; its clock also waits for every job's
    Created."""
    name = "required" if required else "baseline"
    async with await kube.Client.from_kubeconfig(server.kubeconfig) as admin:
        namespace = await create_namespace(admin, NAMESPACE)
    say(f"{name}: submitting {jobs:,} jobs and creating their objects, {threads} at a time")
    monitor = Monitor(jobs, need_created=required, clock=clock)
    queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async with contextlib.AsyncExitStack() as stack:
        creator_client = await stack.enter_async_context(
            await kube.Client.from_kubeconfig(server.kubeconfig, user_agent=f"bench-{name}")
        )
        if required:  # the watches an operator holds, fed to a monitor nothing reads
            ignored = Monitor(jobs, need_created=False, clock=clock)
            await stack.enter_async_context(watching(server.kubeconfig, namespace, ignored))

        async def pair(service: dict[str, Any], pod: dict[str, Any]) -> None:
            await creator_client.create(SERVICES, service, namespace=namespace)
            await creator_client.create(PODS, pod, namespace=namespace)

        async def creator() -> None:
            while (job := await queue.get()) is not None:
                meta = job["metadata"]
                async with _aio.TaskGroup() as group:
                    for service, pod in templates.render(meta["name"], meta["uid"]):
                        group.create_task(pair(service, pod))
                    if required:
                        status = {**job, "status": created_status(meta["name"])}
                        group.create_task(
                            creator_client.replace(PYTORCHJOBS, status, subresource="status")
                        )

        async def work(client: kube.Client) -> None:
            async with _aio.TaskGroup() as group:
                for i in range(threads):
                    group.create_task(creator(), name=f"creator-{i}")
                await submit(client, namespace, jobs, submitters, queue.put_nowait)
                for _ in range(threads):
                    queue.put_nowait(None)

        return await timed_run(name, server, namespace, monitor, clock, work)


def created_status(name: str) -> dict[str, Any]:
    """The status an operator writes once a job's objects are created: its Created condition
    and an entry per replica type, in upstream's shape."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "PyTorchJobCreated",
                "message": f"PyTorchJob {name} is created.",
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            }
        ],
        "replicaStatuses": {"Master": {}, "Worker": {}},
    }


# --- the report -------------------------------------------------------------------------------


def per_job(run: Run, *keys: str) -> float:
    return sum(n for k, n in run.writes.items() if k.split()[0] in keys) / run.jobs


def median_round(rounds: Sequence[tuple[Run, Run]]) -> tuple[Run, Run]:
    """The round whose ratio is the median (the lower middle one of an even count)."""
    ordered = sorted(rounds, key=lambda pair: pair[0].seconds / pair[1].seconds)
    return ordered[(len(ordered) - 1) // 2]


def required_figures(
    rounds: Sequence[tuple[Run, Run]], required: Sequence[Run]
) -> dict[str, Any] | None:
    """With ``--required``: each round's run of the plain client making the operator's required
    requests too, and the medians of its ratios to the round's two other runs."""
    if not required:
        return None
    both = list(zip(rounds, required, strict=True))
    return {
        "rounds_s": [r.seconds for r in required],
        "operator_over_required": statistics.median(o.seconds / r.seconds for (o, _), r in both),
        "required_over_baseline": statistics.median(r.seconds / b.seconds for (_, b), r in both),
        "server_cpu_clocked_s": [r.server_cpu_clocked_s for r in required],
    }


def build_report(
    rounds: Sequence[tuple[Run, Run]],
    threads: int,
    submitters: int,
    server: str,
    required: Sequence[Run] = (),
) -> dict[str, Any]:
    """Figures of the median round, with every round's times and ratio beside them."""
    operator, baseline = median_round(rounds)
    ratio = operator.seconds / baseline.seconds
    submitted = operator.writes.get("pytorchjobs ADDED", 0)
    object_writes = (
        sum(n for k, n in operator.writes.items() if k.split()[0] in ("pods", "services"))
        + operator.writes.get("pytorchjobs MODIFIED", 0)
        + operator.writes.get("pytorchjobs DELETED", 0)
    ) / operator.jobs
    status_writes = operator.writes.get("pytorchjobs MODIFIED", 0) / operator.jobs
    event_writes = per_job(operator, "events")
    seen = sum(operator.writes.values())
    allowed = OBJECTS_PER_JOB + GOAL_STATUS_WRITES
    return {
        "jobs": operator.jobs,
        "server": server,
        "replicas_per_job": 1 + WORKERS,
        "threads": threads,
        "submitters": submitters,
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "operator_s": operator.seconds,
        "baseline_s": baseline.seconds,
        "ratio": ratio,
        "rounds": [
            {"operator_s": o.seconds, "baseline_s": b.seconds, "ratio": o.seconds / b.seconds}
            for o, b in rounds
        ],
        "ratio_goal": GOAL_RATIO,
        "ratio_meets_goal": ratio <= GOAL_RATIO,
        "required": required_figures(rounds, required),
        "writes_per_job": {
            "objects": object_writes,
            "status": status_writes,
            "events": event_writes,
            "all": (seen - submitted) / operator.jobs,
            "goal_objects": allowed,
            "meets_goal": object_writes <= allowed,
        },
        "baseline_writes_per_job": (
            sum(baseline.writes.values()) - baseline.writes.get("pytorchjobs ADDED", 0)
        )
        / baseline.jobs,
        "writes_seen": operator.writes,
        "baseline_writes_seen": baseline.writes,
        "version_delta": {"operator": operator.version_delta, "baseline": baseline.version_delta},
        "watched_writes": {"operator": seen, "baseline": sum(baseline.writes.values())},
        "rss_mb": {
            "ready": operator.rss_ready_mb,
            "end": operator.rss_end_mb,
            "peak": operator.rss_peak_mb,
            "goal": GOAL_RSS_MB,
            "goal_jobs": GOAL_JOBS,
            "meets_goal": operator.rss_end_mb is not None and operator.rss_end_mb < GOAL_RSS_MB,
        },
        "cpu_s": {
            "operator": operator.operator_cpu_s,
            "server_operator_run": operator.server_cpu_s,
            "server_baseline_run": baseline.server_cpu_s,
            "server_operator_clocked": operator.server_cpu_clocked_s,
            "server_baseline_clocked": baseline.server_cpu_clocked_s,
        },
        "clocked_writes_per_job": {
            "operator_events": sum(
                n for k, n in operator.clocked_writes.items() if k.startswith("events ")
            )
            / operator.jobs,
            "operator_all": sum(operator.clocked_writes.values()) / operator.jobs,
            "baseline_all": sum(baseline.clocked_writes.values()) / baseline.jobs,
        },
        "clocked_requests_per_job": {
            key: {
                "operator": operator.clocked_requests.get(key, 0) / operator.jobs,
                "baseline": baseline.clocked_requests.get(key, 0) / baseline.jobs,
            }
            for key in sorted(set(operator.clocked_requests) | set(baseline.clocked_requests))
        },
        "operator_metrics": {
            k: v
            for k, v in operator.metrics.items()
            if k.startswith(("controller_runtime_reconcile_total", "workqueue_retries_total"))
            or k
            in (
                "created_pods_total",
                "succeeded_service_creation_total",
                "failed_service_creation_total",
                "controller_runtime_reconcile_errors_total",
            )
        },
    }


def verdict(ok: bool) -> str:
    return "meets goal" if ok else "misses goal"


def mb(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} MB"


def render(report: dict[str, Any]) -> str:
    jobs = report["jobs"]
    writes = report["writes_per_job"]
    rss = report["rss_mb"]
    objects = jobs * report["replicas_per_job"]
    lines = [
        f"kubetrain operator: {jobs:,} PyTorchJobs of 1 Master + {WORKERS} Workers "
        f"({objects:,} pods, {objects:,} Services); {report['server']}, a fresh one per run, "
        f"no node; {report['cpus']} CPUs",
        f"concurrency: {report['submitters']} submissions at a time; the operator's "
        f"--controller-threads {report['threads']} and the baseline's {report['threads']} "
        "jobs at a time",
        "baseline: a plain client creating the same Services and pods, measured in this run",
        "",
        "until every pod and Service exists (operator: and every job shows Created)",
        *(
            f"  round {number}: operator {r['operator_s']:6.2f} s, baseline "
            f"{r['baseline_s']:6.2f} s, ratio {r['ratio']:.2f}"
            for number, r in enumerate(report["rounds"], 1)
        ),
        f"  operator   {report['operator_s']:8.2f} s   "
        f"({objects * 2 / report['operator_s']:,.0f} objects/s)",
        f"  baseline   {report['baseline_s']:8.2f} s   "
        f"({objects * 2 / report['baseline_s']:,.0f} objects/s)",
        f"  ratio      {report['ratio']:8.2f}     the median of {len(report['rounds'])} "
        f"round(s); goal <= {report['ratio_goal']}: {verdict(report['ratio_meets_goal'])}",
        "",
        "writes per job, seen by the API server (watch events; the job's own create excluded)",
        f"  pods, Services, job  {writes['objects']:6.2f}   of which job status "
        f"{writes['status']:.2f}; goal <= {writes['goal_objects']} ({OBJECTS_PER_JOB} objects "
        f"+ {GOAL_STATUS_WRITES} status): {verdict(writes['meets_goal'])}",
        f"  Events               {writes['events']:6.2f}   (upstream's: one per pod and Service "
        "created, and Created)",
        f"  all                  {writes['all']:6.2f}   counting Events against the same goal: "
        f"{verdict(writes['all'] <= writes['goal_objects'])}; baseline "
        f"{report['baseline_writes_per_job']:.2f}",
        f"  check: watch events {report['watched_writes']['operator']:,}, resourceVersion "
        f"advanced {report['version_delta']['operator']:,} (baseline "
        f"{report['watched_writes']['baseline']:,} and {report['version_delta']['baseline']:,})",
        "",
        f"operator memory (RSS): {mb(rss['ready'])} synced, {mb(rss['end'])} at the end, peak "
        f"{mb(rss['peak'])}; goal < {rss['goal']:.0f} MB at {rss['goal_jobs']} jobs"
        + (f": {verdict(rss['meets_goal'])}" if jobs == rss["goal_jobs"] else " (not judged)"),
    ]
    if report["required"] is not None:
        required = report["required"]
        rounds_s = ", ".join(f"{t:.2f}" for t in required["rounds_s"])
        at = lines.index("") + len(report["rounds"]) + 5  # after the ratio's line
        lines[at:at] = [
            "  required   the plain client also holding the operator's watches and writing "
            f"each job's Created status: {rounds_s} s",
            f"    operator / required {required['operator_over_required']:.2f}  (what the "
            "operator adds beyond the requests it must make)",
            f"    required / baseline {required['required_over_baseline']:.2f}  (what the "
            "server charges for those requests)",
        ]
    cpu = report["cpu_s"]
    if cpu["operator"] is not None:
        lines.append(
            f"CPU: operator {cpu['operator']:.1f} s; API server {cpu['server_operator_run']:.1f} "
            f"s in the operator run, {cpu['server_baseline_run']:.1f} s in the baseline run"
        )
    if cpu["server_operator_clocked"] is not None and cpu["server_baseline_clocked"] is not None:
        lines.append(
            f"  while the clock ran: API server {cpu['server_operator_clocked']:.1f} s in the "
            f"operator run, {cpu['server_baseline_clocked']:.1f} s in the baseline run"
        )
    clocked = report["clocked_writes_per_job"]
    lines.append(
        f"writes per job seen while the clock ran: operator run {clocked['operator_all']:.2f} "
        f"(Events {clocked['operator_events']:.2f}), baseline run {clocked['baseline_all']:.2f}"
    )
    requests = report["clocked_requests_per_job"]
    if requests:
        lines.append("requests the server answered per job while the clock ran (its /metrics):")
        lines.append(f"  {'':44} {'operator':>9} {'baseline':>9}")
        lines += [
            f"  {key:44} {n['operator']:9.2f} {n['baseline']:9.2f}"
            for key, n in requests.items()
            if max(n["operator"], n["baseline"]) >= 0.01
        ]
    shown = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(report["operator_metrics"].items()))
    if shown:
        lines.append(f"operator metrics: {shown}")
    return "\n".join(lines)


# --- entry point ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/operator.py",
        description="Time the operator creating N PyTorchJobs' pods and Services against a "
        "plain client creating the same objects; count its writes per job and its memory.",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_JOBS} jobs: a smoke run")
    parser.add_argument("--jobs", type=int, help=f"jobs to submit (default {JOBS})")
    parser.add_argument(
        "--threads",
        type=int,
        default=THREADS,
        help=f"the operator's --controller-threads, and the baseline's jobs at a time "
        f"(default {THREADS})",
    )
    parser.add_argument(
        "--submitters",
        type=int,
        default=SUBMITTERS,
        help=f"concurrent job submissions (default {SUBMITTERS})",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        help=f"operator and baseline runs, in turn, whose median ratio is reported (default "
        f"{ROUNDS}; 1 with --quick)",
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="run both on a real kube-apiserver (etcd, kube-apiserver, kube-controller-manager "
        "from $KUBEBUILDER_ASSETS, a fresh one per run) instead of kubetrain's",
    )
    parser.add_argument(
        "--required",
        action="store_true",
        help="each round also times the plain client making the requests any operator must "
        "make besides the creates (the status write, the watches of pods, Services and jobs): "
        "the operator against that says what it adds beyond them, that against the baseline "
        "what the server charges for them",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    args = parser.parse_args(argv)
    if args.jobs is None:
        args.jobs = QUICK_JOBS if args.quick else JOBS
    if args.rounds is None:
        args.rounds = 1 if args.quick else ROUNDS
    if min(args.jobs, args.threads, args.submitters, args.rounds) < 1:
        parser.error("--jobs, --threads, --submitters and --rounds must be 1 or more")
    return args


def progress(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM: unwind as Ctrl-C does, so the servers and the operator are stopped."""
    raise KeyboardInterrupt


def expected_failure(exc: BaseException) -> BaseException | None:
    """The API or benchmark error behind ``exc`` (task groups wrap them), or None for a bug."""
    if isinstance(exc, (KubetrainError, TimeoutError, _realcluster.Unavailable)):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        if (found := expected_failure(inner)) is not None:
            return found
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    clock = time.perf_counter
    signal.signal(signal.SIGTERM, interrupt)
    rounds: list[tuple[Run, Run]] = []
    required: list[Run] = []  # with --required, each round's
    templates: Templates | None = None

    def run_operator() -> Run:
        nonlocal templates
        with api_server(args.real) as server:
            run, templates = asyncio.run(
                operator_run(server, args.jobs, args.threads, args.submitters, clock, progress)
            )
        return run

    def run_baseline(required: bool = False) -> Run:
        assert templates is not None
        with api_server(args.real) as server:
            return asyncio.run(
                baseline_run(
                    server,
                    args.jobs,
                    args.threads,
                    args.submitters,
                    templates,
                    clock,
                    progress,
                    required=required,
                )
            )

    try:
        for number in range(1, args.rounds + 1):
            if args.rounds > 1:
                progress(f"round {number} of {args.rounds}")
            # Every other round runs the baseline first (on the bodies of the round before),
            # so that neither run always has the machine as the other one left it.
            if number % 2:
                operator = run_operator()
                baseline = run_baseline()
            else:
                baseline = run_baseline()
                operator = run_operator()
            rounds.append((operator, baseline))
            if args.required:
                required.append(run_baseline(required=True))
    except KeyboardInterrupt:
        print("bench: interrupted; the servers and the operator are stopped", file=sys.stderr)
        return 130
    except Exception as exc:
        failure = expected_failure(exc)
        if failure is None:
            raise
        print(f"bench: {failure or type(failure).__name__}", file=sys.stderr)
        return 1
    server = (
        f"{_realcluster.version()} kube-apiserver, etcd and kube-controller-manager"
        if args.real
        else "kubetrain apiserver in memory"
    )
    report = build_report(rounds, args.threads, args.submitters, server, required)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
