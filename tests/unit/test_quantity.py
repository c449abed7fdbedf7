"""Kubernetes quantities as exact numbers, and the CPU/GPU counts the env contracts use."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubetrain import quantity as q


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2", Fraction(2), id="a plain integer"),
        pytest.param(4, Fraction(4), id="a YAML integer"),
        pytest.param(0.5, Fraction(1, 2), id="a YAML float is read exactly"),
        pytest.param("500m", Fraction(1, 2), id="millicores"),
        pytest.param("2500m", Fraction(5, 2), id="millicores above one"),
        pytest.param("2.5", Fraction(5, 2), id="a decimal fraction"),
        pytest.param(".5", Fraction(1, 2), id="a leading dot"),
        pytest.param("1.", Fraction(1), id="a trailing dot"),
        pytest.param("16Gi", Fraction(16 * 2**30), id="binary gibibytes"),
        pytest.param("1Ki", Fraction(1024), id="binary kibibytes"),
        pytest.param("1Ei", Fraction(2**60), id="binary exbibytes keep every digit"),
        pytest.param("3k", Fraction(3000), id="decimal kilo"),
        pytest.param("1M", Fraction(10**6), id="decimal mega"),
        pytest.param("100u", Fraction(1, 10**4), id="micro"),
        pytest.param("5n", Fraction(5, 10**9), id="nano"),
        pytest.param("1e3", Fraction(1000), id="a decimal exponent"),
        pytest.param("12E-1", Fraction(6, 5), id="a negative exponent"),
        pytest.param("+3", Fraction(3), id="an explicit plus sign"),
        pytest.param("-1", Fraction(-1), id="a negative amount parses"),
        pytest.param(" 2 ", Fraction(2), id="surrounding blanks are ignored"),
    ],
)
def test_a_quantity_parses_to_its_exact_amount(text: Any, expected: Fraction) -> None:
    assert q.parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("two", id="a word"),
        pytest.param("2 Gi", id="a blank before the suffix"),
        pytest.param("2gi", id="a lowercase binary suffix"),
        pytest.param("2K", id="an uppercase kilo"),
        pytest.param("1e1.5", id="a fractional exponent"),
        pytest.param(True, id="a boolean"),
        pytest.param(None, id="null"),
        pytest.param(float("nan"), id="not a number"),
        pytest.param([1], id="a list"),
    ],
)
def test_a_malformed_quantity_is_a_value_error(text: Any) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        q.parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("500m", 1, id="half a CPU rounds up to one"),
        pytest.param("2.5", 3, id="two and a half round up to three"),
        pytest.param("0.7", 1, id="a fraction below one rounds up"),
        pytest.param("3.7", 4, id="three point seven rounds up"),
        pytest.param("4", 4, id="a whole number stays"),
        pytest.param("0", 0, id="zero stays zero"),
    ],
)
def test_whole_value_rounds_up_like_kubernetes_value(text: str, expected: int) -> None:
    assert q.whole_value(text) == expected


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param({"limits": {"cpu": "4"}}, 4, id="the limit when there is no request"),
        pytest.param({"requests": {"cpu": "3"}}, 3, id="the request when there is no limit"),
        pytest.param({"requests": {"cpu": "2"}, "limits": {"cpu": "8"}}, 2, id="the request wins"),
        pytest.param(
            {"requests": {"cpu": "0"}, "limits": {"cpu": "6"}}, 6, id="a zero request falls back"
        ),
        pytest.param({"limits": {"cpu": "2500m"}}, 3, id="millicores round up"),
        pytest.param({"limits": {"memory": "16Gi"}}, 0, id="no CPU at all"),
        pytest.param({}, 0, id="no resources"),
        pytest.param(None, 0, id="resources absent"),
        pytest.param({"limits": {"cpu": "lots"}}, 0, id="a malformed quantity counts as none"),
        pytest.param({"limits": "4"}, 0, id="a wrong shape counts as none"),
    ],
)
def test_cpu_count_reads_the_request_then_the_limit(resources: Any, expected: int) -> None:
    assert q.cpu_count(resources) == expected


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param({"limits": {"nvidia.com/gpu": 4}}, 4, id="an nvidia limit"),
        pytest.param({"requests": {"example.com/gpu": "2"}}, 2, id="any name containing gpu"),
        pytest.param({"requests": {"amd.com/GPU": "3"}}, 3, id="case does not matter"),
        pytest.param(
            {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "8"}},
            1,
            id="the request wins",
        ),
        pytest.param(
            {"requests": {"nvidia.com/gpu": "0"}, "limits": {"nvidia.com/gpu": "2"}},
            2,
            id="a zero request falls back to the limit",
        ),
        pytest.param({"limits": {"cpu": "8"}}, 0, id="no GPU"),
        pytest.param(None, 0, id="resources absent"),
    ],
)
def test_gpu_count_reads_any_resource_named_like_gpu(resources: Any, expected: int) -> None:
    assert q.gpu_count(resources) == expected
