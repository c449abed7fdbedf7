"""kube-apiserver semantics beyond plain CRUD: namespaces and their lifecycle, custom resources
(generation, status and scale subresources, schema defaults and pruning), field validation,
patch types and server-side apply, built-in rules for pods, services, secrets, quotas and
claims, and Table responses."""

from __future__ import annotations

import contextlib
import json
import secrets
import urllib.parse
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kubetrain import kube
from tests.fixtures.cluster import REAL, local_only
from tests.fixtures.waits import wait_for

VERSION = "v1"
JSON = "application/json"
NO_SCHEDULER = "kubetrain-test-nobody"  # no scheduler binds pods that name it


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


def call(
    api_client: client.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    *,
    content_type: str = "application/json",
    accept: str = "application/json",
    query: list[tuple[str, str]] | None = None,
) -> tuple[int, dict[str, Any], Any]:
    """A raw request with the official client's connection pool, TLS and token: (status,
    headers, decoded body). Bytes are sent as they are, so malformed bodies can be sent."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    config = api_client.configuration
    headers = {"Content-Type": content_type, "Accept": accept}
    headers["Authorization"] = config.auth_settings()["BearerToken"]["value"]
    url = config.host + path
    if query:
        url += "?" + urllib.parse.urlencode(query)
    response = api_client.rest_client.pool_manager.request(
        method, url, body=data, headers=headers, timeout=30
    )
    raw = response.data
    try:
        decoded = json.loads(raw) if raw else None
    except ValueError:
        decoded = raw
    return response.status, dict(response.headers), decoded


@pytest.fixture(scope="module")
def widgets(widgets: kube.Resource) -> tuple[str, str]:
    """The module's CRD (tests.fixtures.crds: status and scale subresources), as (group,
    plural)."""
    assert widgets.version == VERSION
    return widgets.group, widgets.plural


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"kind": "Widget", "metadata": {"name": name}, "spec": spec}


def widget_of(group: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{VERSION}", **widget(name, **spec)}


# --- namespaces -----------------------------------------------------------------------------


def test_a_new_namespace_is_active_with_a_default_service_account(
    core: client.CoreV1Api, namespace: str
) -> None:
    ns = core.read_namespace(namespace)
    assert ns.status.phase == "Active"
    assert ns.spec.finalizers == ["kubernetes"]
    assert ns.metadata.labels["kubernetes.io/metadata.name"] == namespace
    assert core.read_namespaced_service_account("default", namespace).metadata.name == "default"


def test_deleting_a_namespace_deletes_its_contents_then_the_namespace(
    core: client.CoreV1Api,
) -> None:
    name = "kt-" + secrets.token_hex(4)
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(name, {"metadata": {"name": "inside"}})
    deleted = core.delete_namespace(name)
    assert deleted is not None

    def gone() -> bool:
        try:
            ns = core.read_namespace(name)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        assert ns.status.phase == "Terminating"
        return False

    wait_for(gone, timeout=60)
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("inside", name)
    assert info.value.status == 404


def test_nothing_new_may_be_created_in_a_terminating_namespace(core: client.CoreV1Api) -> None:
    name = "kt-" + secrets.token_hex(4)
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(
        name, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    core.delete_namespace(name)
    try:
        with pytest.raises(ApiException) as info:
            core.create_namespaced_config_map(name, {"metadata": {"name": "late"}})
        assert info.value.status == 403
        assert "because it is being terminated" in status_of(info.value)["message"]
    finally:
        core.patch_namespaced_config_map("held", name, {"metadata": {"finalizers": None}})


def test_finalizing_away_the_last_spec_finalizer_deletes_a_terminating_namespace(
    core: client.CoreV1Api,
) -> None:
    """spec.finalizers holds the client's own finalizers, then ``kubernetes``; once the
    namespace controller has emptied a deleted namespace and removed ``kubernetes``, the PUT
    to /finalize that removes the last one deletes the namespace, though it never had
    metadata.finalizers."""
    name = "kt-" + secrets.token_hex(4)
    hold = "example.com/hold"
    core.create_namespace({"metadata": {"name": name}, "spec": {"finalizers": [hold]}})
    try:
        created = core.read_namespace(name)
        assert created.spec.finalizers == [hold, "kubernetes"]
        assert not created.metadata.finalizers
        core.delete_namespace(name)

        def only_ours_left() -> client.V1Namespace | None:
            ns = core.read_namespace(name)
            assert ns.status.phase == "Terminating"
            return ns if ns.spec.finalizers == [hold] else None

        wait_for(only_ours_left, timeout=60)

        def finalized() -> bool:
            ns = core.read_namespace(name)
            ns.spec.finalizers = []
            try:
                core.replace_namespace_finalize(name, ns)
            except ApiException as exc:
                if exc.status != 409:  # the controller wrote in between: read again
                    raise
                return False
            return True

        wait_for(finalized)
        with pytest.raises(ApiException) as info:
            core.read_namespace(name)
        assert info.value.status == 404
    finally:
        with contextlib.suppress(ApiException):
            ns = core.read_namespace(name)
            ns.spec.finalizers = []
            core.replace_namespace_finalize(name, ns)


def test_the_default_namespace_cannot_be_deleted(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.delete_namespace("default")
    assert info.value.status == 403


# --- custom resources -----------------------------------------------------------------------


def test_custom_resources_get_generation_and_schema_defaults(
    custom: client.CustomObjectsApi, widgets: tuple[str, str], namespace: str
) -> None:
    group, plural = widgets
    created = custom.create_namespaced_custom_object(
        group, VERSION, namespace, plural, widget_of(group, "a", color="red")
    )
    assert created["metadata"]["generation"] == 1
    assert created["spec"] == {"color": "red", "replicas": 1}
    assert created["apiVersion"] == f"{group}/{VERSION}"
    created["spec"]["color"] = "blue"
    updated = custom.replace_namespaced_custom_object(
        group, VERSION, namespace, plural, "a", created
    )
    assert updated["metadata"]["generation"] == 2
    same = custom.replace_namespaced_custom_object(group, VERSION, namespace, plural, "a", updated)
    assert same["metadata"]["generation"] == 2


def test_status_subresource_isolation_both_ways(
    custom: client.CustomObjectsApi, widgets: tuple[str, str], namespace: str
) -> None:
    group, plural = widgets
    created = custom.create_namespaced_custom_object(
        group,
        VERSION,
        namespace,
        plural,
        {**widget_of(group, "s", color="red"), "status": {"phase": "X"}},
    )
    assert "status" not in created, "status is dropped on create"
    body = {**created, "status": {"phase": "Running"}}
    body["spec"] = {**created["spec"], "color": "blue"}
    after_status = custom.replace_namespaced_custom_object_status(
        group, VERSION, namespace, plural, "s", body
    )
    assert after_status["status"] == {"phase": "Running"}
    assert after_status["spec"]["color"] == "red", "/status ignores spec"
    assert after_status["metadata"]["generation"] == 1
    body = {**after_status, "status": {"phase": "Ignored"}}
    body["spec"] = {**after_status["spec"], "color": "blue"}
    after_main = custom.replace_namespaced_custom_object(
        group, VERSION, namespace, plural, "s", body
    )
    assert after_main["status"] == {"phase": "Running"}, "the main endpoint ignores status"
    assert after_main["spec"]["color"] == "blue"
    assert after_main["metadata"]["generation"] == 2


def test_custom_resource_updates_need_a_resource_version(
    custom: client.CustomObjectsApi, widgets: tuple[str, str], namespace: str
) -> None:
    group, plural = widgets
    custom.create_namespaced_custom_object(
        group, VERSION, namespace, plural, widget_of(group, "rv")
    )
    body = {"apiVersion": f"{group}/{VERSION}", **widget("rv", color="blue")}
    with pytest.raises(ApiException) as info:
        custom.replace_namespaced_custom_object(group, VERSION, namespace, plural, "rv", body)
    assert info.value.status == 422
    causes = status_of(info.value)["details"]["causes"]
    assert causes[0]["field"] == "metadata.resourceVersion"


def test_schema_validation_is_422_with_causes(
    custom: client.CustomObjectsApi, widgets: tuple[str, str], namespace: str
) -> None:
    group, plural = widgets
    with pytest.raises(ApiException) as info:
        custom.create_namespaced_custom_object(
            group,
            VERSION,
            namespace,
            plural,
            widget_of(group, "bad", color="green", replicas="many"),
        )
    assert info.value.status == 422
    status = status_of(info.value)
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(f'Widget.{group} "bad" is invalid: ')
    fields = {c["field"] for c in status["details"]["causes"]}
    assert {"spec.color", "spec.replicas"} <= fields


def test_unknown_fields_are_pruned_warned_about_or_refused(
    api_client: client.ApiClient, widgets: tuple[str, str], namespace: str
) -> None:
    group, plural = widgets
    path = f"/apis/{group}/{VERSION}/namespaces/{namespace}/{plural}"
    body = {"apiVersion": f"{group}/{VERSION}", **widget("p", color="red", extra=1)}
    body["spec"]["free"] = {"anything": {"goes": True}}
    code, headers, created = call(api_client, "POST", path, body)
    assert code == 201
    assert "extra" not in created["spec"]
    assert created["spec"]["free"] == {"anything": {"goes": True}}
    assert 'unknown field \\"spec.extra\\"' in headers.get("Warning", "") or (
        'unknown field "spec.extra"' in headers.get("Warning", "")
    )
    body["metadata"]["name"] = "strict"
    code, _, status = call(api_client, "POST", path, body, query=[("fieldValidation", "Strict")])
    assert code == 400
    assert 'strict decoding error: unknown field "spec.extra"' in status["message"]
    body["metadata"]["name"] = "ignore"
    code, headers, _ = call(api_client, "POST", path, body, query=[("fieldValidation", "Ignore")])
    assert code == 201
    assert "Warning" not in headers


def nest(levels: int) -> dict[str, Any]:
    """``levels`` objects, each inside the one before: ``{"a": {"a": {}}}`` for 3."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def deep_json(levels: int) -> bytes:
    """``levels`` objects, each inside the one before, written out without recursion."""
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


def test_a_body_nested_deeper_than_the_server_allows_is_refused_with_a_400(
    api_client: client.ApiClient, widgets: tuple[str, str], namespace: str
) -> None:
    """Beyond kube-apiserver's 10000 levels every way a body comes in is a 400, on both
    servers (the local one stops at 100: the next test), and nothing changes."""
    group, plural = widgets
    path = f"/apis/{group}/{VERSION}/namespaces/{namespace}/{plural}"
    code, _, created = call(api_client, "POST", path, widget_of(group, "deep"))
    assert code == 201, created
    levels = 10_001
    deep = deep_json(levels - 2)  # under the widget and its spec

    def deep_widget(name: str, **meta: str) -> bytes:
        doc = widget_of(group, name)
        doc["metadata"].update(meta)
        doc["spec"]["free"] = "FREE"
        return json.dumps(doc).encode().replace(b'"FREE"', deep)

    version = created["metadata"]["resourceVersion"]
    requests = {
        "a create": ("POST", path, deep_widget("deeper"), "application/json"),
        "a YAML create": ("POST", path, deep_widget("deeper"), "application/yaml"),
        "an update": (
            "PUT",
            f"{path}/deep",
            deep_widget("deep", resourceVersion=version),
            "application/json",
        ),
        "a merge patch": (
            "PATCH",
            f"{path}/deep",
            b'{"spec":{"free":' + deep + b"}}",
            "application/merge-patch+json",
        ),
        "a JSON patch": (
            "PATCH",
            f"{path}/deep",
            b'[{"op":"add","path":"/spec/free","value":' + deep + b"}]",
            "application/json-patch+json",
        ),
        "an apply": (
            "PATCH",
            f"{path}/deep",
            deep_widget("deep"),
            "application/apply-patch+yaml",
        ),
    }
    for case, (method, url, body, content_type) in requests.items():
        code, _, status = call(
            api_client, method, url, body, content_type=content_type, query=[("fieldManager", "d")]
        )
        assert (code, status.get("reason")) == (400, "BadRequest"), (case, status)
    code, _, got = call(api_client, "GET", f"{path}/deep")
    assert got["metadata"]["resourceVersion"] == version


def test_a_body_nested_deeper_than_100_levels_is_refused_with_a_400(
    api_client: client.ApiClient, widgets: tuple[str, str], namespace: str, target: str
) -> None:
    local_only(
        target,
        "kubetrain's own limit of 100 levels: kube-apiserver accepts up to 9996, answers 500 "
        "from 9997 to 10000 (a defect: the object is stored all the same and can then be "
        "neither read nor deleted) and 400 beyond",
    )
    group, plural = widgets
    path = f"/apis/{group}/{VERSION}/namespaces/{namespace}/{plural}"

    def body(name: str, depth: int) -> dict[str, Any]:
        """A widget nesting ``depth`` levels in all: itself, spec, spec.free, ..."""
        doc = widget_of(group, name)
        doc["spec"]["free"] = nest(depth - 2)
        return doc

    code, _, created = call(api_client, "POST", path, body("deep", 100))
    assert code == 201, created
    too_deep = body("deep", 101)
    too_deep["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    leaf = "/spec/free" + "/a" * 97  # the innermost object, level 100
    requests = {
        "a create": ("POST", path, body("deeper", 101), "application/json"),
        "a YAML create": (
            "POST",
            path,
            json.dumps(body("deeper", 101)).encode(),  # JSON is YAML
            "application/yaml",
        ),
        "an update": ("PUT", f"{path}/deep", too_deep, "application/json"),
        "a merge patch": (
            "PATCH",
            f"{path}/deep",
            {"spec": {"free": nest(99)}},
            "application/merge-patch+json",
        ),
        "a JSON patch": (
            "PATCH",
            f"{path}/deep",
            [{"op": "add", "path": "/spec/free", "value": nest(99)}],
            "application/json-patch+json",
        ),
        "a JSON patch making it deeper": (
            "PATCH",
            f"{path}/deep",
            [{"op": "add", "path": f"{leaf}/b", "value": {}}],
            "application/json-patch+json",
        ),
        "an apply": ("PATCH", f"{path}/deep", body("deep", 101), "application/apply-patch+yaml"),
    }
    for case, (method, url, doc, content_type) in requests.items():
        code, _, status = call(
            api_client,
            method,
            url,
            doc,
            content_type=content_type,
            query=[("fieldManager", "deep")],
        )
        assert (code, status.get("reason")) == (400, "BadRequest"), (case, status)
        assert "nested too deeply" in status["message"], case
    code, _, got = call(api_client, "GET", f"{path}/deep")
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_scale_subresource(
    custom: client.CustomObjectsApi, widgets: tuple[str, str], namespace: str
) -> None:
    group, plural = widgets
    custom.create_namespaced_custom_object(
        group, VERSION, namespace, plural, widget_of(group, "sc")
    )
    scale = custom.get_namespaced_custom_object_scale(group, VERSION, namespace, plural, "sc")
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 1
    custom.patch_namespaced_custom_object_scale(
        group, VERSION, namespace, plural, "sc", {"spec": {"replicas": 5}}
    )
    got = custom.get_namespaced_custom_object(group, VERSION, namespace, plural, "sc")
    assert got["spec"]["replicas"] == 5


def test_the_scale_paths_hold_replica_counts(
    api_client: client.ApiClient, widgets: tuple[str, str], namespace: str
) -> None:
    """apiextensions validates what the scale subresource reads, whatever the schema says: a
    replica count at specReplicasPath or statusReplicasPath is an int32 and not negative."""
    group, plural = widgets
    path = f"/apis/{group}/{VERSION}/namespaces/{namespace}/{plural}"
    code, _, status = call(api_client, "POST", path, widget_of(group, "neg", replicas=-1))
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        f'Widget.{group} "neg" is invalid: '
        ".spec.replicas: Invalid value: -1: should be a non-negative integer"
    )
    assert status["details"]["causes"][0]["field"] == ".spec.replicas"
    code, _, status = call(api_client, "POST", path, widget_of(group, "big", replicas=2**31))
    assert code == 422
    assert status["message"].endswith(
        ".spec.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647"
    )
    code, _, created = call(api_client, "POST", path, widget_of(group, "ok", replicas=2))
    assert code == 201, created
    created["status"] = {"replicas": -1}
    code, _, status = call(api_client, "PUT", f"{path}/ok/status", created)
    assert code == 422
    assert status["message"].endswith(
        ".status.replicas: Invalid value: -1: should be a non-negative integer"
    )


def test_custom_resources_do_not_take_strategic_merge_patches(
    api_client: client.ApiClient, widgets: tuple[str, str], namespace: str
) -> None:
    group, plural = widgets
    path = f"/apis/{group}/{VERSION}/namespaces/{namespace}/{plural}"
    call(api_client, "POST", path, {"apiVersion": f"{group}/{VERSION}", **widget("smp")})
    code, _, status = call(
        api_client,
        "PATCH",
        f"{path}/smp",
        {"spec": {"color": "red"}},
        content_type="application/strategic-merge-patch+json",
    )
    assert code == 415
    assert status["reason"] == "UnsupportedMediaType"


# --- patches and apply ------------------------------------------------------------------


def test_patch_types_on_a_configmap(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "p"}, "data": {"a": "1"}})
    path = f"/api/v1/namespaces/{namespace}/configmaps/p"
    code, _, got = call(
        api_client,
        "PATCH",
        path,
        {"data": {"b": "2", "a": None}},
        content_type="application/merge-patch+json",
    )
    assert code == 200
    assert got["data"] == {"b": "2"}
    code, _, got = call(
        api_client,
        "PATCH",
        path,
        [{"op": "replace", "path": "/data/b", "value": "3"}],
        content_type="application/json-patch+json",
    )
    assert code == 200
    assert got["data"] == {"b": "3"}
    code, _, got = call(
        api_client,
        "PATCH",
        path,
        {"data": {"c": "4"}},
        content_type="application/strategic-merge-patch+json",
    )
    assert code == 200
    assert got["data"] == {"b": "3", "c": "4"}
    code, _, status = call(
        api_client, "PATCH", path, b"{not json", content_type="application/merge-patch+json"
    )
    assert code == 400
    assert status["kind"] == "Status"
    code, _, status = call(api_client, "PATCH", path, {"data": {}}, content_type="text/plain")
    assert code == 415


def test_a_patch_that_does_not_apply_is_422_and_a_malformed_one_is_400(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    """kube-apiserver answers 400 BadRequest when the patch document is not of its type's
    form, and 422 Invalid when a well-formed patch cannot be applied to the object. Its JSON
    patch reads a key missing from an object that exists as null, against RFC 6902: replacing
    it adds it, and it tests equal to null."""
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "p"}, "data": {"a": "1"}})
    path = f"/api/v1/namespaces/{namespace}/configmaps/p"
    not_applicable = {
        "a failed test": [{"op": "test", "path": "/data/a", "value": "2"}],
        "testing a missing key for a value": [{"op": "test", "path": "/data/no", "value": "x"}],
        "removing a missing key": [{"op": "remove", "path": "/data/missing"}],
        "moving a missing key": [{"op": "move", "from": "/data/missing", "path": "/data/b"}],
        "replacing in a missing object": [{"op": "replace", "path": "/spec/x", "value": "x"}],
        "copying from a missing object": [{"op": "copy", "from": "/spec/x", "path": "/data/b"}],
        "an unknown operation": [{"op": "frobnicate", "path": "/data/a"}],
    }
    for case, operations in not_applicable.items():
        code, _, status = call(
            api_client, "PATCH", path, operations, content_type="application/json-patch+json"
        )
        assert (code, status["reason"]) == (422, "Invalid"), case
        assert status["kind"] == "Status"
        assert status["code"] == 422
    malformed = {
        "an operation that is not an object": (
            [["op", "add"]],
            "application/json-patch+json",
        ),
        "retainKeys that is not a list": (
            {"metadata": {"$retainKeys": "labels"}},
            "application/strategic-merge-patch+json",
        ),
    }
    for case, (document, content_type) in malformed.items():
        code, _, status = call(api_client, "PATCH", path, document, content_type=content_type)
        assert (code, status["reason"]) == (400, "BadRequest"), case
    assert core.read_namespaced_config_map("p", namespace).data == {"a": "1"}
    lenient = [
        {"op": "test", "path": "/data/missing", "value": None},
        {"op": "replace", "path": "/data/missing", "value": "x"},
    ]
    code, _, patched = call(
        api_client, "PATCH", path, lenient, content_type="application/json-patch+json"
    )
    assert code == 200, patched
    assert patched["data"] == {"a": "1", "missing": "x"}


def test_write_options_are_validated_as_kube_validates_them(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    """Every problem of a write's options at once, in a 422 naming the verb's options object;
    a read ignores them."""
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "o"}})
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    bad = [("dryRun", "x"), ("fieldValidation", "x"), ("fieldManager", "m" * 129)]
    all_three = (
        "[fieldManager: Too long: must have at most 128 bytes, dryRun: Unsupported value: "
        '[]string{"x"}: supported values: "All", fieldValidation: Unsupported value: "x": '
        'supported values: "", "Ignore", "Strict", "Warn"]'
    )
    requests = {
        "CreateOptions": ("POST", collection, {"metadata": {"name": "n"}}, JSON),
        "UpdateOptions": ("PUT", f"{collection}/o", {"metadata": {"name": "o"}}, JSON),
        "PatchOptions": ("PATCH", f"{collection}/o", {}, "application/merge-patch+json"),
    }
    for kind, (method, path, body, content_type) in requests.items():
        code, _, status = call(api_client, method, path, body, content_type=content_type, query=bad)
        assert (code, status["reason"]) == (422, "Invalid"), kind
        assert status["message"] == f'{kind}.meta.k8s.io "" is invalid: {all_three}'
        assert status["details"]["kind"] == kind
        assert status["details"]["group"] == "meta.k8s.io"
        assert [c["field"] for c in status["details"]["causes"]] == [
            "fieldManager",
            "dryRun",
            "fieldValidation",
        ]
    code, _, status = call(api_client, "DELETE", f"{collection}/o", query=bad)
    assert status["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: '
        'dryRun: Unsupported value: []string{"x"}: supported values: "All"'
    )
    code, _, status = call(
        api_client,
        "PATCH",
        f"{collection}/o",
        {},
        content_type="application/merge-patch+json",
        query=[("force", "true"), ("fieldManager", "a\tb")],
    )
    assert status["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: ['
        "force: Forbidden: may not be specified for non-apply patch, "
        'fieldManager: Invalid value: "a\\tb": invalid character U+0009 (at position 1)]'
    )
    code, _, listed = call(api_client, "GET", collection, query=bad)
    assert code == 200, listed
    assert core.read_namespaced_config_map("o", namespace).data is None


def test_an_update_names_its_object(api_client: client.ApiClient, namespace: str) -> None:
    client.CoreV1Api(api_client).create_namespaced_config_map(
        namespace, {"metadata": {"name": "u"}}
    )
    path = f"/api/v1/namespaces/{namespace}/configmaps/u"
    for body in ({}, {"metadata": {"labels": {"a": "b"}}}, b"null"):
        code, _, status = call(api_client, "PUT", path, body)
        assert (code, status["reason"]) == (400, "BadRequest"), body
        assert status["message"] == (
            "the name of the object (u based on URL) was undeterminable: name must be provided"
        )
    code, _, status = call(api_client, "PUT", path, {"metadata": {"name": "v"}})
    assert status["message"] == "the name of the object (v) does not match the name on the URL (u)"


def test_a_patch_with_a_stale_resource_version_is_409(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "p"}})
    core.patch_namespaced_config_map("p", namespace, {"data": {"x": "1"}})
    code, _, status = call(
        api_client,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/p",
        {"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"y": "2"}},
        content_type="application/merge-patch+json",
    )
    assert code == 409
    assert status["reason"] == "Conflict"


def test_server_side_apply_tracks_owners_and_reports_conflicts(
    api_client: client.ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/ssa"
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"owned": "a"},
    }
    code, _, got = call(
        api_client,
        "PATCH",
        path,
        doc,
        content_type="application/apply-patch+yaml",
        query=[("fieldManager", "alice")],
    )
    assert code == 201
    assert got["data"] == {"owned": "a"}
    assert [m["manager"] for m in got["metadata"]["managedFields"]] == ["alice"]
    doc["data"] = {"owned": "b"}
    code, _, status = call(
        api_client,
        "PATCH",
        path,
        doc,
        content_type="application/apply-patch+yaml",
        query=[("fieldManager", "bob")],
    )
    assert code == 409
    assert status["reason"] == "Conflict"
    assert status["details"]["causes"][0]["reason"] == "FieldManagerConflict"
    assert status["details"]["causes"][0]["field"] == ".data.owned"
    code, _, got = call(
        api_client,
        "PATCH",
        path,
        doc,
        content_type="application/apply-patch+yaml",
        query=[("fieldManager", "bob"), ("force", "true")],
    )
    assert code == 200
    assert got["data"] == {"owned": "b"}
    code, _, status = call(
        api_client, "PATCH", path, doc, content_type="application/apply-patch+yaml"
    )
    assert (code, status["reason"]) == (422, "Invalid"), "apply needs a fieldManager"
    assert status["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: '
        "fieldManager: Required value: is required for apply patch"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: is required for apply patch",
            "field": "fieldManager",
        }
    ]


def test_apply_takes_only_spec_on_the_main_resource_and_only_status_on_status(
    api_client: client.ApiClient, widgets: tuple[str, str], namespace: str
) -> None:
    """kube's field manager drops the fields a write's strategy resets before it computes
    ownership and conflicts: status on the main resource, everything but status on /status.
    So one manager applying a configuration with a status block and another writing status
    through /status never conflict, and neither changes what the other owns."""
    group, plural = widgets
    path = f"/apis/{group}/{VERSION}/namespaces/{namespace}/{plural}/w"

    def apply(url: str, doc: dict[str, Any], manager: str) -> tuple[int, dict[str, Any]]:
        code, _, got = call(
            api_client,
            "PATCH",
            url,
            doc,
            content_type="application/apply-patch+yaml",
            query=[("fieldManager", manager)],
        )
        return code, got

    def fields_of(obj: dict[str, Any], manager: str) -> dict[str, Any]:
        entries = [m for m in obj["metadata"]["managedFields"] if m["manager"] == manager]
        assert len(entries) == 1, entries
        return entries[0]["fieldsV1"]

    config = {
        **widget_of(group, "w", color="red", replicas=1),
        "status": {"phase": "Pending"},
    }
    code, got = apply(path, config, "spec-owner")
    assert code == 201, got
    assert "status" not in got
    status_config = {
        **widget_of(group, "w", color="blue"),
        "status": {"phase": "Running", "replicas": 1},
    }
    code, got = apply(f"{path}/status", status_config, "status-writer")
    assert code == 200, got
    assert got["status"] == {"phase": "Running", "replicas": 1}
    assert got["spec"]["color"] == "red", "an apply to /status ignores spec"
    assert set(fields_of(got, "status-writer")) == {"f:status"}

    config["spec"]["color"] = "blue"
    code, got = apply(path, config, "spec-owner")
    assert code == 200, f"the main resource's apply ignores status, so no conflict: {got}"
    assert got["spec"]["color"] == "blue"
    assert got["status"] == {"phase": "Running", "replicas": 1}, "status is the writer's"
    assert "f:status" not in fields_of(got, "spec-owner")
    assert set(fields_of(got, "status-writer")) == {"f:status"}


# --- built-in rules ---------------------------------------------------------------------


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def test_pods_get_defaults_and_a_pending_status(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_pod(namespace, pod("d"))
    assert created.status.phase == "Pending"
    assert created.status.qos_class == "BestEffort"
    assert created.spec.restart_policy == "Always"
    assert created.spec.termination_grace_period_seconds == 30
    assert created.spec.service_account_name == "default"
    assert created.spec.scheduler_name == "default-scheduler"
    assert created.spec.containers[0].termination_message_path == "/dev/termination-log"
    assert created.spec.containers[0].image_pull_policy == "Always"


def test_a_pod_needs_containers(api_client: client.ApiClient, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {}}
    code, _, status = call(api_client, "POST", f"/api/v1/namespaces/{namespace}/pods", body)
    assert code == 422
    assert "spec.containers" in {c["field"] for c in status["details"]["causes"]}


def test_a_pod_spec_is_immutable_but_for_images(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod("imm"))
    core.patch_namespaced_pod(
        "imm", namespace, {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}
    )
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("imm", namespace, {"spec": {"restartPolicy": "Never"}})
    assert info.value.status == 422


def test_binding_a_pod_sets_its_node_once(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    # no scheduler may bind it first, or mark it Unschedulable after the binding
    core.create_namespaced_pod(namespace, pod("b", schedulerName=NO_SCHEDULER))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    path = f"/api/v1/namespaces/{namespace}/pods/b/binding"
    code, _, _ = call(api_client, "POST", path, binding)
    assert code == 201
    bound = core.read_namespaced_pod("b", namespace)
    assert bound.spec.node_name == "node-1"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in bound.status.conditions)
    code, _, _status = call(api_client, "POST", path, binding)
    assert code == 409
    assert core.list_namespaced_pod(namespace, field_selector="spec.nodeName=node-1").items


def test_pod_status_updates_go_through_the_status_subresource(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_pod(namespace, pod("st"))
    core.patch_namespaced_pod_status("st", namespace, {"status": {"phase": "Running"}})
    assert core.read_namespaced_pod("st", namespace).status.phase == "Running"
    core.patch_namespaced_pod("st", namespace, {"status": {"phase": "Failed"}})
    assert core.read_namespaced_pod("st", namespace).status.phase == "Running"


def test_a_node_registers_with_its_status(core: client.CoreV1Api) -> None:
    """Kubelets create their Node with status (capacity, addresses); unlike most kinds, the
    create keeps it."""
    name = f"kt-node-{secrets.token_hex(3)}"
    body = {
        "metadata": {"name": name},
        "status": {
            "capacity": {"cpu": "2", "memory": "1Gi", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        },
    }
    try:
        created = core.create_node(body)
        assert created.status.capacity == {"cpu": "2", "memory": "1Gi", "pods": "110"}
        assert created.status.addresses[0].address == "127.0.0.1"
    finally:
        core.delete_node(name)


def test_an_unscheduled_pod_is_deleted_at_once_and_returned(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_pod(namespace, pod("gone"))
    deleted = core.delete_namespaced_pod("gone", namespace)
    assert deleted.metadata.name == "gone"
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("gone", namespace)
    assert info.value.status == 404


def test_a_scheduled_pod_is_deleted_gracefully(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod("grace", nodeName="node-1"))
    core.delete_namespaced_pod("grace", namespace)
    pending = core.read_namespaced_pod("grace", namespace)
    assert pending.metadata.deletion_timestamp is not None
    assert pending.metadata.deletion_grace_period_seconds == 30
    core.delete_namespaced_pod("grace", namespace, grace_period_seconds=0)
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("grace", namespace)
    assert info.value.status == 404


def test_resource_quota_refuses_pods_beyond_the_limit(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_resource_quota(
        namespace, {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}}
    )
    # kube-apiserver's admission refuses every pod until the quota controller has counted
    wait_for(lambda: core.read_namespaced_resource_quota("q", namespace).status.hard or {})
    # pending for good: a pod that a node ran and failed would no longer count
    core.create_namespaced_pod(namespace, pod("first", schedulerName=NO_SCHEDULER))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod(namespace, pod("second"))
    assert info.value.status == 403
    message = status_of(info.value)["message"]
    assert message.startswith('pods "second" is forbidden: exceeded quota: q')


def test_secrets_fold_string_data_into_base64_data(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_secret(
        namespace, {"metadata": {"name": "s"}, "stringData": {"user": "admin"}}
    )
    assert created.data == {"user": "YWRtaW4="}
    assert created.type == "Opaque"
    assert not getattr(created, "string_data", None)


def test_services_get_a_cluster_ip_and_port_defaults(
    core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_service(
        namespace, {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}
    )
    assert created.spec.cluster_ip
    assert created.spec.cluster_ips == [created.spec.cluster_ip]
    assert created.spec.type == "ClusterIP"
    assert created.spec.ports[0].protocol == "TCP"
    assert created.spec.ports[0].target_port == 80
    headless = core.create_namespaced_service(
        namespace,
        {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}},
    )
    assert headless.spec.cluster_ip == "None"


def test_a_claim_is_bound_to_the_volume_it_names(core: client.CoreV1Api, namespace: str) -> None:
    """As kube's volume binder does it: the claim Bound to the volume, the volume Bound to the
    claim; once the claim goes, a volume that is retained (kube's default) is Released."""
    volume = f"{namespace}-data"
    core.create_persistent_volume(
        {
            "metadata": {"name": volume},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "hostPath": {"path": f"/tmp/{volume}"},
            },
        }
    )
    try:
        claim = {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "",
                "volumeName": volume,
            },
        }
        created = core.create_namespaced_persistent_volume_claim(namespace, claim)

        def bound() -> bool:
            got = core.read_namespaced_persistent_volume_claim("data", namespace)
            pv = core.read_persistent_volume(volume)
            return (
                got.status.phase == "Bound" and pv.status is not None and pv.status.phase == "Bound"
            )

        wait_for(bound, timeout=60)  # kube's binder takes a few seconds
        got = core.read_namespaced_persistent_volume_claim("data", namespace)
        assert got.spec.volume_name == volume
        assert got.status.capacity == {"storage": "1Gi"}
        ref = core.read_persistent_volume(volume).spec.claim_ref
        assert (ref.namespace, ref.name, ref.uid) == (namespace, "data", created.metadata.uid)
        core.delete_namespaced_persistent_volume_claim("data", namespace)
        wait_for(lambda: core.read_persistent_volume(volume).status.phase == "Released")
    finally:
        core.delete_persistent_volume(volume)


def test_a_claim_without_a_volume_gets_one_at_once(
    core: client.CoreV1Api, namespace: str, target: str
) -> None:
    local_only(
        target,
        "the local control plane provisions a volume in a host directory for a claim that "
        "names none; a real cluster has no provisioner until one is installed",
    )
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    core.create_namespaced_persistent_volume_claim(namespace, claim)
    got = core.read_namespaced_persistent_volume_claim("data", namespace)
    assert got.status.phase == "Bound"
    volume = core.read_persistent_volume(got.spec.volume_name)
    assert volume.spec.claim_ref.uid == got.metadata.uid
    assert volume.spec.persistent_volume_reclaim_policy == "Delete"
    core.delete_namespaced_persistent_volume_claim("data", namespace)

    def deleted() -> bool:
        try:
            core.read_persistent_volume(got.spec.volume_name)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(deleted)


# --- Tables and discovery -------------------------------------------------------------------


def test_table_responses_for_kubectl(api_client: client.ApiClient, namespace: str) -> None:
    table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    code, _, got = call(
        api_client, "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts", accept=table_accept
    )
    assert code == 200
    assert got["kind"] == "Table"
    assert got["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in got["columnDefinitions"]][:1] == ["Name"]
    assert [r["cells"][0] for r in got["rows"]] == ["default"]


def test_discovery_documents(api_client: client.ApiClient) -> None:
    code, _, core_list = call(api_client, "GET", "/api/v1")
    assert code == 200
    pods = next(r for r in core_list["resources"] if r["name"] == "pods")
    assert pods["namespaced"] is True
    assert pods["kind"] == "Pod"
    assert "watch" in pods["verbs"]
    assert any(r["name"] == "pods/status" for r in core_list["resources"])
    code, _, groups = call(api_client, "GET", "/apis")
    names = {g["name"] for g in groups["groups"]}
    assert {"coordination.k8s.io", "apiextensions.k8s.io"} <= names
    code, _, version = call(api_client, "GET", "/version")
    assert version["major"] == "1"


def test_unauthenticated_requests_are_401(kubeconfig: str) -> None:
    import yaml as yaml_module
    from kubernetes import config as kube_config

    with open(kubeconfig, encoding="utf-8") as f:
        doc = yaml_module.safe_load(f)
    for user in doc["users"]:
        user["user"] = {"token": "wrong"}
    api = kube_config.new_client_from_config_dict(doc)
    try:
        with pytest.raises(ApiException) as info:
            client.CoreV1Api(api).list_namespace()
        assert info.value.status == 401
    finally:
        api.close()


def test_malformed_bodies_are_400_with_a_status(
    api_client: client.ApiClient, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for body in (
        b"{",
        b"[]",
        b'"text"',
        b'{"metadata": 5}',
        b'{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "x"}}',
    ):
        code, _, status = call(api_client, "POST", path, body)
        assert code == 400, body
        assert status["kind"] == "Status"
        assert status["status"] == "Failure"
    # a built-in kind's decoder reads null as an empty object: it lacks a name
    code, _, status = call(api_client, "POST", path, b"null")
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    )
    # ... and as DeleteOptions, it asks for nothing
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "x"}})
    code, _, _ = call(api_client, "DELETE", f"{path}/x", b"null")
    assert code == 200


def test_a_huge_body_is_413(api_client: client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {"metadata": {"name": "huge"}, "data": {"x": "y" * (4 * 1024 * 1024)}}
    code, _, status = call(api_client, "POST", path, body)
    assert code == 413
    assert status["reason"] == "RequestEntityTooLarge"


# --- kubetrain admission --------------------------------------------------------------------


def test_admission_warnings_arrive_as_warning_headers(
    api_client: client.ApiClient, namespace: str
) -> None:
    from tests.unit.api.trainers import runtime

    doc = runtime(kind="TrainingRuntime", name="old", namespace=namespace)
    doc = doc.labels(**{"trainer.kubeflow.org/support": "deprecated"}).build()
    api_version = doc["apiVersion"]
    code, headers, created = call(
        api_client,
        "POST",
        f"/apis/{api_version}/namespaces/{namespace}/trainingruntimes",
        doc,
    )
    assert code == 201, created
    assert 'TrainingRuntime \\"old\\" is deprecated' in headers.get("Warning", "")


def test_invalid_kubetrain_objects_are_422_with_upstream_messages(
    api_client: client.ApiClient, namespace: str, target: str
) -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "bad"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "not-pytorch", "image": "x"}]}},
                }
            }
        },
    }
    code, _, status = call(
        api_client, "POST", f"/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs", job
    )
    assert code == 422
    assert status["reason"] == "Invalid"
    # kube-apiserver names the webhook that refused, before the webhook's own Status message
    denied = 'admission webhook "validate.pytorchjob.kubeflow.org" denied the request: '
    prefix = denied if target == REAL else ""
    assert status["message"].startswith(prefix + 'PyTorchJob.kubeflow.org "bad" is invalid: ')
    assert status["details"]["kind"] == "PyTorchJob"
    assert status["details"]["name"] == "bad"
    assert status["details"]["causes"]
    assert all(c["field"].startswith("spec.") for c in status["details"]["causes"])


QUOTA_RECOUNT = 120.0  # seconds


def test_quota_status_tracks_what_pods_use(core: client.CoreV1Api, namespace: str) -> None:
    """Admission counts a pod into the quota's status as it is created, and kube's quota
    controller recounts from what it has seen, which may lag: the test waits for the count
    to settle, not for its first sight of it."""
    core.create_namespaced_resource_quota(
        namespace,
        {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "5", "requests.cpu": "2"}}},
    )

    def status() -> Any:
        return core.read_namespaced_resource_quota("q", namespace).status

    # kube's admission counts a pod only into a quota whose status its controller has filled
    wait_for(lambda: status() and status().hard, what="the quota's status.hard")
    spec = {
        "schedulerName": NO_SCHEDULER,  # pending: no node runs them (or fails them)
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}
        ],
    }
    core.create_namespaced_pod(namespace, {"metadata": {"name": "p1"}, "spec": spec})
    core.create_namespaced_pod(namespace, {"metadata": {"name": "p2"}, "spec": spec})

    def settles(expected: dict[str, str]) -> None:
        # kube-controller-manager's recount comes when its quota controller gets to it,
        # which on 2 busy cores has taken over half a minute
        try:
            wait_for(lambda: status().used == expected, timeout=QUOTA_RECOUNT)
        except pytest.fail.Exception:
            pods = [
                (p.metadata.name, p.status.phase, p.metadata.deletion_timestamp)
                for p in core.list_namespaced_pod(namespace).items
            ]
            pytest.fail(f"used {status().used}, not {expected}, with the pods {pods}")

    settles({"pods": "2", "requests.cpu": "1"})
    core.delete_namespaced_pod("p1", namespace)
    settles({"pods": "1", "requests.cpu": "500m"})


def test_limit_range_defaults_apply_to_new_pods(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_limit_range(
        namespace,
        {
            "metadata": {"name": "defaults"},
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "default": {"cpu": "1"},
                        "defaultRequest": {"cpu": "250m"},
                    }
                ]
            },
        },
    )
    created = core.create_namespaced_pod(namespace, pod("limited"))
    resources = created.spec.containers[0].resources
    assert resources.limits == {"cpu": "1"}
    assert resources.requests == {"cpu": "250m"}


def test_events_are_served_in_both_api_groups(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
            "reason": "Started",
            "message": "hello",
            "type": "Normal",
            "source": {"component": "kubelet"},
        },
    )
    code, _, event = call(
        api_client, "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/e1"
    )
    assert code == 200
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert event["regarding"]["name"] == "p"
    assert event["note"] == "hello"
    assert event["deprecatedSource"] == {"component": "kubelet"}
    listed = core.list_namespaced_event(namespace, field_selector="involvedObject.name=p")
    assert [e.metadata.name for e in listed.items] == ["e1"]
