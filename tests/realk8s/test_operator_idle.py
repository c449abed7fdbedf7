"""``kubetrain operator`` left idle on a real kube-apiserver logs no WARNING.

On a cluster that sees no change, kube-apiserver sends nothing on the operator's watches, not
even a bookmark, until it ends each one at the ``timeoutSeconds`` it was asked for; the
operator opens it again from where it was. That is the normal life of a watch and must not be
logged as a problem. The operator runs with its watches shortened to a few seconds
(``--watch-timeout-seconds``), so that each of them lives and ends several times within the
test, and logs at DEBUG, so that each end shows.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from kubetrain import envtest
from kubetrain.kube import watch

WATCH_TIMEOUT = 5  # seconds each watch is held open (shortened by up to 20%)
LIFETIMES = 3  # ends seen for every watch before the operator is stopped
TIMEOUT = 120.0  # seconds for the operator to sync and its watches to end that often


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def records(log: Path) -> list[dict[str, Any]]:
    """The operator's JSON log records; a line that is not one is kept as its message."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            found.append({"level": "?", "message": line})
    return found


def synced(log: Path) -> set[str]:
    """The resources whose caches have synced (``cache of <resource> synced``)."""
    return {
        r["message"].split()[2]
        for r in records(log)
        if r.get("message", "").startswith("cache of ") and " synced" in r["message"]
    }


def ends(log: Path) -> Counter[str]:
    """Per resource, how often the server ended its watch (``watch <resource>: stream
    ended``)."""
    return Counter(
        r["message"].split()[1].rstrip(":")
        for r in records(log)
        if r.get("logger") == watch.__name__ and "stream ended" in r.get("message", "")
    )


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def test_an_idle_operator_logs_no_warning_while_its_watches_come_and_go(
    real_control_plane: envtest.ControlPlane, tmp_path: Path
) -> None:
    log = tmp_path / "operator.log"
    probes = free_port()
    command = [
        sys.executable, "-m", "kubetrain", "operator",
        "--kubeconfig", real_control_plane.kubeconfig,
        "--metrics-bind-address", "0",
        "--health-probe-bind-address", f"127.0.0.1:{probes}",
        "--watch-timeout-seconds", str(WATCH_TIMEOUT),
        "--log-format", "json",
        "--log-level", "DEBUG",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not ready(f"http://127.0.0.1:{probes}/readyz"):
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the operator did not sync"
            time.sleep(0.2)
        watched = synced(log)
        assert {"pods", "services", "pytorchjobs.kubeflow.org"} <= watched, watched
        while min(ends(log)[r] for r in watched) < LIFETIMES:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"watch ends after {TIMEOUT:.0f}s: {ends(log)}"
            time.sleep(0.5)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert process.returncode == 0, log.read_text()[-3000:]
    loud = [r for r in records(log) if r.get("level") not in ("DEBUG", "INFO")]
    assert loud == []
