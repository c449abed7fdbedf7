"""The operator image (``Dockerfile``, which cannot be built here): it installs the package
without extras from the files it copies, runs as the non-root user the Deployment expects,
and starts ``kubetrain operator``."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from importlib import metadata

from kubetrain.cli import main
from kubetrain.cli import operator as operator_cli
from tests.unit.deploy.manifests import OPERATOR, ROOT, load

BASE = "python:3.11-slim"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def last(word: str) -> str:
    return [rest for w, rest in instructions() if w == word][-1]


def ignored() -> list[str]:
    text = (ROOT / ".dockerignore").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def is_ignored(path: str) -> bool:
    return any(
        fnmatch.fnmatch(path, pattern) or path.startswith(pattern.rstrip("/") + "/")
        for pattern in ignored()
    )


def test_every_stage_is_python_311_slim_which_the_package_supports() -> None:
    stages = [rest.split()[0] for word, rest in instructions() if word == "FROM"]
    assert stages
    assert set(stages) == {BASE}
    requires = metadata.metadata("kubetrain")["Requires-Python"]
    lowest = re.fullmatch(r">=(\d+)\.(\d+)", requires)
    assert lowest is not None, requires
    assert (int(lowest[1]), int(lowest[2])) <= (3, 11)


def test_the_package_is_installed_from_the_copied_tree_without_extras() -> None:
    installs = [rest for word, rest in instructions() if word == "RUN" and "pip install" in rest]
    (install,) = installs
    argv = shlex.split(install)
    target = argv[-1]
    assert target == ".", f"pip installs {target!r}; expected the package itself, no extras"
    assert "--no-cache-dir" in argv


def test_what_the_install_needs_is_copied_and_not_ignored() -> None:
    copied = []
    for word, rest in instructions():
        if word == "COPY" and not rest.startswith("--from"):
            *sources, _ = rest.split()
            copied += sources
    assert set(copied) >= {"pyproject.toml", "README.md", "kubetrain"}
    for source in copied:
        assert (ROOT / source).exists(), source
        assert not is_ignored(source), f"{source} is in .dockerignore"
    for heavy in (".venv", ".git", "tests"):
        assert is_ignored(heavy), f"{heavy} would be sent to the Docker daemon"


def test_it_runs_as_the_non_root_user_the_deployment_expects() -> None:
    user, _, group = last("USER").partition(":")
    assert user.isdigit()
    assert int(user) != 0
    pod = load(OPERATOR / "deployment.yaml")["spec"]["template"]["spec"]["securityContext"]
    assert int(user) == pod["runAsUser"]
    assert not group or int(group) == pod["runAsGroup"]


def test_the_entry_point_is_kubetrain_and_the_default_command_the_operator() -> None:
    assert json.loads(last("ENTRYPOINT")) == ["kubetrain"]
    scripts = {e.name: e.value for e in metadata.entry_points(group="console_scripts")}
    assert scripts["kubetrain"] == "kubetrain.cli.main:main"
    command = json.loads(last("CMD"))
    assert main.build_parser().parse_args(command).func is operator_cli.run


def test_the_installed_scripts_are_on_the_path() -> None:
    venvs = [rest.split()[-1] for word, rest in instructions() if word == "RUN" and "venv" in rest]
    (venv,) = venvs
    env = [rest for word, rest in instructions() if word == "ENV"]
    assert env
    assert all(f"PATH={venv}/bin:" in rest for rest in env)
