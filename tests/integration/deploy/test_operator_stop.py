"""The operator as its Deployment runs it (``deploy/operator/deployment.yaml``'s args, with
leader election): the kubelet stops a pod with SIGTERM, and the operator must then stop and
hand its Lease back, so that a rolling update's new pod takes over at once instead of after
the grace period and the lease duration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from kubetrain.operator.runtime import manager
from tests.fixtures.waits import wait_for
from tests.unit.deploy.manifests import OPERATOR, load

STOP_TIMEOUT = 20.0


def deployment_args() -> list[str]:
    (container,) = load(OPERATOR / "deployment.yaml")["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def holder(api_client: client.ApiClient, namespace: str) -> str | None:
    leases = client.CoordinationV1Api(api_client)
    try:
        lease: Any = leases.read_namespaced_lease(manager.LEASE_NAME, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return lease.spec.holder_identity or None


def test_sigterm_stops_the_operator_and_releases_its_lease(
    kubeconfig: str, namespace: str, api_client: client.ApiClient
) -> None:
    command = [
        sys.executable,
        "-m",
        "kubetrain",
        *deployment_args(),
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        namespace,
        "--leader-election-namespace",
        namespace,
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        "--disable-trainjob",
    ]
    assert "--leader-elect" in command
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "POD_NAMESPACE")}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        wait_for(lambda: holder(api_client, namespace))
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=STOP_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, (
        f"exit {process.returncode}: " + stderr.decode(errors="replace")[-2000:]
    )
    assert holder(api_client, namespace) is None
