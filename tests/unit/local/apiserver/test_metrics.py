"""metrics.k8s.io as the local API server answers it (kubetrain.local.apiserver.metrics):
quantities written as Go writes them, NodeMetrics and PodMetrics from a node's Summary, and
the group in discovery."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.local.apiserver import discovery, metrics, resources

NOW = "2026-01-01T12:00:05Z"

CPU = [
    pytest.param(0, "0", id="nothing"),
    pytest.param(123_456_789, "123456789n", id="nanocores when not a round number"),
    pytest.param(250_000_000, "250m", id="millicores when exact"),
    pytest.param(1_500_000_000, "1500m", id="a core and a half"),
    pytest.param(2_000_000_000, "2", id="whole cores"),
    pytest.param(12_000, "12u", id="microcores"),
]


@pytest.mark.parametrize(("nano", "text"), CPU)
def test_cpu_is_a_scaled_decimal_quantity(nano: int, text: str) -> None:
    assert metrics.cpu_quantity(nano) == text


MEMORY = [
    pytest.param(0, "0", id="nothing"),
    pytest.param(1000, "1k", id="below 1024 Go writes decimal"),
    pytest.param(1536, "1536", id="bytes when not a whole KiB"),
    pytest.param(100 * 2**20, "100Mi", id="whole MiB"),
    pytest.param(1770452 * 1024, "1770452Ki", id="pages: whole KiB"),
    pytest.param(3 * 2**30, "3Gi", id="whole GiB"),
]


@pytest.mark.parametrize(("size", "text"), MEMORY)
def test_memory_is_a_binary_quantity(size: int, text: str) -> None:
    assert metrics.memory_quantity(size) == text


def stats(nano: int | None, working: int | None) -> dict[str, Any]:
    cpu: dict[str, Any] = {"time": "2026-01-01T12:00:00Z", "usageCoreNanoSeconds": 10**9}
    if nano is not None:
        cpu["usageNanoCores"] = nano
    memory = {"time": "2026-01-01T12:00:00Z"}
    if working is not None:
        memory["workingSetBytes"] = working  # type: ignore[assignment]
    return {"cpu": cpu, "memory": memory}


NODE = {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}}}
POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "x"}}}


def test_node_metrics_from_a_summary() -> None:
    summary = {"node": {"nodeName": "n1", **stats(3_000_000_000, 2**30)}}
    assert metrics.node_metrics(NODE, summary, NOW) == {
        "metadata": {
            "name": "n1",
            "creationTimestamp": NOW,
            "labels": {"kubernetes.io/hostname": "n1"},
        },
        "timestamp": "2026-01-01T12:00:00Z",
        "window": metrics.WINDOW,
        "usage": {"cpu": "3", "memory": "1Gi"},
    }


def test_a_node_without_a_rate_yet_has_no_metrics() -> None:
    assert metrics.node_metrics(NODE, {"node": stats(None, 2**30)}, NOW) is None
    assert metrics.node_metrics(NODE, None, NOW) is None


def test_pod_metrics_from_its_summary_entry() -> None:
    entry = {
        "podRef": {"name": "p", "namespace": "ns", "uid": "u"},
        "containers": [
            {"name": "main", **stats(200_000_000, 100 * 2**20)},
            {"name": "side", **stats(1_000_000, 4096)},
        ],
    }
    assert metrics.pod_metrics(POD, entry, NOW) == {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "creationTimestamp": NOW,
            "labels": {"app": "x"},
        },
        "timestamp": "2026-01-01T12:00:00Z",
        "window": metrics.WINDOW,
        "containers": [
            {"name": "main", "usage": {"cpu": "200m", "memory": "100Mi"}},
            {"name": "side", "usage": {"cpu": "1m", "memory": "4Ki"}},
        ],
    }


PARTIAL = [
    pytest.param(None, id="a pod the node has not measured"),
    pytest.param({"containers": []}, id="a pod without running containers"),
    pytest.param(
        {"containers": [{"name": "a", **stats(5, 4096)}, {"name": "b", **stats(None, 4096)}]},
        id="a pod one of whose containers has no rate yet",
    ),
]


@pytest.mark.parametrize("entry", PARTIAL)
def test_a_pod_is_shown_whole_or_not_at_all(entry: dict[str, Any] | None) -> None:
    assert metrics.pod_metrics(POD, entry, NOW) is None


def test_pods_are_found_in_summaries_by_namespace_name_and_uid() -> None:
    entry = {"podRef": {"name": "p", "namespace": "ns", "uid": "u"}, "containers": []}
    index = metrics.pods_in([{"pods": [entry]}, {"pods": []}, {}])
    assert index == {("ns", "p", "u"): entry}


def test_not_found_is_worded_as_metrics_servers() -> None:
    error = metrics.not_found("pods", "ns/p")
    assert (error.code, error.reason) == (404, "NotFound")
    assert error.message == 'podmetrics.metrics.k8s.io "ns/p" not found'
    assert metrics.not_found("nodes", "n1").message == 'nodemetrics.metrics.k8s.io "n1" not found'


def test_discovery_lists_the_metrics_group_after_the_stored_ones() -> None:
    catalog = resources.Catalog()
    groups = [g["name"] for g in discovery.api_group_list(catalog)["groups"]]
    assert groups[-1] == "metrics.k8s.io"
    assert discovery.api_group(catalog, "metrics.k8s.io") is not None
    listed = discovery.api_resource_list(catalog, "metrics.k8s.io", "v1beta1")
    assert listed is not None
    assert [(r["name"], r["kind"], r["namespaced"], r["verbs"]) for r in listed["resources"]] == [
        ("nodes", "NodeMetrics", False, ["get", "list"]),
        ("pods", "PodMetrics", True, ["get", "list"]),
    ]
    aggregated = discovery.aggregated(catalog, core=False)["items"]
    assert aggregated[-1]["metadata"]["name"] == "metrics.k8s.io"
    assert [r["resource"] for r in aggregated[-1]["versions"][0]["resources"]] == ["nodes", "pods"]
    assert "metrics.k8s.io" not in [
        g["metadata"]["name"] for g in discovery.aggregated(catalog, core=True)["items"]
    ]
