"""The shim on its own: a fast, stdlib-only start, the state it leaves on disk, the command
lookup, and the end of a container's whole tree when its main process exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kubetrain.local.node import proctree, shim


def spec(**overrides: object) -> dict:
    plan = {
        "argv": [sys.executable, "-c", "print('hi')"],
        "env": [["PATH", "/usr/bin:/bin"]],
        "workingDir": "/",
        "mounts": [],
        "hosts": "",
        "hostname": "",
        "isolation": "none",
        "userns": False,
        "memoryLimit": None,
        "gpus": [],
        "logMaxBytes": 1 << 20,
    }
    plan.update(overrides)
    return plan


def run_shim(directory: Path, plan: dict, *launcher: str) -> dict:
    directory.mkdir()
    shim.write_spec(str(directory), plan)
    read_end, write_end = os.pipe()
    cmd = [*launcher, "run", str(directory), str(write_end)]
    if not launcher:
        cmd = shim.command(sys.executable, "run", str(directory), str(write_end))
    proc = subprocess.Popen(
        cmd,
        pass_fds=(write_end,),
        start_new_session=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(shim.HERE))),
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as notify:
        assert notify.read() == b""  # closed once the command runs (or could not)
    assert proc.wait(timeout=10) == 0
    return json.loads((directory / shim.STATE).read_text())


def test_the_shim_imports_nothing_but_the_standard_library_and_its_siblings() -> None:
    python, *rest = shim.command(sys.executable)
    done = subprocess.run(
        [python, "-X", "importtime", *rest], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "usage: shim" in done.stderr
    imported = {
        line.split("|")[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert {"shim", "memory", "proctree", "sandbox"} <= imported
    slow = {"kubetrain", "asyncio", "logging", "typing", "json", "re", "enum", "ctypes"}
    assert {name for name in imported if name.split(".")[0] in slow} == set()


def test_the_state_is_json_whatever_its_text_holds() -> None:
    state = {
        "message": 'a "quoted"\\path\n\tand \x01 ünïcödé',
        "exitCode": 3,
        "pid": None,
        "ok": True,
    }
    assert json.loads(shim.dumps(state)) == state


def test_the_state_on_disk_says_who_ran_when_and_how_it_ended(tmp_path: Path) -> None:
    state = run_shim(
        tmp_path / "0", spec(argv=[sys.executable, "-c", "import sys; print('hi'); sys.exit(4)"])
    )
    assert set(state) == {
        "shimPid",
        "shimStart",
        "pid",
        "start",
        "startedAt",
        "exitCode",
        "reason",
        "message",
        "finishedAt",
    }
    assert (state["exitCode"], state["reason"]) == (4, "Error")
    assert state["startedAt"] <= state["finishedAt"]
    assert (tmp_path / "0" / shim.LOG).read_text().endswith(" stdout F hi\n")


def test_the_shim_runs_as_a_module_too(tmp_path: Path) -> None:
    state = run_shim(tmp_path / "0", spec(), sys.executable, "-m", "kubetrain.local.node.shim")
    assert state["reason"] == "Completed"


def test_a_command_that_cannot_run_is_recorded_with_its_reason(tmp_path: Path) -> None:
    state = run_shim(tmp_path / "0", spec(argv=["kt-no-such-command"]))
    assert (state["exitCode"], state["reason"]) == (127, "ContainerCannotRun")
    assert "pid" not in state
    assert 'command "kt-no-such-command" not found on this node' in state["message"]
    assert "kt-no-such-command" in (tmp_path / "0" / shim.LOG).read_text()  # kubectl logs shows why


def test_what_the_container_leaves_running_ends_with_it(tmp_path: Path) -> None:
    code = """
import os, subprocess, sys
# A daemon: double fork into a new session, so it is neither a child nor in the group.
daemon = subprocess.Popen([sys.executable, '-c', '''
import subprocess
p = subprocess.Popen(["sleep", "60"], start_new_session=True)
print(p.pid, flush=True)
'''], stdout=subprocess.PIPE)
print(daemon.stdout.readline().decode().strip(), flush=True)
daemon.wait()
"""
    state = run_shim(tmp_path / "0", spec(argv=[sys.executable, "-c", code]))
    assert state["reason"] == "Completed"
    orphan = int((tmp_path / "0" / shim.LOG).read_text().split()[-1])
    deadline = time.monotonic() + 5
    while proctree.starttime(orphan) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proctree.starttime(orphan) is None


@pytest.mark.parametrize(
    ("sentence", "command", "code", "message"),
    [
        ("a name not on PATH", "kt-missing", 127, 'command "kt-missing" not found on this node'),
        (
            "a path that does not exist",
            "./kt-missing",
            127,
            'command "./kt-missing" not found on this node',
        ),
        ("a file that is not executable", "plain", 126, "is not executable"),
    ],
)
def test_command_lookup_failures(
    tmp_path: Path, sentence: str, command: str, code: int, message: str
) -> None:
    (tmp_path / "plain").write_text("data")
    with pytest.raises(shim.CannotRun) as failed:
        shim.resolve(command, str(tmp_path), str(tmp_path))
    assert failed.value.code == code, sentence
    assert message in str(failed.value), sentence


def test_command_lookup_takes_the_first_executable_on_path(tmp_path: Path) -> None:
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        tool = tmp_path / d / "tool"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
    assert (
        shim.resolve("tool", f"{tmp_path}/missing:{tmp_path}/b:{tmp_path}/a", "/")
        == f"{tmp_path}/b/tool"
    )
    assert shim.resolve("./a/tool", "", str(tmp_path)) == f"{tmp_path}/./a/tool"


def test_a_limited_container_joins_its_cgroup_and_an_oom_kill_there_is_reported(
    tmp_path: Path,
) -> None:
    # A directory stands in for cgroupfs: the shim writes the limit, the container's process
    # writes its pid, and memory.events says the kernel's OOM killer struck.
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "memory.events").write_text("oom 1\noom_kill 1\n")
    code = "import os; print(os.getpid(), flush=True); os.kill(os.getpid(), 9)"
    plan = spec(argv=[sys.executable, "-c", code], memoryLimit=50_000_000, cgroup=str(cgroup))
    state = run_shim(tmp_path / "0", plan)
    assert (state["exitCode"], state["reason"]) == (137, "OOMKilled")
    assert "the kernel's OOM killer ended the container" in state["message"]
    assert (cgroup / "memory.max").read_text() == "50000000"
    assert (cgroup / "cgroup.procs").read_text() == str(state["pid"])
