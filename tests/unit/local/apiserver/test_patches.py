"""JSON merge patch, JSON patch and strategic merge patch, case by documented case.

Merge patch cases are RFC 7386's Appendix A; JSON patch cases are RFC 6902's Appendix A plus
the error cases its sections name. Strategic merge patch cases follow the Kubernetes task
"Update API Objects in Place Using kubectl patch", the strategic-merge-patch design document
(directives ``$patch``, ``$retainKeys``, ``$deleteFromPrimitiveList``, ``$setElementOrder``)
and the ``patchStrategy`` / ``patchMergeKey`` tags of the API types.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrain import patches

# ------------------------------------------------------------------------- merge patch (7386)


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        pytest.param({"a": "b"}, {"a": "c"}, {"a": "c"}, id="a member is replaced"),
        pytest.param({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}, id="a member is added"),
        pytest.param({"a": "b"}, {"a": None}, {}, id="null removes a member"),
        pytest.param(
            {"a": "b", "b": "c"}, {"a": None}, {"b": "c"}, id="null removes only that member"
        ),
        pytest.param({"a": ["b"]}, {"a": "c"}, {"a": "c"}, id="a list is replaced by a string"),
        pytest.param({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}, id="a string is replaced by a list"),
        pytest.param(
            {"a": {"b": "c"}},
            {"a": {"b": "d", "c": None}},
            {"a": {"b": "d"}},
            id="objects merge recursively",
        ),
        pytest.param(
            {"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}, id="lists are replaced, never merged"
        ),
        pytest.param(["a", "b"], ["c", "d"], ["c", "d"], id="a list replaces a list"),
        pytest.param({"a": "b"}, ["c"], ["c"], id="a list replaces an object"),
        pytest.param({"a": "foo"}, None, None, id="null replaces the whole document"),
        pytest.param({"a": "foo"}, "bar", "bar", id="a string replaces the whole document"),
        pytest.param({"e": None}, {"a": 1}, {"e": None, "a": 1}, id="a null in the target is kept"),
        pytest.param(
            [1, 2], {"a": "b", "c": None}, {"a": "b"}, id="an object patch on a list starts empty"
        ),
        pytest.param(
            {},
            {"a": {"bb": {"ccc": None}}},
            {"a": {"bb": {}}},
            id="nulls in new nested objects are dropped",
        ),
    ],
)
def test_merge_patch_follows_rfc_7386_appendix_a(target: Any, patch: Any, expected: Any) -> None:
    assert patches.merge_patch(target, patch) == expected


# -------------------------------------------------------------------------- JSON patch (6902)


@pytest.mark.parametrize(
    ("target", "operations", "expected"),
    [
        pytest.param(
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"baz": "qux", "foo": "bar"},
            id="A.1 adding an object member",
        ),
        pytest.param(
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
            id="A.2 adding an array element",
        ),
        pytest.param(
            {"baz": "qux", "foo": "bar"},
            [{"op": "remove", "path": "/baz"}],
            {"foo": "bar"},
            id="A.3 removing an object member",
        ),
        pytest.param(
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
            id="A.4 removing an array element",
        ),
        pytest.param(
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
            id="A.5 replacing a value",
        ),
        pytest.param(
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
            id="A.6 moving a value",
        ),
        pytest.param(
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
            id="A.7 moving an array element",
        ),
        pytest.param(
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ],
            {"baz": "qux", "foo": ["a", 2, "c"]},
            id="A.8 testing a value: success",
        ),
        pytest.param(
            {"foo": "bar"},
            [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
            {"foo": "bar", "child": {"grandchild": {}}},
            id="A.10 adding a nested member object",
        ),
        pytest.param(
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
            {"foo": "bar", "baz": "qux"},
            id="A.11 ignoring unrecognized elements",
        ),
        pytest.param(
            {"/": 9, "~1": 10},
            [{"op": "test", "path": "/~01", "value": 10}],
            {"/": 9, "~1": 10},
            id="A.14 tilde escape ordering",
        ),
        pytest.param(
            {"foo": ["bar"]},
            [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
            {"foo": ["bar", ["abc", "def"]]},
            id="A.16 adding an array value",
        ),
        pytest.param(
            {"a": {"b": 1}},
            [{"op": "copy", "from": "/a", "path": "/c"}],
            {"a": {"b": 1}, "c": {"b": 1}},
            id="copy duplicates a value",
        ),
        pytest.param(
            {"a/b": 1},
            [{"op": "replace", "path": "/a~1b", "value": 2}],
            {"a/b": 2},
            id="a slash is escaped as tilde one",
        ),
        pytest.param({"a": 1}, [{"op": "replace", "path": "", "value": [1]}], [1], id="root"),
        # kube's JSON patch library reads a key missing from an object as null, against the
        # RFC: replacing it adds it, copying it copies null, and it tests equal to null.
        pytest.param(
            {"a": 1},
            [{"op": "replace", "path": "/b", "value": 2}],
            {"a": 1, "b": 2},
            id="replacing a missing member adds it, as kube does",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "copy", "from": "/x", "path": "/y"}],
            {"a": 1, "y": None},
            id="copying a missing member copies null, as kube does",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "test", "path": "/b", "value": None}],
            {"a": 1},
            id="a missing member tests equal to null, as kube does",
        ),
        pytest.param({"a": 1}, [], {"a": 1}, id="an empty patch changes nothing"),
        pytest.param(
            {"a": [1, 2]},
            [{"op": "test", "path": "/a/0", "value": 1.0}],
            {"a": [1, 2]},
            id="numbers compare by value",
        ),
        pytest.param(
            {"a": {"x": 1, "y": [True]}},
            [{"op": "test", "path": "/a", "value": {"y": [True], "x": 1}}],
            {"a": {"x": 1, "y": [True]}},
            id="objects compare regardless of member order",
        ),
        pytest.param(
            {"metadata": {"labels": {"app": "web"}}},
            [
                {"op": "test", "path": "/metadata/labels/app", "value": "web"},
                {"op": "add", "path": "/metadata/labels/tier", "value": "db"},
                {"op": "remove", "path": "/metadata/labels/app"},
            ],
            {"metadata": {"labels": {"tier": "db"}}},
            id="operations apply in order",
        ),
        pytest.param(
            {"a": [1, 2, 3]},
            [{"op": "move", "from": "/a/0", "path": "/a/0"}],
            {"a": [1, 2, 3]},
            id="moving a value onto itself changes nothing",
        ),
    ],
)
def test_json_patch_applies_rfc_6902_operations(
    target: Any, operations: list[dict[str, Any]], expected: Any
) -> None:
    assert patches.json_patch(target, operations) == expected


@pytest.mark.parametrize(
    ("target", "operations", "message"),
    [
        pytest.param(
            {"baz": "qux"},
            [{"op": "test", "path": "/baz", "value": "bar"}],
            "testing value /baz failed: test failed",
            id="A.9 testing a value: error",
        ),
        pytest.param(
            {"foo": "bar"},
            [{"op": "add", "path": "/baz/bat", "value": "qux"}],
            'add operation does not apply: doc is missing path: "/baz/bat": missing value',
            id="A.12 adding to a nonexistent target",
        ),
        pytest.param(
            {"foo": "bar"},
            json.loads('[{"op": "add", "path": "/baz", "value": "qux", "op": "remove"}]'),
            'remove operation does not apply: doc is missing path: "/baz": missing value',
            id="A.13 a duplicate op member is read as its last value",
        ),
        pytest.param(
            {"/": 9, "~1": 10},
            [{"op": "test", "path": "/~01", "value": "10"}],
            "testing value /~01 failed: test failed",
            id="A.15 comparing strings and numbers",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "test", "path": "/a", "value": True}],
            "testing value /a failed: test failed",
            id="true is not the number one",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "test", "path": "/b", "value": 2}],
            "testing value /b failed: test failed",
            id="a missing member is null, not a value",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "test", "path": "/b/c", "value": None}],
            "test operation does not apply: is missing path: /b/c",
            id="testing a member of a missing object fails",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "remove", "path": "/b"}],
            'remove operation does not apply: doc is missing path: "/b": missing value',
            id="removing a missing member",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "replace", "path": "/b/c", "value": 2}],
            'replace operation does not apply: doc is missing path: "/b/c": missing value',
            id="replacing a member of a missing object",
        ),
        pytest.param(
            {"a": [1]},
            [{"op": "replace", "path": "/a/1", "value": 2}],
            "replace operation does not apply: /a/1: "
            "Unable to access invalid index: 1: invalid index referenced",
            id="replacing past the end of a list",
        ),
        pytest.param(
            {"a": [1]},
            [{"op": "add", "path": "/a/2", "value": 2}],
            "add operation does not apply: /a/2: "
            "Unable to access invalid index: 2: invalid index referenced",
            id="adding past the end of a list",
        ),
        pytest.param(
            {"a": [1]},
            [{"op": "remove", "path": "/a/-"}],
            "remove operation does not apply: /a/-: '-' is not a list index",
            id="the end marker only adds",
        ),
        pytest.param(
            {"a": [1, 2]},
            [{"op": "replace", "path": "/a/01", "value": 2}],
            "replace operation does not apply: /a/01: '01' is not a list index",
            id="an index with a leading zero",
        ),
        pytest.param(
            {"a": {"b": 1}},
            [{"op": "move", "from": "/a", "path": "/a/b/c"}],
            "move operation does not apply: /a/b/c is inside /a",
            id="moving a value into itself",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "copy", "from": "/x/y", "path": "/y"}],
            "copy operation does not apply: doc is missing from path: /x/y",
            id="copying from a missing object",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "move", "from": "/x", "path": "/y"}],
            'move operation does not apply: doc is missing path: "/x": missing value',
            id="moving a missing member",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "remove", "path": ""}],
            "remove operation does not apply: cannot remove the whole document",
            id="removing the whole document",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "add", "path": "/b"}],
            "add operation: missing value field",
            id="add without a value",
        ),
        pytest.param(
            {"a": 1}, [{"op": "remove"}], "remove operation: missing path field", id="no path"
        ),
        pytest.param(
            {"a": 1},
            [{"op": "add", "path": "b", "value": 1}],
            'invalid JSON pointer "b": it must be empty or start with "/"',
            id="a pointer without a leading slash",
        ),
        pytest.param(
            {"a": 1},
            [{"op": "add", "path": "/~2", "value": 1}],
            'invalid JSON pointer "/~2": "~" must be followed by 0 or 1',
            id="a bad tilde escape",
        ),
        pytest.param(
            {"a": 1}, [{"op": "merge", "path": "/a"}], "Unexpected kind: merge", id="an unknown op"
        ),
        pytest.param({"a": 1}, [{"path": "/a"}], "Unexpected kind: unknown", id="no op at all"),
    ],
)
def test_a_json_patch_that_cannot_apply_is_a_patch_error(
    target: Any, operations: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(patches.PatchError) as caught:
        patches.json_patch(target, operations)
    assert str(caught.value) == message
    assert not isinstance(caught.value, patches.PatchFormatError)


@pytest.mark.parametrize(
    "operations",
    [
        pytest.param({"op": "add", "path": "/a", "value": 1}, id="one operation, not a list"),
        pytest.param(["add"], id="a list of strings"),
        pytest.param(None, id="null"),
    ],
)
def test_a_json_patch_that_is_not_a_list_of_objects_is_malformed(operations: Any) -> None:
    with pytest.raises(patches.PatchFormatError):
        patches.json_patch({}, operations)


def test_a_failing_json_patch_applies_nothing() -> None:
    target = {"a": 1}
    with pytest.raises(patches.PatchError):
        patches.json_patch(
            target,
            [{"op": "add", "path": "/b", "value": 2}, {"op": "test", "path": "/a", "value": 9}],
        )
    assert target == {"a": 1}


def test_a_copied_value_does_not_alias_its_source() -> None:
    result = patches.json_patch({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}])
    result["c"]["b"] = 2
    assert result["a"] == {"b": 1}


# ------------------------------------------------------------------ strategic merge patch

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web",
        "labels": {"app": "web", "tier": "front"},
        "finalizers": ["a.example.com/x", "b.example.com/y"],
        "ownerReferences": [{"uid": "u1", "kind": "Job", "name": "j1"}],
    },
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "nginx",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "ports": [{"containerPort": 80, "name": "http"}],
            }
        ],
        "tolerations": [{"key": "dedicated", "effect": "NoSchedule", "value": "test-team"}],
        "volumes": [{"name": "data", "emptyDir": {}}],
    },
    "status": {"conditions": [{"type": "Ready", "status": "False"}]},
}


def pod(**changes: Any) -> dict[str, Any]:
    """POD with top-level sections replaced (a deep copy, so cases never share state)."""
    return {**copy.deepcopy(POD), **copy.deepcopy(changes)}


def containers(result: dict[str, Any]) -> list[dict[str, Any]]:
    return result["spec"]["containers"]


MAIN = POD["spec"]["containers"][0]


@pytest.mark.parametrize(
    ("patch", "read", "expected"),
    [
        pytest.param(
            {"spec": {"containers": [{"name": "sidecar", "image": "redis"}]}},
            containers,
            [{"name": "sidecar", "image": "redis"}, MAIN],
            id="adding a container merges by name and puts the new one first",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}},
            containers,
            [{**MAIN, "image": "nginx:1.27"}],
            id="a container's field changes and the rest stays",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "main", "env": [{"name": "B", "value": "3"}]}]}},
            lambda r: containers(r)[0]["env"],
            [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}],
            id="an env var is patched by name in place",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "main", "env": [{"name": "C", "value": "4"}]}]}},
            lambda r: containers(r)[0]["env"],
            [{"name": "C", "value": "4"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            id="a new env var is added",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 443}]}]}},
            lambda r: containers(r)[0]["ports"],
            [{"containerPort": 443}, {"containerPort": 80, "name": "http"}],
            id="container ports merge on containerPort",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "main", "$patch": "delete"}]}},
            containers,
            [],
            id="a container is deleted with $patch delete",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "only", "image": "busybox"}, {"$patch": "replace"}]}},
            containers,
            [{"name": "only", "image": "busybox"}],
            id="a list is replaced with a $patch replace item",
        ),
        pytest.param(
            {
                "spec": {
                    "containers": [
                        {"name": "main", "env": [{"name": "A", "$patch": "delete"}]},
                    ]
                }
            },
            lambda r: containers(r)[0]["env"],
            [{"name": "B", "value": "2"}],
            id="an env var is deleted inside a merged container",
        ),
        pytest.param(
            {
                "spec": {
                    "tolerations": [{"key": "disktype", "value": "ssd", "effect": "NoSchedule"}]
                }
            },
            lambda r: r["spec"]["tolerations"],
            [{"key": "disktype", "value": "ssd", "effect": "NoSchedule"}],
            id="tolerations have no strategy and are replaced",
        ),
        pytest.param(
            {"spec": {"volumes": [{"name": "cache", "emptyDir": {"medium": "Memory"}}]}},
            lambda r: [v["name"] for v in r["spec"]["volumes"]],
            ["cache", "data"],
            id="volumes merge on name",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["c.example.com/z"]}},
            lambda r: r["metadata"]["finalizers"],
            ["c.example.com/z", "a.example.com/x", "b.example.com/y"],
            id="a finalizer is added to the set",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a.example.com/x"]}},
            lambda r: r["metadata"]["finalizers"],
            ["a.example.com/x", "b.example.com/y"],
            id="a finalizer already present is not doubled",
        ),
        pytest.param(
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/x"]}},
            lambda r: r["metadata"]["finalizers"],
            ["b.example.com/y"],
            id="a finalizer is removed with $deleteFromPrimitiveList",
        ),
        pytest.param(
            {
                "metadata": {
                    "$setElementOrder/finalizers": ["b.example.com/y", "c.example.com/z"],
                    "$deleteFromPrimitiveList/finalizers": ["a.example.com/x"],
                    "finalizers": ["c.example.com/z"],
                }
            },
            lambda r: r["metadata"]["finalizers"],
            ["b.example.com/y", "c.example.com/z"],
            id="a kubectl apply patch of finalizers: order, delete, add",
        ),
        pytest.param(
            {
                "spec": {
                    "$setElementOrder/containers": [{"name": "main"}, {"name": "sidecar"}],
                    "containers": [{"name": "sidecar", "image": "redis"}],
                }
            },
            lambda r: [c["name"] for c in containers(r)],
            ["main", "sidecar"],
            id="$setElementOrder places a new container after the old one",
        ),
        pytest.param(
            {
                "spec": {
                    "containers": [
                        {"name": "main", "$setElementOrder/env": [{"name": "B"}, {"name": "A"}]}
                    ]
                }
            },
            lambda r: [e["name"] for e in containers(r)[0]["env"]],
            ["B", "A"],
            id="$setElementOrder alone reorders a list",
        ),
        pytest.param(
            {"metadata": {"ownerReferences": [{"uid": "u1", "controller": True}]}},
            lambda r: r["metadata"]["ownerReferences"],
            [{"uid": "u1", "kind": "Job", "name": "j1", "controller": True}],
            id="owner references merge on uid",
        ),
        pytest.param(
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            lambda r: r["status"]["conditions"],
            [{"type": "Ready", "status": "True"}],
            id="pod conditions merge on type",
        ),
        pytest.param(
            {"metadata": {"labels": {"tier": None, "canary": "yes"}}},
            lambda r: r["metadata"]["labels"],
            {"app": "web", "canary": "yes"},
            id="null deletes a map key and other keys merge",
        ),
        pytest.param(
            {"metadata": {"labels": {"$patch": "replace", "only": "this"}}},
            lambda r: r["metadata"]["labels"],
            {"only": "this"},
            id="$patch replace makes a map exactly the patch",
        ),
        pytest.param(
            {"metadata": {"labels": {"$patch": "delete"}}},
            lambda r: r["metadata"]["labels"],
            {},
            id="$patch delete empties a map",
        ),
        pytest.param(
            {
                "spec": {
                    "volumes": [
                        {
                            "name": "data",
                            "$retainKeys": ["name", "hostPath"],
                            "hostPath": {"path": "/d"},
                        }
                    ]
                }
            },
            lambda r: r["spec"]["volumes"],
            [{"name": "data", "hostPath": {"path": "/d"}}],
            id="$retainKeys clears a volume's old source",
        ),
        pytest.param(
            {"spec": {"nodeName": {"not": "a string"}}},
            lambda r: r["spec"]["nodeName"],
            {"not": "a string"},
            id="a value of another type replaces the old one",
        ),
        pytest.param(
            {
                "spec": {
                    "initContainers": [{"name": "init", "env": [{"name": "X", "$patch": "delete"}]}]
                }
            },
            lambda r: r["spec"]["initContainers"],
            [{"name": "init", "env": []}],
            id="directives in a new list are applied, not stored",
        ),
    ],
)
def test_strategic_merge_patch_of_a_pod(
    patch: dict[str, Any], read: Callable[[dict[str, Any]], Any], expected: Any
) -> None:
    assert read(patches.strategic_merge_patch(POD, patch, "v1/Pod")) == expected


@pytest.mark.parametrize(
    ("kind_key", "target", "patch", "expected"),
    [
        pytest.param(
            "v1/Service",
            {"spec": {"ports": [{"port": 80, "name": "http"}], "selector": {"app": "web"}}},
            {"spec": {"ports": [{"port": 443, "name": "https"}]}},
            {
                "spec": {
                    "ports": [{"port": 443, "name": "https"}, {"port": 80, "name": "http"}],
                    "selector": {"app": "web"},
                }
            },
            id="service ports merge on port",
        ),
        pytest.param(
            "v1/Node",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": []}},
            {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}]}},
            {
                "status": {
                    "conditions": [
                        {"type": "MemoryPressure", "status": "False"},
                        {"type": "Ready", "status": "True"},
                    ],
                    "addresses": [],
                }
            },
            id="node conditions merge on type",
        ),
        pytest.param(
            "v1/Node",
            {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}},
            {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}},
            {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}},
            id="node taints have no strategy and are replaced",
        ),
        pytest.param(
            "v1/ConfigMap",
            {"data": {"a": "1", "b": "2"}},
            {"data": {"b": None, "c": "3"}},
            {"data": {"a": "1", "c": "3"}},
            id="config map data merges like a merge patch",
        ),
        pytest.param(
            "v1/ServiceAccount",
            {"secrets": [{"name": "s1"}]},
            {"secrets": [{"name": "s2"}]},
            {"secrets": [{"name": "s2"}, {"name": "s1"}]},
            id="service account secrets merge on name",
        ),
        pytest.param(
            "autoscaling/v2/HorizontalPodAutoscaler",
            {"spec": {"metrics": [{"type": "Resource"}]}},
            {"spec": {"metrics": [{"type": "Pods"}]}},
            {"spec": {"metrics": [{"type": "Pods"}]}},
            id="autoscaler metrics are atomic",
        ),
        pytest.param(
            "coordination.k8s.io/v1/Lease",
            {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}},
            {"spec": {"holderIdentity": "b"}},
            {"spec": {"holderIdentity": "b", "leaseDurationSeconds": 15}},
            id="a lease's holder changes",
        ),
        pytest.param(
            "v1/Pod",
            {"metadata": {"name": "x"}},
            {"$patch": "delete"},
            {},
            id="$patch delete at the top empties the object",
        ),
    ],
)
def test_strategic_merge_patch_of_other_kinds(
    kind_key: str, target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert patches.strategic_merge_patch(target, patch, kind_key) == expected


@pytest.mark.parametrize(
    ("patch", "error", "message"),
    [
        pytest.param(
            {"metadata": {"labels": {"$patch": "merge"}}},
            patches.PatchError,
            "unknown patch type: merge in map: map[$patch:merge]",
            id="$patch merge on a map is refused as kube does",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "main", "$patch": "merge"}]}},
            patches.PatchError,
            "merging lists cannot yet be specified in the patch",
            id="$patch merge in a list is refused as kube does",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "main", "$patch": "explode"}]}},
            patches.PatchError,
            "unknown patch type: explode in map: map[$patch:explode name:main]",
            id="an unknown list directive",
        ),
        pytest.param(
            {"spec": {"containers": [{"image": "redis"}]}},
            patches.PatchError,
            "map: map[image:redis] does not contain declared merge key: name",
            id="a container without its merge key",
        ),
        pytest.param(
            {"spec": {"containers": [{"$patch": "delete"}]}},
            patches.PatchError,
            "map: map[$patch:delete] does not contain declared merge key: name",
            id="a delete without the merge key",
        ),
        pytest.param(
            {"spec": {"$retainKeys": ["containers"], "nodeName": "n1"}},
            patches.PatchFormatError,
            "invalid patch format of retainKeys",
            id="$retainKeys that omits a key the patch sets",
        ),
        pytest.param(
            {"spec": {"$retainKeys": "containers"}},
            patches.PatchFormatError,
            "invalid patch format of retainKeys",
            id="$retainKeys that is not a list",
        ),
        pytest.param(
            {"metadata": {"$deleteFromPrimitiveListfinalizers": ["x"]}},
            patches.PatchFormatError,
            "invalid patch format of primitive list",
            id="$deleteFromPrimitiveList without a slash",
        ),
        pytest.param(
            {"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}},
            patches.PatchFormatError,
            "invalid patch format of primitive list",
            id="$deleteFromPrimitiveList that is not a list",
        ),
        pytest.param(
            {"metadata": {"$setElementOrderX/finalizers": ["x"]}},
            patches.PatchFormatError,
            "invalid patch format of setElementOrder list",
            id="$setElementOrder with a bad prefix",
        ),
        pytest.param(
            {
                "spec": {
                    "$setElementOrder/containers": [{"name": "main"}],
                    "containers": [{"name": "sidecar"}],
                }
            },
            patches.PatchError,
            "The order in patch list:\n[map[name:sidecar]]\n doesn't match $setElementOrder "
            "list:\n[map[name:main]]\n",
            id="$setElementOrder that misses a patched item",
        ),
        pytest.param(
            {"metadata": {"finalizers": [{"name": "x"}]}},
            patches.PatchError,
            "list element types are not identical: "
            "[[a.example.com/x b.example.com/y] [map[name:x]]]",
            id="maps into a list of strings",
        ),
    ],
)
def test_a_strategic_merge_patch_that_cannot_apply_is_refused(
    patch: dict[str, Any], error: type[patches.PatchError], message: str
) -> None:
    with pytest.raises(error) as caught:
        patches.strategic_merge_patch(POD, patch, "v1/Pod")
    assert str(caught.value) == message


def test_a_list_of_lists_does_not_merge() -> None:
    with pytest.raises(patches.PatchError, match=r"^lists of lists are not supported$"):
        patches.strategic_merge_patch(
            {"metadata": {"finalizers": []}}, {"metadata": {"finalizers": [["x"]]}}, "v1/Pod"
        )


@pytest.mark.parametrize(
    ("target", "patch", "error"),
    [
        pytest.param({}, ["not", "an", "object"], patches.PatchFormatError, id="a list patch"),
        pytest.param([], {}, patches.PatchError, id="a list target"),
    ],
)
def test_strategic_merge_patch_needs_objects(
    target: Any, patch: Any, error: type[patches.PatchError]
) -> None:
    with pytest.raises(error):
        patches.strategic_merge_patch(target, patch, "v1/Pod")


BUILT_IN = [
    "v1/Pod",
    "v1/Service",
    "v1/ConfigMap",
    "v1/Secret",
    "v1/Namespace",
    "v1/Node",
    "v1/ServiceAccount",
    "v1/Event",
    "v1/PersistentVolumeClaim",
    "v1/ResourceQuota",
    "v1/LimitRange",
    "coordination.k8s.io/v1/Lease",
    "scheduling.k8s.io/v1/PriorityClass",
    "autoscaling/v2/HorizontalPodAutoscaler",
    "events.k8s.io/v1/Event",
    "apiextensions.k8s.io/v1/CustomResourceDefinition",
]


@pytest.mark.parametrize("kind_key", BUILT_IN)
def test_every_built_in_kind_served_supports_strategic_merge(kind_key: str) -> None:
    assert patches.supports_strategic(kind_key)


@pytest.mark.parametrize(
    "kind_key",
    [
        pytest.param("kubeflow.org/v1/PyTorchJob", id="a kubetrain custom resource"),
        pytest.param("trainer.kubeflow.org/v1alpha1/TrainJob", id="a Trainer v2 resource"),
        pytest.param("scheduling.volcano.sh/v1beta1/PodGroup", id="a PodGroup"),
        pytest.param("Pod", id="a kind without its group and version"),
    ],
)
def test_custom_resources_do_not_support_strategic_merge(kind_key: str) -> None:
    assert not patches.supports_strategic(kind_key)
    with pytest.raises(patches.PatchError, match="not supported"):
        patches.strategic_merge_patch({}, {}, kind_key)


# ------------------------------------------------------------------------------ purity


def containers_of(*values: Any) -> Iterator[int]:
    """The ids of every dict and list inside the values."""
    for value in values:
        if isinstance(value, dict | list):
            yield id(value)
            yield from containers_of(*(value.values() if isinstance(value, dict) else value))


APPLY: dict[str, Callable[[Any, Any], Any]] = {
    "merge": patches.merge_patch,
    "json": patches.json_patch,
    "strategic": lambda target, patch: patches.strategic_merge_patch(target, patch, "v1/Pod"),
}

SAMPLE_PATCHES = {
    "merge": {"spec": {"containers": [{"name": "x"}]}, "metadata": {"labels": {"a": None}}},
    "json": [
        {"op": "add", "path": "/spec/extra", "value": {"k": [1]}},
        {"op": "copy", "from": "/spec/containers/0", "path": "/spec/copied"},
    ],
    "strategic": {
        "spec": {"containers": [{"name": "main", "env": [{"name": "Z", "value": "z"}]}]},
        "metadata": {"$setElementOrder/finalizers": ["b.example.com/y", "a.example.com/x"]},
    },
}


@pytest.mark.parametrize("kind", list(APPLY))
def test_a_patch_result_shares_nothing_with_its_inputs(kind: str) -> None:
    target, patch = pod(), copy.deepcopy(SAMPLE_PATCHES[kind])
    result = APPLY[kind](target, patch)
    assert (target, patch) == (pod(), SAMPLE_PATCHES[kind])
    assert not set(containers_of(result)) & set(containers_of(target, patch))


# -------------------------------------------------------------------------------- properties

KEYS = st.sampled_from(
    [
        "a",
        "b",
        "name",
        "spec",
        "metadata",
        "containers",
        "env",
        "finalizers",
        "$patch",
        "$retainKeys",
        "$setElementOrder/containers",
        "$setElementOrder/finalizers",
        "$deleteFromPrimitiveList/finalizers",
        "$deleteFromPrimitiveListfinalizers",
        "op",
        "path",
        "from",
        "value",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.floats(allow_nan=False, allow_infinity=False, width=16)
    | st.sampled_from(
        [
            "",
            "a",
            "main",
            "delete",
            "replace",
            "merge",
            "add",
            "remove",
            "move",
            "copy",
            "test",
            "/a",
            "/spec/containers/0",
            "/a/-",
            "/~1",
            "-",
        ]
    )
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=24,
)
OBJECTS = st.dictionaries(KEYS, JSON, max_size=5)


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(list(APPLY)), target=JSON | OBJECTS, patch=JSON | OBJECTS)
def test_patches_raise_only_patch_errors_and_never_touch_their_inputs(
    kind: str, target: Any, patch: Any
) -> None:
    before = copy.deepcopy((target, patch))
    try:
        result = APPLY[kind](target, patch)
    except patches.PatchError:
        result = None
    assert (target, patch) == before
    json.dumps(result)  # still plain JSON
    assert not set(containers_of(result)) & set(containers_of(target, patch))


@settings(max_examples=100, deadline=None)
@given(
    operations=st.lists(
        st.fixed_dictionaries(
            {
                "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]),
                "path": st.sampled_from(["", "/a", "/a/0", "/a/-", "/b", "/a/b", "/~0", "/a/01"]),
            },
            optional={"from": st.sampled_from(["", "/a", "/a/0", "/b"]), "value": JSON},
        ),
        max_size=4,
    ),
    target=JSON,
)
def test_json_patch_raises_only_patch_errors_on_well_formed_operations(
    operations: list[dict[str, Any]], target: Any
) -> None:
    before = copy.deepcopy((target, operations))
    with contextlib.suppress(patches.PatchError):
        patches.json_patch(target, operations)
    assert (target, operations) == before
