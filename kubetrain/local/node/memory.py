"""A container's memory limit: a cgroup v2 memory controller where the node may write one,
else a watchdog over the resident memory of the container's whole process tree.

Kubernetes enforces ``resources.limits.memory`` with the container's cgroup: when the cgroup's
charge passes the limit, the kernel's OOM killer ends the container (exit code 137, reason
OOMKilled). Where a cgroup v2 hierarchy with the memory controller is writable (root on a
cgroup v2 host, or a delegated subtree named in the node's settings), the shim does the same:
one cgroup per limited container under ``<hierarchy>/kubetrain/`` with ``memory.max``,
``memory.swap.max`` 0 and ``memory.oom.group`` 1, the container's process moving itself in
before exec, and ``memory.events`` telling afterwards whether the OOM killer struck
(:class:`Cgroup`).

Many hosts give no such hierarchy (cgroup v1, or none an agent may write; this project's CI
among them). There the shim samples the tree under it every :data:`INTERVAL` seconds
(:class:`Watchdog`) and kills the whole tree once it holds more than the limit. What it counts
is each process's private resident memory (anonymous pages: heap, stacks, anonymous mmaps;
``resident - shared`` in ``/proc/<pid>/statm``). Unlike a cgroup it leaves out the page cache,
shared libraries and shared memory, and it may count twice pages that forked workers still
share copy-on-write. A process that allocates faster than one sample interval can briefly
exceed the limit before it is killed.

Must not: import anything outside the standard library (the shim imports it as a plain sibling
module for a fast start), or kill anything itself: the shim decides and kills.
"""

from __future__ import annotations

import os

if __package__:
    from kubetrain.local.node import proctree
else:  # loaded by the shim as a plain sibling module, outside the package
    import proctree  # type: ignore[no-redef]

INTERVAL = 0.1  # seconds between two samples of a limited container's tree
PAGE = os.sysconf("SC_PAGE_SIZE")
CGROUP_MOUNT = "/sys/fs/cgroup"
NODE_CGROUP = "kubetrain"


def private_resident(pid: int) -> int:
    """Bytes of private resident memory of one process; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            fields = f.read().split()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return 0
    if len(fields) < 3:
        return 0
    return max(0, int(fields[1]) - int(fields[2])) * PAGE


def usage(pids: list[int]) -> int:
    return sum(private_resident(p) for p in pids)


class Watchdog:
    """Samples the tree below ``root`` (the shim) against ``limit`` bytes."""

    def __init__(self, limit: int, root: int) -> None:
        self.limit = limit
        self.root = root
        self.peak = 0

    def exceeded(self) -> int | None:
        """The tree's usage in bytes if it is over the limit, else None."""
        used = usage(proctree.descendants(self.root))
        self.peak = max(self.peak, used)
        return used if used > self.limit else None


def describe(limit: int, used: int) -> str:
    """The OOMKilled message; ``used`` < 0 when the kernel, not the watchdog, killed."""
    if used < 0:
        return (
            f"memory limit of {limit} bytes exceeded: the kernel's OOM killer ended the container"
        )
    return (
        f"memory limit of {limit} bytes exceeded: the container's processes held {used} bytes "
        f"of private resident memory"
    )


# -- cgroup v2 ---------------------------------------------------------------------------


def cgroup_base(hierarchy: str = CGROUP_MOUNT) -> str | None:
    """``<hierarchy>/kubetrain``, made with the memory controller on for its children, or None
    where cgroup v2's memory controller is not there to be written."""
    try:
        with open(os.path.join(hierarchy, "cgroup.controllers")) as f:
            if "memory" not in f.read().split():
                return None
        if not _has_memory(hierarchy):
            _write(os.path.join(hierarchy, "cgroup.subtree_control"), "+memory")
        base = os.path.join(hierarchy, NODE_CGROUP)
        os.makedirs(base, exist_ok=True)
        _write(os.path.join(base, "cgroup.subtree_control"), "+memory")
        return base if _has_memory(base) else None
    except OSError:
        return None


def _has_memory(cgroup: str) -> bool:
    with open(os.path.join(cgroup, "cgroup.subtree_control")) as f:
        return "memory" in f.read().split()


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class Cgroup:
    """One limited container's cgroup: made by the shim, joined by the container's process."""

    def __init__(self, path: str, limit: int) -> None:
        self.path = path
        self.limit = limit

    def create(self) -> None:
        """Make the cgroup with its limit (OSError if that cannot be done)."""
        os.makedirs(self.path, exist_ok=True)
        _write(os.path.join(self.path, "memory.max"), str(self.limit))
        for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
            # Absent without swap accounting, or before Linux 4.19. (No contextlib: the shim
            # starts ~1 ms faster without it.)
            try:  # noqa: SIM105
                _write(os.path.join(self.path, name), value)
            except FileNotFoundError:
                pass

    def join(self) -> None:
        """Move the calling process in (the container's, between fork and exec)."""
        _write(os.path.join(self.path, "cgroup.procs"), str(os.getpid()))

    def oom_killed(self) -> bool:
        try:
            with open(os.path.join(self.path, "memory.events")) as f:
                events = dict(line.split() for line in f if line.strip())
        except (OSError, ValueError):
            return False
        return any(int(events.get(k, "0")) > 0 for k in ("oom_kill", "oom_group_kill"))

    def remove(self) -> None:
        try:  # noqa: SIM105 - no contextlib in the shim
            os.rmdir(self.path)
        except OSError:
            pass
