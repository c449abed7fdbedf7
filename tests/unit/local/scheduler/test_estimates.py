"""When a running pod is expected to end, for the head's reservation."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.local.scheduler import estimates
from tests.unit.local.scheduler.builders import T0, pod

STARTED = "2027-01-15T08:00:00Z"  # T0


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        pytest.param({"runtime": 300}, T0 + 300, id="the runtime annotation counts from the start"),
        pytest.param({"deadline": 60}, T0 + 60, id="activeDeadlineSeconds bounds the runtime"),
        pytest.param({"runtime": 300, "deadline": 60}, T0 + 60, id="the smaller of the two wins"),
        pytest.param({}, None, id="no estimate: the end is unknown"),
    ],
)
def test_expected_end(kw: dict[str, Any], expected: float | None) -> None:
    assert estimates.expected_end(pod("p", node="n1", started=STARTED, **kw), T0 + 1) == expected


def test_an_estimate_that_has_passed_means_the_end_is_unknown() -> None:
    assert estimates.expected_end(pod("p", started=STARTED, runtime=10), T0 + 11) is None


def test_a_pod_without_a_start_time_counts_from_its_binding() -> None:
    p = pod("p", runtime=100)
    p["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2027-01-15T08:00:10Z"}
    ]
    assert estimates.expected_end(p, T0) == T0 + 110


def test_a_gang_runs_as_long_as_its_slowest_pod() -> None:
    assert estimates.gang_runtime([pod("a", runtime=10), pod("b", runtime=30)]) == 30
    assert estimates.gang_runtime([pod("a", runtime=10), pod("b")]) is None


@pytest.mark.parametrize("value", ["soon", "-5", "0", "nan", "inf"])
def test_an_unreadable_annotation_is_no_estimate(value: str) -> None:
    p = pod("p", annotations={estimates.RUNTIME_ANNOTATION: value})
    assert estimates.expected_runtime(p) is None
