"""The benchmarks' own processes (a local API server, a node agent, an operator): started in a
session of their own with their output in a log, waited for, read from /proc, and stopped.

A benchmark imports this as a sibling module (``import _processes``): the scripts run as
``python bench/<name>.py``, which puts this directory first on ``sys.path``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

STOP_TIMEOUT = 20.0  # seconds a process has to end after SIGTERM before it gets SIGKILL


def spawn(command: list[str], log: Path, home: str) -> subprocess.Popen[bytes]:
    """Start ``command`` with ``KUBETRAIN_HOME=home`` (and no ``KUBECONFIG`` from outside),
    its output in ``log``, in a session of its own so that a Ctrl-C reaches only the
    benchmark, which then stops it."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = home
    with open(log, "wb") as out:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds (or at once when a second Ctrl-C cuts
    the wait short)."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` of a log, for an error message; empty when it cannot be read."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def wait_for_file(
    path: str, process: subprocess.Popen[bytes], timeout: float, fail: Callable[[str], Exception]
) -> None:
    """Wait until ``process`` has written ``path`` (a server writes its kubeconfig once it
    listens); ``fail(why)`` is raised when it exits first or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if process.poll() is not None:
            raise fail(f"it exited with status {process.returncode}")
        if time.monotonic() > deadline:
            raise fail(f"it did not start within {timeout:.0f}s")
        time.sleep(0.05)


def cpu_seconds(pid: int | None) -> float | None:
    """User plus system CPU time of a process, from /proc (None where unavailable)."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
