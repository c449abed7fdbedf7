"""``resources.limits.cpu`` on the local node, best effort: a cgroup v2 ``cpu.max`` where the
node may write one; on request, elsewhere, a duty-cycle throttler that stops and continues the
container's processes.

Kubernetes enforces a CPU limit with CFS bandwidth control: in every 100 ms period the
container's cgroup may run for ``limit × 100 ms`` of CPU time, then waits for the next one.
Where a cgroup v2 hierarchy with the cpu controller is writable (root on a cgroup v2 host, or
the delegated subtree the runtime's ``cgroup`` setting names), :func:`enforce` does the same:
it writes ``cpu.max`` into the attempt's cgroup (:meth:`Runtime.attempt_cgroup
<kubetrain.local.node.runtime.Runtime.attempt_cgroup>`: the one the shim made for a memory
limit, into which the container's processes moved before exec; else one made here, into which
they are moved once they run).

Elsewhere (cgroup v1, or no write access: this project's CI is such a host) a
:class:`Throttle` can keep the average instead (``cpu_limits: throttle``). Every ``period``
(0.1 s) it looks at the CPU time of the container's process tree (:mod:`.stats` counts it
the same way), and once the tree has used more than ``limit × elapsed`` it stops the tree
(SIGSTOP to the container's process group and to every process of the tree) until that debt
is paid back at the limit's rate, then
continues it (SIGCONT). What "best effort" means there:

- the limit holds on average over about a second, not in every 100 ms: a busy loop under a
  200m limit runs 0.1 s, is stopped 0.4 s, and so on; a burst of many threads is stopped for
  up to :data:`MAX_PAUSE` seconds at a time, and longer debts are paid in several stops;
- a process that leaves the tree (a daemon reparented outside the shim) is not held;
- a stopped process shows state ``T`` and does not answer: peers wait for it for a moment;
- what was stopped is always continued: when the container ends or is stopped (the runtime
  sends SIGCONT after SIGTERM), when the agent stops (the task is cancelled), and by a restarted
  agent, whose throttle starts with a SIGCONT. Only an agent killed with SIGKILL in the middle
  of a stop leaves its container stopped until the agent runs again.

The throttle is not the default: a process that is stopped and continued sees some blocking
calls fail with EINTR even without a signal handler (socket reads with a timeout, ``epoll_wait``,
``select``; signal(7)), and not every program retries them (xgboost's tracker handshake gives
up). The default (node setting ``cpu_limits: auto``) is the cgroup where one can be written,
and no enforcement where none can, as a node without CFS quota; ``throttle`` asks for the
throttle on such hosts, and ``off`` enforces nothing.

Owns: reading a container's CPU limit, the cgroup's ``cpu.max``, and the throttle. Must not:
start or kill containers, or talk to the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import api
from kubetrain.local.node import memory, podspec, proctree, runtime, stats

log = logging.getLogger(__name__)

PERIOD_US: Final = 100_000  # the CFS period the kubelet sets (cpu.cfs_period_us)
MIN_QUOTA_US: Final = 1_000  # the kernel's smallest quota
MAX_PAUSE: Final = 1.0  # seconds a throttled tree stays stopped before it is looked at again
RESCAN: Final = 1.0  # seconds between full walks of /proc for new members of a tree
REMOVE_TRIES: Final = 20  # looks at an emptied cgroup before giving up removing it
REMOVE_WAIT: Final = 0.1


def limit_of(pod: Mapping[str, Any], container: str) -> float | None:
    """The CPU limit of ``container`` in cores, or None when it has none (or not a usable
    one: the API server has validated it, so that is a pod from elsewhere)."""
    for c in podspec.all_containers(pod):
        if c.get("name") != container:
            continue
        limits = (c.get("resources") or {}).get("limits") or {}
        if not isinstance(limits, Mapping) or "cpu" not in limits:
            return None
        try:
            cores = api.parse_quantity(limits["cpu"])
        except ValueError:
            return None
        return float(cores) if cores > 0 else None
    return None


def cpu_max(limit: float, period_us: int = PERIOD_US) -> str:
    """``cpu.max`` for ``limit`` cores: the kubelet's quota (rounded up, at least the kernel's
    minimum) and period."""
    quota = max(MIN_QUOTA_US, math.ceil(limit * period_us))
    return f"{quota} {period_us}"


class Throttle:
    """The throttler's arithmetic: a debt of CPU seconds used beyond the limit, and how long
    to keep the tree stopped to pay it back. Pure: the caller measures and signals."""

    def __init__(self, limit: float, period: float, max_pause: float = MAX_PAUSE) -> None:
        self.limit = limit
        self.period = period
        self.max_pause = max_pause
        self.debt = 0.0  # CPU seconds

    def account(self, used: float, elapsed: float) -> float:
        """Record ``used`` CPU seconds over ``elapsed`` wall seconds (running or stopped);
        returns how many seconds the tree should be stopped now (0: let it run). An idle
        container saves up no more than one period's worth, as a CFS quota would not."""
        self.debt = max(
            self.debt + max(0.0, used) - self.limit * elapsed, -self.limit * self.period
        )
        if self.debt <= 0:
            return 0.0
        return min(self.debt / self.limit, self.max_pause)


class Tree:
    """A running container's processes, looked at cheaply: a full walk of /proc every
    ``rescan`` seconds finds new members, and in between only the known members' stat files
    are read. Members are known with their start times, so a pid the kernel gave to another
    process meanwhile is never signalled."""

    def __init__(
        self,
        processes: runtime.Processes,
        *,
        rescan: float = RESCAN,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.processes = processes
        self.rescan = rescan
        self.monotonic = monotonic
        self.members: dict[int, int] = {}  # pid → start time
        self._walked = -math.inf

    def alive(self) -> bool:
        return proctree.alive(self.processes.pid, self.processes.start)

    def cpu_seconds(self) -> float | None:
        """The tree's CPU time so far; None once the container's main process has ended.
        Blocking (reads /proc)."""
        if not self.alive():
            return None
        now = self.monotonic()
        if now - self._walked >= self.rescan:
            table = proctree.processes()
            pids = stats.tree_of(self.processes, proctree.children(table), table)
            self._walked = now
        else:
            table = {}
            for pid, start in self.members.items():
                st = proctree.stat(pid)
                if st is not None and st.starttime == start:
                    table[pid] = st
            pids = list(table)
        self.members = {p: table[p].starttime for p in pids if p in table}
        return stats.cpu_seconds(pids, table)

    def signal(self, sig: int) -> None:
        """``sig`` to the container's process group and to every known member still there."""
        if not self.alive():
            return
        proctree.kill_group(self.processes.pid, sig)
        proctree.kill_all([p for p, start in self.members.items() if proctree.alive(p, start)], sig)


async def throttle(
    tree: Tree,
    limit: float,
    period: float,
    *,
    max_pause: float = MAX_PAUSE,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """Hold ``tree`` to ``limit`` cores on average until its main process ends; cancelling
    continues whatever was stopped."""
    control = Throttle(limit, period, max_pause)
    stopped = False
    try:
        before = await asyncio.to_thread(tree.cpu_seconds)
        tree.signal(signal.SIGCONT)  # an agent that restarted may find its container stopped
        at = monotonic()
        wait = period
        while before is not None:
            await asyncio.sleep(wait)
            used = await asyncio.to_thread(tree.cpu_seconds)
            now = monotonic()
            if used is None:
                return
            pause = control.account(used - before, now - at)
            before, at = used, now
            if pause > 0 and not stopped:
                tree.signal(signal.SIGSTOP)
                stopped = True
            elif pause == 0 and stopped:
                tree.signal(signal.SIGCONT)
                stopped = False
            wait = pause or period
    finally:
        tree.signal(signal.SIGCONT)


# -- cgroup v2 ----------------------------------------------------------------------------------


def cgroup_base(hierarchy: str = memory.CGROUP_MOUNT) -> str | None:
    """``<hierarchy>/kubetrain``, made with the cpu controller on for its children, or None
    where cgroup v2's cpu controller is not there to be written."""
    try:
        with open(os.path.join(hierarchy, "cgroup.controllers")) as f:
            if "cpu" not in f.read().split():
                return None
        if not _has_cpu(hierarchy):
            _write(os.path.join(hierarchy, "cgroup.subtree_control"), "+cpu")
        base = os.path.join(hierarchy, memory.NODE_CGROUP)
        os.makedirs(base, exist_ok=True)
        if not _has_cpu(base):
            _write(os.path.join(base, "cgroup.subtree_control"), "+cpu")
        return base if _has_cpu(base) else None
    except OSError:
        return None


def _has_cpu(cgroup: str) -> bool:
    with open(os.path.join(cgroup, "cgroup.subtree_control")) as f:
        return "cpu" in f.read().split()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _procs(cgroup: str) -> set[int]:
    with open(os.path.join(cgroup, "cgroup.procs")) as f:
        return {int(line) for line in f if line.strip()}


@dataclass(frozen=True)
class Placed:
    """A container held by a cgroup's ``cpu.max``; ``made``: the cgroup is this module's to
    remove once the container has ended (the shim removes its own)."""

    path: str
    made: bool

    def remove(self) -> bool:
        """Remove a cgroup made here (False while processes are still in it)."""
        if not self.made:
            return True
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


def place(
    node_runtime: runtime.Runtime,
    cid: runtime.ContainerId,
    processes: runtime.Processes,
    limit: float,
) -> Placed | None:
    """Put ``cpu.max`` on the attempt's cgroup, moving the container's processes into it
    when it is made here; None where no cgroup v2 cpu controller can be written (blocking)."""
    hierarchy = node_runtime.settings.cgroup
    if hierarchy == "":
        return None
    base = cgroup_base(hierarchy or memory.CGROUP_MOUNT)
    if base is None:
        return None
    path = node_runtime.attempt_cgroup(cid, base)
    made = not os.path.isdir(path)
    placed = Placed(path, made)
    try:
        os.makedirs(path, exist_ok=True)
        _write(os.path.join(path, "cpu.max"), cpu_max(limit))
        if made:
            for _ in range(3):  # a fork during a move may leave a child behind: look again
                table = proctree.processes()
                pids = stats.tree_of(processes, proctree.children(table), table)
                missing = [p for p in pids if p not in _procs(path)]
                if not missing:
                    break
                for pid in missing:
                    with contextlib.suppress(ProcessLookupError):
                        _write(os.path.join(path, "cgroup.procs"), str(pid))
    except OSError as exc:
        log.info(
            "cpu limit of %s/%s: cgroup %s: %s; throttling instead",
            cid.pod_uid,
            cid.name,
            path,
            exc,
        )
        placed.remove()
        return None
    return placed


async def enforce(
    node_runtime: runtime.Runtime,
    cid: runtime.ContainerId,
    limit: float,
    *,
    mode: str = "auto",
    period: float = 0.1,
) -> None:
    """Hold the running attempt ``cid`` to ``limit`` cores until it ends (or until
    cancelled): with a cgroup where ``mode`` is ``auto`` and one can be written (else not at
    all), with the throttle where ``mode`` is ``throttle``."""
    processes = await asyncio.to_thread(node_runtime.processes, cid)
    if processes is None:
        return
    if mode == "auto":
        placed = await asyncio.to_thread(place, node_runtime, cid, processes, limit)
        if placed is not None:
            log.debug("cpu limit of %s/%s: %s in %s", cid.pod_uid, cid.name, limit, placed.path)
            try:
                await node_runtime.wait(cid)
                for _ in range(REMOVE_TRIES):
                    if await asyncio.to_thread(placed.remove):
                        break
                    await asyncio.sleep(REMOVE_WAIT)
            finally:
                placed.remove()  # cancelled: gone if empty, else it keeps holding the container
            return
        log.debug("cpu limit of %s/%s: %s, no cgroup to hold it", cid.pod_uid, cid.name, limit)
        return
    log.debug("cpu limit of %s/%s: %s, throttled", cid.pod_uid, cid.name, limit)
    await throttle(Tree(processes), limit, period)
