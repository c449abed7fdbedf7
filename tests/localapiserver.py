"""A local API server for tests: ``kubetrain apiserver --memory`` on a free port, in a
temporary ``KUBETRAIN_HOME``, in a subprocess, stopped at the end. One home for the API
behaviour tests' ``[local]`` target and for tests that compare the local server with a real
kube-apiserver side by side."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import processes

START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


def environment(home: Path) -> dict[str, str]:
    """This process's environment for a component, without the developer's kubeconfig."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = str(home)
    return env


def _ready(home: Path, pid: int) -> bool:
    from kubetrain.local import daemon  # test infrastructure only: where to look, not the API

    paths = daemon.Paths(str(home))
    status = daemon.read_status(paths)
    if not status or status.get("pid") != pid or not status.get("url"):
        return False
    return daemon.probe_ready(paths, status["url"], timeout=1.0)


@contextlib.contextmanager
def running(home: Path) -> Iterator[str]:
    """Start the server in ``home``; yields the path of its kubeconfig. Fails the test when
    it exits or is not ready in time, with the end of its log."""
    log_path = home / "apiserver.log"
    command = [
        sys.executable,
        "-m",
        "kubetrain",
        "apiserver",
        "--home",
        str(home),
        "--memory",
        "--port",
        "0",
    ]
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            command, stdout=log_file, stderr=subprocess.STDOUT, env=environment(home)
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ready(home, process.pid):
            if process.poll() is not None:
                pytest.fail(
                    f"the local control plane exited ({process.returncode}):\n"
                    + log_path.read_text(errors="replace")[-4000:]
                )
            if time.monotonic() > deadline:
                pytest.fail("the local control plane did not become ready in time")
            time.sleep(0.05)
        yield str(home / "kubeconfig")
    finally:
        processes.stop(process, timeout=STOP_TIMEOUT)
