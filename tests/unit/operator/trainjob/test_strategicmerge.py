"""Strategic merge of pod templates: keyed lists merge item by item, other lists are replaced,
maps merge, null deletes; upserts keep positions."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.operator.trainjob import strategicmerge

BASE: dict[str, Any] = {
    "metadata": {"labels": {"a": "1"}},
    "spec": {
        "containers": [
            {"name": "node", "image": "x", "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "y"},
        ],
        "tolerations": [{"key": "k1"}],
        "nodeSelector": {"zone": "a"},
    },
}


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        pytest.param(
            {"spec": {"containers": [{"name": "node", "env": [{"name": "B", "value": "2"}]}]}},
            [
                {
                    "name": "node",
                    "image": "x",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                },
                {"name": "side", "image": "y"},
            ],
            id="containers merge by name and env by name",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "new", "image": "z"}]}},
            [
                {"name": "node", "image": "x", "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "y"},
                {"name": "new", "image": "z"},
            ],
            id="an unknown key is appended",
        ),
    ],
)
def test_keyed_lists_merge(patch: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert strategicmerge.merge(BASE, patch)["spec"]["containers"] == expected


def test_unkeyed_lists_are_replaced_maps_merge_and_null_deletes() -> None:
    merged = strategicmerge.merge(
        BASE,
        {
            "metadata": {"labels": {"b": "2"}},
            "spec": {"tolerations": [{"key": "k2"}], "nodeSelector": None},
        },
    )
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert merged["spec"]["tolerations"] == [{"key": "k2"}]
    assert "nodeSelector" not in merged["spec"]
    assert BASE["spec"]["nodeSelector"] == {"zone": "a"}, "the input is not changed"


def test_upsert_replaces_in_place_and_appends_the_rest() -> None:
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    strategicmerge.upsert_env(env, [{"name": "A", "value": "9"}, {"name": "C", "value": "3"}])
    assert env == [
        {"name": "A", "value": "9"},
        {"name": "B", "value": "2"},
        {"name": "C", "value": "3"},
    ]
