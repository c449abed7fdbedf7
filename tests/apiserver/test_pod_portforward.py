"""``pods/portforward`` before any upgrade, on both servers: a missing pod is not found, and a
pod no node runs yet is refused in kube-apiserver's words (``PortForwardLocation``). The
forwarding itself needs a node: tests/integration/local/test_node_portforward.py (the local
plane) and tests/realk8s/test_node_agent.py (kube-apiserver)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

NO_SCHEDULER = "kubetrain-test-nobody"  # no scheduler binds pods that name it


def test_port_forward_needs_a_pod_that_a_node_runs(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as missing:
        core.connect_post_namespaced_pod_portforward("nope", namespace, ports="6006")
    assert missing.value.status == 404
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "waiting"},
            "spec": {
                "schedulerName": NO_SCHEDULER,
                "containers": [{"name": "main", "image": "python:3"}],
            },
        },
    )
    with pytest.raises(ApiException) as unbound:
        core.connect_post_namespaced_pod_portforward("waiting", namespace, ports="6006")
    assert unbound.value.status == 400
    assert json.loads(unbound.value.body)["message"] == "pod waiting does not have a host assigned"
