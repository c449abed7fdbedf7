"""Runs the commands of the docs' shell blocks as a reader would type them, and records what
each did.

Where they run:

- in a scratch copy of the repository root: a directory holding a symlink to each of the
  root's entries (``.venv``, ``examples``, ``deploy``, ``Makefile``, ...), so that a command
  that names ``examples/...`` or ``.venv/bin/kubetrain`` finds it, and the files a page
  creates (``my-job/``, ``torch-small.yaml``) land in the scratch directory, not in the
  working tree;
- with ``KUBETRAIN_HOME`` a temporary directory, so the pages' own commands (``kubetrain up``,
  or the first command that needs it) start a local control plane of their own there, as they
  start ``~/.kubetrain``'s for a reader; ``HOME`` is a temporary directory too, and
  ``KUBECONFIG`` names a file that does not exist, so no command reaches the developer's
  control plane or cluster;
- with ``.venv/bin`` first on ``PATH``.

Pages run one after another against that one control plane, as a reader goes through the
guide: each page in a fresh shell (its ``export``\\ s and ``cd``\\ s carry from one command to
the next within the page, not to the next page), each command a ``bash -c`` of its own with a
time limit, so that a command that hangs fails alone. :meth:`Runner.stop` runs
``kubetrain down`` at the end, which stops every pod it runs.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.docs import blocks

COMMAND_TIMEOUT: Final = 240.0  # seconds for one command; the longest, `make run`, takes ~20
STOP_TIMEOUT: Final = 60.0
READ_AFTER_KILL: Final = 5.0  # seconds to read what a killed command wrote
OUTPUT_TAIL: Final = 3000  # characters of a failed command's output in the report
NOT_MIRRORED: Final = frozenset({".git", ".pytest_cache", ".ruff_cache", ".hypothesis"})


@dataclass(frozen=True)
class Outcome:
    """What one command did; ``returncode`` is None when it was not run."""

    command: blocks.Command
    returncode: int | None = None
    seconds: float = 0.0
    output: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode is None or self.returncode == self.command.expected_exit

    def describe(self) -> str:
        shown = self.command.first_line.strip()
        if self.command.run_as != self.command.text:
            shown += f"  (run as: {self.command.run_as})"
        if self.returncode is None:
            return f"{self.command.where}: not run: {shown}: {self.command.skipped}"
        return f"{self.command.where}: exit {self.returncode} in {self.seconds:.1f}s: {shown}"


class Runner:
    def __init__(
        self, repository: Path, scratch: Path, *, command_timeout: float = COMMAND_TIMEOUT
    ) -> None:
        self.repository = repository
        self.command_timeout = command_timeout
        self.root = scratch / "repository"
        self.home = scratch / "kubetrain-home"
        self.user_home = scratch / "home"
        for directory in (self.root, self.home, self.user_home):
            directory.mkdir(parents=True)
        for entry in sorted(os.listdir(repository)):
            if entry not in NOT_MIRRORED:
                (self.root / entry).symlink_to(repository / entry)
        self._state = scratch / "shell-state.sh"
        self._missing_kubeconfig = scratch / "no-kubeconfig"

    def environment(self) -> dict[str, str]:
        hidden = {"KUBECONFIG", "KUBETRAIN_KUBECONFIG", "KUBETRAIN_TEST_KUBECONFIG", "MAKEFLAGS"}
        env = {k: v for k, v in os.environ.items() if k not in hidden}
        env.update(
            HOME=str(self.user_home),
            KUBETRAIN_HOME=str(self.home),
            KUBECONFIG=str(self._missing_kubeconfig),
            PATH=os.pathsep.join([str(self.root / ".venv" / "bin"), env.get("PATH", "")]),
        )
        return env

    def run_page(self, page_blocks: Iterable[blocks.Block]) -> list[Outcome]:
        """Every block of one page in order: saved blocks written, commands run."""
        self._state.write_text(f"cd {shlex.quote(str(self.root))}\n", encoding="utf-8")
        outcomes: list[Outcome] = []
        for block in page_blocks:
            if block.saved_as is not None:
                target = self.root / block.saved_as
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.text + "\n", encoding="utf-8")
            for command in blocks.commands(block):
                if command.skipped is not None:
                    outcomes.append(Outcome(command))
                else:
                    outcomes.append(self._run(command))
        return outcomes

    def _run(self, command: blocks.Command) -> Outcome:
        state = shlex.quote(str(self._state))
        script = (
            f". {state}\n"
            # What the next command of the page starts from: this one's exports and directory.
            f'trap \'__rc=$?; {{ export -p; printf "cd %q\\n" "$PWD"; }} > {state}; '
            "exit $__rc' EXIT\n"
            f"{command.run_as}\n"
        )
        began = time.monotonic()
        process = subprocess.Popen(
            ["bash", "-c", script],
            cwd=self.root,
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,  # its own process group, to end whatever it left running
        )
        try:
            output, _ = process.communicate(timeout=self.command_timeout)
            returncode = process.returncode
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            try:
                output, _ = process.communicate(timeout=READ_AFTER_KILL)
            except subprocess.TimeoutExpired:  # a process of another group holds the output
                process.wait()
                output = ""
            output += f"\n[docs test: no exit within {self.command_timeout:g}s; killed]"
            returncode = -signal.SIGKILL
        return Outcome(command, returncode, time.monotonic() - began, output[-OUTPUT_TAIL:])

    def stop(self) -> subprocess.CompletedProcess[str]:
        """``kubetrain down``: the control plane the pages started, and every pod it runs."""
        return subprocess.run(
            [str(self.root / ".venv" / "bin" / "kubetrain"), "down"],
            cwd=self.root,
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=STOP_TIMEOUT,
        )
