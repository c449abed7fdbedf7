"""Load and soak: many short jobs through the whole local control plane, and whether the daemon
gives back what the load took.

What it runs: ``kubetrain apiserver --with-workloads`` (what ``kubetrain up`` runs: the API
server on SQLite on disk, the scheduler, a node agent for this machine and the operator, in
one process) in a temporary home beside the state directory ``kubetrain up`` would use, so
commits reach the disk they would reach there. Once its node is Ready:

1. **Warm-up** (untimed): a few jobs run to the end and are deleted, with their namespace,
   so connection pools, thread pools and caches are at their working size; then nothing
   happens for :data:`QUIET` seconds, long enough for the API server to let the warm-up's
   history go and for the daemon to hand the freed memory back.
2. **Baseline**: the daemon's resident memory (VmRSS), open file descriptors and threads, from
   ``/proc/<pid>``, sampled once a second for a while. The daemon's open sockets rise and fall
   with its own periodic work (discovery, idle keep-alive connections closed after 15 s), so
   each figure is its resting level over the window: the lowest descriptor and thread count,
   the median RSS.
3. **Load**, in a fresh namespace: N PyTorchJobs (a Master, one pod, running ``python3 -c
   "print(...)"``) on a steady schedule spread over the duration, taken by S concurrent
   submitters, each with its own client and connection. Each create is timed (the submit
   latency, send to answer). One watch follows the jobs; a job is deleted (background
   propagation: its pod goes with it) as soon as it has Succeeded or Failed, as a user or a
   TTL would, so the store holds only the jobs in flight. The daemon is sampled every second.
4. **End**: once every job has finished (or a deadline passed) and every pod is gone, the
   namespace is deleted too (the jobs' Events go with it); after the same :data:`QUIET`
   seconds as before the baseline, the daemon is sampled again over a window. ``--passes``
   repeats 3 and 4, each in a namespace of its own: memory a leak holds grows from pass to
   pass; bounded caches (the components' LRUs of recent events, for instance) and memory the
   allocator keeps do not.

Printed: jobs submitted, Succeeded, Failed, never finished; submit latency p50/p99/max; time
from submission to Succeeded p50/p99; per pass, the API server's writes and the Events the
jobs left; for RSS, file descriptors and threads the baseline, the peak, the figure in the
middle of the first load and after each pass, and whether the last is back at the baseline,
PASS or MISS; the daemon's CPU time. The reference is the daemon's own baseline, measured in
the same run. **Back at the baseline** means, for the resting levels after the last pass
against those before the first: open descriptors and threads at most 2 more; RSS at most 20%
more (:data:`RSS_SLACK`). RSS does not come back all the way even when every object the load
made is gone: Python frees a 1 MiB arena of small objects only once all of it is free, and
the objects still alive that were made during the load (newer versions of what the
components keep, bounded caches) keep partly used arenas. docs/reliability.md has the
figures, with live Python memory measured apart.

Usage::

    .venv/bin/python bench/soak.py                 # 1,000 jobs over 10 minutes, 4 submitters
    .venv/bin/python bench/soak.py --quick         # 100 jobs over 1 minute
    .venv/bin/python bench/soak.py --jobs 300 --duration 60 --passes 3   # leak or cache?
    .venv/bin/python bench/soak.py --submitters 8 --json

This is not a test: it asserts nothing and exits 0 whatever the figures are (1 if the
control plane cannot be started).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _processes  # this directory's, as the script runs from here

from kubetrain import _aio, kube
from kubetrain.errors import KubetrainError
from kubetrain.kube import resource
from kubetrain.kube import watch as kube_watch
from kubetrain.local import daemon
from kubetrain.local.apiserver import store

PODS = resource.PODS
NAMESPACES = resource.NAMESPACES
NODES = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")
SERVICE_ACCOUNTS = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
EVENTS = kube.Resource("", "v1", "events", kind="Event")
PYTORCHJOBS = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")

START_TIMEOUT = 90.0  # seconds for the control plane to serve and its node to be Ready
STOP_TIMEOUT = 30.0
FINISH_GRACE = 300.0  # seconds after the last submission for every job to finish
GONE_TIMEOUT = 120.0  # seconds for the pods, then the namespace, to be gone
WARMUP_JOBS = 10
# Seconds of samples, one a second, for the baseline and the end. The daemon's open sockets
# rise and fall with its own periodic work (discovery, keep-alive connections closing after
# 15 s), so each figure is its resting level over the window: the lowest descriptor and
# thread count, the median RSS.
BASELINE_WINDOW = 20
END_WINDOW = 45
# Seconds of nothing to do before the baseline (after the warm-up) and before the end samples
# (after a pass's namespace is gone): the API server keeps the history of its writes for
# watches to resume from for store.DEFAULT_WINDOW_AGE seconds, then the daemon hands the
# freed memory back to the system (daemon.MemoryRelease looks every RELEASE_EVERY seconds),
# and idle connections close after 15 s. Both windows find the daemon at rest in the same
# state, so the end is compared with a baseline taken alike.
QUIET = store.DEFAULT_WINDOW_AGE + 2 * daemon.RELEASE_EVERY
FD_SLACK = 2  # open descriptors or threads the end may hold beyond the baseline
THREAD_SLACK = 2
RSS_SLACK = 0.20  # share of the baseline RSS the end may hold beyond it
PROGRAM = "print('soak job done')"


class BenchError(KubetrainError):
    """The benchmark could not run."""


@dataclass(frozen=True)
class Sizes:
    jobs: int
    duration: float  # seconds over which the submissions are spread
    submitters: int


FULL = Sizes(jobs=1_000, duration=600.0, submitters=4)
QUICK = Sizes(jobs=100, duration=60.0, submitters=4)


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the load began (negative: before it)
    rss: int  # bytes
    anon: int  # bytes of the RSS that are anonymous (heap, arenas): what a leak grows
    file: int  # bytes of the RSS that map files (code and data of loaded libraries)
    fds: int
    threads: int
    cpu: float  # seconds, user + system
    descriptors: dict[str, int] = field(default_factory=dict)  # what the fds are: see kinds()


@dataclass(frozen=True)
class Pass:
    """One load, from its first submission to the end samples after its namespace went."""

    started: float  # seconds since the baseline began
    ended: float  # the last job finished (or the deadline passed)
    writes: int  # writes the API server took meanwhile
    events: int  # Events left in the namespace once every job was deleted
    end: list[Sample]


@dataclass
class Run:
    submitted: dict[str, float] = field(default_factory=dict)  # job -> monotonic, before send
    latencies: list[float] = field(default_factory=list)  # seconds per create
    finished: dict[str, tuple[str, float]] = field(default_factory=dict)  # job -> (end, when)
    errors: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    baseline: list[Sample] = field(default_factory=list)
    passes: list[Pass] = field(default_factory=list)


# --- the daemon ------------------------------------------------------------------------------


def state_parent(given: str | None) -> str | None:
    """Beside the state directory ``kubetrain up`` would use (its disk), else the system's
    temporary directory."""
    parent = given or os.path.dirname(daemon.resolve_home(os.environ))
    return parent if os.path.isdir(parent) else None


@contextlib.contextmanager
def control_plane(parent: str | None) -> Iterator[tuple[str, subprocess.Popen[bytes], str]]:
    """The whole local control plane in a temporary home: yields its kubeconfig, its process
    and its home; stops it (and with it every pod it runs) however the block ends."""
    with tempfile.TemporaryDirectory(prefix=".kubetrain-soak-", dir=parent) as home:
        paths = daemon.Paths(home)
        command = [sys.executable, "-m", "kubetrain", "apiserver", "--home", home, "--port", "0"]
        command += ["--with-workloads", "--node-backoff", "1", "--log-level", "WARNING"]
        log = Path(home) / "daemon.log"
        process = _processes.spawn(command, log, home)
        try:
            _processes.wait_for_file(
                paths.kubeconfig,
                process,
                START_TIMEOUT,
                lambda why: BenchError(f"the local control plane: {why}:\n{_processes.tail(log)}"),
            )
            yield paths.kubeconfig, process, home
        finally:
            _processes.stop(process, STOP_TIMEOUT)  # it stops its pods' processes on the way out


def sample(pid: int, origin: float) -> Sample:
    """The daemon's RSS (and its anonymous and file-backed parts), open descriptors (and what
    they are), threads and CPU time, from /proc."""
    status = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            status[key] = value.split()
    rss, anon, file = (int(status[k][0]) * 1024 for k in ("VmRSS", "RssAnon", "RssFile"))
    threads = int(status["Threads"][0])
    descriptors = kinds(pid)
    fds = sum(descriptors.values())
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return Sample(time.monotonic() - origin, rss, anon, file, fds, threads, cpu, descriptors)


def kinds(pid: int) -> dict[str, int]:
    """The process's open descriptors by kind, so that descriptors left over after the load
    can be told apart: a TCP socket by its role (``listening :P``, ``accepted on :P``,
    ``connected to :P``, where P is a port this process listens on or its peer's), other
    sockets, pipes and anonymous inodes by their type, files by name."""
    tcp: dict[str, tuple[str, int, int]] = {}  # inode -> (state, local port, remote port)
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}") as f:
            for line in list(f)[1:]:
                cells = line.split()
                local, remote, state, inode = cells[1], cells[2], cells[3], cells[9]
                tcp[inode] = (
                    state,
                    int(local.rsplit(":", 1)[1], 16),
                    int(remote.rsplit(":", 1)[1], 16),
                )
    listening = {port for state, port, _ in tcp.values() if state == "0A"}
    counts: dict[str, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            state, local, remote = tcp.get(target[8:-1], ("", 0, 0))
            if not state:
                kind = "socket (not TCP)"
            elif state == "0A":
                kind = f"listening :{local}"
            elif local in listening:
                kind = f"accepted on :{local}"
            else:
                kind = f"connected to :{remote}"
        elif target.startswith(("pipe:", "anon_inode:")):
            kind = target.split("[")[0].rstrip(":")
        else:
            kind = f"file {os.path.basename(target)}"
        counts[kind] = counts.get(kind, 0) + 1
    return counts


async def samples(pid: int, origin: float, count: int) -> list[Sample]:
    taken = []
    for number in range(count):
        if number:
            await asyncio.sleep(1.0)
        taken.append(await asyncio.to_thread(sample, pid, origin))
    return taken


# --- the jobs ---------------------------------------------------------------------------------


def job(name: str, namespace: str) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "example/none:1"}
    container["command"] = ["python3", "-c", PROGRAM]
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "OnFailure",
                    "template": {
                        "spec": {"containers": [container], "terminationGracePeriodSeconds": 1}
                    },
                }
            }
        },
    }


def end_of(obj: dict[str, Any]) -> str:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Succeeded", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return ""


async def follow(
    client: kube.Client,
    namespace: str,
    run: Run,
    expected: set[str],
    done: asyncio.Event,
    deletions: asyncio.Queue[str],
) -> None:
    """Note each job's end as the watch brings it, and hand the job over to be deleted."""

    def seen(obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        end = end_of(obj)
        if not end or name in run.finished:
            return
        run.finished[name] = (end, time.monotonic())
        deletions.put_nowait(name)
        if expected <= run.finished.keys():
            done.set()

    async for event in client.watch(PYTORCHJOBS, namespace=namespace):
        if event.type == kube_watch.SYNC:
            for item in event.object.get("items") or []:
                seen(item)
        elif event.type in (kube_watch.ADDED, kube_watch.MODIFIED):
            seen(event.object)


async def delete_finished(
    client: kube.Client, namespace: str, run: Run, deletions: asyncio.Queue[str]
) -> None:
    """Delete each finished job (its pod goes with it), as a user or a TTL would."""
    while True:
        name = await deletions.get()
        try:
            await client.delete(
                PYTORCHJOBS, name, namespace=namespace, propagation_policy="Background"
            )
        except kube.NotFound:
            pass
        except kube.ApiError as exc:
            run.errors.append(f"delete {name}: {exc}")
        finally:
            deletions.task_done()


async def submit_all(
    kubeconfig: str, namespace: str, names: Sequence[str], sizes: Sizes, run: Run, origin: float
) -> None:
    """Each job at its slot of the schedule, taken by the next free submitter."""
    queue: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
    spacing = sizes.duration / max(1, len(names))
    for index, name in enumerate(names):
        queue.put_nowait((name, origin + index * spacing))

    async def submitter() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig, user_agent="soak") as client:
            while not queue.empty():
                name, due = queue.get_nowait()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                sent = time.monotonic()
                run.submitted[name] = sent
                try:
                    await client.create(PYTORCHJOBS, job(name, namespace), namespace=namespace)
                except kube.ApiError as exc:
                    run.errors.append(f"create {name}: {exc}")
                    continue
                run.latencies.append(time.monotonic() - sent)

    async with _aio.TaskGroup() as group:
        for number in range(sizes.submitters):
            group.create_task(submitter(), name=f"submitter {number}")


async def sampler(pid: int, run: Run, origin: float) -> None:
    while True:
        run.samples.append(await asyncio.to_thread(sample, pid, origin))
        await asyncio.sleep(1.0)


async def wait_until(check: Callable[[], Awaitable[bool]], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: not within {timeout:.0f}s")
        await asyncio.sleep(0.2)


async def node_ready(client: kube.Client) -> bool:
    try:
        listed = await client.list(NODES)
    except kube.Unavailable:
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for node in listed.get("items") or []
        for c in (node.get("status") or {}).get("conditions") or []
    )


async def namespace_ready(client: kube.Client, namespace: str) -> bool:
    try:
        await client.get(SERVICE_ACCOUNTS, "default", namespace=namespace)
    except kube.NotFound:
        return False
    return True


async def no_pods(client: kube.Client, namespace: str) -> bool:
    return not (await client.list(PODS, namespace=namespace)).get("items")


async def namespace_gone(client: kube.Client, namespace: str) -> bool:
    try:
        await client.get(NAMESPACES, namespace)
    except kube.NotFound:
        return True
    return False


async def batch(
    client: kube.Client,
    kubeconfig: str,
    namespace: str,
    names: Sequence[str],
    sizes: Sizes,
    run: Run,
) -> None:
    """Submit ``names`` on ``sizes``' schedule and wait for each to finish (and be deleted)."""
    done = asyncio.Event()
    deletions: asyncio.Queue[str] = asyncio.Queue()
    async with _aio.TaskGroup() as group:
        following = group.create_task(
            follow(client, namespace, run, set(names), done, deletions), name="follow"
        )
        deleting = group.create_task(
            delete_finished(client, namespace, run, deletions), name="delete"
        )
        await submit_all(kubeconfig, namespace, names, sizes, run, time.monotonic())
        with contextlib.suppress(TimeoutError):
            async with _aio.timeout(FINISH_GRACE):
                await done.wait()
        following.cancel()
        await deletions.join()
        deleting.cancel()
    await wait_until(lambda: no_pods(client, namespace), "every pod deleted", GONE_TIMEOUT)


async def resource_version(client: kube.Client) -> int:
    """The server's newest resourceVersion: every write advances it by one."""
    listed = await client.list(NAMESPACES, limit=1)
    return int(listed["metadata"]["resourceVersion"])


async def soak(kubeconfig: str, pid: int, sizes: Sizes, passes: int) -> Run:
    run = Run()
    async with await kube.Client.from_kubeconfig(kubeconfig, user_agent="soak") as client:
        await wait_until(lambda: node_ready(client), "the node Ready", START_TIMEOUT)
        await open_namespace(client, "soak-warmup")
        names = [f"warmup-{i}" for i in range(WARMUP_JOBS)]
        warmup = Sizes(WARMUP_JOBS, 2.0, sizes.submitters)
        await batch(client, kubeconfig, "soak-warmup", names, warmup, Run())
        await close_namespace(client, "soak-warmup")
        await asyncio.sleep(QUIET)
        origin = time.monotonic()
        run.baseline = await samples(pid, origin, BASELINE_WINDOW)
        for number in range(1, passes + 1):
            namespace = f"soak-{number}"
            await open_namespace(client, namespace)
            writes = await resource_version(client)
            started = time.monotonic() - origin
            names = [f"job-{number}-{i:05d}" for i in range(sizes.jobs)]
            async with _aio.TaskGroup() as group:
                sampling = group.create_task(sampler(pid, run, origin), name="sampler")
                await batch(client, kubeconfig, namespace, names, sizes, run)
                sampling.cancel()
            ended = time.monotonic() - origin
            writes = await resource_version(client) - writes
            events = len((await client.list(EVENTS, namespace=namespace))["items"])
            await close_namespace(client, namespace)
            await asyncio.sleep(QUIET)
            end = await samples(pid, origin, END_WINDOW)
            run.passes.append(Pass(started, ended, writes, events, end))
    return run


async def open_namespace(client: kube.Client, namespace: str) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    await wait_until(lambda: namespace_ready(client, namespace), "the namespace", START_TIMEOUT)


async def close_namespace(client: kube.Client, namespace: str) -> None:
    """Delete the namespace, and with it whatever the jobs left (their Events)."""
    await client.delete(NAMESPACES, namespace)
    await wait_until(
        lambda: namespace_gone(client, namespace), "the namespace deleted", GONE_TIMEOUT
    )


# --- the report ----------------------------------------------------------------------------


def percentile(values: Sequence[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def resting(taken: Sequence[Sample], attribute: str) -> float:
    """A window's resting level: the median RSS, the lowest count of the others."""
    values = [getattr(s, attribute) for s in taken]
    return float(statistics.median(values) if attribute == "rss" else min(values))


def changed_kinds(before: Sequence[Sample], after: Sequence[Sample]) -> dict[str, int]:
    """What the descriptors at the end's resting level are beyond (or short of) those at
    the baseline's, by kind (see :func:`kinds`)."""
    if not before or not after:
        return {}
    low = min(before, key=lambda s: s.fds).descriptors
    high = min(after, key=lambda s: s.fds).descriptors
    change = {k: high.get(k, 0) - low.get(k, 0) for k in sorted(low.keys() | high.keys())}
    return {k: n for k, n in change.items() if n}


def report(run: Run, sizes: Sizes, wall: float) -> dict[str, Any]:
    ends = [end for end, _ in run.finished.values()]
    succeeded_after = [
        when - run.submitted[name]
        for name, (end, when) in run.finished.items()
        if end == "Succeeded" and name in run.submitted
    ]
    first, last = run.passes[0], run.passes[-1]
    halfway = (first.started + first.ended) / 2
    middle = min(run.samples or first.end, key=lambda s: abs(s.at - halfway))
    resources = {}
    for attribute, slack in (("rss", None), ("fds", FD_SLACK), ("threads", THREAD_SLACK)):
        base = resting(run.baseline, attribute)
        end = resting(last.end, attribute)
        allowed = base * (1 + RSS_SLACK) if slack is None else base + slack
        resources[attribute] = {
            "baseline": base,
            "peak": max([getattr(s, attribute) for s in run.samples] or [base]),
            "middle": getattr(middle, attribute),
            "after_each_pass": [resting(p.end, attribute) for p in run.passes],
            "end": end,
            "allowed": allowed,
            "back_to_baseline": end <= allowed,
        }
    resources["fds"]["kinds_changed"] = changed_kinds(run.baseline, last.end)
    for attribute in ("anon", "file"):  # what the RSS is made of; no goal of their own
        resources[attribute] = {
            "baseline": resting(run.baseline, attribute),
            "peak": max([getattr(s, attribute) for s in run.samples] or [0]),
            "middle": getattr(middle, attribute),
            "after_each_pass": [resting(p.end, attribute) for p in run.passes],
            "end": resting(last.end, attribute),
        }
    cpu = last.end[-1].cpu - run.baseline[0].cpu if last.end and run.baseline else None
    return {
        "sizes": {"jobs": sizes.jobs, "duration_s": sizes.duration, "submitters": sizes.submitters},
        "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg(), "python": sys.version},
        "platform": platform.platform(),
        "passes": [
            {
                "load_s": p.ended - p.started,
                "writes": p.writes,
                "events_left": p.events,
            }
            for p in run.passes
        ],
        "submitted": len(run.latencies),
        "succeeded": ends.count("Succeeded"),
        "failed": ends.count("Failed"),
        "unfinished": len(set(run.submitted) - run.finished.keys()),
        "errors": run.errors[:20],
        "submit_latency_ms": {
            "p50": _ms(percentile(run.latencies, 0.50)),
            "p99": _ms(percentile(run.latencies, 0.99)),
            "max": _ms(max(run.latencies) if run.latencies else None),
        },
        "submit_to_succeeded_s": {
            "p50": percentile(succeeded_after, 0.50),
            "p99": percentile(succeeded_after, 0.99),
        },
        "watch_window": {
            "writes": store.DEFAULT_WINDOW,
            "bytes": store.DEFAULT_WINDOW_BYTES,
            "seconds": store.DEFAULT_WINDOW_AGE,
        },
        "wall_s": wall,
        "daemon": resources,
        "daemon_cpu_s": cpu,
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def render(doc: dict[str, Any]) -> str:
    sizes, machine = doc["sizes"], doc["machine"]
    load = ", ".join(f"{x:.1f}" for x in machine["load_average"])
    passes = doc["passes"]
    times = f"{len(passes)} times " if len(passes) > 1 else ""
    lines = [
        f"kubetrain soak: {times}{sizes['jobs']} PyTorchJobs (1 pod each) over "
        f"{sizes['duration_s']:.0f} s, {sizes['submitters']} submitters; {machine['cpus']} CPUs, "
        f"load average {load}",
        f"jobs: {doc['submitted']} submitted, {doc['succeeded']} Succeeded, {doc['failed']} "
        f"Failed, {doc['unfinished']} never finished",
    ]
    latency = doc["submit_latency_ms"]
    if latency["p50"] is not None:
        lines.append(
            f"submit latency: p50 {latency['p50']:.1f} ms, p99 {latency['p99']:.1f} ms, "
            f"max {latency['max']:.1f} ms"
        )
    through = doc["submit_to_succeeded_s"]
    if through["p50"] is not None:
        lines.append(
            f"submission to Succeeded: p50 {through['p50']:.2f} s, p99 {through['p99']:.2f} s"
        )
    for number, done in enumerate(passes, 1):
        lines.append(
            f"pass {number}: the load took {done['load_s']:.1f} s; {done['writes']:,} API writes; "
            f"{done['events_left']:,} Events left once every job was deleted (they go with the "
            "namespace)"
        )
    ends = " ".join(f"{f'after {n}':>9}" for n in range(1, len(passes) + 1))
    lines.append(f"daemon        baseline      peak    middle {ends}   end-base  back?")
    for attribute, label, scale in (
        ("rss", "RSS MiB", 1 / 2**20),
        ("anon", " anonymous", 1 / 2**20),
        ("file", " files", 1 / 2**20),
        ("fds", "open fds", 1),
        ("threads", "threads", 1),
    ):
        r = doc["daemon"][attribute]
        cells = [r["baseline"], r["peak"], r["middle"], *r["after_each_pass"]]
        row = " ".join(f"{c * scale:>9.1f}" if scale != 1 else f"{c:>9.0f}" for c in cells)
        delta = (r["end"] - r["baseline"]) * scale
        verdict = {True: "PASS", False: "MISS", None: ""}[r.get("back_to_baseline")]
        lines.append(f"  {label:<10}{row} {delta:>+10.1f}  {verdict}")
    changed = doc["daemon"]["fds"]["kinds_changed"]
    if changed:
        lines.append(
            "  open fds at the end against the baseline, by kind: "
            + ", ".join(f"{kind} {n:+d}" for kind, n in changed.items())
        )
    window = doc["watch_window"]
    lines.append(
        f"  (back at the baseline: open fds and threads at most +{FD_SLACK}, RSS at most "
        f"+{RSS_SLACK:.0%} of the baseline; resting levels over {BASELINE_WINDOW} s before the "
        f"load and {END_WINDOW} s after each pass, each taken after {QUIET:.0f} s idle: the "
        f"API server keeps its writes for watches to resume from for {window['seconds']:.0f} "
        f"s, at most {window['writes']:,} writes and {window['bytes'] / 2**20:.0f} MiB of "
        "objects)"
    )
    if doc["daemon_cpu_s"] is not None:
        lines.append(f"daemon CPU from baseline to end: {doc['daemon_cpu_s']:.1f} s")
    for error in doc["errors"]:
        lines.append(f"error: {error}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 jobs over 1 minute")
    parser.add_argument("--jobs", type=int, help=f"jobs to submit (default {FULL.jobs})")
    parser.add_argument(
        "--duration", type=float, help=f"seconds to spread them over (default {FULL.duration:.0f})"
    )
    parser.add_argument(
        "--submitters", type=int, help=f"concurrent submitters (default {FULL.submitters})"
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=1,
        help="run the load this many times, each in a fresh namespace, sampling the daemon "
        "after each: a leak grows from pass to pass, a bounded cache does not",
    )
    parser.add_argument("--dir", help="where the temporary state directory goes")
    parser.add_argument("--json", action="store_true", help="a JSON document, not the table")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    base = QUICK if args.quick else FULL
    sizes = Sizes(
        jobs=args.jobs or base.jobs,
        duration=args.duration or base.duration,
        submitters=args.submitters or base.submitters,
    )
    started = time.monotonic()
    try:
        with control_plane(state_parent(args.dir)) as (kubeconfig, process, _home):
            run = asyncio.run(soak(kubeconfig, process.pid, sizes, max(1, args.passes)))
    except BenchError as exc:
        print(f"soak: {exc}", file=sys.stderr)
        return 1
    doc = report(run, sizes, time.monotonic() - started)
    print(json.dumps(doc, indent=2) if args.json else render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
