"""Values printed as Go prints them, verb by verb (Go's output pasted from ``go run``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import gofmt
from kubetrain.api import _fielderrors

NESTED = {"b": [1, None, 2.5], "a": "x y", "c": {"d": True}}

CASES = [
    pytest.param(gofmt.go_v, NESTED, "map[a:x y b:[1 <nil> 2.5] c:map[d:true]]", id="%v: a map"),
    pytest.param(gofmt.go_v, [1, "a", [], {}], "[1 a [] map[]]", id="%v: a slice"),
    pytest.param(gofmt.go_v, 1e6, "1e+06", id="%v: a float64 from 1e+06 in e form"),
    pytest.param(gofmt.go_v, 123456.0, "123456", id="%v: a float64 below, in full"),
    pytest.param(gofmt.go_v, 0.00001, "1e-05", id="%v: a small float64 in e form"),
    pytest.param(gofmt.go_v, None, "<nil>", id="%v: nil"),
    pytest.param(
        gofmt.go_sharp,
        NESTED,
        'map[string]interface {}{"a":"x y", "b":[]interface {}{1, interface {}(nil), 2.5},'
        ' "c":map[string]interface {}{"d":true}}',
        id="%#v: a decoded JSON map",
    ),
    pytest.param(gofmt.go_strings, ["/a", 'b"'], '[]string{"/a", "b\\""}', id="%#v: []string"),
    pytest.param(gofmt.go_value, "é\n", '"é\\n"', id="field.Error: a string as %q"),
    pytest.param(gofmt.go_value, None, "null", id="field.Error: null"),
    pytest.param(gofmt.go_value, 2.0e7, "2e+07", id="field.Error: a float64 as %v"),
    pytest.param(
        gofmt.go_value, {"a": 1}, 'map[string]interface {}{"a":1}', id="field.Error: a map as %#v"
    ),
    pytest.param(
        gofmt.go_json, {"b": "<", "a": [1.0, 1e21]}, '{"a":[1,1e+21],"b":"\\u003c"}', id="json"
    ),
    pytest.param(gofmt.go_type, {"a": 1}, "map[string]interface {}", id="%T: an object"),
    pytest.param(gofmt.go_type, 1, "int64", id="%T: an integer decodes as int64"),
]


@pytest.mark.parametrize(("verb", "value", "expected"), CASES)
def test_verbs(verb: Any, value: Any, expected: str) -> None:
    assert verb(value) == expected


def test_the_webhooks_field_errors_print_scalars_through_the_one_formatter() -> None:
    """As Go's field.Error does (a list or a struct in the form its module documents)."""
    for value, shown in (("é\t", '"é\\t"'), (2.0e7, "2e+07"), (None, "null"), (True, "true")):
        refusal = _fielderrors.invalid("spec.x", value, "bad")
        assert str(refusal) == f"spec.x: Invalid value: {shown}: bad"
