"""The OpenAPI documents are enough for the real kubectl: ``kubectl apply`` and ``kubectl
explain`` run against a stub HTTP server on 127.0.0.1 that serves discovery and these
documents and records what kubectl asks for; they skip, saying why, when kubectl is absent.
The documents themselves are checked in tests/unit/local/apiserver/test_openapi.py."""

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

from kubetrain.local.apiserver import openapi
from tests.unit.local.apiserver.test_openapi import BUILTIN, PYTORCHJOB, operations

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
