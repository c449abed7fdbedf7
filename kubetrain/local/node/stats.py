"""What the node and each running container use, sampled from /proc: the numbers behind the
kubelet's Summary API (``GET /stats/summary``), which metrics-server (here, the local API
server's ``metrics.k8s.io``, see :mod:`kubetrain.local.apiserver.metrics`) reads for
``kubectl top``.

A local container is a process tree, not a cgroup, so its usage is counted over the tree:

- **CPU**: the clock ticks of every process in it, its own and those of the children it has
  reaped (``utime + stime + cutime + cstime`` of ``/proc/<pid>/stat``), so the total survives
  the exit of short-lived workers. The tree is everything below the container's shim (the
  subreaper that adopts what the container orphans), else below its main process. A rate needs
  two looks: ``usageNanoCores`` is the CPU used between a container's last two samples or, on
  its first, since it started.
- **Memory**: the private resident memory :mod:`.memory` counts against limits (anonymous
  pages; no page cache, no shared memory), reported as working set, usage and RSS alike.
- **The node**: busy time of ``/proc/stat`` (all but idle and iowait) and, from
  ``/proc/meminfo``, ``MemTotal - MemAvailable`` as its working set.

One :class:`Sampler` walks /proc once per ``stats_interval`` (10 s by default, the kubelet's
housekeeping period), in a thread, and serves the latest snapshot; its second look comes
after :data:`FIRST_RATE_AFTER` so that rates exist soon after a start.

Owns: the sampling and the Summary's JSON shape. Must not: write to the API server, signal
processes, or keep anything a restarted agent would need (rates simply start afresh).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from kubetrain import timefmt
from kubetrain.local.node import memory, proctree, runtime, sandbox

log = logging.getLogger(__name__)

CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")
NANO: Final = 1_000_000_000
FIRST_RATE_AFTER: Final = 1.0  # seconds between the first two samples
MIN_WINDOW: Final = 0.05  # seconds: a shorter window gives no rate (a tick is 10 ms)
PROC_STAT: Final = "/proc/stat"
MEMINFO: Final = "/proc/meminfo"
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal guest guest_nice;
# guest time is already inside user and nice.
_BUSY_FIELDS: Final = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class Reading:
    """One look at what something uses."""

    time: datetime  # UTC
    cpu_seconds: float  # cumulative
    nano_cores: int | None  # the rate over the window that ends at ``time``; None: not yet
    memory: int  # bytes (working set)


@dataclass(frozen=True)
class NodeReading:
    reading: Reading
    available: int  # bytes: MemAvailable
    usage: int  # bytes: MemTotal - MemFree


@dataclass(frozen=True)
class PodRef:
    uid: str
    namespace: str
    name: str


@dataclass(frozen=True)
class ContainerReading:
    id: runtime.ContainerId
    started_at: datetime | None
    reading: Reading


@dataclass(frozen=True)
class Snapshot:
    node: NodeReading
    pods: tuple[PodRef, ...]
    containers: tuple[ContainerReading, ...]


# -- pure parts ---------------------------------------------------------------------------------


def tree_of(
    processes: runtime.Processes, tree: dict[int, list[int]], table: Mapping[int, Any]
) -> list[int]:
    """The pids of a container: everything below its shim (the container's main process and
    whatever it orphaned), or the main process and its descendants once the shim is gone.
    Empty when the main process is not in ``table`` (it has ended)."""
    if processes.pid not in table:
        return []
    shim_pid = processes.shim_pid
    if shim_pid is not None and shim_pid in table:
        return proctree.descendants(shim_pid, tree)
    return [processes.pid, *proctree.descendants(processes.pid, tree)]


def cpu_seconds(pids: Iterable[int], table: Mapping[int, proctree.Stat]) -> float:
    return sum(table[p].cpu for p in pids if p in table) / CLOCK_TICKS


def rate(used: float, window: float) -> int | None:
    """Nanocores: ``used`` CPU seconds over ``window`` wall seconds (None if too short)."""
    if window < MIN_WINDOW:
        return None
    return max(0, round(used / window * NANO))


def node_cpu_seconds(text: str) -> float:
    """Busy CPU seconds of all CPUs, from /proc/stat's first line."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:]]
            return sum(values[i] for i in _BUSY_FIELDS if i < len(values)) / CLOCK_TICKS
    raise ValueError("no cpu line in /proc/stat")


def meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo in bytes, by name."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            scale = 1024 if parts[1:2] == ["kB"] else 1
            out[name.strip()] = int(parts[0]) * scale
    return out


def go_time(when: datetime) -> str:
    """``metav1.Time`` in JSON: RFC 3339, UTC, seconds."""
    return timefmt.seconds(when)


def _cpu(reading: Reading) -> dict[str, Any]:
    out: dict[str, Any] = {"time": go_time(reading.time)}
    if reading.nano_cores is not None:
        out["usageNanoCores"] = reading.nano_cores
    out["usageCoreNanoSeconds"] = round(reading.cpu_seconds * NANO)
    return out


def _memory(reading: Reading) -> dict[str, Any]:
    return {
        "time": go_time(reading.time),
        "usageBytes": reading.memory,
        "workingSetBytes": reading.memory,
        "rssBytes": reading.memory,
    }


def total(readings: Iterable[Reading]) -> Reading | None:
    """A pod's usage: the sum of its containers' (no rate unless each has one)."""
    items = list(readings)
    if not items:
        return None
    rates = [r.nano_cores for r in items]
    return Reading(
        time=max(r.time for r in items),
        cpu_seconds=sum(r.cpu_seconds for r in items),
        nano_cores=None if any(n is None for n in rates) else sum(n or 0 for n in rates),
        memory=sum(r.memory for r in items),
    )


def summary(node_name: str, started: datetime, snapshot: Snapshot) -> dict[str, Any]:
    """The kubelet's ``statsapi.Summary`` for one snapshot: the node, then each pod with a
    running container, with its running containers."""
    node = snapshot.node
    by_pod: dict[str, list[ContainerReading]] = {}
    for c in snapshot.containers:
        by_pod.setdefault(c.id.pod_uid, []).append(c)
    pods = []
    for ref in snapshot.pods:
        containers = by_pod.get(ref.uid) or []
        pod_total = total(c.reading for c in containers)
        if pod_total is None:
            continue
        starts = [c.started_at for c in containers if c.started_at is not None]
        entry: dict[str, Any] = {
            "podRef": {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid},
            "startTime": go_time(min(starts) if starts else pod_total.time),
            "containers": [
                {
                    "name": c.id.name,
                    "startTime": go_time(c.started_at or c.reading.time),
                    "cpu": _cpu(c.reading),
                    "memory": _memory(c.reading),
                }
                for c in sorted(containers, key=lambda c: c.id.name)
            ],
            "cpu": _cpu(pod_total),
            "memory": _memory(pod_total),
        }
        pods.append(entry)
    return {
        "node": {
            "nodeName": node_name,
            "startTime": go_time(started),
            "cpu": _cpu(node.reading),
            "memory": {
                "time": go_time(node.reading.time),
                "availableBytes": node.available,
                "usageBytes": node.usage,
                "workingSetBytes": node.reading.memory,
            },
        },
        "pods": pods,
    }


# -- sampling -----------------------------------------------------------------------------------


def _since(
    before: tuple[float, float, int | None], now: float, used: float
) -> tuple[int | None, tuple[float, float, int | None]]:
    """The rate since ``before`` and the look the next rate is measured from. A look that
    comes too soon after the last (a request's, beside the loop's) shows the last rate and
    keeps measuring from the earlier look."""
    nano = rate(used - before[1], now - before[0])
    if nano is None:
        return before[2], before
    return nano, (now, used, nano)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


class Sampler:
    """Samples the node and its running containers every ``interval`` seconds; keeps the
    last snapshot and the counters the next rates are computed from (soft state only)."""

    def __init__(
        self,
        node_runtime: runtime.Runtime,
        *,
        interval: float,
        clock: Callable[[], datetime] = _utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.runtime = node_runtime
        self.interval = interval
        self.clock = clock
        self.monotonic = monotonic
        self.started = clock()
        self.latest: Snapshot | None = None
        # the look each rate is measured from: (monotonic s, CPU s, the rate it showed)
        self._containers: dict[runtime.ContainerId, tuple[float, float, int | None]] = {}
        self._node: tuple[float, float, int | None] | None = None
        self._lock = threading.Lock()  # one sample at a time: a request may ask for one
        self._pods: dict[str, PodRef] = {}  # identities read from each pod's sandbox.json

    async def run(self) -> None:
        """Sample until cancelled. A failed sample is logged and tried again next time."""
        delay = min(FIRST_RATE_AFTER, self.interval)
        while True:
            try:
                self.latest = await asyncio.to_thread(self.sample)
            except asyncio.CancelledError:
                raise
            except Exception:  # the sampling loop: a bad look must not end the statistics
                log.exception("node stats: sampling failed; trying again in %.0fs", delay)
            await asyncio.sleep(delay)
            delay = self.interval

    async def current(self) -> Snapshot:
        """The latest snapshot; one taken now when there is none yet, or when the latest is
        the very first (which has no rate for the node), so a request right after a start
        gets numbers."""
        latest = self.latest
        if latest is None or latest.node.reading.nano_cores is None:
            latest = self.latest = await asyncio.to_thread(self.sample)
        return latest

    def sample(self) -> Snapshot:
        """One look at everything (blocking: reads /proc and the runtime's disk)."""
        with self._lock:
            return self._sample()

    def _sample(self) -> Snapshot:
        states = [s for s in self.runtime.containers() if s.running and s.pid]
        table = proctree.processes()
        tree = proctree.children(table)
        wall, now = self.clock(), self.monotonic()
        readings: list[ContainerReading] = []
        counters: dict[runtime.ContainerId, tuple[float, float, int | None]] = {}
        for state in states:
            processes = self.runtime.processes(state.id)
            pids = tree_of(processes, tree, table) if processes is not None else []
            if not pids:
                continue
            used = cpu_seconds(pids, table)
            before = self._containers.get(state.id)
            if before is not None:
                nano, counters[state.id] = _since(before, now, used)
            else:
                since_start = (wall - state.started_at).total_seconds() if state.started_at else 0
                nano = rate(used, since_start)
                counters[state.id] = (now, used, nano)
            reading = Reading(wall, used, nano, memory.usage(pids))
            readings.append(ContainerReading(state.id, state.started_at, reading))
        self._containers = counters
        uids = sorted({r.id.pod_uid for r in readings})
        self._pods = {uid: ref for uid in uids if (ref := self._pod(uid)) is not None}
        return Snapshot(self._sample_node(wall, now), tuple(self._pods.values()), tuple(readings))

    def _pod(self, uid: str) -> PodRef | None:
        known = self._pods.get(uid)
        if known is not None:
            return known
        path = os.path.join(sandbox.pod_dir(self.runtime.settings.root, uid), sandbox.SANDBOX_FILE)
        try:
            with open(path, encoding="utf-8") as f:
                about = json.load(f)
        except (OSError, ValueError):
            return None
        return PodRef(uid, str(about.get("namespace") or ""), str(about.get("name") or ""))

    def _sample_node(self, wall: datetime, now: float) -> NodeReading:
        used = node_cpu_seconds(_read(PROC_STAT))
        nano, self._node = (
            _since(self._node, now, used) if self._node else (None, (now, used, None))
        )
        info = meminfo(_read(MEMINFO))
        total_bytes = info.get("MemTotal", 0)
        available = info.get("MemAvailable", info.get("MemFree", 0))
        return NodeReading(
            Reading(wall, used, nano, max(0, total_bytes - available)),
            available=available,
            usage=max(0, total_bytes - info.get("MemFree", 0)),
        )
