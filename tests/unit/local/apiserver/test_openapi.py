"""The OpenAPI documents: internally consistent, and enough for the real kubectl.

The documents are checked against what kubectl 1.32 reads (see the :mod:`openapi`
docstring): a PATCH operation per kind carrying ``fieldValidation``, schemas found by
``x-kubernetes-group-version-kind``, ``$ref`` s that resolve. The last tests run the real
``kubectl`` against a stub HTTP server on 127.0.0.1 that serves discovery and these
documents and records what kubectl asks for; they skip, saying why, when kubectl is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

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

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")

JOB_YAML = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: demo
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: example/train:1
"""
NAMESPACE_YAML = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    accept: str
    content_type: str
    body: str


@dataclass
class Stub:
    """A minimal API server: discovery, the OpenAPI documents, and one object store."""

    existing: dict[str, Any] = field(default_factory=dict)  # path -> object for GET
    strip_field_validation: bool = False
    requests: list[Request] = field(default_factory=list)

    def v3(self, group: str, version: str) -> dict[str, Any] | None:
        doc = openapi.v3_document(group, version, BUILTIN, [PYTORCHJOB])
        if doc is not None and self.strip_field_validation:
            for _, method, op in operations(doc):
                if method == "patch":
                    op["parameters"] = [
                        p for p in op["parameters"] if p["name"] != "fieldValidation"
                    ]
        return doc

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        if path == "/version":
            return 200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0"}
        if path == "/api":
            return 200, {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [],
            }
        if path == "/apis":
            gv = {"groupVersion": "kubeflow.org/v1", "version": "v1"}
            group = {"name": "kubeflow.org", "versions": [gv], "preferredVersion": gv}
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]}
        if path == "/api/v1":
            namespaces = {
                "name": "namespaces",
                "singularName": "namespace",
                "namespaced": False,
                "kind": "Namespace",
                "verbs": list(openapi.ALL_VERBS),
            }
            return 200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": [namespaces]}
        if path == "/apis/kubeflow.org/v1":
            jobs = {
                "name": "pytorchjobs",
                "singularName": "pytorchjob",
                "namespaced": True,
                "kind": "PyTorchJob",
                "verbs": list(openapi.ALL_VERBS),
            }
            status = {
                "name": "pytorchjobs/status",
                "singularName": "",
                "namespaced": True,
                "kind": "PyTorchJob",
                "verbs": ["get", "patch", "update"],
            }
            return 200, {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": "kubeflow.org/v1",
                "resources": [jobs, status],
            }
        if path == "/openapi/v3":
            return 200, openapi.v3_index(BUILTIN, [PYTORCHJOB])
        if path.startswith("/openapi/v3/"):
            parts = path.split("/")[3:]
            group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
            doc = self.v3(group, version)
            return (200, doc) if doc else (404, status_of(404, "NotFound"))
        if path == "/openapi/v2":  # kubectl asks for protobuf only
            return 406, status_of(406, "NotAcceptable")
        if method == "GET":
            if path in self.existing:
                return 200, self.existing[path]
            return 404, status_of(404, "NotFound")
        if method in ("POST", "PATCH"):
            obj = json.loads(body) if method == "POST" else self.existing.get(path, {})
            return (201 if method == "POST" else 200), obj
        return 405, status_of(405, "MethodNotAllowed")


def status_of(code: int, reason: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "reason": reason,
        "code": code,
    }


@pytest.fixture
def stub() -> Iterator[tuple[Stub, str]]:
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def serve(self) -> None:
            parts = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.requests.append(
                Request(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    self.headers.get("Accept") or "",
                    self.headers.get("Content-Type") or "",
                    body.decode(),
                )
            )
            code, payload = state.answer(self.command, parts.path, body)
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = serve

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def kubectl(url: str, home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    (home / "config").touch()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "KUBECONFIG": str(home / "config"),
    }
    command = [str(KUBECTL), "--server", url, "--cache-dir", str(home / "cache"), *args]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, env=env, timeout=60, check=False
    )


def writes(state: Stub) -> list[Request]:
    return [r for r in state.requests if r.method in ("POST", "PATCH", "PUT")]


@needs_kubectl
def test_kubectl_apply_validates_on_the_server(stub: tuple[Stub, str], tmp_path: Path) -> None:
    state, url = stub
    done = kubectl(url, tmp_path, "apply", "-f", "-", "--dry-run=server", stdin=JOB_YAML)
    assert done.returncode == 0, done.stderr
    assert "pytorchjob.kubeflow.org/demo created (server dry run)" in done.stdout
    [write] = writes(state)
    assert (write.method, write.path) == (
        "POST",
        "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs",
    )
    assert write.query["fieldValidation"] == ["Strict"]
    assert write.query["dryRun"] == ["All"]
    assert not [r for r in state.requests if r.path == "/openapi/v2"]  # no client-side validation


@needs_kubectl
def test_kubectl_apply_updates_with_a_merge_patch(stub: tuple[Stub, str], tmp_path: Path) -> None:
    state, url = stub
    path = "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs/demo"
    applied = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 2}}},
    }
    state.existing[path] = {
        **applied,
        "metadata": {
            **applied["metadata"],
            "uid": "u",
            "resourceVersion": "7",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)
            },
        },
    }
    done = kubectl(url, tmp_path, "apply", "-f", "-", stdin=JOB_YAML)
    assert done.returncode == 0, done.stderr
    [write] = writes(state)
    assert (write.method, write.path) == ("PATCH", path)
    assert write.content_type == "application/merge-patch+json"
    assert write.query["fieldValidation"] == ["Strict"]
    master = json.loads(write.body)["spec"]["pytorchReplicaSpecs"]["Master"]
    assert master["replicas"] == 1
    assert master["template"]["spec"]["containers"][0]["name"] == "pytorch"


@needs_kubectl
def test_kubectl_apply_of_a_builtin_kind_uses_the_core_document(
    stub: tuple[Stub, str], tmp_path: Path
) -> None:
    state, url = stub
    done = kubectl(url, tmp_path, "apply", "-f", "-", stdin=NAMESPACE_YAML)
    assert done.returncode == 0, done.stderr
    [write] = writes(state)
    assert (write.method, write.path) == ("POST", "/api/v1/namespaces")
    assert write.query["fieldValidation"] == ["Strict"]
    assert any(r.path == "/openapi/v3/api/v1" for r in state.requests)


@needs_kubectl
def test_without_field_validation_kubectl_falls_back_to_openapi_v2(
    stub: tuple[Stub, str], tmp_path: Path
) -> None:
    """The control for the tests above: the PATCH parameter is what kubectl decides on."""
    state, url = stub
    state.strip_field_validation = True
    done = kubectl(url, tmp_path, "apply", "-f", "-", "--dry-run=server", stdin=JOB_YAML)
    assert done.returncode != 0
    assert "error validating" in done.stderr
    v2 = [r.accept for r in state.requests if r.path == "/openapi/v2"]
    assert v2 == ["application/com.github.proto-openapi.spec.v2@v1.0+protobuf"]
    assert writes(state) == []


EXPLAIN = [
    (
        "the spec of a kubetrain kind",
        "pytorchjob.spec",
        ["KIND:       PyTorchJob", "pytorchReplicaSpecs", "runPolicy"],
    ),
    (
        "a nested field",
        "pytorchjobs.spec.runPolicy",
        ["FIELD: runPolicy <Object>", "cleanPodPolicy", "suspend"],
    ),
    (
        "object metadata through its $ref",
        "pytorchjob.metadata",
        ["labels", "ownerReferences", "resourceVersion"],
    ),
    (
        "a map of replica specs shows the value schema",
        "pytorchjob.spec.pytorchReplicaSpecs",
        ["<map[string]Object>", "enum: Always, OnFailure, Never, ExitCode", "template"],
    ),
    (
        "a built-in kind shows its permissive schema",
        "namespaces",
        ["KIND:       Namespace", "metadata\t<ObjectMeta>"],
    ),
]


@needs_kubectl
@pytest.mark.parametrize(
    ("target", "expected"), [c[1:] for c in EXPLAIN], ids=[c[0] for c in EXPLAIN]
)
def test_kubectl_explain(
    stub: tuple[Stub, str], tmp_path: Path, target: str, expected: list[str]
) -> None:
    _, url = stub
    done = kubectl(url, tmp_path, "explain", target)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout
