"""Fixtures for API behaviour tests: a target API server, official clients, kubectl, and a fresh
namespace per test.

The target is ``KUBETRAIN_TEST_KUBECONFIG`` when set (any Kubernetes API server, a real
kube-apiserver included). Otherwise every test of tests/apiserver runs twice, once per target
(``[local]`` and ``[kube-apiserver]`` in its id): a fresh local control plane, in memory, on a
free port, in a temporary ``KUBETRAIN_HOME``, started once per session in a subprocess; and
the session's real control plane (:mod:`tests.realcluster`), which skips where its binaries
are not installed, with kubetrain's admission webhooks registered on it (``kubetrain operator
--webhook-url``, :mod:`tests.webhookoperator`), as a cluster with kubetrain installed has
them. Tests elsewhere that use these fixtures get the local target alone. The developer's own
``KUBECONFIG`` is never used.

Where the two servers differ, kube-apiserver is right, unless its answer is a defect (a 500 for
a client error): a test that checks kubetrain's better answer asks for :func:`local_only`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kubetrain import envtest
from tests import localapiserver, realcluster, webhookoperator
from tests.realcluster import real_control_plane  # noqa: F401  (a fixture, found by name)

NAMESPACE_PREFIX = "kt-"
LOCAL = "local"
REAL = "kube-apiserver"
GIVEN = "given"  # KUBETRAIN_TEST_KUBECONFIG: whatever server it names
TARGET_ENV = "KUBETRAIN_TEST_KUBECONFIG"

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(autouse=True)
def _hide_developer_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests reach only the target API server, never the developer's cluster."""
    monkeypatch.delenv("KUBECONFIG", raising=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test here that reaches a server runs on both targets, unless one is given."""
    if "kubeconfig" in metafunc.fixturenames and not os.environ.get(TARGET_ENV):
        metafunc.parametrize("kubeconfig", _targets(), indirect=True, scope="session")


def _targets() -> list[str]:
    """Both servers; the local one alone where no real one can start (the session's summary
    says so once: tests/conftest.py)."""
    return [LOCAL, REAL] if realcluster.available() else [LOCAL]


def target_of(request: pytest.FixtureRequest) -> str:
    """Which server the requesting test runs against: :data:`LOCAL`, :data:`REAL` or
    :data:`GIVEN`."""
    if os.environ.get(TARGET_ENV):
        return GIVEN
    callspec = getattr(request.node, "callspec", None)
    return str(callspec.params.get("kubeconfig", LOCAL)) if callspec else LOCAL


@pytest.fixture
def target(request: pytest.FixtureRequest) -> str:
    """The server this test runs against (see :func:`target_of`)."""
    return target_of(request)


def local_only(target: str, why: str) -> None:
    """Skip unless the target is the local control plane the tests started, saying ``why``:
    what kubetrain does better there, or what only it is set up for."""
    if target != LOCAL:
        pytest.skip(f"local control plane only: {why}")


@pytest.fixture(scope="session")
def real_admission(
    real_control_plane: envtest.ControlPlane,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[webhookoperator.WebhookOperator]:
    """kubetrain's admission webhooks, registered on the session's real control plane for as
    long as the session runs, and unregistered at its end."""
    operator = webhookoperator.WebhookOperator(
        real_control_plane.kubeconfig, tmp_path_factory.mktemp("webhook-operator")
    )
    operator.start()
    try:
        yield operator
    finally:
        operator.stop()


@pytest.fixture(scope="session")
def kubeconfig(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Path of a kubeconfig for the API server under test."""
    given = os.environ.get(TARGET_ENV)
    if given:
        yield given
        return
    if getattr(request, "param", LOCAL) == REAL:
        request.getfixturevalue("real_admission")
        yield request.getfixturevalue("real_control_plane").kubeconfig
        return
    with localapiserver.running(tmp_path_factory.mktemp("kubetrain-home")) as path:
        yield path


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
