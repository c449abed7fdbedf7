"""Stopping a process a test started: SIGTERM, then SIGKILL if it has not ended in time, as a
kubelet stops a container. One home for what every fixture that spawns a component repeats."""

from __future__ import annotations

import subprocess


def stop(process: subprocess.Popen[bytes], timeout: float) -> None:
    """End ``process`` (already ended is fine) and reap it: SIGTERM, then SIGKILL after
    ``timeout`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
