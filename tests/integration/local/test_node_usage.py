"""What pods use, measured by the node agent and served as metrics.k8s.io by the local API
server: ``kubectl top pod`` and ``kubectl top node``, the API through a client, ``kubetrain
top`` with its used columns, and a CPU limit held on a busy loop.

These tests run their own node agent, sampling every half second instead of every 10 s, so
usage shows up within a second or two of a pod starting.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kubetrain import api
from kubetrain.cli import jobkinds, main
from tests.fixtures.cluster import Kubectl
from tests.fixtures.waits import wait_for
from tests.integration.local.conftest import (
    Node,
    container,
    local_only,
    node_settings,
    python,
    running_node,
    wait_pod,
)

MiB = 2**20
STATS_INTERVAL = 0.5
METRICS = ("metrics.k8s.io", "v1beta1")
# 100 MiB of private memory (written, so resident), then a busy loop
BURNER = python("held = b'x' * (100 * 2**20)\nwhile True: pass")
# a busy loop that prints its own CPU time against the wall clock every quarter second
CLOCKED = python(
    "import time\n"
    "mark = time.monotonic()\n"
    "while True:\n"
    "    now = time.monotonic()\n"
    "    if now - mark >= 0.25:\n"
    "        print(f'cpu {time.process_time():.4f} wall {now:.4f}', flush=True)\n"
    "        mark = now\n"
)


@pytest.fixture(scope="module")
def metered(
    kubeconfig: str, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Node]:
    """A node agent of its own that samples usage every half second."""
    local_only(kubeconfig)
    root = tmp_path_factory.mktemp("metered")
    name = "kt-usage-" + secrets.token_hex(3)
    config = dataclasses.replace(
        node_settings(kubeconfig, root, name),
        stats_interval=STATS_INTERVAL,
        cpu_limits="throttle",  # this host has no writable cgroup v2: the throttle, asked for
    )
    with running_node(core, kubeconfig, root, name, config) as handle:
        yield handle


def start_pod(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    node: Node,
    command: list[str],
    *,
    labels: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
) -> None:
    """Create a pod on ``node`` and wait until its container runs."""
    main_container = container("main", command)
    if limits:
        main_container["resources"] = {"limits": limits}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "nodeName": node.name,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [main_container],
        },
    }
    core.create_namespaced_pod(namespace, body)
    wait_pod(api_client, namespace, name, running)


def running(pod: dict[str, Any]) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return "running" in (statuses[0].get("state") or {})


def quantity(text: str) -> Fraction:
    return api.parse_quantity(text)


def busy(cpu: str, memory: str) -> bool:
    """Usage of a burner: more than 200m and more than 80 MiB."""
    return quantity(cpu) > Fraction(1, 5) and quantity(memory) > 80 * MiB


def top_row(kubectl: Kubectl, *args: str) -> list[str] | None:
    """The first row ``kubectl top ...`` prints, once it has numbers; else None."""
    result = kubectl("top", *args, "--no-headers", check=False)
    line = result.stdout.strip().split("\n")[0]
    if result.returncode != 0 or not line or "<unknown>" in line:
        return None
    return line.split()


def test_kubectl_top_shows_what_a_pod_and_its_node_use(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubectl: Kubectl,
    metered: Node,
    namespace: str,
) -> None:
    start_pod(core, api_client, namespace, "burner", metered, BURNER, labels={"app": "burn"})

    def measured() -> list[str] | None:
        row = top_row(kubectl, "pod", "-n", namespace)
        return row if row is not None and busy(row[1], row[2]) else None

    name, cpu, memory = wait_for(measured, timeout=30, interval=0.2)
    assert name == "burner"
    assert quantity(cpu) <= 2  # one busy thread
    assert quantity(memory) < 400 * MiB

    node_row = wait_for(lambda: top_row(kubectl, "node", metered.name), timeout=10)
    assert node_row[0] == metered.name
    assert quantity(node_row[1]) > 0  # CPU(cores)
    assert quantity(node_row[3]) > 0  # MEMORY(bytes)

    missing = kubectl("top", "pod", "nope", "-n", namespace, check=False)
    assert missing.returncode != 0
    assert 'podmetrics.metrics.k8s.io "' in missing.stderr
    assert "not found" in missing.stderr


def test_the_metrics_api_lists_and_gets_with_selectors(
    core: client.CoreV1Api, api_client: client.ApiClient, metered: Node, namespace: str
) -> None:
    start_pod(core, api_client, namespace, "burner", metered, BURNER, labels={"app": "burn"})
    custom = client.CustomObjectsApi(api_client)

    def listed(selector: str) -> list[dict[str, Any]]:
        doc = custom.list_namespaced_custom_object(
            *METRICS, namespace, "pods", label_selector=selector
        )
        return list(doc["items"])

    def measured() -> dict[str, Any] | None:
        items = listed("app=burn")
        if not items:
            return None
        usage = items[0]["containers"][0]["usage"]
        return items[0] if busy(usage["cpu"], usage["memory"]) else None

    item = wait_for(measured, timeout=30, interval=0.2)
    assert item["metadata"]["name"] == "burner"
    assert item["metadata"]["labels"] == {"app": "burn"}
    assert [c["name"] for c in item["containers"]] == ["main"]
    assert item["window"]
    assert listed("app=other") == []

    one = custom.get_namespaced_custom_object(*METRICS, namespace, "pods", "burner")
    assert (one["kind"], one["apiVersion"]) == ("PodMetrics", "metrics.k8s.io/v1beta1")
    everywhere = custom.list_cluster_custom_object(*METRICS, "pods")["items"]
    assert any(i["metadata"]["namespace"] == namespace for i in everywhere)
    node = custom.get_cluster_custom_object(*METRICS, "nodes", metered.name)
    assert node["kind"] == "NodeMetrics"
    assert quantity(node["usage"]["memory"]) > 0
    with pytest.raises(ApiException) as refused:
        custom.delete_namespaced_custom_object(*METRICS, namespace, "pods", "burner")
    assert refused.value.status == 405


def test_kubetrain_top_shows_used_beside_requested(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubeconfig: str,
    metered: Node,
    namespace: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "hot", "namespace": namespace},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "pytorch", "image": "x", "command": ["true"]}]
                        }
                    },
                }
            }
        },
    }
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        "kubeflow.org", "v1", namespace, "pytorchjobs", job
    )
    selector = jobkinds.of(job).pod_selector("hot")
    labels = dict(term.split("=", 1) for term in selector.split(","))
    start_pod(core, api_client, namespace, "hot-master-0", metered, BURNER, labels=labels)

    def top(*args: str) -> tuple[int, str, str]:
        code = main.main(["top", *args, "--kubeconfig", kubeconfig])
        out, err = capsys.readouterr()
        return code, out, err

    def job_used() -> dict[str, Any] | None:
        code, out, err = top("job", "hot", "-n", namespace, "-o", "json")
        assert code == 0, err
        (row,) = json.loads(out)["jobs"]
        return (
            row if row["cpuUsed"] is not None and busy(row["cpuUsed"], row["memoryUsed"]) else None
        )

    row = wait_for(job_used, timeout=30, interval=0.2)
    assert row["gpuUsed"] is None  # GPUs are not measured
    code, out, err = top("job", "-n", namespace)
    assert code == 0, err
    header, line = out.splitlines()[:2]
    assert header.split()[4:8] == ["CPU(REQ)", "CPU(USED)", "MEMORY(REQ)", "MEMORY(USED)"]
    assert line.split()[5] != "-"
    assert "note" not in err  # the metrics API is there: no "requests only"

    code, out, err = top("node", "-o", "json")
    assert code == 0, err
    (mine,) = [r for r in json.loads(out)["nodes"] if r["name"] == metered.name]
    assert mine["cpuUsed"] is not None
    assert quantity(mine["memoryUsed"]) > 0


def test_a_cpu_limit_holds_a_busy_loop_well_under_a_core(
    core: client.CoreV1Api, api_client: client.ApiClient, metered: Node, namespace: str
) -> None:
    start_pod(core, api_client, namespace, "capped", metered, CLOCKED, limits={"cpu": "200m"})

    def samples() -> list[tuple[float, float]] | None:
        text = core.read_namespaced_pod_log("capped", namespace)
        found = [
            (float(parts[1]), float(parts[3]))
            for parts in (line.split() for line in text.splitlines())
            if len(parts) == 4 and parts[0] == "cpu"
        ]
        # from the second sample on (the first includes the interpreter's start), 3 s
        return found if len(found) >= 3 and found[-1][1] - found[1][1] >= 3.0 else None

    found = wait_for(samples, timeout=30, interval=0.2)
    (cpu0, wall0), (cpu1, wall1) = found[1], found[-1]
    cores = (cpu1 - cpu0) / (wall1 - wall0)
    # Unlimited, the loop takes a whole core (about 0.45 of one on a 2-core machine with a
    # load of 6); the throttle holds it near 0.2, the margin is for a busy machine's delays.
    assert 0.05 < cores < 0.35, f"the busy loop used {cores:.2f} cores under a 200m limit"
