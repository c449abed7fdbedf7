"""Mistakes on the command line end with an exit status other than 0 and one line that says
what is wrong: never a traceback, never the internal-error exit (70), never a hang.

- Every verb gets random arguments: its own flags in any order and number, with values
  that are wrong (unknown choices, negative or huge numbers, bad durations and selectors,
  files that are missing, empty, binary, a directory, 50 MB, nested 200,000 deep, or a
  "billion laughs" of YAML aliases), against the session's API server and a fresh namespace.
  An invocation that is valid may succeed; one that fails says why in one line (several
  only when each is a whole problem of its own, as ``validate`` lists every bad field).
- The verbs that start or stop daemons (up, down, apiserver, node, operator, dashboard) and
  port-forward (which serves until interrupted) only get arguments argparse refuses, so
  nothing starts; ``submit`` only ``--dry-run``.
- Three mistakes (of argparse, of a file, of a kubeconfig) through the real entry point,
  ``python -m kubetrain``, in a process of its own.
- ``kubetrain validate`` and ``apply`` with a 50 MB file, deeply nested YAML and JSON, and
  YAML aliases that would expand a billion times: one line, in bounded time and memory.

Most invocations run in this process (an interpreter's start costs more than a command);
``faulthandler`` ends the run with every thread's stack if one hangs.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain.cli import main

if TYPE_CHECKING:  # imported by pytest as a plugin, before this module (see below)
    from tests.reliability.security_fixtures import Figures

pytest_plugins = ["tests.reliability.security_fixtures"]  # the bad_input_figures fixture

HANG: Final = 60.0  # seconds one in-process invocation may take before the run is ended
EXIT_INTERNAL: Final = 70
DAEMONS: Final = frozenset(
    {"up", "down", "apiserver", "node", "operator", "dashboard", "port-forward"}
)
HUGE_BYTES: Final = 50 * 1024 * 1024
MEMORY_LIMIT: Final = 600 * 1024 * 1024  # bytes of peak RSS for any one CLI process
TIME_LIMIT: Final = 20.0  # seconds for a CLI process to refuse a huge or deep file
BILLION_LAUGHS: Final = (
    "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: lol}\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{x}: &{x} [{','.join(['*' + p] * 9)}]\n"
        for p, x in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def verbs() -> dict[str, list[str]]:
    """Each verb (and alias) with its own option strings."""
    parser = main.build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {
        name: sorted({o for a in sub._actions for o in a.option_strings} - {"-h", "--help"})
        for name, sub in action.choices.items()  # type: ignore[attr-defined]
    }


VERBS: Final = verbs()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Inputs nobody should have to feed a CLI, and the CLI must survive."""
    base = tmp_path_factory.mktemp("bad-inputs")
    made = {
        "empty.yaml": b"",
        "binary.yaml": bytes(range(256)) * 8,
        "latin1.yaml": "kind: PyTorchJob\nmetadata: {name: caf\xe9}\n".encode("latin-1"),
        "deep-flow.yaml": b"[" * 200_000 + b"]" * 200_000,
        "deep.json": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        "deep-block.yaml": "".join("  " * i + "a:\n" for i in range(1500)).encode(),
        "laughs.yaml": BILLION_LAUGHS.encode(),
        "not-a-job.yaml": b"apiVersion: v1\nkind: List\nitems: [1, 2]\n",
        "tabs.yaml": b"a:\n\tb: c\n",
        "list.yaml": b"- a\n- b\n",
        "nan.yaml": b"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: .nan\n",
    }
    for name, data in made.items():
        (base / name).write_bytes(data)
    with open(base / "huge.yaml", "wb") as f:  # 50 MB to whoever reads it; sparse on disk
        f.write(b"data: x")
        f.truncate(HUGE_BYTES)
    (base / "a-directory").mkdir()
    (base / "a-directory" / "job.yaml").write_bytes(b"{{{")
    paths = {name: base / name for name in [*made, "huge.yaml", "a-directory"]}
    paths["missing"] = base / "missing.yaml"
    return paths


@pytest.fixture
def cli(kubeconfig: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """Commands reach the session's API server only, and write only under ``tmp_path``."""
    home = tmp_path / "home"
    home.mkdir()
    for key in ("KUBECONFIG", "KUBETRAIN_KUBECONFIG", "KUBETRAIN_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("KUBETRAIN_KUBECONFIG", kubeconfig)
    monkeypatch.setenv("KUBETRAIN_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return kubeconfig, home


def run_in_process(args: list[str]) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    faulthandler.dump_traceback_later(HANG, exit=True)
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            contextlib.ExitStack() as stack,
        ):
            stdin = io.TextIOWrapper(io.BytesIO(b""))
            stack.callback(setattr, sys, "stdin", sys.stdin)
            sys.stdin = stdin
            try:
                code = main.main(args)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        faulthandler.cancel_dump_traceback_later()
    return Ran(code, out.getvalue(), err.getvalue())


def check_failure_is_one_line(args: list[str], ran: Ran) -> None:
    shown = f"kubetrain {' '.join(a[:60] for a in args)} -> {ran.code}\n{ran.err[-2000:]}"
    assert ran.code != EXIT_INTERNAL, shown
    assert "Traceback" not in ran.err, shown
    assert "Traceback" not in ran.out, shown
    if ran.code == 0:
        return
    message = ran.err or ran.out
    lines = message.splitlines()
    assert lines, f"a failure without a message: {shown}"
    assert all(line.strip() for line in lines), shown
    assert not any(line[0].isspace() for line in lines), f"not one line per problem: {shown}"
    if ran.code == 2:  # argparse: the one line, with where to read more
        assert len(lines) == 1, shown
        assert lines[0].startswith("kubetrain"), shown
        assert "error:" in lines[0], shown


JUNK: Final = [
    "",
    "-",
    "--",
    "x",
    "nope",
    "-1",
    "0",
    "99999999999999999999",
    "1e9",
    "nan",
    "1x",
    "30s",
    "yaml",
    "json",
    "wide",
    "Succeeded",
    "pytorchjob/x",
    "pods/x",
    "tfjob",
    "trainjob",
    "!!",
    "a=b,c",
    "app in (a",
    "Ünïcødé",
    "a" * 300,
    "$(id)",
    "--no-such-flag",
    "-A",
]


def arguments(verb: str, files: dict[str, Path]) -> st.SearchStrategy[list[str]]:
    # -v asks for the traceback; -A and --home reach beyond this test's namespace and home
    left_out = ("-v", "--verbose", "-A", "--all-namespaces", "--home")
    tokens = [o for o in VERBS[verb] if o not in left_out]
    values = [t for t in JUNK if t not in ("-A",)] + [str(p) for p in files.values()]
    return st.lists(st.sampled_from(tokens or ["x"]) | st.sampled_from(values), max_size=6)


def command_line(verb: str, args: list[str], namespace: str) -> list[str]:
    """``verb args`` made safe to run: this namespace only, nothing started or followed for
    long."""
    args = [a for a in args if a not in ("-A", "--all-namespaces")]
    if verb in DAEMONS:
        # argparse refuses before anything runs (first: after a drawn "--" it is an argument)
        return [verb, "--no-such-flag", *args]
    cut = args.index("--") if "--" in args else len(args)
    extra = []
    if "-n" in VERBS[verb]:
        extra += ["-n", namespace]
    if "--timeout" in VERBS[verb] and verb != "up":
        extra += ["--timeout", "2s"]
    if verb == "submit":
        extra = ["--dry-run"]
        return [verb, *args[:1], *extra, *args[1:]]
    return [verb, *args[:cut], *extra, *args[cut:]]


def scaled(examples: int) -> int:
    """``examples`` times ``$KUBETRAIN_FUZZ_SCALE`` (default 1): a longer hunt on demand."""
    return max(1, round(examples * float(os.environ.get("KUBETRAIN_FUZZ_SCALE", "1"))))


SETTINGS: Final = settings(
    max_examples=scaled(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(data=st.data())
def test_any_arguments_to_any_verb_end_in_success_or_one_line_and_no_traceback(
    cli: tuple[str, Path],
    namespace: str,
    files: dict[str, Path],
    bad_input_figures: Figures,
    data: st.DataObject,
) -> None:
    verb = data.draw(st.sampled_from(sorted(VERBS)))
    if verb == "submit":
        framework = data.draw(st.sampled_from(["pytorch", "tf", "mpi", "trainjob", "x"]))
        args = [framework, *data.draw(arguments(verb, files))]
        args += data.draw(st.sampled_from([[], ["--"], ["--", "python3", "-c", "print(1)"]]))
    else:
        args = data.draw(arguments(verb, files))
    line = command_line(verb, args, namespace)
    ran = run_in_process(line)
    bad_input_figures.add("inputs: cli invocations")
    check_failure_is_one_line(line, ran)
    if verb in DAEMONS:
        assert ran.code == 2


@pytest.mark.parametrize(
    "args",
    [
        ["submit", "pytorch", "--workers", "two", "--", "python3"],
        ["validate", "-f", "/nonexistent/job.yaml"],
        ["get", "x", "--kubeconfig", "/nonexistent/kubeconfig"],
    ],
    ids=lambda args: " ".join(args),
)
def test_the_real_entry_point_says_one_line(
    cli: tuple[str, Path], namespace: str, bad_input_figures: Figures, args: list[str]
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetrain",
            *args,
            *(["-n", namespace] if "-n" in VERBS.get(args[0], []) else []),
        ],
        capture_output=True,
        text=True,
        timeout=HANG,
        env=dict(os.environ),
    )
    bad_input_figures.add("inputs: cli invocations")
    assert done.returncode not in (0, EXIT_INTERNAL), done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("verb", "name", "says"),
    [
        ("validate", "huge.yaml", "larger than 4 MiB"),
        ("validate", "deep-flow.yaml", "nested too deeply"),
        ("validate", "deep.json", "nested too deeply"),
        ("validate", "deep-block.yaml", "nested too deeply"),
        ("validate", "laughs.yaml", "YAML aliases repeated"),
        ("apply", "huge.yaml", "larger than 4 MiB"),  # apply reads files as validate does
        ("apply", "deep-flow.yaml", "nested too deeply"),
    ],
)
def test_a_huge_or_deep_file_is_one_line_in_bounded_time_and_memory(
    cli: tuple[str, Path],
    namespace: str,
    files: dict[str, Path],
    bad_input_figures: Figures,
    verb: str,
    name: str,
    says: str,
) -> None:
    args = [verb, "-f", str(files[name])] + (["-n", namespace] if verb == "apply" else [])
    if verb == "validate" and name in ("huge.yaml", "laughs.yaml"):  # its memory is measured
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "kubetrain", *args],
            capture_output=True,
            text=True,
            timeout=TIME_LIMIT * 3,
            env=dict(os.environ),
        )
        elapsed = time.monotonic() - started
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
        ran = Ran(done.returncode, done.stdout, done.stderr)
        assert elapsed < TIME_LIMIT, elapsed
        assert peak < MEMORY_LIMIT or before * 1024 >= MEMORY_LIMIT, peak
    else:
        started = time.monotonic()
        ran = run_in_process(args)
        assert time.monotonic() - started < TIME_LIMIT
    bad_input_figures.add("inputs: cli invocations")
    assert ran.code == 1, ran.err
    check_failure_is_one_line(args, ran)
    lines = ran.err.splitlines()
    assert len(lines) == 1, ran.err
    assert says in lines[0], lines[0]
    assert str(files[name]) in lines[0]
