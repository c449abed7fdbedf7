"""The node's ``nslookup``, run as a pod's process: it answers from the resolver the pod's
processes use (its /etc/hosts)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kubetrain.local.node import tools


def test_nslookup_resolves_through_the_hosts_file(tmp_path: Path) -> None:
    directory = tools.install(str(tmp_path))
    program = os.path.join(directory, "nslookup")
    assert os.access(program, os.X_OK)

    known = subprocess.run([program, "localhost"], capture_output=True, text=True, timeout=30)
    assert known.returncode == 0, known.stderr
    assert "Name:\tlocalhost" in known.stdout
    assert "Address: " in known.stdout

    unknown = subprocess.run(
        [program, "no-such-name.invalid"], capture_output=True, text=True, timeout=30
    )
    assert unknown.returncode == 1
    assert "can't find no-such-name.invalid" in unknown.stderr
