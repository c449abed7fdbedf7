"""Two pods of one namespace reach each other by name over TCP, as a job's replicas do: a
worker started before its master's Service resolves the Service's name once it exists, and the
master resolves the worker's ``hostname.subdomain`` name. Every name means this node."""

from __future__ import annotations

import contextlib
import socket

from kubernetes import client

from tests.integration.local.conftest import Node, container, make_pod, phase_is, python, wait_pod

RESOLVE = """
import socket, time
def resolve(name, timeout=20):
    deadline = time.time() + timeout
    while True:
        try:
            return socket.gethostbyname(name)
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
"""

MASTER = (
    RESOLVE
    + """
import sys
port, peer = int(sys.argv[1]), sys.argv[2]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(('0.0.0.0', port))
server.listen()
print('peer', peer, 'is', resolve(peer), flush=True)
conn, _ = server.accept()
conn.sendall(b'pong:' + conn.recv(100))
conn.close()
"""
)

WORKER = (
    RESOLVE
    + """
import sys
port, service = int(sys.argv[1]), sys.argv[2]
address = resolve(service)
deadline = time.time() + 20
while True:  # the master may not listen yet, as a rendezvous client retries
    try:
        conn = socket.create_connection((service, port), timeout=10)
        break
    except ConnectionRefusedError:
        if time.time() > deadline:
            raise
        time.sleep(0.05)
with conn:
    conn.sendall(b'ping from worker')
    print(conn.recv(100).decode(), 'via', address, flush=True)
"""
)


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def running(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def test_pods_reach_each_other_by_service_and_pod_names(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    node.needs_isolation()
    port = free_port()
    service = f"master.{namespace}.svc.cluster.local"
    make_pod(
        core,
        namespace,
        "worker",
        node,
        container("main", [*python(WORKER), str(port), service]),
        hostname="w-0",
        subdomain="grp",
    )
    wait_pod(api_client, namespace, "worker", running)
    make_pod(
        core,
        namespace,
        "master",
        node,
        container("main", [*python(MASTER), str(port), "w-0.grp"]),
        hostname="master-0",
    )
    core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "master"},
            "spec": {"selector": {"app": "master"}, "ports": [{"port": port}]},
        },
    )
    wait_pod(api_client, namespace, "worker", phase_is("Succeeded", "Failed"), timeout=30)
    worker_log = core.read_namespaced_pod_log("worker", namespace)
    assert worker_log == "pong:ping from worker via 127.0.0.1\n"
    wait_pod(api_client, namespace, "master", phase_is("Succeeded"), timeout=10)
    assert core.read_namespaced_pod_log("master", namespace) == "peer w-0.grp is 127.0.0.1\n"
