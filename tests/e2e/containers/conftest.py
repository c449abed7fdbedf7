"""Fixtures for the container runtime's end-to-end tests: one local control plane whose node runs
every image but the host image in the session's engine (``--container-runtime`` of
:func:`tests.fixtures.containers.kind`, the engine found through ``DOCKER_HOST``), and kubectl
against it in a fresh namespace. The engine and its busybox image are the shared fixtures
``engine`` and ``image`` (:mod:`tests.fixtures.containers`), which skip, naming what to
install, where ``dockerd`` or a static busybox is missing.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests import engines
from tests.e2e.conftest import ControlPlane, local_plane
from tests.fixtures import containers


@pytest.fixture(scope="session")
def plane(
    engine: engines.Engine, image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    home = tmp_path_factory.mktemp("kubetrain-containers")
    with local_plane(
        home,
        environ={"DOCKER_HOST": engine.host},
        args=("--container-runtime", containers.kind()),
    ) as started:
        yield started


class Kubectl:
    """kubectl against the plane, in one namespace."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.plane = plane
        self.namespace = namespace

    def __call__(self, *args: str, input: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            ["kubectl", "--kubeconfig", self.plane.kubeconfig, "-n", self.namespace, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}\n{self.plane.tail()}")
        return done.stdout + (done.stderr if not check else "")

    def apply(self, *docs: dict[str, Any]) -> None:
        self("apply", "-f", "-", input="\n".join(json.dumps(d) for d in docs))

    def get(self, what: str) -> dict[str, Any]:
        return json.loads(self("get", what, "-o", "json"))


@pytest.fixture
def kubectl(plane: ControlPlane) -> Iterator[Kubectl]:
    name = "ct-" + secrets.token_hex(4)
    run = Kubectl(plane, name)
    run("create", "namespace", name)
    try:
        yield run
    finally:
        run("delete", "namespace", name, "--wait=false", check=False)
