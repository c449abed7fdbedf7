"""A pod's effective requests as kube-scheduler counts them (component-helpers PodRequests):
app containers add up, init containers run one at a time beside the sidecars started before
them, the pod needs the larger, plus overhead; limits stand in for absent requests."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubetrain.local.scheduler import amounts, requests
from tests.unit.local.scheduler.builders import container, pod, resources

GI = 2**30


def app(
    cpu: str | None = None,
    memory: str | None = None,
    *,
    extra: dict[str, str] | None = None,
    sidecar: bool = False,
) -> dict[str, Any]:
    return container(requests=resources(cpu, memory, extra), sidecar=sidecar)


CASES = [
    pytest.param(
        pod("p", containers=[app("1", "1Gi"), app("500m", "512Mi")]),
        {"cpu": Fraction(3, 2), "memory": Fraction(3 * GI, 2)},
        id="app containers' requests add up",
    ),
    pytest.param(
        pod("p", containers=[app("1")], init=[app("2"), app("500m")]),
        {"cpu": Fraction(2)},
        id="an init container bigger than the app containers sets the request",
    ),
    pytest.param(
        pod("p", containers=[app("1"), app("1")], init=[app("1500m")]),
        {"cpu": Fraction(2)},
        id="init containers run one at a time, so only the largest counts against the sum",
    ),
    pytest.param(
        pod("p", containers=[app("1")], init=[app(memory="2Gi")]),
        {"cpu": Fraction(1), "memory": Fraction(2 * GI)},
        id="the maximum is taken per resource",
    ),
    pytest.param(
        pod("p", containers=[app("1")], init=[app("500m", sidecar=True), app("1")]),
        {"cpu": Fraction(3, 2)},
        id="a sidecar runs beside the app containers and beside later init containers",
    ),
    pytest.param(
        pod("p", containers=[app("100m")], init=[app("1", sidecar=True), app("2")]),
        {"cpu": Fraction(3)},
        id="an init container after a sidecar needs its own request plus the sidecar's",
    ),
    pytest.param(
        pod("p", containers=[app("1")], overhead={"cpu": "250m", "memory": "64Mi"}),
        {"cpu": Fraction(5, 4), "memory": Fraction(64 * 2**20)},
        id="pod overhead is added on top",
    ),
    pytest.param(
        pod("p", containers=[container(limits=resources("2", "1Gi"))]),
        {"cpu": Fraction(2), "memory": Fraction(GI)},
        id="limits stand in for absent requests, as the API server defaults them",
    ),
    pytest.param(
        pod("p", containers=[container(requests=resources("1"), limits=resources("2", "1Gi"))]),
        {"cpu": Fraction(1), "memory": Fraction(GI)},
        id="a request wins over its limit; a limit fills only the missing resource",
    ),
    pytest.param(
        pod("p", containers=[app(extra={"nvidia.com/gpu": "2"})]),
        {"nvidia.com/gpu": Fraction(2)},
        id="extended resources are counted like any other",
    ),
    pytest.param(
        pod("p", containers=[container()]),
        {},
        id="a best-effort pod requests nothing",
    ),
    pytest.param(
        pod("p", containers=[app("lots")]),
        {},
        id="a malformed quantity counts as absent",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), CASES)
def test_effective_requests(obj: dict[str, Any], expected: dict[str, Fraction]) -> None:
    assert requests.pod_requests(obj) == expected


def test_limits_are_aggregated_like_requests_for_quotas() -> None:
    obj = pod(
        "p",
        containers=[container(limits=resources("1")), container("b", limits=resources("1"))],
        init=[container("i", limits=resources("3"))],
    )
    assert requests.pod_limits(obj) == {"cpu": Fraction(3)}


@pytest.mark.parametrize(
    ("value", "name", "text"),
    [
        pytest.param(Fraction(4), "cpu", "4", id="whole cpus are plain numbers"),
        pytest.param(Fraction(3, 2), "cpu", "1500m", id="fractions of a cpu are millicores"),
        pytest.param(Fraction(GI), "memory", "1Gi", id="memory uses binary suffixes when exact"),
        pytest.param(
            Fraction(GI), "requests.memory", "1Gi", id="quota names of memory are memory too"
        ),
        pytest.param(Fraction(1000), "memory", "1000", id="memory not a power of two is plain"),
    ],
)
def test_amounts_are_written_in_kubernetes_notation(value: Fraction, name: str, text: str) -> None:
    assert amounts.format_quantity(value, name) == text
