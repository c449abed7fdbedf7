"""Namespace quotas for a whole gang at once."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubetrain.local.scheduler import quotas
from tests.unit.local.scheduler.builders import container, pod, resources


def test_a_pod_counts_its_requests_limits_and_itself() -> None:
    p = pod("p", containers=[container(requests=resources("1"), limits=resources("2", "1Gi"))])
    assert quotas.usage(p) == {
        "pods": 1,
        "requests.cpu": 1,
        "requests.memory": 2**30,
        "limits.cpu": 2,
        "limits.memory": 2**30,
    }


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        pytest.param("cpu", "requests.cpu", id="bare cpu means requests.cpu"),
        pytest.param("memory", "requests.memory", id="bare memory means requests.memory"),
        pytest.param("count/pods", "pods", id="count/pods is pods"),
        pytest.param("limits.cpu", "limits.cpu", id="limits stay limits"),
        pytest.param("requests.nvidia.com/gpu", "requests.nvidia.com/gpu", id="extended stay"),
    ],
)
def test_quota_names(name: str, canonical: str) -> None:
    assert quotas.canonical(name) == canonical


def test_the_first_quota_exceeded_is_reported_with_kubes_three_figures() -> None:
    quota = quotas.Quota("ns", "q", {"requests.cpu": Fraction(4), "pods": Fraction(10)})
    wanted = {"requests.cpu": Fraction(3), "pods": Fraction(3)}
    assert quotas.check([quota], {"requests.cpu": Fraction(1)}, wanted) is None
    over = quotas.check([quota], {"requests.cpu": Fraction(2)}, wanted)
    assert over == quotas.Exceeded(
        "q",
        {"requests.cpu": Fraction(3)},
        {"requests.cpu": Fraction(2)},
        {"requests.cpu": Fraction(4)},
    )
