"""What /proc says about a process and its descendants: identity, liveness and the tree below it.

A pid alone does not name a process for long: once it exits and is reaped, the kernel may give
the number to another one. Everything the node keeps on disk about a process therefore pairs
its pid with its start time (field 22 of ``/proc/<pid>/stat``, in clock ticks since boot), and
:func:`alive` checks both before anyone signals or waits on it.

Must not: import anything outside the standard library, or anything slow. The shim imports this
module as a plain script sibling (see :mod:`kubetrain.local.node.shim`), and its start time is
part of every pod's start latency.
"""

from __future__ import annotations

import os


class Stat:
    """The fields of /proc/<pid>/stat the node uses (a plain class: typing costs ~8 ms)."""

    __slots__ = ("cpu", "pgid", "ppid", "starttime", "state")

    def __init__(self, state: str, ppid: int, pgid: int, starttime: int, cpu: int = 0) -> None:
        self.state = state  # R, S, D, Z (zombie), X (dead), ...
        self.ppid = ppid
        self.pgid = pgid
        self.starttime = starttime  # clock ticks after boot
        # CPU time in clock ticks: its own (utime + stime) and that of the children it has
        # waited for (cutime + cstime), so a tree's total survives the exit of its members.
        self.cpu = cpu


def stat(pid: int) -> Stat | None:
    """The process's /proc stat, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name is in parentheses and may hold spaces or ')': split after the last one.
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    cpu = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return Stat(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[19]), cpu)


def starttime(pid: int) -> int | None:
    """The start time of a live (not zombie) process, or None."""
    st = stat(pid)
    if st is None or st.state in ("Z", "X"):
        return None
    return st.starttime


def alive(pid: int, start: int) -> bool:
    """True while ``pid`` is still the process that started at ``start`` and has not exited."""
    return starttime(pid) == start


def processes() -> dict[int, Stat]:
    """Every process's stat, from one pass over /proc."""
    found: dict[int, Stat] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = stat(int(name))
        if st is not None:
            found[int(name)] = st
    return found


def children(table: dict[int, Stat] | None = None) -> dict[int, list[int]]:
    """Every process's children, from one pass over /proc (or from ``table``, one such
    pass already made)."""
    tree: dict[int, list[int]] = {}
    for pid, st in (processes() if table is None else table).items():
        tree.setdefault(st.ppid, []).append(pid)
    return tree


def descendants(pid: int, tree: dict[int, list[int]] | None = None) -> list[int]:
    """All processes below ``pid``, parents before their children (zombies included);
    ``tree`` is a :func:`children` map already made, else one is."""
    tree = children() if tree is None else tree
    found: list[int] = []
    todo = list(tree.get(pid, ()))
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(tree.get(p, ()))
    return found


def kill_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False if it has no member left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_all(pids: list[int], sig: int) -> None:
    for p in pids:
        try:  # noqa: SIM105 - contextlib would cost the shim's start ~1 ms
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass
