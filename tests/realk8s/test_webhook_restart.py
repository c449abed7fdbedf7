"""The webhook operator killed while kube-apiserver is calling it, on a real kube-apiserver.

With ``failurePolicy: Fail``, kubetrain's kinds are refused while the operator is down: every
``kubectl apply`` in flight when it dies, and every one sent while it is down, fails with
kube-apiserver's "failed calling webhook" error within the webhook's timeout, and none hangs.
The operator restarted on the same address serves again with the same CA, read back from its
Secret, so the ``caBundle`` kube-apiserver holds stays as it was. A clean stop removes the
configurations it registered, and only those.

The control plane is this module's own: the webhook registers cluster-scoped configurations,
and this test leaves a cluster that refuses kubetrain's kinds for a while.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubetrain import envtest
from kubetrain.operator.webhook import configurations
from tests import realcluster
from tests.webhookoperator import SECRET_NAMESPACE, WebhookOperator

TIMEOUT_SECONDS = configurations.TIMEOUT_SECONDS
SLACK = 20.0  # seconds for kubectl, kube-apiserver and 2 busy cores beyond the webhook timeout
IN_FLIGHT = 3
JOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  namespace: default
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: {workers}
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
"""
FAILED_CALLING = 'failed calling webhook "validate.pytorchjob.kubeflow.org"'


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[envtest.ControlPlane]:
    if not realcluster.available():
        pytest.skip(f"no real Kubernetes control plane: {'; '.join(realcluster.missing)}")
    made = envtest.ControlPlane(
        envtest.find_assets(),
        tmp_path_factory.mktemp("restart-kube-apiserver"),
        controllers=False,
        scheduler=False,
        crds=(realcluster.CRDS,),
    )
    try:
        made.start()
    except RuntimeError as exc:
        pytest.fail(f"the real control plane did not start: {exc}")
    try:
        yield made
    finally:
        made.stop()


def apply(plane: envtest.ControlPlane, name: str, workers: int = 1) -> tuple[float, str, int]:
    """``kubectl apply`` of a PyTorchJob: (seconds it took, its error output, exit code)."""
    started = time.monotonic()
    done = subprocess.run(
        ["kubectl", "--kubeconfig", plane.kubeconfig, "apply", "-f", "-"],
        input=JOB.format(name=name, workers=workers),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS + SLACK + 30,
        env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
    )
    return time.monotonic() - started, done.stderr, done.returncode


def ca_bundles(plane: envtest.ControlPlane) -> set[str]:
    found = set()
    for kind, name in (
        ("validatingwebhookconfiguration", configurations.VALIDATING),
        ("mutatingwebhookconfiguration", configurations.MUTATING),
    ):
        out = plane.kubectl(
            "get", kind, name, "-o", "jsonpath={.webhooks[*].clientConfig.caBundle}"
        )
        found |= set(out.split())
    return found


def secret(plane: envtest.ControlPlane) -> str:
    """The data of the Secret that keeps the webhook's CA and certificate."""
    return plane.kubectl(
        "get", "secret", "-n", SECRET_NAMESPACE, "kubetrain-operator-webhook-cert",
        "-o", "jsonpath={.data}",
    )  # fmt: skip


def unread_bytes(port: int) -> int:
    """Bytes waiting, unread, on the sockets of local ``port`` (a listening socket's accept
    backlog counts as one each): requests that reached the stopped operator."""
    waiting = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as f:
            next(f)
            for row in f:
                fields = row.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port:
                    waiting += int(fields[4].split(":")[1], 16)
    return waiting


def wait_until(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {timeout:.0f}s: {what}"
        time.sleep(0.05)


def test_a_killed_webhook_fails_closed_in_time_and_comes_back_with_the_same_ca(
    plane: envtest.ControlPlane, tmp_path: Path
) -> None:
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("needs /proc/net/tcp to see requests waiting on the operator's socket")
    operator = WebhookOperator(plane.kubeconfig, tmp_path)
    operator.start()
    try:
        bundles = ca_bundles(plane)
        assert len(bundles) == 1, "every webhook trusts the one CA"
        kept = secret(plane)
        assert apply(plane, "before")[2] == 0

        # Stopped, it holds every call kube-apiserver makes; killed, it drops them all.
        assert operator.process is not None
        operator.process.send_signal(signal.SIGSTOP)
        with concurrent.futures.ThreadPoolExecutor(IN_FLIGHT) as pool:
            calls = [pool.submit(apply, plane, f"in-flight-{i}") for i in range(IN_FLIGHT)]
            wait_until(lambda: unread_bytes(operator.port) > 0, 30, "a call reaches it")
            operator.kill()
            results = [call.result() for call in calls]
        for took, stderr, code in results:
            assert code != 0
            assert FAILED_CALLING in stderr
            assert took < TIMEOUT_SECONDS + SLACK, f"hung for {took:.0f}s: {stderr}"

        # Down: refused at once, saying why.
        took, stderr, code = apply(plane, "while-down")
        assert code != 0
        assert FAILED_CALLING in stderr
        assert "connect: connection refused" in stderr
        assert took < SLACK

        operator.start()
        assert ca_bundles(plane) == bundles, "the restarted operator serves with the same CA"
        assert secret(plane) == kept, "nothing was renewed"
        assert apply(plane, "after")[2] == 0
        took, stderr, code = apply(plane, "refused", workers=0)
        assert code != 0
        assert (
            'The PyTorchJob "refused" is invalid: spec.pytorchReplicaSpecs[Worker].replicas: '
            "Forbidden: must be at least 1"
        ) in stderr
    finally:
        operator.stop()
    kinds = "validatingwebhookconfigurations,mutatingwebhookconfigurations"
    assert plane.kubectl("get", kinds, "-o", "name").strip() == "", "a clean stop unregisters"
    assert "kubetrain-operator-webhook-cert" in plane.kubectl(
        "get", "secret", "-n", SECRET_NAMESPACE, "-o", "name"
    ), "the CA stays for the next start"
