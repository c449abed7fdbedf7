"""Memory limits: the watchdog counts the private resident memory of a whole tree,
grandchildren included, and says when it is over the limit; a container's cgroup v2 gets its
limit and tells of OOM kills, and no cgroup is used where the memory controller is missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubetrain.local.node import memory, proctree

TREE = """
import subprocess, sys
code = "x = b'x' * 80_000_000; print('ok', flush=True); import time; time.sleep(30)"
child = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE)
child.stdout.readline()
print('ready', flush=True)
import time; time.sleep(30)
"""


def test_the_watchdog_counts_the_descendants_memory_against_the_limit() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", TREE], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == b"ready\n"
        # The tree under this test's own process: the parent and its allocating child.
        tree = proctree.descendants(parent.pid)
        assert len(tree) == 1
        used = memory.usage([parent.pid, *tree])
        assert 80_000_000 <= used < 200_000_000
        # Only the tree under the root counts (not this test process's other children).
        assert memory.Watchdog(1_000_000_000, parent.pid).exceeded() is None
        over = memory.Watchdog(50_000_000, parent.pid).exceeded()
        assert over is not None
        assert over >= 80_000_000
    finally:
        proctree.kill_group(parent.pid, 9)
        parent.wait()


def test_a_gone_process_counts_nothing() -> None:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()  # reaped: the pid names nothing now
    assert memory.private_resident(done.pid) == 0
    assert "limit of 10 bytes exceeded" in memory.describe(10, 20)


def test_no_cgroup_is_used_where_cgroup_v2_has_no_memory_controller(tmp_path: Path) -> None:
    assert memory.cgroup_base(str(tmp_path)) is None  # cgroup v1: no cgroup.controllers
    (tmp_path / "cgroup.controllers").write_text("cpu io pids\n")
    assert memory.cgroup_base(str(tmp_path)) is None
    assert not (tmp_path / memory.NODE_CGROUP).exists()


def test_a_containers_cgroup_gets_its_limit_and_reports_oom_kills(tmp_path: Path) -> None:
    cgroup = memory.Cgroup(str(tmp_path / "pod_c_0"), 64 << 20)
    cgroup.create()
    assert (tmp_path / "pod_c_0" / "memory.max").read_text() == str(64 << 20)
    assert (tmp_path / "pod_c_0" / "memory.oom.group").read_text() == "1"
    assert (tmp_path / "pod_c_0" / "memory.swap.max").read_text() == "0"
    assert not cgroup.oom_killed()  # no events file yet
    events = tmp_path / "pod_c_0" / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\noom_group_kill 0\n")
    assert not cgroup.oom_killed()
    events.write_text("low 0\nhigh 0\nmax 9\noom 1\noom_kill 2\noom_group_kill 1\n")
    assert cgroup.oom_killed()
