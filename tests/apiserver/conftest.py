"""Fixtures for API behaviour tests: a target API server, official clients, kubectl, and a fresh
namespace per test.

The target is ``KUBETRAIN_TEST_KUBECONFIG`` when set (any Kubernetes API server, a real
kube-apiserver included); otherwise a fresh local control plane, in memory, on a free port,
in a temporary ``KUBETRAIN_HOME``, started once per session in a subprocess and stopped at the
end. The developer's own ``KUBECONFIG`` is never used.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

START_TIMEOUT = 60.0
NAMESPACE_PREFIX = "kt-"

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(autouse=True)
def _hide_developer_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests reach only the target API server, never the developer's cluster."""
    monkeypatch.delenv("KUBECONFIG", raising=False)


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = str(home)
    return env


def _ready(home: Path, pid: int) -> bool:
    from kubetrain.local import daemon  # test infrastructure only: where to look, not the API

    paths = daemon.Paths(str(home))
    status = daemon.read_status(paths)
    if not status or status.get("pid") != pid or not status.get("url"):
        return False
    return daemon.probe_ready(paths, status["url"], timeout=1.0)


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Path of a kubeconfig for the API server under test."""
    given = os.environ.get("KUBETRAIN_TEST_KUBECONFIG")
    if given:
        yield given
        return
    home = tmp_path_factory.mktemp("kubetrain-home")
    log_path = home / "apiserver.log"
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
    ]
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            command, stdout=log_file, stderr=subprocess.STDOUT, env=_environment(home)
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ready(home, process.pid):
            if process.poll() is not None:
                pytest.fail(
                    f"the local control plane exited ({process.returncode}):\n"
                    + log_path.read_text(errors="replace")[-4000:]
                )
            if time.monotonic() > deadline:
                pytest.fail("the local control plane did not become ready in time")
            time.sleep(0.05)
        yield str(home / "kubeconfig")
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def api_client(kubeconfig: str) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=kubeconfig)
    try:
        yield api
    finally:
        api.close()


@pytest.fixture(scope="session")
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


@pytest.fixture(scope="session")
def kubectl(kubeconfig: str) -> Kubectl:
    """Runs the real kubectl against the target: ``kubectl("get", "ns", input=None)``.

    Returns the CompletedProcess (text); fails the test on a non-zero exit unless
    ``check=False``.
    """
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed (it is on CI and on our machines)")

    def run(
        *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        result = subprocess.run(
            [binary, "--kubeconfig", kubeconfig, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        if check and result.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
        return result

    return run


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    name = NAMESPACE_PREFIX + secrets.token_hex(4)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while True:  # the ServiceAccount controller's default account comes asynchronously
        try:
            core.read_namespaced_service_account("default", name)
            break
        except ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    try:
        yield name
    finally:
        with contextlib.suppress(ApiException):
            core.delete_namespace(name)


def wait_for(condition: Callable[[], Any], *, timeout: float = 30.0, interval: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s")
        time.sleep(interval)
