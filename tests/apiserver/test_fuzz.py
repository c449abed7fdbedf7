"""Malformed input never crashes the server: random paths, methods, content types, query
parameters and bodies get a 4xx Status (never a 5xx), and the server keeps serving.

kube-apiserver answers a few client errors with a 5xx, its defects (see
:data:`KUBE_APISERVER_DEFECTS`); on it those, and only those, pass as errors. The local server
answers them with a 4xx."""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any

import urllib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from tests.fixtures.cluster import LOCAL

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)

OBJECT_LIKE = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["v1", "v2", "", "kubeflow.org/v1", 5]),
        "kind": st.sampled_from(["ConfigMap", "Pod", "Namespace", "PyTorchJob", "", None]),
        "metadata": st.one_of(
            JSON_VALUES,
            st.fixed_dictionaries(
                {
                    "name": st.one_of(st.text(max_size=70), st.integers()),
                    "labels": JSON_VALUES,
                    "finalizers": JSON_VALUES,
                    "resourceVersion": st.one_of(st.text(max_size=5), st.integers()),
                }
            ),
        ),
    },
    optional={"data": JSON_VALUES, "spec": JSON_VALUES, "status": JSON_VALUES},
)

BODIES = st.one_of(
    st.binary(max_size=200),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    OBJECT_LIKE.map(lambda v: json.dumps(v).encode()),
    st.just(b"k8s\x00\x0a\x02\x0a\x00"),
    st.just(b"a: [unclosed"),
)

# Only the test's own namespace is written to: deleting a collection here is harmless, and
# cluster-scoped resources are addressed by a name that does not exist.
COLLECTIONS = [
    "/api/v1/namespaces/{ns}/configmaps",
    "/api/v1/namespaces/{ns}/pods",
    "/api/v1/namespaces/{ns}/secrets",
    "/api/v1/namespaces/{ns}/services",
    "/apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs",
    "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs",
]
CLUSTER_ITEMS = [
    "/api/v1/namespaces/{ns}-absent",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/absent.fuzz.example.com",
]

PATHS = st.one_of(
    st.sampled_from(COLLECTIONS),
    st.sampled_from(COLLECTIONS).map(lambda p: p + "/fuzzed"),
    st.sampled_from(COLLECTIONS).map(lambda p: p + "/fuzzed/status"),
    st.sampled_from(COLLECTIONS).map(lambda p: p + "/fuzzed/scale"),
    st.sampled_from(CLUSTER_ITEMS),
    st.sampled_from(CLUSTER_ITEMS).map(lambda p: p + "/status"),
)
# Arbitrary paths are only read: a made-up path must never write anything.
READ_PATHS = st.lists(
    st.sampled_from(["api", "apis", "v1", "namespaces", "x", "..", "%00", "", "watch"]),
    max_size=7,
).map(lambda parts: "/" + "/".join(parts))

QUERIES = st.dictionaries(
    st.sampled_from(
        [
            "labelSelector",
            "fieldSelector",
            "limit",
            "continue",
            "resourceVersion",
            "watch",
            "timeoutSeconds",
            "dryRun",
            "fieldValidation",
            "fieldManager",
            "propagationPolicy",
            "gracePeriodSeconds",
            "resourceVersionMatch",
            "force",
        ]
    ),
    st.text(max_size=15),
    max_size=4,
)

CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/yaml",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
        "application/vnd.kubernetes.protobuf",
        "text/plain",
        "",
    ]
)


def send(
    api_client: client.ApiClient,
    method: str,
    path: str,
    body: bytes,
    content_type: str,
    query: dict[str, str],
) -> Any:
    configuration = api_client.configuration
    headers = {"Authorization": configuration.auth_settings()["BearerToken"]["value"]}
    if content_type:
        headers["Content-Type"] = content_type
    url = configuration.host + path
    if query:
        url += "?" + urllib.parse.urlencode(query)
    return api_client.rest_client.pool_manager.request(
        method,
        url,
        body=body if method != "GET" else None,
        headers=headers,
        timeout=15,
        retries=False,
    )


# The client errors kube-apiserver answers with a 5xx (defects; the local server answers
# them with a 4xx), each with a request that shows it.
KUBE_APISERVER_DEFECTS = {
    # GET ...?resourceVersion=abc: "resourceVersion: Invalid value: ...: strconv.ParseUint"
    "a malformed resourceVersion is a 500": ("GET", re.compile(r"strconv\.ParseUint")),
    # DELETE with a body that is not DeleteOptions (JSON, YAML, protobuf, another kind)
    "a DELETE whose body is not DeleteOptions is a 500": (
        "DELETE",
        re.compile(
            r"couldn't get version/kind|yaml: |does not appear to be a protobuf message"
            r"|no kind .* is registered for version"
        ),
    ),
    # GET /api/api/watch: "failed to create RequestInfo: unable to determine kind and
    # namespace from url" (a made-up path whose parts read as a watch of no resource)
    "a path it cannot map to a resource is a 500": (
        "GET",
        re.compile(r"failed to create RequestInfo"),
    ),
    # an apply of a ConfigMap whose data holds an object: "failed to create typed patch
    # object (/x; /v1, Kind=ConfigMap): .data.a: expected string, got ..."
    "an apply of a value of the wrong type is a 500": (
        "PATCH",
        re.compile(r"failed to create typed patch object"),
    ),
}


def kube_apiserver_defect(
    method: str, path: str, content_type: str, status: int | None, data: bytes
) -> str:
    """Which known kube-apiserver defect a 5xx (``status``) or a dropped connection (None)
    is; "" when it is none of them."""
    if status is None:
        # a protobuf body for a custom resource: kube-apiserver panics and drops the connection
        custom = path.startswith("/apis/") and "kubeflow.org/" in path
        return "protobuf for a custom resource" if custom and "protobuf" in content_type else ""
    text = data.decode("utf-8", "replace")
    for defect, (verb, pattern) in KUBE_APISERVER_DEFECTS.items():
        if method == verb and pattern.search(text):
            return defect
    return ""


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"]),
    path=st.one_of(PATHS, READ_PATHS.map(lambda p: "GET " + p)),
    body=BODIES,
    content_type=CONTENT_TYPES,
    query=QUERIES,
)
def test_malformed_requests_get_a_4xx_status_and_never_a_5xx(
    api_client: client.ApiClient,
    namespace: str,
    target: str,
    method: str,
    path: str,
    body: bytes,
    content_type: str,
    query: dict[str, str],
) -> None:
    if path.startswith("GET "):
        method, path = "GET", path[4:]
    if method == "PUT" and "/customresourcedefinitions/" in path:
        return  # an update may not create, but a CRD is cluster-wide: never risk it
    if method == "GET":
        query["timeoutSeconds"] = "1"  # a watch (by parameter or by path) ends quickly
    try:
        response = send(api_client, method, path.format(ns=namespace), body, content_type, query)
    except urllib3.exceptions.ProtocolError:
        if target != LOCAL and kube_apiserver_defect(method, path, content_type, None, b""):
            return
        raise
    if response.status >= 500 and target != LOCAL:
        defect = kube_apiserver_defect(method, path, content_type, response.status, response.data)
        assert defect, (response.status, response.data[:500])
        return
    assert response.status < 500, (response.status, response.data[:500])
    if response.status >= 400 and path.startswith(("/api/", "/apis/")) and response.data:
        try:
            status = json.loads(response.data)
        except ValueError:
            return  # kube answers some unknown paths in plain text
        if isinstance(status, dict) and status.get("kind") == "Status":
            assert status["code"] == response.status
            assert status["message"]


def test_the_server_still_serves_after_the_fuzzing(core: client.CoreV1Api) -> None:
    assert core.list_namespace().items


def deep_json(levels: int) -> bytes:
    """A JSON (and YAML flow) object ``levels`` deep, written out without recursion."""
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


def test_bodies_nested_beyond_any_limit_get_a_4xx_and_never_a_5xx(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str, target: str
) -> None:
    """Far deeper than the server allows (kube-apiserver's decoders stop at 10000 levels, the
    local server at 100): every way a body comes in is refused with a 4xx Status, and nothing
    recursive runs out of stack."""
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "deep"}})
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    item = f"{collection}/deep"
    for levels in (1_000, 20_000):
        nested = deep_json(levels)
        configmap = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":'
        requests = [
            ("POST", collection, configmap + nested + b"}", "application/json"),
            ("POST", collection, configmap + nested + b"}", "application/yaml"),
            ("PUT", item, configmap.replace(b'"x"', b'"deep"') + nested + b"}", ""),
            ("PATCH", item, b'{"data":' + nested + b"}", "application/merge-patch+json"),
            (
                "PATCH",
                item,
                b'{"metadata":{"labels":' + nested + b"}}",
                "application/strategic-merge-patch+json",
            ),
            (
                "PATCH",
                item,
                b'[{"op":"add","path":"/data","value":' + nested + b"}]",
                "application/json-patch+json",
            ),
            ("PATCH", item, configmap + nested + b"}", "application/apply-patch+yaml"),
        ]
        for method, path, body, content_type in requests:
            response = send(api_client, method, path, body, content_type, {"fieldManager": "deep"})
            if response.status >= 500 and target != LOCAL:
                # within its limit kube-apiserver decodes the body, and its apply answers the
                # ConfigMap's data of the wrong type with a 500
                assert kube_apiserver_defect(
                    method, path, content_type, response.status, response.data
                ), (levels, method, content_type, response.status)
                continue
            assert 400 <= response.status < 500, (levels, method, content_type, response.status)
            status = json.loads(response.data)
            assert status["kind"] == "Status"
            assert status["code"] == response.status
    assert core.read_namespaced_config_map("deep", namespace).data is None
