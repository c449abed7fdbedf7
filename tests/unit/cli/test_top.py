"""``kubetrain top``'s measured usage (kubetrain.cli.top): what PodMetrics and NodeMetrics add up
to, per job and per node, beside the requests, and ``-`` where nothing was measured."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kubetrain.cli import top, usage
from tests.unit.cli.jobobjects import pod, v1_job


def pod_metrics(name: str, *containers: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "timestamp": "2026-01-01T12:00:00Z",
        "window": "10s",
        "containers": [
            {"name": f"c{i}", "usage": {"cpu": cpu, "memory": memory}}
            for i, (cpu, memory) in enumerate(containers)
        ],
    }


def test_a_pods_usage_adds_up_its_containers() -> None:
    item = pod_metrics("p", ("250m", "100Mi"), ("123456789n", "1536"))
    assert top.metrics_usage(item) == usage.Amounts(
        cpu=Fraction(1, 4) + Fraction(123456789, 10**9), memory=Fraction(100 * 2**20 + 1536)
    )


def test_a_nodes_usage_is_its_own() -> None:
    item = {"metadata": {"name": "n1"}, "usage": {"cpu": "2", "memory": "1Gi"}}
    assert top.metrics_usage(item) == usage.Amounts(cpu=Fraction(2), memory=Fraction(2**30))


def test_a_job_uses_what_its_measured_pods_use() -> None:
    listed = {
        "items": [pod_metrics("p-master-0", ("500m", "1Gi")), pod_metrics("other", ("1", "1Gi"))]
    }
    measured = top.by_pod(listed)
    pods = [pod("master", 0), pod("worker", 0)]  # the worker has no metrics yet
    used = top.pods_used(pods, measured)
    assert used == usage.Amounts(cpu=Fraction(1, 2), memory=Fraction(2**30))
    row = top.job_row(v1_job(), pods, used)
    assert (row["cpuUsed"], row["memoryUsed"], row["gpuUsed"]) == ("500m", "1Gi", None)


def test_a_job_none_of_whose_pods_is_measured_shows_a_dash() -> None:
    pods = [pod("master", 0)]
    assert top.pods_used(pods, {}) is None
    row = top.job_row(v1_job(), pods, None)
    table = top.render(top.JOB_COLUMNS, [row]).splitlines()
    assert table[0].split() == [
        "KIND", "NAME", "STATE", "PODS", "CPU(REQ)", "CPU(USED)", "MEMORY(REQ)",
        "MEMORY(USED)", "GPU(REQ)", "GPU(USED)",
    ]  # fmt: skip
    assert table[1].split()[4:] == ["0", "-", "0", "-", "0", "-"]


def test_a_node_row_shows_requests_against_allocatable_and_what_it_uses() -> None:
    node = {
        "metadata": {"name": "n1"},
        "status": {
            "allocatable": {"cpu": "8", "memory": "16Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    used = top.metrics_usage({"usage": {"cpu": "1250m", "memory": "3Gi"}})
    row = top.node_row(node, [pod("master", 0)], used)
    table = top.render(top.NODE_COLUMNS, [row]).splitlines()
    assert table[0].split() == [
        "NAME", "STATUS", "CPU(REQ/ALLOC)", "CPU(USED)", "MEMORY(REQ/ALLOC)", "MEMORY(USED)",
        "GPU(REQ/ALLOC)", "GPU(USED)", "PODS",
    ]  # fmt: skip
    assert table[1].split() == ["n1", "Ready", "0/8", "1250m", "0/16Gi", "3Gi", "0/0", "-", "1"]
