"""Fixtures for the end-to-end tests: a whole local control plane (API server, scheduler, node
agent, operator), as ``kubetrain up`` runs it, started once per session in a subprocess; and a
fresh namespace per test on it.

The control plane is ``kubetrain apiserver --memory --port 0 --with-workloads`` in a
temporary ``KUBETRAIN_HOME``, with a short crash back-off for its node (``--node-backoff``),
so a test's pods run for real as processes of this machine. The node of this machine is the
point of these tests, so they always start their own control plane, whatever
``KUBETRAIN_TEST_KUBECONFIG`` says. They skip, saying why, where this host gives pods no
private mount namespace (service names then cannot resolve in pods) and, for the torch tests,
where torch is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubetrain import kube
from kubetrain.local.node import runtime
from tests.apiserver import conftest as api_fixtures
from tests.apiserver.cascade import eventually, run

# Found by name: clients and a fresh namespace per test, on the ``kubeconfig`` defined here.
_hide_developer_kubeconfig = api_fixtures._hide_developer_kubeconfig
api_client = api_fixtures.api_client
core = api_fixtures.core
namespace = api_fixtures.namespace

START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
NODE_BACKOFF = "0.2"  # seconds: the node's first crash back-off (the kubelet's is 10)
SCRIPTS = Path(__file__).parent / "scripts"
NODES = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")


@dataclass(frozen=True)
class ControlPlane:
    home: Path
    kubeconfig: str
    log: Path

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def _isolation_problem(root: Path) -> str:
    """Why this host's node cannot give pods their own /etc/hosts, or "" when it can."""
    probe = runtime.Runtime(runtime.Settings(root=str(root)))
    if probe.isolation == "namespace":
        return ""
    return (
        "this host gives pods no private mount namespace (needs root or unprivileged user "
        "namespaces), so the service names of a job cannot resolve in its pods"
    )


async def _node_ready(kubeconfig: str) -> None:
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:

        async def ready() -> bool:
            listed = await client.list(NODES)
            return any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for node in listed.get("items") or []
                for c in (node.get("status") or {}).get("conditions") or []
            )

        await eventually(ready, "the control plane's node is Ready", timeout=START_TIMEOUT)


@pytest.fixture(scope="session")
def controlplane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The session's local control plane with its workloads, ready and with its node Ready."""
    home = tmp_path_factory.mktemp("kubetrain-e2e")
    problem = _isolation_problem(home / "probe")
    if problem:
        pytest.skip(problem)
    log_path = home / "controlplane.log"
    command = [
        sys.executable,
        "-m",
        "kubetrain",
        "apiserver",
        "--home",
        str(home),
        "--memory",
        "--port",
        "0",
        "--with-workloads",
        "--node-backoff",
        NODE_BACKOFF,
    ]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = str(home)
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    plane = ControlPlane(home, str(home / "kubeconfig"), log_path)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not api_fixtures._ready(home, process.pid):
            if process.poll() is not None:
                pytest.fail(f"the control plane exited ({process.returncode}):\n{plane.tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the control plane did not become ready in time:\n{plane.tail()}")
            time.sleep(0.05)
        run(_node_ready(plane.kubeconfig))
        yield plane
    finally:
        process.terminate()  # the node stops every container it still runs
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def kubeconfig(controlplane: ControlPlane) -> str:
    """The e2e control plane's kubeconfig (the fixtures of tests/apiserver use it by name)."""
    return controlplane.kubeconfig


@pytest.fixture
def torch_installed() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install -e '.[train]'); it is on our machines")


def script(name: str) -> str:
    """The path of a script under tests/e2e/scripts/, for a container's command."""
    return str(SCRIPTS / name)
