"""Fixtures for the end-to-end tests: every scenario runs on two control planes, with one test
body (``[local]`` and ``[kube-apiserver]`` in its id, the ``kubeconfig`` fixture's parameter):

- ``local``: a whole local control plane (API server, scheduler, node agent, operator), as
  ``kubetrain up`` runs it, started once per session in a subprocess:
  ``kubetrain apiserver --memory --port 0 --with-workloads`` in a temporary
  ``KUBETRAIN_HOME``, with a short crash back-off for its node (``--node-backoff``);
- ``kube-apiserver``: the session's real control plane (etcd, kube-apiserver,
  kube-controller-manager, kube-scheduler) with kubetrain's operator and node on it, as
  docs/cluster.md tells users to run them next to each other on one host
  (:mod:`tests.e2e.realplane`). It skips, saying what to set, where the binaries are not
  installed.

Either way a test's pods run for real as processes of this machine, and a fresh namespace per
test holds them. The node of this machine is the point of these tests, so they always start
their own control planes, whatever ``KUBETRAIN_TEST_KUBECONFIG`` says. They skip, saying why,
where this host gives pods no private mount namespace (service names then cannot resolve in
pods) and, for the torch tests, where torch is not installed. A failed test shows the last
lines of the logs of the plane it ran on.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubetrain import kube
from kubetrain.local.node import runtime
from tests import localapiserver, processes
from tests.apiserver.cascade import eventually, run
from tests.e2e import realplane
from tests.fixtures import cluster

# This directory's ``kubeconfig`` names planes of its own (below), so the session-scoped
# clients built on it are fixtures of this conftest: the suite's, cached for the session,
# serve the suite's own servers. The namespace and the environment are the suite's.
api_client = cluster.api_client
core = cluster.core
real_cluster = realplane.real_cluster
local_only = cluster.local_only  # local_only(plane, why): skips on the real plane

LOCAL = cluster.LOCAL
REAL = cluster.REAL
PLANES = (LOCAL, REAL)

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


@contextlib.contextmanager
def local_plane(
    home: Path,
    *,
    cwd: Path | None = None,
    environ: dict[str, str] | None = None,
    args: Sequence[str] = (),
) -> Iterator[ControlPlane]:
    """A local control plane with its workloads in ``home``, ready and with its node Ready,
    started from ``cwd`` with ``environ`` over this process's environment and ``args`` after
    its own (``--container-runtime docker``); stopped (with every container its node runs)
    when the block ends."""
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
        *args,
    ]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = str(home)
    env.update(environ or {})
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            command, stdout=log_file, stderr=subprocess.STDOUT, env=env, cwd=cwd
        )
    plane = ControlPlane(home, str(home / "kubeconfig"), log_path)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not localapiserver._ready(home, process.pid):
            if process.poll() is not None:
                pytest.fail(f"the control plane exited ({process.returncode}):\n{plane.tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the control plane did not become ready in time:\n{plane.tail()}")
            time.sleep(0.05)
        run(_node_ready(plane.kubeconfig))
        yield plane
    finally:
        # the node stops every container it still runs
        processes.stop(process, timeout=STOP_TIMEOUT)


@pytest.fixture(scope="session")
def controlplane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The session's local control plane with its workloads, ready and with its node Ready."""
    home = tmp_path_factory.mktemp("kubetrain-e2e")
    problem = _isolation_problem(home / "probe")
    if problem:
        pytest.skip(problem)
    with local_plane(home) as plane:
        yield plane


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every scenario that reaches a control plane runs on both."""
    if "kubeconfig" in metafunc.fixturenames:
        metafunc.parametrize("kubeconfig", PLANES, indirect=True, scope="session")


@pytest.fixture(scope="session")
def kubeconfig(request: pytest.FixtureRequest) -> str:
    """The kubeconfig of the plane this test runs on (the fixtures of tests/apiserver use it by
    name)."""
    if getattr(request, "param", LOCAL) == REAL:
        problem = _isolation_problem(request.getfixturevalue("tmp_path_factory").mktemp("probe"))
        if problem:
            pytest.skip(problem)
        cluster: realplane.RealCluster = request.getfixturevalue("real_cluster")
        _planes[REAL] = cluster.tail
        return cluster.kubeconfig
    local: ControlPlane = request.getfixturevalue("controlplane")
    _planes[LOCAL] = lambda component, chars=4000: local.tail(chars)
    return local.kubeconfig


@pytest.fixture
def plane(request: pytest.FixtureRequest) -> str:
    """The plane this test runs on: :data:`LOCAL` or :data:`REAL`."""
    callspec = getattr(request.node, "callspec", None)
    return str(callspec.params.get("kubeconfig", LOCAL)) if callspec else LOCAL


# The log tails of the planes started so far, for the report of a failed test.
_planes: dict[str, Callable[..., str]] = {}
_LOGS = {LOCAL: ("controlplane",), REAL: ("operator", "node")}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    callspec = getattr(item, "callspec", None)
    which = callspec.params.get("kubeconfig") if callspec else None
    tail = _planes.get(str(which))
    if tail is None:
        return
    for component in _LOGS[str(which)]:
        report.sections.append((f"{which}: {component} log (last lines)", tail(component, 6000)))


@pytest.fixture
def torch_installed() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install -e '.[train]'); it is on our machines")


def script(name: str) -> str:
    """The path of a script under tests/e2e/scripts/, for a container's command."""
    return str(SCRIPTS / name)
