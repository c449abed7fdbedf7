"""Fixtures for the container runtime's end-to-end tests: one ``dockerd`` of the session's own
(:mod:`tests.engines`: own data root and socket, host network only), a busybox image imported
into it offline, and one local control plane whose node runs every image but the host image in
that engine (``--container-runtime docker``, the engine found through ``DOCKER_HOST``).

They skip, naming what to install, where ``dockerd`` or a static busybox is missing.

``KUBETRAIN_TEST_CONTAINER_HOST`` names an engine already running instead (Podman's Docker API
service, say: ``unix:///run/podman/podman.sock``), with ``KUBETRAIN_TEST_CONTAINER_RUNTIME``
the node's ``--container-runtime`` for it (``podman``; default ``docker``); docs/containers.md
has the Podman run.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import engines
from tests.e2e.conftest import ControlPlane, local_plane

EXTERNAL = "KUBETRAIN_TEST_CONTAINER_HOST"
KIND = "KUBETRAIN_TEST_CONTAINER_RUNTIME"


@pytest.fixture(scope="session")
def engine() -> Iterator[engines.Engine]:
    if os.environ.get(EXTERNAL):
        with tempfile.TemporaryDirectory(prefix="kt-engine-") as directory:
            yield engines.Engine(os.environ[EXTERNAL], Path(directory), Path(directory) / "log")
        return
    problem = engines.missing()
    if problem:
        pytest.skip(problem)
    # a short path: a unix socket's path may not be longer than 107 bytes; removed at the end
    with engines.dockerd(Path(tempfile.mkdtemp(prefix="kt-engine-"))) as started:
        yield started


@pytest.fixture(scope="session")
def image(engine: engines.Engine) -> str:
    return engines.busybox_image(engine)


@pytest.fixture(scope="session")
def plane(
    engine: engines.Engine, image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    home = tmp_path_factory.mktemp("kubetrain-containers")
    kind = os.environ.get(KIND, "docker")
    with local_plane(
        home, environ={"DOCKER_HOST": engine.host}, args=("--container-runtime", kind)
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
