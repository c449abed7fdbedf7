"""The probe of a private mount namespace, run in a child process: it answers and leaves the
host untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubetrain.local.node import shim


def test_the_probe_answers_and_leaves_the_host_untouched() -> None:
    before = Path("/proc/self/mountinfo").read_text()
    done = subprocess.run(
        shim.command(sys.executable, "probe"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1)
    assert (done.returncode == 0) == (done.stdout == ""), done.stdout  # a refusal says why
    assert Path("/proc/self/mountinfo").read_text() == before
