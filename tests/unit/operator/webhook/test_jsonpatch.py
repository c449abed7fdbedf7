"""The mutating webhook's patch: applied as kube-apiserver applies it (here by the local API
server's RFC 6902 implementation), it turns the object as sent into the defaulted one, and
touches nothing that did not change."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import patches
from kubetrain.operator.webhook import jsonpatch

CASES = [
    pytest.param({"a": 1}, {"a": 1}, id="nothing changed, nothing to do"),
    pytest.param({"a": 1}, {"a": 1, "b": {"c": 2}}, id="a new key is added whole"),
    pytest.param({"a": 1, "b": 2}, {"a": 1}, id="a dropped key is removed"),
    pytest.param({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}}, id="a nested value replaced"),
    pytest.param({"a": [1, 2]}, {"a": [1, 2, 3]}, id="a changed list is replaced whole"),
    pytest.param({"a": 1}, {"a": True}, id="1 and true differ in JSON"),
    pytest.param({"a": 1}, {"a": 1.5}, id="an int becomes a float"),
    pytest.param(
        {"metadata": {"labels": {}}},
        {"metadata": {"labels": {"trainer.kubeflow.org/x~y": "v"}}},
        id="keys with / and ~ are escaped",
    ),
    pytest.param({"a": None}, {"a": {"b": 1}}, id="null becomes an object"),
]


@pytest.mark.parametrize(("before", "after"), CASES)
def test_the_patch_turns_before_into_after(before: dict[str, Any], after: dict[str, Any]) -> None:
    ops = jsonpatch.diff(before, after)
    assert patches.json_patch(before, ops) == after
    assert (ops == []) == (before == after and str(before) == str(after))


def test_only_what_changed_is_touched() -> None:
    before = {"spec": {"a": 1, "b": {"c": [1]}}, "metadata": {"name": "x"}}
    after = {"spec": {"a": 1, "b": {"c": [1], "d": 2}}, "metadata": {"name": "x"}}
    assert jsonpatch.diff(before, after) == [{"op": "add", "path": "/spec/b/d", "value": 2}]


def test_pointer_escapes_as_rfc_6901() -> None:
    assert jsonpatch.pointer("metadata", "a/b", "c~d", 0) == "/metadata/a~1b/c~0d/0"
