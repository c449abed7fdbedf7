"""The OpenAPI documents: internally consistent, and enough for the real kubectl.

The documents are checked against what kubectl 1.32 reads (see the :mod:`openapi`
docstring): a PATCH operation per kind carrying ``fieldValidation``, schemas found by
``x-kubernetes-group-version-kind``, ``$ref`` s that resolve. The real ``kubectl`` reads
them in tests/integration/local/apiserver/test_openapi.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubetrain import api
from kubetrain.local.apiserver import crdvalidation, openapi, openapischemas

Info = openapi.ResourceInfo
BUILTIN = [
    Info("", "v1", "Pod", "pods", True, ("binding", "eviction", "exec", "log", "status")),
    Info("", "v1", "Namespace", "namespaces", False, ("status",)),
    Info("", "v1", "Service", "services", True, ("status",)),
    Info("", "v1", "Binding", "bindings", True, (), ("create",)),
    Info("coordination.k8s.io", "v1", "Lease", "leases", True),
]
CRDS = api.crds()
PYTORCHJOB = next(c for c in CRDS if c["spec"]["names"]["kind"] == "PyTorchJob")
GROUP_VERSIONS = [
    ("", "v1"),
    ("coordination.k8s.io", "v1"),
    ("kubeflow.org", "v1"),
    ("trainer.kubeflow.org", "v1alpha1"),
    ("trainer.kubeflow.org", "v2alpha1"),
]
WRITES = {"post", "put", "patch"}


def document(group: str, version: str) -> dict[str, Any]:
    doc = openapi.v3_document(group, version, BUILTIN, CRDS)
    assert doc is not None
    return doc


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                yield path, method, op


def gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def test_the_index_lists_every_group_version_with_its_document_hash() -> None:
    index = openapi.v3_index(BUILTIN, CRDS)
    assert sorted(index["paths"]) == sorted(openapi.gv_path(g, v) for g, v in GROUP_VERSIONS)
    for group, version in GROUP_VERSIONS:
        url = index["paths"][openapi.gv_path(group, version)]["serverRelativeURL"]
        assert url == (
            f"/openapi/v3/{openapi.gv_path(group, version)}"
            f"?hash={openapi.document_hash(document(group, version))}"
        )


def test_an_unserved_group_version_has_no_document() -> None:
    assert openapi.v3_document("example.com", "v1", BUILTIN, CRDS) is None


@pytest.mark.parametrize(
    ("group", "version"), GROUP_VERSIONS, ids=[f"{g or 'core'}/{v}" for g, v in GROUP_VERSIONS]
)
def test_every_reference_resolves_and_every_operation_is_labelled(group: str, version: str) -> None:
    doc = document(group, version)
    json.dumps(doc)  # served as JSON
    schemas = doc["components"]["schemas"]
    for ref in refs(doc):
        assert ref.startswith("#/components/schemas/")
        assert ref.removeprefix("#/components/schemas/") in schemas, ref
    ids = [op["operationId"] for _, _, op in operations(doc)]
    assert len(ids) == len(set(ids))
    for path, method, op in operations(doc):
        assert set(op["x-kubernetes-group-version-kind"]) == {"group", "kind", "version"}, path
        assert op["x-kubernetes-action"], path
        names = {p["name"] for p in op.get("parameters", [])}
        if method in WRITES and op["x-kubernetes-action"] != "connect":
            assert {"dryRun", "fieldManager", "fieldValidation"} <= names, (path, method)
        if method == "patch":
            assert "force" in names
            assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]
            assert "application/merge-patch+json" in op["requestBody"]["content"]


@pytest.mark.parametrize(
    ("group", "version"), GROUP_VERSIONS, ids=[f"{g or 'core'}/{v}" for g, v in GROUP_VERSIONS]
)
def test_every_kind_has_one_schema_that_explain_can_find(group: str, version: str) -> None:
    doc = document(group, version)
    labelled: dict[str, list[str]] = {}
    for name, node in doc["components"]["schemas"].items():
        for entry in node.get("x-kubernetes-group-version-kind", []):
            labelled.setdefault(json.dumps(entry, sort_keys=True), []).append(name)
    kinds = {
        json.dumps(op["x-kubernetes-group-version-kind"], sort_keys=True)
        for _, _, op in operations(doc)
    }
    subresource_kinds = {"Binding", "Eviction", "PodExecOptions", "Scale"}
    for kind in kinds:
        if json.loads(kind)["kind"] in subresource_kinds:
            continue
        assert len(labelled.get(kind, [])) == 1, kind


def test_namespaced_and_cluster_scoped_paths() -> None:
    core = document("", "v1")["paths"]
    assert {"get", "post", "delete", "parameters"} == set(
        core["/api/v1/namespaces/{namespace}/pods"]
    )
    assert {"get", "put", "patch", "delete", "parameters"} == set(
        core["/api/v1/namespaces/{namespace}/pods/{name}"]
    )
    assert set(core["/api/v1/namespaces/{namespace}/pods/{name}/status"]) == {
        "get",
        "put",
        "patch",
        "parameters",
    }
    assert set(core["/api/v1/namespaces/{namespace}/pods/{name}/binding"]) == {"post", "parameters"}
    assert set(core["/api/v1/namespaces/{namespace}/pods/{name}/exec"]) == {
        "get",
        "post",
        "parameters",
    }
    assert "/api/v1/pods" in core
    assert "/api/v1/namespaces/{name}" in core
    assert "/api/v1/namespaces/{namespace}/bindings" in core
    assert set(core["/api/v1/namespaces/{namespace}/bindings"]) == {"post", "parameters"}
    assert "/api/v1/namespaces/{namespace}/bindings/{name}" not in core


def test_the_pytorchjob_patch_operation_is_what_kubectl_looks_for() -> None:
    doc = document("kubeflow.org", "v1")
    patch = doc["paths"]["/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs/{name}"]["patch"]
    assert patch["operationId"] == "patchKubeflowOrgV1NamespacedPyTorchJob"
    assert patch["x-kubernetes-group-version-kind"] == gvk("kubeflow.org", "v1", "PyTorchJob")
    assert {"name": "fieldValidation", "in": "query"}.items() <= next(
        p for p in patch["parameters"] if p["name"] == "fieldValidation"
    ).items()
    scale = doc["paths"]["/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs/{name}/scale"][
        "patch"
    ]
    assert scale["x-kubernetes-group-version-kind"] == gvk("autoscaling", "v1", "Scale")


def test_a_crd_kind_is_published_with_its_schema() -> None:
    schemas = document("kubeflow.org", "v1")["components"]["schemas"]
    published = schemas["org.kubeflow.v1.PyTorchJob"]
    crd_schema = crdvalidation.version_schema(PYTORCHJOB, "v1")
    assert crd_schema is not None
    assert published["properties"]["spec"] == crd_schema["properties"]["spec"]
    assert published["properties"]["metadata"]["$ref"] == (
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    assert published["x-kubernetes-group-version-kind"] == [gvk("kubeflow.org", "v1", "PyTorchJob")]
    assert schemas["org.kubeflow.v1.PyTorchJobList"]["x-kubernetes-group-version-kind"] == [
        gvk("kubeflow.org", "v1", "PyTorchJobList")
    ]
    assert "metadata" not in crd_schema["properties"]["metadata"].get(
        "properties", {}
    )  # not mutated


def test_a_builtin_kind_is_permissive() -> None:
    pod = document("", "v1")["components"]["schemas"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-preserve-unknown-fields"] is True
    assert set(pod["properties"]) == {"apiVersion", "kind", "metadata"}


def test_verbs_decide_the_operations() -> None:
    paths = openapi.v3_document(
        "", "v1", [Info("", "v1", "Event", "events", True, (), ("get", "list"))], []
    )
    assert paths is not None
    methods = {(p, m) for p, m, _ in operations(paths)}
    assert methods == {
        ("/api/v1/namespaces/{namespace}/events", "get"),
        ("/api/v1/namespaces/{namespace}/events/{name}", "get"),
        ("/api/v1/events", "get"),
    }


NAMES = [
    ("the core group", ("", "v1", "Pod", True), "io.k8s.api.core.v1.Pod"),
    (
        "a k8s.io group",
        ("coordination.k8s.io", "v1", "Lease", True),
        "io.k8s.api.coordination.v1.Lease",
    ),
    (
        "a plain group",
        ("autoscaling", "v2", "HorizontalPodAutoscaler", True),
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    ),
    (
        "apiextensions",
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", True),
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    ),
    (
        "a custom resource reverses its group",
        ("kubeflow.org", "v1", "PyTorchJob", False),
        "org.kubeflow.v1.PyTorchJob",
    ),
]


@pytest.mark.parametrize(("args", "expected"), [c[1:] for c in NAMES], ids=[c[0] for c in NAMES])
def test_definition_names(args: tuple[str, str, str, bool], expected: str) -> None:
    group, version, kind, builtin = args
    assert openapischemas.definition_name(group, version, kind, builtin=builtin) == expected


def test_crd_resources_follow_served_versions() -> None:
    trainjob = next(c for c in CRDS if c["spec"]["names"]["kind"] == "TrainJob")
    assert [
        (r.group_version, r.plural, r.namespaced, r.subresources)
        for r in openapi.crd_resources(trainjob)
    ] == [
        ("trainer.kubeflow.org/v1alpha1", "trainjobs", True, ("status",)),
        ("trainer.kubeflow.org/v2alpha1", "trainjobs", True, ("status",)),
    ]


def test_the_v2_document_is_swagger_with_resolving_definitions() -> None:
    doc = openapi.v2_document(BUILTIN, CRDS)
    json.dumps(doc)
    assert doc["swagger"] == "2.0"
    definitions = doc["definitions"]
    for ref in refs(doc):
        assert ref.removeprefix("#/definitions/") in definitions, ref
    assert "io.k8s.api.core.v1.Pod" in definitions
    assert definitions["org.kubeflow.v1.PyTorchJob"]["x-kubernetes-group-version-kind"] == [
        gvk("kubeflow.org", "v1", "PyTorchJob")
    ]
    assert "nullable" not in json.dumps(definitions)
    patch = doc["paths"]["/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == gvk("kubeflow.org", "v1", "PyTorchJob")
    assert {
        "uniqueItems": True,
        "type": "string",
        "name": "fieldValidation",
        "in": "query",
    }.items() <= next(p for p in patch["parameters"] if p["name"] == "fieldValidation").items()


# --- the real kubectl --------------------------------------------------------------------
