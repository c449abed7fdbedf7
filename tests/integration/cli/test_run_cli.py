"""``kubetrain run -f JOB.yaml``: submit, live view with merged logs, exit with the outcome.

The test plays operator and node (conftest.py): it creates the job's pods on the fake node,
moves them and the job through their states, and releases their logs. Without a terminal the
view is a history of ``[kubetrain]`` lines on stderr; on a pseudo-terminal it is a block
redrawn in place.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from tests.apiserver.test_pod_log_exec import FakeNode
from tests.fixtures.waits import wait_for
from tests.integration.cli.conftest import CLI_TIMEOUT, Operator, Spawn, pytorchjob, stamp

JobFile = Callable[[dict[str, Any]], str]


def exists(operator: Operator, name: str) -> bool:
    try:
        operator.job("PyTorchJob", name)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def start_replicas(operator: Operator, job: str, node: str, workers: int) -> list[str]:
    """What the operator and the node do once the job is there: pods, Running, conditions."""
    wait_for(lambda: exists(operator, job))
    pods = [operator.pod(job, "Master", 0, node=node)]
    pods += [operator.pod(job, "Worker", i, node=node) for i in range(workers)]
    for pod in pods:
        operator.pod_status(pod, "Running")
    operator.conditions(
        "PyTorchJob", job, "Created", "Running",
        startTime=stamp(5), replicaStatuses={"Master": {"active": 1}},
    )  # fmt: skip
    return pods


def test_a_job_that_succeeds_exits_0_with_its_logs_and_a_history(
    job_file: JobFile, operator: Operator, fake_node: FakeNode, node: str, spawn: Spawn
) -> None:
    child = spawn("run", "-f", job_file(pytorchjob("ok", 1)))
    pods = start_replicas(operator, "ok", node, 1)
    child.out.wait_for("[worker-0] pytorch line 3\n")
    # "Pending -> Running" when the view saw the pod before it ran; "Running on NODE" when its
    # first sight of the pod was already Running (the fake operator writes both at once)
    seen = ("[kubetrain] worker-0: Pending -> Running", "[kubetrain] worker-0: Running on ")
    child.err.wait_for(seen)
    for pod in pods:
        fake_node.release(operator.namespace, pod)
    child.out.wait_for("[master-0] pytorch line 5\n")
    child.out.wait_for("[worker-0] pytorch line 5\n")
    operator.conditions("PyTorchJob", "ok", "Created", "Succeeded")
    code, out, err = child.ended()
    assert code == 0, err
    assert out.count("[master-0] pytorch line") == 5
    assert "pytorchjob.kubeflow.org/ok created" in err
    assert "[kubetrain] pytorchjob/ok Running" in err
    assert err.strip().splitlines()[-1].startswith("pytorchjob/ok Succeeded")


def test_a_job_that_fails_exits_1_with_the_reason_replica_exit_code_and_log_tail(
    job_file: JobFile, operator: Operator, fake_node: FakeNode, node: str, spawn: Spawn
) -> None:
    child = spawn("run", "-f", job_file(pytorchjob("bad", 1)))
    pods = start_replicas(operator, "bad", node, 1)
    child.out.wait_for("[worker-0] pytorch line 3\n")
    for pod in pods:
        fake_node.release(operator.namespace, pod)
    child.out.wait_for("[worker-0] pytorch line 5\n")
    operator.pod_status("bad-worker-0", "Failed", exit_code=3)
    message = "PyTorchJob bad is failed because 1 Worker replica(s) failed."
    operator.conditions(
        "PyTorchJob", "bad", "Created", "Failed", reason="PyTorchJobFailed", message=message
    )
    code, _, err = child.ended()
    assert code == 1
    lines = err.splitlines()
    summary = lines[next(i for i, line in enumerate(lines) if line.startswith("pytorchjob/bad")) :]
    assert summary[0].endswith(f": PyTorchJobFailed: {message}")
    assert summary[1] == "failing replica: worker-0 (pod bad-worker-0) exited with code 3 (Error)"
    assert summary[2] == "last 5 log lines of worker-0:"
    assert summary[3:] == [f"  pytorch line {i}" for i in range(1, 6)]


def test_ctrl_c_without_a_terminal_leaves_the_job_and_says_how_to_delete_it(
    job_file: JobFile, operator: Operator, node: str, spawn: Spawn
) -> None:
    child = spawn("run", "-f", job_file(pytorchjob("kept", 1)), stdin=subprocess.DEVNULL)
    start_replicas(operator, "kept", node, 1)
    child.out.wait_for("[master-0] pytorch line 3\n")
    child.process.send_signal(signal.SIGINT)
    code, _, err = child.ended()
    assert code == 130
    assert "pytorchjob/kept is left running; `kubetrain delete pytorchjob/kept` deletes it" in err
    assert "Traceback" not in err
    assert exists(operator, "kept")


def test_a_second_job_of_the_same_name_is_refused_with_what_to_do(
    job_file: JobFile, operator: Operator, spawn: Spawn
) -> None:
    path = job_file(pytorchjob("twice", 1))
    first = spawn("run", "-f", path, stdin=subprocess.DEVNULL)
    wait_for(lambda: exists(operator, "twice"))
    code, _, err = spawn("run", "-f", path).ended()
    assert code == 1
    assert err.strip().splitlines() == [
        "kubetrain: pytorchjob/twice already exists in namespace "
        f"{operator.namespace} (Pending); `kubetrain delete pytorchjob/twice` first, or change "
        "metadata.name"
    ]
    first.process.kill()


class Terminal:
    """A pseudo-terminal for a child: everything it writes, read on a thread."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.text = ""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def start(self) -> None:
        os.close(self.slave)
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the child closed its side
                return
            if not chunk:
                return
            with self._lock:
                self.text += chunk.decode(errors="replace")

    def wait_for(self, text: str, timeout: float = CLI_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if text in self.text:
                    return
                seen = self.text
            if time.monotonic() > deadline:
                pytest.fail(f"{text!r} did not appear within {timeout}s; got {seen!r}")
            time.sleep(0.02)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        """Waits until the child's side is closed and everything it wrote was read."""
        if self.master < 0:
            return
        self._thread.join(CLI_TIMEOUT)
        os.close(self.master)
        self.master = -1


@pytest.fixture
def terminal() -> Any:
    term = Terminal()
    try:
        yield term
    finally:
        term.close()


def test_on_a_terminal_the_view_is_redrawn_in_place_and_ends_cleanly(
    job_file: JobFile,
    operator: Operator,
    fake_node: FakeNode,
    node: str,
    spawn: Spawn,
    terminal: Terminal,
) -> None:
    tty = terminal.slave
    child = spawn("run", "-f", job_file(pytorchjob("live", 1)), stdin=tty, stdout=tty, stderr=tty)
    terminal.start()
    terminal.wait_for("pytorchjob/live  Pending")
    pods = start_replicas(operator, "live", node, 1)
    terminal.wait_for("[worker-0] pytorch line 3")
    terminal.wait_for("\x1b[")  # the block was erased and drawn again below the new lines
    for pod in pods:
        fake_node.release(operator.namespace, pod)
    terminal.wait_for("[worker-0] pytorch line 5")
    operator.conditions("PyTorchJob", "live", "Created", "Succeeded")
    assert child.exit_code() == 0
    terminal.close()
    text = terminal.text
    assert text.count("\x1b[J") >= 3, "each update erases the previous block"
    last_block = text[text.rindex("\x1b[J") :]
    assert "pytorchjob/live  Succeeded" in last_block
    assert "REPLICA" in last_block
    assert "master-0" in last_block
    assert text.rstrip().splitlines()[-1].startswith("pytorchjob/live Succeeded")


def test_ctrl_c_on_a_terminal_asks_and_deletes_the_job(
    job_file: JobFile, operator: Operator, node: str, spawn: Spawn, terminal: Terminal
) -> None:
    tty = terminal.slave
    child = spawn("run", "-f", job_file(pytorchjob("asked", 1)), stdin=tty, stdout=tty, stderr=tty)
    terminal.start()
    start_replicas(operator, "asked", node, 1)
    terminal.wait_for("[master-0] pytorch line 3")
    child.process.send_signal(signal.SIGINT)
    terminal.wait_for("delete pytorchjob/asked? [y/N]")
    terminal.type("y\n")
    assert child.exit_code() == 130
    terminal.wait_for("pytorchjob/asked deleted")
    wait_for(lambda: not exists(operator, "asked"))
