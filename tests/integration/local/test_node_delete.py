"""Deleting a pod stops its processes, all of them: a graceful delete gives the main process
its SIGTERM and grace period, then the node deletes the Pod for good; a forced delete (grace 0)
leaves the node to stop whatever still runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.local.conftest import (
    Node,
    container,
    make_pod,
    python,
    wait_for,
    wait_pod,
)

# The main process starts a child in a session of its own (out of the container's process
# group), writes both pids, and on SIGTERM notes it and exits.
FAMILY = """
import os, signal, subprocess, sys, time
where = sys.argv[1]
child = subprocess.Popen(['sleep', '300'], start_new_session=True)
def stop(*_):
    open(os.path.join(where, 'termed'), 'w').write('yes')
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(os.path.join(where, 'pids'), 'w').write(f'{os.getpid()} {child.pid}')
while True:
    time.sleep(0.1)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def start_family(
    core: client.CoreV1Api, node: Node, namespace: str, name: str, where: Path
) -> list[int]:
    make_pod(
        core,
        namespace,
        name,
        node,
        container(
            "main",
            [*python(FAMILY), str(where)],
            volumeMounts=[{"name": "out", "mountPath": str(where)}],
        ),
        restart="Always",
        volumes=[{"name": "out", "hostPath": {"path": str(where)}}],
    )
    wait_for(lambda: (where / "pids").exists())
    pids = [int(p) for p in (where / "pids").read_text().split()]
    assert all(alive(p) for p in pids)
    return pids


def gone(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    try:
        core.read_namespaced_pod(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def test_a_graceful_delete_stops_the_whole_process_tree(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str, tmp_path: Path
) -> None:
    pids = start_family(core, node, namespace, "family", tmp_path)
    wait_pod(api_client, namespace, "family", lambda p: p["status"].get("phase") == "Running")
    core.delete_namespaced_pod("family", namespace)  # the pod's grace period: 5 s
    wait_for(lambda: gone(core, namespace, "family"), timeout=20)
    assert (tmp_path / "termed").read_text() == "yes"
    wait_for(lambda: not any(alive(p) for p in pids), timeout=10)


def test_a_forced_delete_stops_the_processes_too(
    core: client.CoreV1Api, node: Node, namespace: str, tmp_path: Path
) -> None:
    pids = start_family(core, node, namespace, "forced", tmp_path)
    core.delete_namespaced_pod("forced", namespace, grace_period_seconds=0)
    assert gone(core, namespace, "forced")
    wait_for(lambda: not any(alive(p) for p in pids), timeout=10)


@pytest.mark.parametrize("grace", [0, 1])
def test_a_deleted_pod_leaves_no_directory(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str, grace: int
) -> None:
    made = make_pod(
        core,
        namespace,
        f"brief-{grace}",
        node,
        container("main", python("import time; time.sleep(60)")),
        restart="Always",
    )
    wait_pod(
        api_client, namespace, f"brief-{grace}", lambda p: p["status"].get("phase") == "Running"
    )
    assert node.pod_dir(made["uid"]).is_dir()
    core.delete_namespaced_pod(f"brief-{grace}", namespace, grace_period_seconds=grace)
    wait_for(lambda: gone(core, namespace, f"brief-{grace}"), timeout=20)
    wait_for(lambda: not node.pod_dir(made["uid"]).exists(), timeout=10)
