"""``kubectl port-forward`` to a pod the node agent runs, through the local API server and the
node's ``/portForward``: to the pod and to a Service, over the WebSocket tunnel kubectl 1.31+
asks for first and over plain SPDY/3.1 (its fallback), two connections at once, and the
kubelet's error for a port nothing listens on."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from kubernetes import client

from tests import portforward
from tests.fixtures.waits import wait_for
from tests.integration.local.conftest import Node, container, make_pod, phase_is, wait_pod


def test_kubectl_port_forward_to_a_pod_and_a_service(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubeconfig: str,
    node: Node,
    namespace: str,
) -> None:
    port, closed = portforward.free_port(), portforward.free_port()
    ports = [{"name": "echo", "containerPort": port}, {"name": "idle", "containerPort": closed}]
    pod = make_pod(
        core,
        namespace,
        "echo",
        node,
        container("main", portforward.echo_command(port), ports=ports),
        restart="Always",
    )
    # kubectl resolves svc/echo to this pod by the Service's selector
    core.patch_namespaced_pod("echo", namespace, {"metadata": {"labels": {"app": "echo"}}})
    core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "echo"},
            "spec": {
                "selector": {"app": "echo"},
                "ports": [{"name": "web", "port": 80, "targetPort": "echo"}],
            },
        },
    )
    wait_pod(api_client, namespace, "echo", phase_is("Running"))
    wait_for(lambda: "listening" in core.read_namespaced_pod_log("echo", namespace), timeout=30)
    base = ["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "port-forward"]
    payloads = [b"first " * 5000, b"second " * 7000]

    # kubectl's default: SPDY tunnelled in a WebSocket (at -v=4 kubectl says when it falls back
    # to plain SPDY, which would pass the echo checks too)
    with portforward.forwarding([*base, "-v=4", "pod/echo", f":{port}"]) as forward:
        assert forward.remote == port
        assert portforward.echoes_concurrently(forward, payloads) == payloads
        assert portforward.echoes_concurrently(forward, [b"again"]) == [b"again"]
        assert "fallback to secondary dialer" not in forward.err.text
        assert "Before WebSocket Upgrade Connection" in forward.err.text

    # kubectl's fallback, plain SPDY/3.1, to the pod behind the Service's named targetPort
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBECTL_PORT_FORWARD_WEBSOCKETS"] = "false"
    with portforward.forwarding([*base, "svc/echo", ":80"], env=env) as forward:
        assert forward.remote == port
        assert portforward.echoes_concurrently(forward, payloads) == payloads

    # a declared port nothing listens on: the connection closes and kubectl says why
    with portforward.forwarding([*base, "pod/echo", f":{closed}"]) as forward:
        assert portforward.closed_without_data(forward)
        message = forward.err.wait_for(portforward.ERROR)
        assert f"error forwarding port {closed} to pod {pod['uid']}" in message[0]
        assert f"dial tcp4 127.0.0.1:{closed}: connect: connection refused" in message[0]


def test_kubetrain_port_forward_opens_a_jobs_declared_port(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubeconfig: str,
    node: Node,
    namespace: str,
) -> None:
    """The job's first replica, its port by name, over the kubelet's WebSocket channels; the
    pods are made as the operator makes them (no operator runs beside these tests)."""
    port, closed = portforward.free_port(), portforward.free_port()
    template = {"spec": {"containers": [container("pytorch", ["true"])]}}
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        "kubeflow.org",
        "v1",
        namespace,
        "pytorchjobs",
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "tb"},
            "spec": {
                "pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": template},
                    "Worker": {"replicas": 1, "template": template},
                }
            },
        },
    )
    for rtype, command in (("worker", ["sleep", "60"]), ("master", portforward.echo_command(port))):
        ports = []
        if rtype == "master":
            ports = [
                {"name": "tensorboard", "containerPort": port},
                {"name": "idle", "containerPort": closed},
            ]
        name = f"tb-{rtype}-0"
        make_pod(core, namespace, name, node, container("pytorch", command, ports=ports))
        labels = {
            "training.kubeflow.org/job-name": "tb",
            "training.kubeflow.org/operator-name": "pytorchjob-controller",
            "training.kubeflow.org/replica-type": rtype,
            "training.kubeflow.org/replica-index": "0",
        }
        core.patch_namespaced_pod(name, namespace, {"metadata": {"labels": labels}})
        wait_pod(api_client, namespace, name, phase_is("Running"))
    wait_for(
        lambda: "listening" in core.read_namespaced_pod_log("tb-master-0", namespace), timeout=30
    )
    command = [sys.executable, "-m", "kubetrain", "port-forward", "tb", ":tensorboard"]
    command += ["--kubeconfig", kubeconfig, "-n", namespace]
    with portforward.forwarding(command) as forward:
        assert forward.remote == port
        payloads = [b"one " * 4000, b"two " * 3000]
        assert portforward.echoes_concurrently(forward, payloads) == payloads
    # nothing listens: the connection closes, and the node's message is printed
    with portforward.forwarding([*command[:5], ":idle", *command[6:]]) as forward:
        assert portforward.closed_without_data(forward)
        pattern = re.compile(rf"kubetrain: port {closed}: error forwarding port {closed} [^\n]*\n")
        assert "connect: connection refused" in forward.err.wait_for(pattern)[0]
    refused = subprocess.run(
        [*command[:4], "tb", "no-such-port", *command[6:]], capture_output=True, text=True
    )
    assert refused.returncode != 0
    assert "declares no port named 'no-such-port'" in refused.stderr
    assert f"tensorboard={port}" in refused.stderr
