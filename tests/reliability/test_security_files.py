"""The local control plane's state is private to its owner: after ``kubetrain up`` and a job
that was given a Secret, every directory under ``$KUBETRAIN_HOME`` is 0700 and every file
0600, and the Secret's value rests only in such files.

Three kinds of entry keep another mode, on purpose, and only below 0700 directories, so no
other user can reach them either: what a pod's volumes hold (a Secret or ServiceAccount token
volume has the mode its pod spec asks for, 0644 unless ``defaultMode`` says otherwise, as on
Kubernetes), the node's programs that pods run (``node/bin``: executable, no data), and a
container's layers (``.../layers/N``: the directory a container sees in place of a host one
that lacks a mount point, with that directory's mode and the entries that stand for the host's
own, symlinks included; nothing of the control plane's is in them).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:  # imported by pytest as a plugin, before this module (see below)
    from tests.reliability.security_fixtures import Plane, SecretRun

# One control plane for every module of the suite: fixtures from a plugin are shared, those
# imported into a module would be started again for each.
pytest_plugins = ["tests.reliability.security_fixtures"]

PRIVATE_DIR: Final = 0o700
PRIVATE_FILE: Final = 0o600
# State that must exist after `kubetrain up` and one job: the walk would prove nothing if the
# layout moved and these were never seen.
EXPECTED: Final = (
    "kubeconfig",
    "state.db",
    "pki/ca.key",
    "pki/apiserver.key",
    "pki/token",
    "logs/daemon.log",
    "status.json",
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def pod_content(rel: Path) -> bool:
    """A file inside a pod volume: its mode is the pod spec's (Kubernetes' defaultMode)."""
    parts = rel.parts
    return len(parts) > 4 and parts[:2] == ("node", "pods") and parts[3] == "volumes"


def layer(rel: Path) -> bool:
    """Inside a container's layer over a host directory (see the module docstring)."""
    parts = rel.parts
    return parts[:2] == ("node", "pods") and "layers" in parts[4:-1]


def program(rel: Path, path: Path) -> bool:
    return rel.parts[:2] == ("node", "bin") and os.access(path, os.X_OK)


def walk(home: Path) -> list[Path]:
    found = [home]
    for root, dirs, files in os.walk(home):
        found += [Path(root, d) for d in dirs]
        found += [Path(root, f) for f in files]
    return found


def test_every_directory_is_0700_and_every_file_0600(
    plane: Plane, request: pytest.FixtureRequest
) -> None:
    # The job's pods add their files; a host that cannot run it (see the fixture) still has
    # the state of `kubetrain up` to check.
    with contextlib.suppress(pytest.skip.Exception):
        request.getfixturevalue("secret_run")
    wrong = []
    for path in walk(plane.home):
        rel = path.relative_to(plane.home)
        shown = f"{oct(mode(path))} {rel}"
        if layer(rel):
            continue  # the host directory's own mode (see the module docstring)
        if path.is_symlink():
            wrong.append(f"{shown} (a symlink)")
        elif path.is_dir():
            if mode(path) != PRIVATE_DIR:
                wrong.append(shown)
        elif pod_content(rel) or program(rel, path):
            if mode(path) & 0o022:  # never writable by others, even below 0700
                wrong.append(f"{shown} (writable by others)")
        elif mode(path) != PRIVATE_FILE:
            wrong.append(shown)
    assert not wrong, "not private:\n" + "\n".join(wrong)


def test_the_walk_saw_the_state_pod_logs_and_the_pod_spec(
    plane: Plane, secret_run: SecretRun
) -> None:
    for rel in EXPECTED:
        assert (plane.home / rel).is_file(), rel
    names = {path.name for path in walk(plane.home / "node")}
    assert {"log", "spec.marshal", "state.json"} <= names


def test_the_secret_rests_only_in_private_files(plane: Plane, secret_run: SecretRun) -> None:
    """The database holds it (as etcd does), the container's spec holds it (its env, as the
    kubelet does) and its Secret volume holds it; nothing else, and all of them private."""
    holding = []
    for path in walk(plane.home):
        if path.is_file() and any(form.encode() in path.read_bytes() for form in secret_run.forms):
            holding.append(path.relative_to(plane.home))
    names = sorted(str(p) for p in holding)
    assert holding, "the Secret is stored somewhere: the walk is looking in the wrong place"
    for rel in holding:
        in_store = rel.name.startswith("state.db")
        in_spec = rel.name == "spec.marshal"
        in_volume = pod_content(rel) and rel.parts[4] == "creds"
        assert in_store or in_spec or in_volume, names
        below = [plane.home / Path(*rel.parts[:i]) for i in range(1, len(rel.parts))]
        assert all(mode(d) == PRIVATE_DIR for d in [plane.home, *below]), names
        if not in_volume:
            assert mode(plane.home / rel) == PRIVATE_FILE, names


def test_a_containers_own_process_gets_a_container_runtimes_umask(secret_run: SecretRun) -> None:
    """The node keeps its files private with umask 077; what a container writes is its own
    business, and gets containerd's and Docker's default, as on Kubernetes."""
    lines = secret_run.pod_log.splitlines()  # `kubetrain logs`: "[master-0] umask 0o22"
    assert any(line.endswith(" umask 0o22") for line in lines), secret_run.pod_log
