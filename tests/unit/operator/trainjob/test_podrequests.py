"""Pod requests as Kubernetes' PodRequests counts them, and canonical quantity strings."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubetrain.operator.trainjob import podrequests


def test_containers_sum_init_containers_peak_limits_stand_in_for_requests() -> None:
    spec = {
        "containers": [
            {"resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}},
            {"resources": {"requests": {"cpu": "1"}}},
        ],
        "initContainers": [{"resources": {"requests": {"cpu": "4"}}}],
        "overhead": {"memory": "1Gi"},
    }
    assert podrequests.pod_requests(spec) == {"cpu": Fraction(4), "memory": Fraction(2 * 2**30)}


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        pytest.param(Fraction(6), "6", id="whole"),
        pytest.param(Fraction(3, 2), "1500m", id="milli"),
        pytest.param(Fraction(3 * 2**30), "3Gi", id="binary"),
        pytest.param(Fraction(1000), "1000", id="small numbers stay decimal"),
        pytest.param(Fraction(1, 3), "333333334n", id="rounded up to nanos"),
    ],
)
def test_format_quantity(amount: Fraction, text: str) -> None:
    assert podrequests.format_quantity(amount) == text
