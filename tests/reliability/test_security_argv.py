"""Commands are passed as argv, never through a shell string built from user input.

- No code of kubetrain or bench/ starts a process through a shell: no ``shell=True``,
  ``os.system``, ``os.popen``, ``subprocess.getoutput``, ``asyncio.create_subprocess_shell``.
- Every call that starts a process is listed in :data:`REVIEWED` with where its argv comes
  from; a new one fails this test until it is reviewed and listed (and a listed one that went
  away must be dropped, so the list stays true).
- kubetrain writes shell scripts in three places, as upstream does (listed in
  :data:`SHELL_SCRIPTS`); for each, a property test shows that no value a user controls can
  become shell syntax: it is quoted, or admission allows only a DNS name there.
- ``kubetrain submit ... -- COMMAND`` puts COMMAND into the manifest as the argv it was given.
  That the node then runs it as argv (no shell acts on an argument in shell syntax) is shown
  on a real pod in test_security_secrets.py.
"""

from __future__ import annotations

import ast
import copy
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain import api
from kubetrain.cli import main, manifests, submit
from kubetrain.frameworks import mpi, pytorch
from kubetrain.sdk import _trainjobs, _types

ROOT: Final = Path(__file__).parents[2]
SCANNED: Final = ("kubetrain", "bench")
SHELL_CALLS: Final = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("asyncio", "create_subprocess_shell"),
}
PROCESS_CALLS: Final = {
    ("subprocess", name) for name in ("Popen", "run", "call", "check_call", "check_output")
} | {("asyncio", "create_subprocess_exec"), ("pty", "spawn"), ("os", "posix_spawn")}
PROCESS_PREFIXES: Final = (("os", "exec"), ("os", "spawn"))

# (file, enclosing function, call) -> where the argv comes from
REVIEWED: Final = {
    ("kubetrain/local/daemon.py", "start_background", "subprocess.Popen"): (
        "this interpreter running `-m kubetrain apiserver` with the home, port and flags"
    ),
    ("kubetrain/local/node/runtime.py", "Runtime._probe", "subprocess.run"): (
        "the shim (shim.command: this interpreter, fixed flags) in its probe mode"
    ),
    ("kubetrain/local/node/runtime.py", "Runtime._start", "subprocess.Popen"): (
        "the shim in its run mode with the attempt directory; the container's argv is in the "
        "spec file, and the shim execve()s it"
    ),
    ("kubetrain/local/node/runtime.py", "Runtime.exec", "asyncio.create_subprocess_exec"): (
        "the shim in its exec mode, then `--` and the exec request's argv, unchanged"
    ),
    ("kubetrain/local/node/machine.py", "count_gpus", "asyncio.create_subprocess_exec"): (
        "a constant: nvidia-smi -L"
    ),
    ("kubetrain/local/node/shim.py", "spawn", "os.execve"): (
        "the container's command + args, $(VAR)-expanded as Kubernetes does, as argv"
    ),
    ("kubetrain/local/node/shim.py", "exec_in", "os.execve"): "the exec request's argv",
    ("kubetrain/local/node/shim.py", "start_tty", "os.execve"): "the exec request's argv",
    ("bench/launch.py", "*", "asyncio.create_subprocess_exec"): "the benchmark's own commands",
    ("bench/launch.py", "*", "subprocess.run"): "the benchmark's own commands",
    ("bench/_processes.py", "*", "subprocess.Popen"): "the benchmarks' own commands",
    ("bench/_realcluster.py", "*", "subprocess.run"): "kube-apiserver --version, its own path",
    ("bench/operator.py", "*", "asyncio.create_subprocess_exec"): (
        "kubectl get --raw /metrics with the kubeconfig of the server it started"
    ),
    ("kubetrain/envtest.py", "ControlPlane._spawn", "subprocess.Popen"): (
        "the binaries KUBEBUILDER_ASSETS names, with flags of the control plane's own: ports it "
        "picked, files it wrote, flags its caller (a test or benchmark) passes"
    ),
    ("kubetrain/local/node/podssh.py", "main", "os.execv"): (
        "the shim's exec (this interpreter, fixed flags, the target container found on this "
        "node) of ssh's remote command, which ssh hands to the remote user's shell as sshd "
        "does: the caller is a process of a pod on this node, which could run it itself"
    ),
    ("kubetrain/envtest.py", "ControlPlane.kubectl", "subprocess.run"): (
        "kubectl beside the binaries or on PATH, with the caller's (a test's or benchmark's) args"
    ),
    ("bench/pod_start.py", "*", "subprocess.Popen"): "the command spawned directly, to compare",
    ("bench/pod_start.py", "*", "subprocess.run"): (
        "`docker run` of the benchmark's image (its --image argument), to compare"
    ),
    ("bench/cli.py", "*", "subprocess.run"): (
        "kubetrain and kubectl verbs with the benchmark's own job name and temporary home, "
        "and the floor: this interpreter with the benchmark's own program"
    ),
}
# (file, enclosing function) of code that writes a shell script or a `sh -c` command
SHELL_SCRIPTS: Final = {
    ("kubetrain/frameworks/pytorch.py", "init_container"): (
        "upstream's init-pytorch loop; interpolates the master's pod name (from the job's "
        "name, a DNS-1035 label by admission) and an integer setting"
    ),
    ("kubetrain/frameworks/mpi.py", "kubexec_script"): (
        "upstream's kubexec.sh; interpolates spec.mainContainer, shell-quoted"
    ),
    ("kubetrain/frameworks/mpi.py", "discover_hosts_script"): (
        "upstream's discover_hosts.sh; interpolates pod names (from the job's name) and slots"
    ),
    ("kubetrain/sdk/_trainjobs.py", "_with_packages"): (
        "pip install of packages_to_install, shell-quoted (shlex.join); the user's command "
        'follows as argv ("$@"), not in the script'
    ),
    ("bench/pod_start.py", "*"): "constant commands of the benchmark's pods",
}


class Finder(ast.NodeVisitor):
    """Calls that start processes or use a shell, and shell scripts written in code, each
    with the function it is in."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.scope: list[str] = []
        self.shell: list[str] = []
        self.processes: set[tuple[str, str, str]] = set()
        self.scripts: set[tuple[str, str]] = set()

    def _where(self) -> str:
        return ".".join(self.scope) or "<module>"

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = {alias.name for alias in node.names}
        for module, name in SHELL_CALLS | PROCESS_CALLS:
            if node.module == module and name in names:
                self.shell.append(f"{self.path}: from {module} import {name} (hides the call)")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            call = (func.value.id, func.attr)
            named = f"{call[0]}.{call[1]}"
            if call in SHELL_CALLS:
                self.shell.append(f"{self.path}:{node.lineno}: {named}")
            if call in PROCESS_CALLS or any(
                call[0] == module and call[1].startswith(prefix)
                for module, prefix in PROCESS_PREFIXES
            ):
                self.processes.add((self.path, self._where(), named))
        for keyword in node.keywords:
            if keyword.arg == "shell" and not (
                isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            ):
                self.shell.append(f"{self.path}:{node.lineno}: shell=")
        self.generic_visit(node)

    def visit_List(self, node: ast.List) -> None:
        first = [e.value for e in node.elts[:2] if isinstance(e, ast.Constant)]
        if len(first) == 2 and Path(str(first[0])).name in ("sh", "bash") and first[1] == "-c":
            self.scripts.add((self.path, self._where()))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value.startswith("#!/bin/"):
            self.scripts.add((self.path, self._where()))


def sources() -> Iterator[tuple[str, ast.Module]]:
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path))


def scan() -> tuple[list[str], set[tuple[str, str, str]], set[tuple[str, str]]]:
    shell: list[str] = []
    processes: set[tuple[str, str, str]] = set()
    scripts: set[tuple[str, str]] = set()
    for path, tree in sources():
        finder = Finder(path)
        finder.visit(tree)
        shell += finder.shell
        scripts |= {(f, "*" if f.startswith("bench/") else w) for f, w in finder.scripts}
        for file, where, call in finder.processes:
            processes.add((file, "*" if file.startswith("bench/") else where, call))
    return shell, processes, scripts


SHELL, PROCESSES, SCRIPTS = scan()


def test_no_code_starts_a_process_through_a_shell() -> None:
    assert not SHELL


def test_every_process_start_is_reviewed() -> None:
    new = sorted(PROCESSES - set(REVIEWED))
    gone = sorted(set(REVIEWED) - PROCESSES)
    assert not new, f"review where the argv comes from and add to REVIEWED: {new}"
    assert not gone, f"no longer in the code; drop from REVIEWED: {gone}"


def test_every_shell_script_written_in_code_is_reviewed() -> None:
    assert set(SHELL_SCRIPTS) == SCRIPTS


def test_the_scanner_sees_what_it_looks_for() -> None:
    sample = (
        "import os, subprocess, asyncio\n"
        "def f(x):\n"
        "    subprocess.run(x, shell=True)\n"
        "    os.system(x)\n"
        "    asyncio.create_subprocess_shell(x)\n"
        "    os.execvp(x, [x])\n"
        "    return ['/bin/sh', '-c', x]\n"
    )
    finder = Finder("sample.py")
    finder.visit(ast.parse(sample))
    assert len(finder.shell) == 3
    assert ("sample.py", "f", "os.execvp") in finder.processes
    assert ("sample.py", "f") in finder.scripts


# --- what goes into each shell script ----------------------------------------------------

TEXT: Final = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
SHELLISH: Final = st.sampled_from(
    ["a; rm -rf /", "$(id)", "`id`", "a b", "'", '"', "\\", "a|b", "a&&b", "\n", "$HOME", "*"]
)


def scaled(examples: int) -> int:
    """``examples`` times ``$KUBETRAIN_FUZZ_SCALE`` (default 1): a longer hunt on demand."""
    return max(1, round(examples * float(os.environ.get("KUBETRAIN_FUZZ_SCALE", "1"))))


PROPERTY: Final = settings(
    max_examples=scaled(80), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY
@given(
    packages=st.lists(SHELLISH | TEXT.filter(bool), min_size=1, max_size=4),
    command=st.lists(SHELLISH | TEXT, min_size=1, max_size=4),
)
def test_packages_are_quoted_and_the_command_stays_argv(
    packages: list[str], command: list[str]
) -> None:
    trainer = _types.CommandTrainer(command=command, packages_to_install=packages)
    argv = _trainjobs._with_packages(list(command), trainer, "trainer")
    assert argv[:2] == ["bash", "-c"]
    assert argv[3:] == ["kubetrain-install", *command]
    lines = argv[2].split("\n")
    assert lines[0] == "set -e"
    assert lines[-2:] == ['exec "$@"', ""]
    pip = shlex.split("\n".join(lines[1:-2]))
    assert pip[-len(packages) :] == packages


def mpijob() -> dict[str, Any]:
    path = ROOT / "tests" / "corpus" / "valid" / "mpijob-horovod.yaml"
    return next(d for d in yaml.safe_load_all(path.read_text()) if d)


@PROPERTY
@given(container=SHELLISH | TEXT.filter(bool))
def test_the_main_container_is_one_quoted_word_in_kubexec(container: str) -> None:
    doc = copy.deepcopy(mpijob())
    doc["spec"]["mainContainer"] = container
    job = api.admit(doc)
    script = mpi.kubexec_script(job)  # type: ignore[arg-type]
    exec_line = next(line for line in script.splitlines() if "kubectl exec" in line)
    words = shlex.split(script.split("kubectl exec", 1)[1].split(" -- ", 1)[0])
    assert words == ["${POD_NAME}", "--container", container], exec_line


@PROPERTY
@given(name=st.text(min_size=1, max_size=20))
def test_a_job_name_that_could_be_shell_syntax_never_passes_admission(name: str) -> None:
    doc = copy.deepcopy(mpijob())
    doc["metadata"]["name"] = name
    verdict = api.review(doc)
    if verdict.ok:
        assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
        job = verdict.obj
        assert job is not None
        assert shlex.split(mpi.discover_hosts_script(job, [f"{name}-worker-0"]))  # type: ignore[arg-type]


def test_the_init_container_interpolates_only_the_masters_name() -> None:
    doc = next(
        d
        for d in yaml.safe_load_all(
            (ROOT / "tests" / "corpus" / "valid" / "pytorchjob-master-worker.yaml").read_text()
        )
        if d
    )
    job = api.admit(doc)
    settings_ = pytorch.Settings()
    command = pytorch.init_container(job, settings_)["command"]  # type: ignore[arg-type]
    script = command[2]  # type: ignore[index]
    assert command[:2] == ["sh", "-c"]
    master = pytorch.master_addr(job)  # type: ignore[arg-type]
    assert script.replace(master, "MASTER") == (
        f"err=1;for i in $(seq {settings_.init_container_max_tries}); "
        "do if nslookup MASTER; then err=0 && break; fi;"
        "echo waiting for master; sleep 2; done; exit $err"
    )


# --- kubetrain submit -- COMMAND -------------------------------------------------------------


def submitted(command: list[str]) -> dict[str, Any]:
    """The job ``kubetrain submit pytorch --name argv -- COMMAND`` creates: the command line
    parsed as the CLI parses it, and the manifest built from it as the CLI builds it."""
    args = main.build_parser().parse_args(["submit", "pytorch", "--name", "argv", "--", *command])
    return manifests.build(submit.submission(args))


@PROPERTY
@given(command=st.lists(SHELLISH | TEXT, min_size=1, max_size=5).filter(lambda c: c[0] != ""))
def test_submit_puts_the_command_into_the_job_as_the_argv_it_was_given(
    command: list[str],
) -> None:
    job = submitted(command)
    container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["command"] == command
    assert "args" not in container
