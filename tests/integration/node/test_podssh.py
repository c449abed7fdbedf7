"""ssh to a pod of this node: the installed program, run as Open MPI runs it, says why it
refuses and exits as ssh does. Its parts are tested in tests/unit/local/node/test_podssh.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kubetrain.local.node import podssh, tools


def test_the_installed_program_says_why_it_refuses_and_exits_as_ssh_does(tmp_path: Path) -> None:
    tools.install(str(tmp_path))
    program = tools.program(str(tmp_path), podssh.PROGRAM)
    done = subprocess.run(
        [program, "-o", "ConnectionAttempts=10", "job-node-0-0.job", "orted"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == podssh.EXIT_SSH_ERROR
    assert "kubetrain-pod-ssh: not run in a pod of this node" in done.stderr
