"""A TrainJob's pod-template overrides, merged by the one strategic merge (kubetrain.patches):
keyed lists merge item by item, other lists are replaced, maps merge, null deletes; and the
plugins' upserts keep positions."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import patches
from kubetrain.operator.trainjob import upserts

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
    merged = patches.strategic_merge_patch(BASE, patch, patches.POD_TEMPLATE, new_items_last=True)
    assert merged["spec"]["containers"] == expected


def test_unkeyed_lists_are_replaced_maps_merge_and_null_deletes() -> None:
    merged = patches.strategic_merge_patch(
        BASE,
        {
            "metadata": {"labels": {"b": "2"}},
            "spec": {"tolerations": [{"key": "k2"}], "nodeSelector": None},
        },
        patches.POD_TEMPLATE,
        new_items_last=True,
    )
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert merged["spec"]["tolerations"] == [{"key": "k2"}]
    assert "nodeSelector" not in merged["spec"]
    assert BASE["spec"]["nodeSelector"] == {"zone": "a"}, "the input is not changed"


def test_upsert_replaces_in_place_and_appends_the_rest() -> None:
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    upserts.upsert_env(env, [{"name": "A", "value": "9"}, {"name": "C", "value": "3"}])
    assert env == [
        {"name": "A", "value": "9"},
        {"name": "B", "value": "2"},
        {"name": "C", "value": "3"},
    ]


def test_a_template_s_metadata_merges_as_object_meta() -> None:
    merged = patches.strategic_merge_patch(
        {"labels": {"a": "1"}, "finalizers": ["x"]},
        {"labels": {"b": "2"}, "finalizers": ["y"]},
        patches.OBJECT_META,
        new_items_last=True,
    )
    assert merged == {"labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]}


def test_an_override_may_use_the_directives_of_a_strategic_merge_patch() -> None:
    patch = {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}
    merged = patches.strategic_merge_patch(BASE, patch, patches.POD_TEMPLATE, new_items_last=True)
    assert [c["name"] for c in merged["spec"]["containers"]] == ["node"]


def test_existing_items_keep_their_place_and_new_ones_follow_in_the_patch_s_order() -> None:
    base = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    patch = {"spec": {"containers": [{"name": "d"}, {"name": "b", "image": "i"}, {"name": "c"}]}}
    merged = patches.strategic_merge_patch(base, patch, patches.POD_TEMPLATE, new_items_last=True)
    assert merged["spec"]["containers"] == [
        {"name": "a"},
        {"name": "b", "image": "i"},
        {"name": "d"},
        {"name": "c"},
    ]
    served = patches.strategic_merge_patch(base, patch, patches.POD_TEMPLATE)
    assert [c["name"] for c in served["spec"]["containers"]] == ["d", "a", "b", "c"], (
        "kube's own order, for the API server"
    )
