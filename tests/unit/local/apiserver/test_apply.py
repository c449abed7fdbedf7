"""Server-side apply, as the Kubernetes documentation describes it.

Sources: "Server-Side Apply" in the Kubernetes documentation (field management, conflicts,
merge strategies, transferring ownership, clearing managedFields) and kube-apiserver's
conflict messages. Expected objects and FieldsV1 trees are written out by hand from those
rules, never captured from the implementation.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain.local.apiserver import apply as ssa
from kubetrain.local.apiserver import fieldpaths as fp
from kubetrain.local.apiserver import fieldsets as fs

T1 = "2024-05-01T10:00:00Z"
T2 = "2024-05-01T11:00:00Z"
T3 = "2024-05-01T12:00:00Z"
APP = 'k:{"name":"app"}'
SIDECAR = 'k:{"name":"sidecar"}'


def deployment(spec: dict[str, Any] | None, **metadata: Any) -> dict[str, Any]:
    """A Deployment, the Kubernetes documentation's example; ``spec=None`` leaves it out."""
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", **metadata},
    }
    if spec is not None:
        obj["spec"] = spec
    return obj


def pod(*containers: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", **metadata},
        "spec": {"containers": list(containers)},
    }


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as the registry would store it: with the metadata the server sets."""
    out = copy.deepcopy(obj)
    out["metadata"].update(
        uid="0b9d7c1e-0000-4000-8000-000000000001",
        resourceVersion="7",
        creationTimestamp=T1,
        generation=1,
    )
    return out


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """managedFields by (manager, operation)."""
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def fields_v1(obj: dict[str, Any], manager: str, operation: str = "Apply") -> dict[str, Any]:
    return entries(obj)[(manager, operation)]["fieldsV1"]


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].pop("managedFields", None)
    return out


# --- creating -------------------------------------------------------------------------------


def test_the_first_apply_creates_the_object_with_one_apply_entry() -> None:
    config = deployment({"replicas": 3}, labels={"app": "web"})

    created = ssa.apply(None, config, "kubectl", force=False, now=T1)

    assert without_managed_fields(created) == config
    assert created["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {}}},
        }
    ]


def test_applied_fields_use_kubes_fieldsv1_spelling_for_keyed_items() -> None:
    config = pod({"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]})

    created = ssa.apply(None, config, "kubectl", force=False, now=T1)

    port = 'k:{"containerPort":80,"protocol":"TCP"}'  # protocol defaults to TCP in the key
    assert fields_v1(created, "kubectl") == {
        "f:spec": {
            "f:containers": {
                APP: {
                    ".": {},
                    "f:image": {},
                    "f:name": {},
                    "f:ports": {port: {".": {}, "f:containerPort": {}}},
                }
            }
        }
    }


def test_managed_fields_never_include_server_set_or_identity_metadata() -> None:
    config = deployment({"replicas": 1}, labels={"a": "b"})
    config["metadata"].update(
        uid="u", resourceVersion="9", creationTimestamp=T1, generation=4, selfLink="/x"
    )
    live = stored(deployment({"replicas": 1}))

    for result in (
        ssa.apply(None, config, "m", force=False, now=T2),
        ssa.apply(live, config, "m", force=False, now=T2),
        ssa.record_update(None, config, "m", operation="Update", now=T2),
    ):
        owned = fp.from_fields_v1(result["metadata"]["managedFields"][0]["fieldsV1"])
        top = {p[:2] for p in owned if p[0] == "f:metadata"}
        assert top == {("f:metadata", "f:labels")}
        assert ("f:apiVersion",) not in owned
        assert ("f:kind",) not in owned


def test_apply_keeps_the_server_set_metadata_of_the_live_object() -> None:
    live = stored(deployment({"replicas": 1}))
    config = deployment({"replicas": 2})
    config["metadata"].update(uid="forged", resourceVersion="1", generation=99)

    result = ssa.apply(live, config, "m", force=False, now=T2)

    for name in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        assert result["metadata"][name] == live["metadata"][name]
    assert result["spec"] == {"replicas": 2}


# --- one manager, applied again -------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        pytest.param(
            deployment({"replicas": 3, "paused": True}),
            deployment({"replicas": 3}),
            {"replicas": 3},
            id="a field applied before and omitted now is removed",
        ),
        pytest.param(
            deployment({"replicas": 3, "strategy": {"type": "Recreate"}}),
            deployment({"replicas": 3}),
            {"replicas": 3},
            id="a map emptied by the removal goes with its last field",
        ),
        pytest.param(
            deployment({"replicas": 3}),
            deployment({"replicas": 5}),
            {"replicas": 5},
            id="a field the manager owns alone changes without conflict",
        ),
        pytest.param(
            deployment({"replicas": 3, "selector": {"x": 1}}),
            deployment({"replicas": 3, "selector": {}}),
            {"replicas": 3, "selector": {}},
            id="an empty map applied now is kept as applied",
        ),
    ],
)
def test_reapplying_makes_the_object_match_the_new_intent(
    first: dict[str, Any], second: dict[str, Any], expected: dict[str, Any]
) -> None:
    live = stored(ssa.apply(None, first, "m", force=False, now=T1))

    result = ssa.apply(live, second, "m", force=False, now=T2)

    assert result["spec"] == expected
    assert fp.from_fields_v1(fields_v1(result, "m")) == ssa.fields_of(second)
    assert entries(result)[("m", "Apply")]["time"] == T2


def test_a_container_omitted_now_is_removed_from_the_associative_list() -> None:
    first = pod({"name": "app", "image": "a"}, {"name": "sidecar", "image": "s"})
    live = stored(ssa.apply(None, first, "m", force=False, now=T1))

    result = ssa.apply(live, pod({"name": "app", "image": "a"}), "m", force=False, now=T2)

    assert result["spec"]["containers"] == [{"name": "app", "image": "a"}]


def test_fields_nobody_applied_stay_when_the_applier_omits_its_own() -> None:
    live = stored(ssa.apply(None, deployment({"replicas": 3}), "m", force=False, now=T1))
    live["spec"]["revisionHistoryLimit"] = 10  # defaulted by the server: owned by nobody

    result = ssa.apply(live, deployment({"paused": False}), "m", force=False, now=T2)

    assert result["spec"] == {"revisionHistoryLimit": 10, "paused": False}


def test_an_apply_that_changes_nothing_returns_the_live_object_untouched() -> None:
    config = deployment({"replicas": 3})
    live = stored(ssa.apply(None, config, "m", force=False, now=T1))

    assert ssa.apply(live, config, "m", force=False, now=T2) == live


def test_a_configuration_setting_nothing_removes_all_and_leaves_no_entry() -> None:
    live = stored(ssa.apply(None, deployment({"replicas": 3}), "m", force=False, now=T1))

    result = ssa.apply(live, deployment(None), "m", force=False, now=T2)

    assert "spec" not in result
    assert "managedFields" not in result["metadata"]


def test_an_empty_map_applied_is_itself_owned() -> None:
    live = stored(ssa.apply(None, deployment({"replicas": 3}), "m", force=False, now=T1))

    result = ssa.apply(live, deployment({}), "m", force=False, now=T2)

    assert result["spec"] == {}
    assert fields_v1(result, "m") == {"f:spec": {}}


# --- conflicts ------------------------------------------------------------------------------


def updated_by(manager: str, obj: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """``obj`` created by an ordinary write of ``manager`` (like kubectl create)."""
    return stored(ssa.record_update(None, obj, manager, operation="Update", now=T1, **kwargs))


def applied_by(manager: str, obj: dict[str, Any]) -> dict[str, Any]:
    return stored(ssa.apply(None, obj, manager, force=False, now=T1))


@pytest.mark.parametrize(
    ("live", "config", "message", "conflicts"),
    [
        pytest.param(
            applied_by("alice", deployment({"replicas": 3})),
            deployment({"replicas": 5}),
            'Apply failed with 1 conflict: conflict with "alice": .spec.replicas',
            [("alice", ".spec.replicas")],
            id="another applier's field with a different value conflicts",
        ),
        pytest.param(
            updated_by("kubectl-client-side-apply", deployment({"replicas": 3})),
            deployment({"replicas": 5}),
            'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
            "apps/v1: .spec.replicas",
            [("kubectl-client-side-apply", ".spec.replicas")],
            id="a field an Update wrote conflicts, naming its version",
        ),
        pytest.param(
            applied_by("alice", pod({"name": "app", "image": "app:1"})),
            pod({"name": "app", "image": "app:2"}),
            'Apply failed with 1 conflict: conflict with "alice": '
            '.spec.containers[name="app"].image',
            [("alice", '.spec.containers[name="app"].image')],
            id="a field of a keyed item is named by its key",
        ),
        pytest.param(
            updated_by("bob", deployment({"replicas": 3, "paused": True}, labels={"a": "1"})),
            deployment({"replicas": 5, "paused": False}, labels={"a": "2"}),
            'Apply failed with 3 conflicts: conflicts with "bob" using apps/v1:\n'
            "- .metadata.labels.a\n- .spec.paused\n- .spec.replicas",
            [("bob", ".metadata.labels.a"), ("bob", ".spec.paused"), ("bob", ".spec.replicas")],
            id="several conflicts with one manager are listed under it",
        ),
    ],
)
def test_changing_another_managers_field_conflicts_with_kubes_message(
    live: dict[str, Any], config: dict[str, Any], message: str, conflicts: list[tuple[str, str]]
) -> None:
    frozen = copy.deepcopy(live)

    with pytest.raises(ssa.ApplyConflict) as caught:
        ssa.apply(live, config, "carol", force=False, now=T2)

    assert str(caught.value) == message
    assert caught.value.conflicts == conflicts
    assert live == frozen


def test_conflicts_with_several_managers_are_grouped_by_manager() -> None:
    live = applied_by("alice", deployment({"replicas": 3}))
    live = ssa.apply(live, deployment({"paused": True}), "bob", force=False, now=T2)

    with pytest.raises(ssa.ApplyConflict) as caught:
        ssa.apply(live, deployment({"replicas": 1, "paused": False}), "c", force=False, now=T3)

    assert str(caught.value) == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n- .spec.replicas\n'
        'conflicts with "bob":\n- .spec.paused'
    )
    # details.causes as kube-apiserver encodes StatusCause: its Type is "reason" in JSON
    assert caught.value.causes == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "alice"',
            "field": ".spec.replicas",
        },
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "bob"',
            "field": ".spec.paused",
        },
    ]


def test_a_status_writer_is_named_with_its_subresource() -> None:
    live = stored(pod({"name": "app", "image": "a"}))
    with_status = copy.deepcopy(live)
    with_status["status"] = {"phase": "Running"}
    live = ssa.record_update(
        live, with_status, "kubelet", operation="Update", now=T1, subresource="status"
    )

    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    config["status"] = {"phase": "Failed"}
    with pytest.raises(ssa.ApplyConflict) as caught:
        ssa.apply(live, config, "tester", force=False, now=T2, subresource="status")

    assert str(caught.value) == (
        'Apply failed with 1 conflict: conflict with "kubelet" with subresource "status" '
        "using v1: .status.phase"
    )


def test_force_moves_the_conflicting_field_to_the_applier() -> None:
    live = applied_by("alice", deployment({"replicas": 3, "paused": True}))

    result = ssa.apply(live, deployment({"replicas": 5}), "bob", force=True, now=T2)

    assert result["spec"] == {"replicas": 5, "paused": True}
    assert fields_v1(result, "alice") == {"f:spec": {"f:paused": {}}}
    assert fields_v1(result, "bob") == {"f:spec": {"f:replicas": {}}}


def test_force_drops_an_entry_left_with_no_fields() -> None:
    live = applied_by("alice", deployment({"replicas": 3}))
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 4
    live = ssa.record_update(live, scaled, "hpa", operation="Update", now=T2)
    assert fields_v1(live, "hpa", "Update") == {"f:spec": {"f:replicas": {}}}

    result = ssa.apply(live, deployment({"replicas": 5}), "alice", force=True, now=T3)

    assert list(entries(result)) == [("alice", "Apply")]


def test_a_managers_own_earlier_update_conflicts_with_its_apply() -> None:
    live = updated_by("tool", deployment({"replicas": 3}))

    with pytest.raises(ssa.ApplyConflict, match='conflict with "tool" using apps/v1'):
        ssa.apply(live, deployment({"replicas": 4}), "tool", force=False, now=T2)


# --- shared ownership -----------------------------------------------------------------------


def test_applying_an_equal_value_shares_ownership() -> None:
    live = applied_by("alice", deployment({"replicas": 3}))

    result = ssa.apply(live, deployment({"replicas": 3}), "bob", force=False, now=T2)

    assert fields_v1(result, "alice") == {"f:spec": {"f:replicas": {}}}
    assert fields_v1(result, "bob") == {"f:spec": {"f:replicas": {}}}


def test_a_shared_field_stays_until_its_last_owner_omits_it() -> None:
    live = applied_by("alice", deployment({"replicas": 3}))
    live = ssa.apply(live, deployment({"replicas": 3}), "bob", force=False, now=T2)

    after_alice = ssa.apply(live, deployment(None), "alice", force=False, now=T3)
    assert after_alice["spec"] == {"replicas": 3}
    assert list(entries(after_alice)) == [("bob", "Apply")]

    after_bob = ssa.apply(after_alice, deployment(None), "bob", force=False, now=T3)
    assert "spec" not in after_bob


# --- merge strategies -----------------------------------------------------------------------


def test_two_managers_each_own_one_container_of_an_associative_list() -> None:
    live = applied_by("alice", pod({"name": "app", "image": "app:1"}))

    both = ssa.apply(live, pod({"name": "sidecar", "image": "s:1"}), "bob", force=False, now=T2)

    assert both["spec"]["containers"] == [
        {"name": "app", "image": "app:1"},
        {"name": "sidecar", "image": "s:1"},
    ]
    assert fields_v1(both, "alice") == {
        "f:spec": {"f:containers": {APP: {".": {}, "f:image": {}, "f:name": {}}}}
    }
    assert fields_v1(both, "bob") == {
        "f:spec": {"f:containers": {SIDECAR: {".": {}, "f:image": {}, "f:name": {}}}}
    }

    alice_leaves = ssa.apply(both, pod(), "alice", force=False, now=T3)
    assert alice_leaves["spec"]["containers"] == [{"name": "sidecar", "image": "s:1"}]


def test_two_managers_can_own_different_fields_of_one_container() -> None:
    live = applied_by("alice", pod({"name": "app", "image": "app:1"}))

    result = ssa.apply(live, pod({"name": "app", "args": ["-v"]}), "bob", force=False, now=T2)

    assert result["spec"]["containers"] == [{"name": "app", "image": "app:1", "args": ["-v"]}]
    bob_leaves = ssa.apply(result, pod(), "bob", force=False, now=T3)
    assert bob_leaves["spec"]["containers"] == [{"name": "app", "image": "app:1"}]


def test_merged_items_follow_the_applied_order() -> None:
    live = applied_by("m", pod({"name": "a"}, {"name": "b"}))

    result = ssa.apply(live, pod({"name": "b"}, {"name": "a"}), "m", force=False, now=T2)

    assert [c["name"] for c in result["spec"]["containers"]] == ["b", "a"]


@pytest.mark.parametrize(
    ("force", "expected"),
    [
        pytest.param(True, ["--new"], id="an atomic list is replaced whole, never merged"),
        pytest.param(False, None, id="an atomic list another manager owns conflicts whole"),
    ],
)
def test_an_atomic_list_is_one_field(force: bool, expected: list[str] | None) -> None:
    live = applied_by("alice", pod({"name": "app", "args": ["--a", "--b"]}))
    config = pod({"name": "app", "args": ["--new"]})

    if expected is None:
        with pytest.raises(ssa.ApplyConflict) as caught:
            ssa.apply(live, config, "bob", force=force, now=T2)
        assert caught.value.conflicts == [("alice", '.spec.containers[name="app"].args')]
        return
    result = ssa.apply(live, config, "bob", force=force, now=T2)
    assert result["spec"]["containers"][0]["args"] == expected
    assert fields_v1(result, "bob")["f:spec"]["f:containers"][APP]["f:args"] == {}


def test_finalizers_are_a_set_each_value_owned_apart() -> None:
    live = applied_by("alice", pod(finalizers=["example.com/a"]))

    both = ssa.apply(live, pod(finalizers=["example.com/b"]), "bob", force=False, now=T2)
    assert both["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    assert fields_v1(both, "bob")["f:metadata"] == {"f:finalizers": {'v:"example.com/b"': {}}}

    alice_leaves = ssa.apply(both, pod(), "alice", force=False, now=T3)
    assert alice_leaves["metadata"]["finalizers"] == ["example.com/b"]


def test_list_types_from_a_crd_schema_drive_the_merge() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "workers": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["id"],
                        "items": {"type": "object"},
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set"},
                    "args": {"type": "array"},
                },
            }
        },
    }
    keys = fs.list_keys_from_schema(schema)
    assert keys(("spec", "workers")) == ("id",)
    assert keys(("spec", "tags")) == ()
    assert keys(("spec", "args")) is None

    job = {"apiVersion": "example.com/v1", "kind": "Job", "metadata": {"name": "j"}}
    live = stored(
        ssa.apply(
            None,
            {**job, "spec": {"workers": [{"id": 1}]}},
            "a",
            force=False,
            now=T1,
            list_keys=keys,
        )
    )
    config = {**job, "spec": {"workers": [{"id": 2}]}}
    result = ssa.apply(live, config, "b", force=False, now=T2, list_keys=keys)
    assert result["spec"]["workers"] == [{"id": 1}, {"id": 2}]


@pytest.mark.parametrize(
    ("path", "keys"),
    [
        pytest.param(("spec", "containers"), ("name",), id="a pod's containers by name"),
        pytest.param(
            ("spec", "template", "spec", "initContainers"), ("name",), id="a template's too"
        ),
        pytest.param(
            ("spec", "containers", "ports"),
            ("containerPort", "protocol"),
            id="container ports by port and protocol",
        ),
        pytest.param(("spec", "containers", "env"), ("name",), id="env by name"),
        pytest.param(("spec", "containers", "volumeMounts"), ("mountPath",), id="mounts by path"),
        pytest.param(("spec", "volumes"), ("name",), id="volumes by name"),
        pytest.param(("spec", "imagePullSecrets"), ("name",), id="pull secrets by name"),
        pytest.param(("spec", "ports"), ("port", "protocol"), id="a Service's ports"),
        pytest.param(("metadata", "ownerReferences"), ("uid",), id="owner references by uid"),
        pytest.param(("status", "conditions"), ("type",), id="conditions by type"),
        pytest.param(("metadata", "finalizers"), (), id="finalizers are a set"),
        pytest.param(("spec", "containers", "args"), None, id="args are atomic"),
        pytest.param(("spec", "tolerations"), None, id="unlisted lists are atomic"),
    ],
)
def test_the_built_in_list_types(path: tuple[str, ...], keys: tuple[str, ...] | None) -> None:
    assert fs.default_list_keys(path) == keys


# --- ordinary writes ------------------------------------------------------------------------


def test_a_create_records_every_field_and_every_map_it_created() -> None:
    # An Update owns what it added, maps and lists included (the "." entries), unlike an
    # Apply; this is what kube writes for a custom resource created by an ordinary write.
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"app": "web"}},
        "spec": {"size": 1, "containers": [{"name": "app", "image": "a"}]},
    }

    created = ssa.record_update(None, widget, "kubectl-create", operation="Update", now=T1)

    assert created["metadata"]["managedFields"] == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "example.com/v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    ".": {},
                    "f:containers": {".": {}, APP: {".": {}, "f:image": {}, "f:name": {}}},
                    "f:size": {},
                },
            },
        }
    ]


def test_an_update_takes_the_fields_it_changes_from_the_applier() -> None:
    live = applied_by("alice", deployment({"replicas": 3, "paused": True}))
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 10

    result = ssa.record_update(live, new, "hpa", operation="Update", now=T2)

    assert fields_v1(result, "alice") == {"f:spec": {"f:paused": {}}}
    assert fields_v1(result, "hpa", "Update") == {"f:spec": {"f:replicas": {}}}
    with pytest.raises(ssa.ApplyConflict, match=re.escape('"hpa" using apps/v1: .spec.replicas')):
        ssa.apply(result, deployment({"replicas": 3, "paused": True}), "alice", force=False, now=T3)


def test_an_update_that_removes_a_field_takes_it_from_every_set() -> None:
    live = applied_by("alice", deployment({"replicas": 3, "paused": True}))
    new = copy.deepcopy(live)
    del new["spec"]["paused"]

    result = ssa.record_update(live, new, "editor", operation="Update", now=T2)

    assert fields_v1(result, "alice") == {"f:spec": {"f:replicas": {}}}
    assert ("editor", "Update") not in entries(result)


def test_an_update_that_changes_nothing_leaves_managed_fields_alone() -> None:
    live = applied_by("alice", deployment({"replicas": 3}))

    assert ssa.record_update(live, copy.deepcopy(live), "x", operation="Update", now=T2) == live


def test_managed_fields_sent_as_one_empty_entry_are_cleared() -> None:
    live = applied_by("alice", deployment({"replicas": 3}))
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = [{}]

    result = ssa.record_update(live, new, "x", operation="Update", now=T2)

    assert "managedFields" not in result["metadata"]


def test_managed_fields_omitted_by_a_writer_are_kept() -> None:
    live = applied_by("alice", deployment({"replicas": 3}))
    new = copy.deepcopy(live)
    del new["metadata"]["managedFields"]

    result = ssa.record_update(live, new, "x", operation="Update", now=T2)

    assert result["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_a_status_write_gets_its_own_entry_with_the_subresource() -> None:
    live = applied_by("alice", pod({"name": "app", "image": "a"}))
    live["status"] = {"phase": "Pending"}
    new = copy.deepcopy(live)
    new["status"]["phase"] = "Running"

    result = ssa.record_update(
        live, new, "kubelet", operation="Update", now=T2, subresource="status"
    )

    status_entry = result["metadata"]["managedFields"][-1]
    assert status_entry == {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": T2,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:phase": {}}},
        "subresource": "status",
    }
    assert result["metadata"]["managedFields"][0] == live["metadata"]["managedFields"][0]


def test_entries_are_ordered_apply_first_then_by_time() -> None:
    live = updated_by("zed", deployment({"replicas": 1}))
    live = ssa.apply(live, deployment({"paused": True}), "bob", force=False, now=T3)
    live = ssa.apply(live, deployment({"minReadySeconds": 5}), "amy", force=False, now=T2)

    order = [(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]]
    assert order == [("amy", "Apply"), ("bob", "Apply"), ("zed", "Update")]


# --- FieldsV1 -------------------------------------------------------------------------------


KUBE_WRITTEN = {
    "f:metadata": {"f:finalizers": {'v:"a"': {}}, "f:labels": {".": {}, "f:app": {}}},
    "f:spec": {
        "f:containers": {
            'k:{"name":"nginx"}': {
                ".": {},
                "f:image": {},
                "f:name": {},
                "f:ports": {
                    'k:{"containerPort":80,"protocol":"TCP"}': {
                        ".": {},
                        "f:containerPort": {},
                        "f:protocol": {},
                    }
                },
            }
        },
        "f:dnsPolicy": {},
    },
}


@pytest.mark.parametrize(
    "tree",
    [
        pytest.param({}, id="an empty set"),
        pytest.param({"f:spec": {"f:replicas": {}}}, id="one leaf"),
        pytest.param(KUBE_WRITTEN, id="a tree kube-apiserver wrote"),
        pytest.param(
            {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}}}}},
            id="a keyed item that is itself a member",
        ),
    ],
)
def test_fieldsv1_round_trips(tree: dict[str, Any]) -> None:
    paths = fp.from_fields_v1(tree)

    assert fp.to_fields_v1(paths) == tree
    assert fp.from_fields_v1(fp.to_fields_v1(paths)) == paths


def test_fieldsv1_members_and_nodes_are_read_as_kube_means_them() -> None:
    assert fp.from_fields_v1(
        {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {}}}
    ) == {
        ("f:metadata", "f:labels"),
        ("f:metadata", "f:labels", "f:app"),
        ("f:spec", "f:replicas"),
    }


def test_fieldsv1_keys_are_read_in_canonical_form() -> None:
    read = fp.from_fields_v1({'k:{"protocol":"TCP","containerPort":80.0}': {}})

    assert read == {('k:{"containerPort":80,"protocol":"TCP"}',)}


def test_unreadable_fieldsv1_elements_are_skipped() -> None:
    read = fp.from_fields_v1({"f:ok": {}, "k:{not json": {}, "x:y": {}, "f:bad": "not a map"})

    assert read == {("f:ok",)}


@pytest.mark.parametrize(
    ("path", "text"),
    [
        pytest.param(("f:spec", "f:replicas"), ".spec.replicas", id="fields are dotted"),
        pytest.param(
            ("f:spec", "f:containers", APP, "f:image"),
            '.spec.containers[name="app"].image',
            id="a keyed item shows its key",
        ),
        pytest.param(
            ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'),
            '.spec.ports[port=80,protocol="TCP"]',
            id="numbers are bare and keys are in order",
        ),
        pytest.param(
            ("f:metadata", "f:finalizers", 'v:"a"'), '.metadata.finalizers[="a"]', id="set values"
        ),
    ],
)
def test_paths_print_as_kube_prints_them(path: fp.Path, text: str) -> None:
    assert fp.path_string(path) == text


# --- properties -----------------------------------------------------------------------------


# Field names that reach the interesting rules: keyed lists, sets, unowned metadata.
OBJECT_NAMES = ("spec", "metadata", "status", "labels", "finalizers", "uid", "managedFields")
LIST_NAMES = ("containers", "ports", "args")
ITEM_NAMES = ("name", "image", "containerPort", "protocol", "a", "b")
NAMES = st.sampled_from(OBJECT_NAMES + LIST_NAMES + ITEM_NAMES)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False, width=16)
    | st.sampled_from(["", "a", "b", "app", "TCP"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(NAMES | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)
CONTAINERS = st.fixed_dictionaries(
    {"name": st.sampled_from(["app", "sidecar", "init"])},
    optional={
        "image": st.sampled_from(["app:1", "app:2"]),
        "args": st.lists(st.sampled_from(["-v", "-q"]), max_size=2),
        "ports": st.lists(
            st.fixed_dictionaries(
                {"containerPort": st.sampled_from([80, 443, 80.0])},
                optional={"protocol": st.sampled_from(["TCP", "UDP"])},
            ),
            max_size=2,
        ),
        "extra": JSON,
    },
)
PODS = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Pod")},
    optional={
        "metadata": st.fixed_dictionaries(
            {"name": st.just("p")},
            optional={
                "labels": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2"])),
                "finalizers": st.lists(st.sampled_from(["x/a", "x/b"]), max_size=2),
                "uid": st.just("forged"),
            },
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "containers": st.lists(CONTAINERS, max_size=3),
                "restartPolicy": st.sampled_from(["Always", "Never"]),
                "extra": JSON,
            },
        ),
        "status": JSON,
    },
)
CONFIGS = st.dictionaries(NAMES, JSON, max_size=5) | PODS


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(first=CONFIGS, config=CONFIGS, force=st.booleans())
def test_apply_fails_only_by_conflict_never_mutates_and_is_idempotent(
    first: dict[str, Any], config: dict[str, Any], force: bool
) -> None:
    live = ssa.apply(None, first, "creator", force=False, now=T1)
    live_before, config_before = copy.deepcopy(live), copy.deepcopy(config)

    try:
        result = ssa.apply(live, config, "applier", force=force, now=T2)
    except ssa.ApplyConflict:
        assert not force
        return
    finally:
        assert live == live_before
        assert config == config_before

    again = ssa.apply(result, config, "applier", force=force, now=T3)
    assert again == result
    assert ssa.apply(result, config, "applier", force=False, now=T3) == result


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(old=CONFIGS, new=CONFIGS)
def test_record_update_never_fails_and_a_repeated_write_records_nothing(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    created = ssa.record_update(None, old, "creator", operation="Update", now=T1)
    new_before = copy.deepcopy(new)

    result = ssa.record_update(created, new, "writer", operation="Update", now=T2)

    assert new == new_before
    assert (
        ssa.record_update(result, copy.deepcopy(result), "w", operation="Update", now=T3) == result
    )


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(obj=CONFIGS, subresource=st.sampled_from([None, "status"]))
def test_a_create_records_what_a_write_over_an_empty_object_records(
    obj: dict[str, Any], subresource: str | None
) -> None:
    """Creates take a shortcut (one walk instead of a diff); it must agree with the general
    route, managedFields order and all, which an update of an empty object still takes."""
    created = ssa.record_update(None, obj, "m", operation="Update", now=T1, subresource=subresource)
    general = ssa.record_update({}, obj, "m", operation="Update", now=T1, subresource=subresource)
    assert json.dumps(created) == json.dumps(general)
