"""Reading objects that may lack any step: the one set of accessors answers empty, never
raises, whoever wrote the object."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import accessors

POD = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u",
        "labels": {"a": "1"},
        "annotations": {"b": "2"},
    },
    "status": {"phase": "Running"},
    "spec": {"containers": [{"name": "c"}]},
}


def test_a_whole_object_reads_back() -> None:
    assert (accessors.name_of(POD), accessors.namespace_of(POD), accessors.uid_of(POD)) == (
        "p",
        "ns",
        "u",
    )
    assert accessors.labels_of(POD) == {"a": "1"}
    assert accessors.annotations_of(POD) == {"b": "2"}
    assert accessors.phase(POD) == "Running"
    assert accessors.dig(POD, "spec", "containers") == [{"name": "c"}]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({}, id="nothing"),
        pytest.param({"metadata": None, "status": None}, id="nulls"),
        pytest.param({"metadata": "x", "status": ["Running"]}, id="other types"),
    ],
)
def test_a_missing_or_odd_step_reads_empty(obj: dict[str, Any]) -> None:
    assert accessors.metadata(obj) == {}
    assert accessors.name_of(obj) == accessors.namespace_of(obj) == accessors.uid_of(obj) == ""
    assert accessors.labels_of(obj) == accessors.annotations_of(obj) == {}
    assert accessors.phase(obj) == ""
    assert accessors.dig(obj, "metadata", "name") is None
    assert accessors.dig(POD, "spec", "containers", "name") is None, "a list is no object"
