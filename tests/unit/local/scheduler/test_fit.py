"""Whether a pod fits a node, in kube-scheduler's words: the filters in the default profile's
order (unschedulable, taints, affinity, ports, resources), the first failing one per node,
and the aggregated "0/N nodes are available" message."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.local.scheduler import fit
from tests.unit.local.scheduler.builders import container, node, pod, resources

GPU = {"nvidia.com/gpu": "1"}


def on(node_obj: dict[str, Any], *pods: dict[str, Any]) -> fit.NodeInfo:
    return fit.NodeInfo.of(node_obj, [fit.PodInfo.of(p) for p in pods])


def why(pod_obj: dict[str, Any], node_info: fit.NodeInfo) -> list[str]:
    return fit.reasons(fit.PodInfo.of(pod_obj), node_info)


NO_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
PORT = {"containerPort": 8080, "hostPort": 8080}

CASES = [
    pytest.param(
        pod("p", cpu="4"), on(node(cpu="4")), [], id="a pod that needs all of an empty node fits"
    ),
    pytest.param(
        pod("p", cpu="1"),
        on(node(cpu="4"), pod("a", cpu="3500m", node="n1")),
        ["Insufficient cpu"],
        id="what bound pods request is taken from allocatable",
    ),
    pytest.param(
        pod("p", cpu="1"),
        on(
            node(cpu="4"),
            pod("a", cpu="3", node="n1"),
            pod("b", cpu="1", node="n1", phase="Failed"),
        ),
        ["Insufficient cpu"],
        id="the caller decides which pods hold the node; every pod it passes counts",
    ),
    pytest.param(
        pod("p", cpu="8", memory="32Gi"),
        on(node(cpu="4", memory="16Gi")),
        ["Insufficient cpu", "Insufficient memory"],
        id="every short resource is named, cpu before memory",
    ),
    pytest.param(
        pod("p", containers=[container(requests=resources("1", extra=GPU))]),
        on(node()),
        ["Insufficient nvidia.com/gpu"],
        id="a node that lists no GPUs has none",
    ),
    pytest.param(
        pod("p", containers=[container(requests=resources("1", extra=GPU))]),
        on(node(extra=GPU)),
        [],
        id="a node with a GPU fits a pod that asks for one",
    ),
    pytest.param(
        pod("p", cpu="100m"),
        on(node(pods="1"), pod("a", node="n1")),
        ["Too many pods"],
        id="allocatable pods bounds how many pods a node takes",
    ),
    pytest.param(
        pod("p"),
        on({**node(), "status": {"allocatable": {"cpu": "4"}}}),
        ["Too many pods"],
        id="a node that does not report allocatable pods takes none, as in kube",
    ),
    pytest.param(
        pod("p", cpu="1"),
        on(node(unschedulable=True)),
        ["node(s) were unschedulable"],
        id="a cordoned node takes no pods",
    ),
    pytest.param(
        pod(
            "p",
            cpu="1",
            tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
        ),
        on(node(unschedulable=True)),
        [],
        id="a pod tolerating the unschedulable taint may go to a cordoned node",
    ),
    pytest.param(
        pod("p", cpu="1"),
        on(node(taints=[NO_TAINT])),
        ["node(s) had untolerated taint {gpu: true}"],
        id="an untolerated NoSchedule taint is named",
    ),
    pytest.param(
        pod("p", cpu="1"),
        on(node(taints=[{"key": "dedicated", "effect": "NoExecute"}])),
        ["node(s) had untolerated taint {dedicated: }"],
        id="NoExecute filters too, and an empty value is shown empty",
    ),
    pytest.param(
        pod("p", cpu="1"),
        on(node(taints=[{"key": "soft", "effect": "PreferNoSchedule"}])),
        [],
        id="PreferNoSchedule never filters",
    ),
    pytest.param(
        pod("p", cpu="1", tolerations=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
        on(node(taints=[NO_TAINT])),
        [],
        id="an Equal toleration with the same value tolerates",
    ),
    pytest.param(
        pod("p", cpu="1", tolerations=[{"key": "gpu", "value": "false"}]),
        on(node(taints=[NO_TAINT])),
        ["node(s) had untolerated taint {gpu: true}"],
        id="an Equal toleration with another value does not",
    ),
    pytest.param(
        pod("p", cpu="1", tolerations=[{"operator": "Exists"}]),
        on(node(taints=[NO_TAINT, {"key": "x", "effect": "NoExecute"}])),
        [],
        id="an Exists toleration without a key tolerates every taint",
    ),
    pytest.param(
        pod(
            "p", cpu="1", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}]
        ),
        on(node(taints=[NO_TAINT])),
        ["node(s) had untolerated taint {gpu: true}"],
        id="a toleration for another effect does not tolerate",
    ),
    pytest.param(
        pod("p", cpu="1", node_selector={"disk": "ssd"}),
        on(node(labels={"disk": "hdd"})),
        ["node(s) didn't match Pod's node affinity/selector"],
        id="a nodeSelector the node's labels do not match",
    ),
    pytest.param(
        pod("p", cpu="1", node_selector={"disk": "ssd"}),
        on(node(labels={"disk": "ssd", "zone": "a"})),
        [],
        id="a nodeSelector the node's labels match",
    ),
    pytest.param(
        pod(
            "p",
            affinity={
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                        {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]},
                    ]
                }
            },
        ),
        on(node(labels={"zone": "a", "gen": "4"})),
        [],
        id="required node affinity terms are ORed",
    ),
    pytest.param(
        pod(
            "p",
            affinity={
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["a"]},
                                {"key": "spot", "operator": "DoesNotExist"},
                            ]
                        }
                    ]
                }
            },
        ),
        on(node(labels={"zone": "a", "spot": "true"})),
        ["node(s) didn't match Pod's node affinity/selector"],
        id="the expressions of a term are ANDed",
    ),
    pytest.param(
        pod(
            "p",
            affinity={
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n2"]}
                            ]
                        }
                    ]
                }
            },
        ),
        on(node("n1")),
        ["node(s) didn't match Pod's node affinity/selector"],
        id="matchFields select a node by name",
    ),
    pytest.param(
        pod("p", containers=[container(ports=[PORT])]),
        on(node(), pod("a", containers=[container(ports=[PORT])], node="n1")),
        ["node(s) didn't have free ports for the requested pod ports"],
        id="a host port in use on the node",
    ),
    pytest.param(
        pod("p", containers=[container(ports=[{"containerPort": 8080}])]),
        on(node(), pod("a", containers=[container(ports=[{"containerPort": 8080}])], node="n1")),
        [],
        id="container ports alone are not host ports",
    ),
    pytest.param(
        pod("p", host_network=True, containers=[container(ports=[{"containerPort": 29500}])]),
        on(
            node(),
            pod(
                "a",
                host_network=True,
                containers=[container(ports=[{"containerPort": 29500}])],
                node="n1",
            ),
        ),
        ["node(s) didn't have free ports for the requested pod ports"],
        id="a hostNetwork pod's container ports are host ports",
    ),
    pytest.param(
        pod("p", containers=[container(ports=[{**PORT, "protocol": "UDP"}])]),
        on(node(), pod("a", containers=[container(ports=[PORT])], node="n1")),
        [],
        id="the same port under another protocol is free",
    ),
    pytest.param(
        pod("p", containers=[container(ports=[{**PORT, "hostIP": "10.0.0.2"}])]),
        on(
            node(),
            pod("a", containers=[container(ports=[{**PORT, "hostIP": "10.0.0.1"}])], node="n1"),
        ),
        [],
        id="the same port on two specific addresses is free",
    ),
    pytest.param(
        pod("p", containers=[container(ports=[{**PORT, "hostIP": "10.0.0.2"}])]),
        on(node(), pod("a", containers=[container(ports=[PORT])], node="n1")),
        ["node(s) didn't have free ports for the requested pod ports"],
        id="a port bound on every address clashes with any address",
    ),
    pytest.param(
        pod("p", cpu="64", node_selector={"disk": "ssd"}),
        on(node(taints=[NO_TAINT])),
        ["node(s) had untolerated taint {gpu: true}"],
        id="only the first failing filter is reported, taints before affinity and resources",
    ),
]


@pytest.mark.parametrize(("pod_obj", "node_info", "expected"), CASES)
def test_filter_reasons(
    pod_obj: dict[str, Any], node_info: fit.NodeInfo, expected: list[str]
) -> None:
    assert why(pod_obj, node_info) == expected


@pytest.mark.parametrize(
    ("count", "per_node", "message"),
    [
        pytest.param(
            1,
            [["Insufficient cpu"]],
            "0/1 nodes are available: 1 Insufficient cpu.",
            id="one node short of cpu",
        ),
        pytest.param(
            3,
            [
                ["Insufficient cpu", "Insufficient memory"],
                ["node(s) had untolerated taint {gpu: true}"],
                ["Insufficient cpu"],
            ],
            "0/3 nodes are available: 1 Insufficient memory, "
            "1 node(s) had untolerated taint {gpu: true}, 2 Insufficient cpu.",
            id="reasons are counted over nodes and sorted as kube sorts them",
        ),
        pytest.param(0, [], "no nodes available to schedule pods", id="no nodes at all"),
    ],
)
def test_the_aggregated_message(count: int, per_node: list[list[str]], message: str) -> None:
    assert fit.fit_error(count, per_node) == message


def test_placing_and_removing_a_pod_restores_the_node() -> None:
    info = on(
        node(cpu="4"),
        pod("a", cpu="1", containers=[container(requests=resources("1"), ports=[PORT])], node="n1"),
    )
    extra = fit.PodInfo.of(
        pod(
            "b", containers=[container(requests=resources("2"), ports=[{**PORT, "hostPort": 9090}])]
        )
    )
    before = (dict(info.requested), info.pod_count, dict(info.ports))
    info.add(extra)
    assert info.pod_count == 2
    info.remove(extra)
    assert (info.requested, info.pod_count, dict(info.ports)) == before
