"""Bad requests to the API server end in a 4xx ``Status`` that says what is wrong, never a 5xx
and never a connection left hanging; the server keeps serving, and what it stores stays
what it would accept.

tests/apiserver/test_fuzz.py sends random methods, paths, bodies and query parameters through
the official client. This suite goes where that client cannot: the bytes on the wire.

- **Headers and paths as raw bytes** (not UTF-8, control characters, percent-escapes, very
  long), sent over TLS by hand, each with a deadline: an answer must come, and be a 4xx (or a
  success for what happens to be valid).
- **Selectors**: label and field selectors from a grammar of their tokens and mistakes, on a
  built-in and a custom resource, listed and watched.
- **Patches**: JSON patches (operations, pointers and values at random), merge patches,
  strategic merge patches with their directives, and apply patches, on a ConfigMap, a Pod
  and a PyTorchJob; a refused patch changes nothing, an accepted one leaves an object the
  server accepts again as it is.
- **Names and labels** against an oracle of Kubernetes' rules (RFC 1123 subdomains and
  labels, RFC 1035 labels, qualified-name label keys, label values): accepted exactly when
  the rules allow, else 422 naming ``metadata.name`` or ``metadata.labels`` in kube's words.
- **Size**: a body over kube-apiserver's 3 MiB gets kube's 413 (with Content-Length or
  chunked), and an object over etcd's 1.5 MiB limit (1572864 bytes when stored) gets a 413
  naming it, on create, update and patch, leaving the stored object as it was.
- **YAML aliases** ("billion laughs") in a YAML body: a 4xx at once.

At the end every object the suite's namespace holds is read back, listed, and written back
unchanged: it must be accepted, so nothing malformed got into the store.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import re
import socket
import ssl
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

if TYPE_CHECKING:  # imported by pytest as a plugin, before this module (see below)
    from tests.reliability.security_fixtures import Figures

pytest_plugins = ["tests.reliability.security_fixtures"]  # the bad_input_figures fixture

DEADLINE: Final = 15.0  # seconds for any answer: past it, the connection hung
BODY_LIMIT: Final = 3 * 1024 * 1024  # kube-apiserver's request body limit
OBJECT_LIMIT: Final = 1536 * 1024  # etcd's --max-request-bytes


def scaled(examples: int) -> int:
    """``examples`` times ``$KUBETRAIN_FUZZ_SCALE`` (default 1): a longer hunt on demand."""
    return max(1, round(examples * float(os.environ.get("KUBETRAIN_FUZZ_SCALE", "1"))))


SETTINGS: Final = settings(
    max_examples=scaled(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PYTORCHJOBS: Final = "/apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs"


# --- the wire -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Wire:
    """Requests written byte by byte, over TLS, with the target's token."""

    host: str
    port: int
    context: ssl.SSLContext
    token: str

    def send(
        self,
        method: bytes | str,
        target: bytes | str,
        *,
        headers: dict[bytes | str, bytes | str] | None = None,
        body: bytes | None = None,
        chunked: bool = False,
        token: bool = True,
        stream: bool = False,
    ) -> Answer:
        """The answer; fails the test if none comes within :data:`DEADLINE`. ``stream``: a
        successful answer's body is not waited for (a watch streams until it times out)."""
        lines = [_bytes(method) + b" " + _bytes(target) + b" HTTP/1.1", b"Host: kubetrain"]
        given = {_bytes(k).lower(): _bytes(v) for k, v in (headers or {}).items()}
        if token and b"authorization" not in given:
            given[b"authorization"] = f"Bearer {self.token}".encode()
        given.setdefault(b"connection", b"close")
        if body is not None:
            if chunked:
                given[b"transfer-encoding"] = b"chunked"
            else:
                given.setdefault(b"content-length", str(len(body)).encode())
        lines += [k + b": " + v for k, v in given.items()]
        payload = b"\r\n".join(lines) + b"\r\n\r\n"
        if body is not None:
            payload += _chunked(body) if chunked else body
        started = time.monotonic()
        raw = socket.create_connection((self.host, self.port), timeout=DEADLINE)
        with self.context.wrap_socket(raw, server_hostname=self.host) as conn:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                conn.sendall(payload)  # a server may answer before it has read everything
            response = http.client.HTTPResponse(conn)  # type: ignore[arg-type]
            try:
                response.begin()
                data = b"" if stream and response.status < 300 else response.read()
            except TimeoutError:
                pytest.fail(f"no answer within {DEADLINE:.0f}s: {method!r} {target[:200]!r}")
            finally:
                response.close()
        assert time.monotonic() - started < DEADLINE
        return Answer(response.status, dict(response.getheaders()), data)


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def _chunked(body: bytes, size: int = 65536) -> bytes:
    parts = [
        f"{len(body[i : i + size]):x}\r\n".encode() + body[i : i + size] + b"\r\n"
        for i in range(0, len(body), size)
    ]
    return b"".join(parts) + b"0\r\n\r\n"


@pytest.fixture(scope="module")
def wire(api_client: client.ApiClient) -> Wire:
    config = api_client.configuration
    token = str(config.auth_settings().get("BearerToken", {}).get("value") or "")
    if not token.startswith("Bearer "):
        pytest.skip("the target authenticates without a bearer token; these tests send one")
    url = urllib.parse.urlsplit(config.host)
    context = ssl.create_default_context(cafile=config.ssl_ca_cert)
    return Wire(url.hostname or "", url.port or 443, context, token.removeprefix("Bearer "))


@pytest.fixture(scope="module")
def kubetrain_server(wire: Wire) -> bool:
    """Whether the target is kubetrain's API server (some limits are kubetrain's own)."""
    version = wire.send("GET", "/version").json()
    return str(version.get("gitVersion", "")).endswith("-kubetrain")


@pytest.fixture(scope="module")
def counted(bad_input_figures: Figures) -> Figures:
    return bad_input_figures


def a_status(answer: Answer, *, codes: range = range(400, 500)) -> dict[str, Any]:
    """``answer`` is an error in ``codes`` whose body is a Status with a message; the Status."""
    assert answer.status in codes, (answer.status, answer.body[:500])
    status = answer.json()
    assert status["kind"] == "Status", status
    assert status["code"] == answer.status
    assert status["message"]
    return status


def sane(answer: Answer) -> None:
    """Served, or refused with a 4xx that explains itself; never a 5xx."""
    assert answer.status < 500, (answer.status, answer.body[:500])
    if answer.status >= 400 and answer.headers.get("Content-Type", "").startswith(
        "application/json"
    ):
        a_status(answer)


# --- raw headers and paths ------------------------------------------------------------------

RAW_TEXT: Final = st.binary(max_size=40).filter(
    lambda b: not any(c in b for c in b"\r\n\x00")  # one header line, as HTTP frames it
)
HEADER_VALUES: Final = st.one_of(
    RAW_TEXT,
    st.sampled_from(
        [
            b"application/json; charset=\xff",
            b"application/json;;;",
            b"application/merge-patch+json; q=0",
            b"*/*;as=Table;g=meta.k8s.io;v=v1",
            b"application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
            b"application/vnd.kubernetes.protobuf;stream=watch",
            b"text/html",
            b"\xc3\x28",
            b"a" * 8000,
        ]
    ),
)
AUTHORIZATION: Final = st.one_of(
    st.none(),
    st.sampled_from([b"Bearer", b"Bearer  ", b"bearer {token}", b"Bearer {token}\xff"]),
    RAW_TEXT.map(lambda b: b"Bearer " + b),
)
SEGMENTS: Final = st.sampled_from(
    [
        b"api",
        b"apis",
        b"v1",
        b"namespaces",
        b"{ns}",
        b"configmaps",
        b"pods",
        b"kubeflow.org",
        b"pytorchjobs",
        b"status",
        b"log",
        b"%00",
        b"%2F",
        b"%2e%2e",
        b"..",
        b"%ff",
        b"\xc3\xa9",
        b"a" * 300,
        b"",
        b"~",
        b";x=y",
    ]
)
QUERIES: Final = st.lists(
    st.tuples(
        st.sampled_from(
            [
                *(b"labelSelector", b"fieldSelector", b"limit", b"continue", b"watch"),
                *(b"timeoutSeconds", b"resourceVersion", b"resourceVersionMatch", b"dryRun"),
                *(b"fieldManager", b"x"),
            ]
        ),
        st.sampled_from([b"", b"%", b"%zz", b"-1", b"1e9", b"0", b"a=b", b"%C3%A9", b"!", b"1"])
        | RAW_TEXT.map(lambda b: urllib.parse.quote_from_bytes(b).encode()),
    ),
    max_size=4,
)


@SETTINGS
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND"]),
    segments=st.lists(SEGMENTS, max_size=7),
    query=QUERIES,
    content_type=st.none() | HEADER_VALUES,
    accept=st.none() | HEADER_VALUES,
    authorization=AUTHORIZATION,
    body=st.none() | st.sampled_from([b"{}", b'{"metadata":{"name":"x"}}', b"\xff", b"[]"]),
)
def test_raw_bytes_in_headers_and_paths_get_an_answer_and_never_a_5xx(
    wire: Wire,
    namespace: str,
    counted: Figures,
    method: str,
    segments: list[bytes],
    query: list[tuple[bytes, bytes]],
    content_type: bytes | None,
    accept: bytes | None,
    authorization: bytes | None,
    body: bytes | None,
) -> None:
    path = b"/" + b"/".join(s.replace(b"{ns}", namespace.encode()) for s in segments)
    if method not in ("GET", "OPTIONS", "PROPFIND") and namespace.encode() not in path:
        method = "GET"  # writes only into this test's namespace
    if b"watch" in path or any(k == b"watch" for k, _ in query):
        query = [(k, v) for k, v in query if k != b"timeoutSeconds"] + [(b"timeoutSeconds", b"1")]
    target = path + (b"?" + b"&".join(k + b"=" + v for k, v in query) if query else b"")
    headers: dict[bytes | str, bytes | str] = {}
    if content_type is not None:
        headers[b"Content-Type"] = content_type
    if accept is not None:
        headers[b"Accept"] = accept
    if authorization is not None:
        headers[b"Authorization"] = authorization.replace(b"{token}", wire.token.encode())
    answer = wire.send(method, target, headers=headers, body=body, token=authorization is None)
    counted.add("inputs: api requests")
    sane(answer)
    if authorization is not None and wire.token.encode() not in authorization.replace(
        b"{token}", wire.token.encode()
    ):
        health = path.rstrip(b"/") in (b"/healthz", b"/livez", b"/readyz")
        assert answer.status in (400, 401) or health, answer.status


# --- selectors ------------------------------------------------------------------------------

SELECTOR_TOKENS: Final = st.sampled_from(
    [
        "app",
        "tier",
        "example.com/app",
        "a_b",
        "-a",
        "a-",
        "A" * 70,
        "=",
        "==",
        "!=",
        " in ",
        " notin ",
        "!",
        "(",
        ")",
        ",",
        " ",
        "x",
        "1",
        "metadata.name",
        "metadata.namespace",
        "status.phase",
        "spec.nodeName",
        "metadata.labels",
        "Running",
        "\\",
        "é",
        "%",
        "\t",
        "/",
        "..",
        "",
    ]
)
SELECTORS: Final = st.lists(SELECTOR_TOKENS, max_size=8).map("".join)


@SETTINGS
@given(
    labels=st.none() | SELECTORS,
    fields=st.none() | SELECTORS,
    resource=st.sampled_from(["/api/v1/namespaces/{ns}/pods", PYTORCHJOBS]),
    watch=st.booleans(),
)
def test_any_selector_is_served_or_refused_with_a_400(
    wire: Wire,
    namespace: str,
    counted: Figures,
    labels: str | None,
    fields: str | None,
    resource: str,
    watch: bool,
) -> None:
    query = {"timeoutSeconds": "1"} if watch else {"limit": "5"}
    if watch:
        query["watch"] = "true"
    if labels is not None:
        query["labelSelector"] = labels
    if fields is not None:
        query["fieldSelector"] = fields
    target = resource.format(ns=namespace) + "?" + urllib.parse.urlencode(query)
    answer = wire.send("GET", target, stream=watch)
    counted.add("inputs: api requests")
    if answer.status != 200:
        status = a_status(answer)
        assert status["reason"] == "BadRequest", status


# --- patches --------------------------------------------------------------------------------

JSON_VALUES: Final = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
POINTERS: Final = st.lists(
    st.sampled_from(
        [
            *("metadata", "labels", "annotations", "name", "spec", "data", "a", "0", "-", "~0"),
            *("~1", "~2", "containers", "status", "finalizers", "ownerReferences", "kind"),
            *("apiVersion", "pytorchReplicaSpecs", "Master", "replicas", "template", "uid"),
            "resourceVersion",
        ]
    ),
    max_size=5,
).map(lambda parts: "".join("/" + p for p in parts))
JSON_PATCH_OPS: Final = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "x", ""]),
        "path": POINTERS | st.text(max_size=6),
    },
    optional={"value": JSON_VALUES, "from": POINTERS},
)
META_KEYS: Final = st.sampled_from(
    [
        *("name", "namespace", "labels", "annotations", "finalizers", "uid", "resourceVersion"),
        *("generation", "ownerReferences", "managedFields", "deletionTimestamp", "x"),
    ]
)
MERGE_PATCHES: Final = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.dictionaries(META_KEYS, JSON_VALUES, max_size=3),
        "spec": JSON_VALUES,
        "data": JSON_VALUES,
        "status": JSON_VALUES,
        "kind": JSON_VALUES,
        "apiVersion": JSON_VALUES,
        "$patch": st.sampled_from(["delete", "replace", "merge", "x"]),
        "$retainKeys": JSON_VALUES,
        "$setElementOrder/containers": JSON_VALUES,
        "$deleteFromPrimitiveList/finalizers": JSON_VALUES,
    },
)
PATCH_BODIES: Final = st.one_of(
    st.tuples(
        st.just("application/json-patch+json"),
        st.lists(JSON_PATCH_OPS, max_size=4).map(json.dumps),
    ),
    st.tuples(
        st.sampled_from(["application/merge-patch+json", "application/strategic-merge-patch+json"]),
        MERGE_PATCHES.map(json.dumps),
    ),
    st.tuples(st.just("application/apply-patch+yaml"), MERGE_PATCHES.map(json.dumps)),
    st.tuples(
        st.sampled_from(["application/merge-patch+json", "application/json-patch+json"]),
        st.sampled_from(["", "null", "[", "1", '"x"', "[[]]", "{}", "[{}]"]),
    ),
)


def targets(namespace: str) -> dict[str, dict[str, Any]]:
    """The objects the patch tests work on, by collection path."""
    container = {"name": "pytorch", "image": "example/train:1", "command": ["python3", "t.py"]}
    return {
        f"/api/v1/namespaces/{namespace}/configmaps": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "patched", "labels": {"a": "b"}},
            "data": {"k": "v"},
        },
        f"/api/v1/namespaces/{namespace}/pods": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "patched", "finalizers": ["example.com/x"]},
            "spec": {"schedulerName": "nobody", "containers": [dict(container, name="main")]},
        },
        PYTORCHJOBS.format(ns=namespace): {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "patched"},
            "spec": {
                "runPolicy": {"suspend": True},
                "pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}}
                },
            },
        },
    }


@pytest.fixture
def patch_targets(wire: Wire, namespace: str) -> Iterator[list[str]]:
    paths = []
    for collection, obj in targets(namespace).items():
        answer = wire.send(
            "POST",
            collection,
            headers={"Content-Type": "application/json"},
            body=json.dumps(obj).encode(),
        )
        if answer.status == 404 and "kubeflow.org" in collection:
            continue  # a cluster without the Training Operator's CRDs
        assert answer.status == 201, answer.body[:300]
        paths.append(f"{collection}/patched")
    yield paths
    for path in paths:  # the Pod holds a finalizer: let the namespace go
        wire.send(
            "PATCH",
            path,
            headers={"Content-Type": "application/merge-patch+json"},
            body=b'{"metadata":{"finalizers":null}}',
        )


@SETTINGS
@given(
    which=st.integers(0, 2),
    patch=PATCH_BODIES,
    subresource=st.sampled_from(["", "", "", "/status"]),
    manager=st.sampled_from(["fuzz", "", "a" * 129]),
)
def test_a_refused_patch_changes_nothing_and_an_accepted_one_leaves_a_valid_object(
    wire: Wire,
    patch_targets: list[str],
    counted: Figures,
    which: int,
    patch: tuple[str, str],
    subresource: str,
    manager: str,
) -> None:
    path = patch_targets[which % len(patch_targets)]
    if subresource and "/configmaps/" in path:
        subresource = ""  # ConfigMaps have no status
    before = wire.send("GET", path).json()
    content_type, body = patch
    query = f"?fieldManager={manager}" if manager else ""
    if content_type == "application/apply-patch+yaml" and not manager:
        query = "?fieldManager=fuzz"
    answer = wire.send(
        "PATCH",
        path + subresource + query,
        headers={"Content-Type": content_type},
        body=body.encode(),
    )
    counted.add("inputs: api requests")
    after = wire.send("GET", path)
    assert after.status == 200, "a patch must never lose the object"
    if answer.status >= 400:
        a_status(answer)
        assert after.json() == before, "a refused patch changed the object"
        return
    assert answer.status == 200, answer.body[:300]
    written_back = wire.send(
        "PUT", path, headers={"Content-Type": "application/json"}, body=after.body
    )
    assert written_back.status == 200, (
        "the server stored what it refuses",
        written_back.body[:500],
    )


# --- names and labels -----------------------------------------------------------------------

LABEL_1123: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
SUBDOMAIN_1123: Final = re.compile(rf"{LABEL_1123.pattern}(\.{LABEL_1123.pattern})*")
LABEL_1035: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
QUALIFIED_NAME: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_VALUE: Final = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
NAME_TEXT: Final = st.text(
    st.sampled_from("abcz09-.A_ é/"), min_size=1, max_size=12
) | st.sampled_from(
    ["a" * 63, "a" * 64, "a" * 253, "a." * 126 + "a", "a" * 254, "-a", "a-", "a..b", "1a", "a.b"]
)


def name_ok(name: str, rule: str) -> bool:
    """Kubernetes' name rules, written from its documentation."""
    if rule == "subdomain":
        return len(name) <= 253 and SUBDOMAIN_1123.fullmatch(name) is not None
    if rule == "label":
        return len(name) <= 63 and LABEL_1123.fullmatch(name) is not None
    return len(name) <= 63 and LABEL_1035.fullmatch(name) is not None


def label_key_ok(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not (prefix and len(prefix) <= 253 and SUBDOMAIN_1123.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and QUALIFIED_NAME.fullmatch(name) is not None


def label_value_ok(value: str) -> bool:
    return len(value) <= 63 and LABEL_VALUE.fullmatch(value) is not None


NAMED: Final = {
    "subdomain": ("/api/v1/namespaces/{ns}/configmaps", {"apiVersion": "v1", "kind": "ConfigMap"}),
    "label": ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace"}),
    "1035": (
        "/api/v1/namespaces/{ns}/services",
        {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}},
    ),
}
MESSAGES: Final = {
    "subdomain": "a lowercase RFC 1123 subdomain must consist of",
    "label": "a lowercase RFC 1123 label must consist of",
    "1035": "a DNS-1035 label must consist of",
}


def dry_create(wire: Wire, collection: str, obj: dict[str, Any]) -> Answer:
    return wire.send(
        "POST",
        collection + "?dryRun=All",
        headers={"Content-Type": "application/json"},
        body=json.dumps(obj).encode(),
    )


@SETTINGS
@given(rule=st.sampled_from(sorted(NAMED)), name=NAME_TEXT)
def test_names_follow_kubernetes_rules_and_words(
    wire: Wire, namespace: str, counted: Figures, rule: str, name: str
) -> None:
    collection, obj = NAMED[rule]
    answer = dry_create(wire, collection.format(ns=namespace), {**obj, "metadata": {"name": name}})
    counted.add("inputs: api requests")
    if name_ok(name, rule):
        assert answer.status == 201, answer.body[:400]
        return
    status = a_status(answer, codes=range(422, 423))
    causes = status["details"]["causes"]
    fields = {c["field"] for c in causes}
    assert "metadata.name" in fields, causes
    # a Namespace is labelled with its own name before it is validated, as kube does
    assert fields <= {"metadata.name", "metadata.labels" if rule == "label" else ""}, causes
    length = 253 if rule == "subdomain" else 63
    texts = " ".join(c["message"] for c in causes)
    assert MESSAGES[rule] in texts or f"must be no more than {length} characters" in texts


LABEL_TEXT: Final = st.text(st.sampled_from("aZ09-._/é x"), max_size=10) | st.sampled_from(
    ["a" * 63, "a" * 64, "example.com/a", "Example.com/a", "/a", "a/", "a/b/c", "-a", "a_"]
)


@SETTINGS
@given(key=LABEL_TEXT, value=LABEL_TEXT)
def test_labels_follow_kubernetes_rules(
    wire: Wire, namespace: str, counted: Figures, key: str, value: str
) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "l", "labels": {key: value}},
    }
    answer = dry_create(wire, f"/api/v1/namespaces/{namespace}/configmaps", obj)
    counted.add("inputs: api requests")
    if label_key_ok(key) and label_value_ok(value):
        assert answer.status == 201, answer.body[:400]
        return
    status = a_status(answer, codes=range(422, 423))
    fields = {c["field"] for c in status["details"]["causes"]}
    assert fields, status
    assert all(f.startswith("metadata.labels") for f in fields), status


# --- size -----------------------------------------------------------------------------------


def configmap(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"x": "y" * size},
    }


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_over_3_mib_gets_kubes_413(wire: Wire, namespace: str, chunked: bool) -> None:
    body = json.dumps(configmap("huge", BODY_LIMIT + 1024)).encode()
    answer = wire.send(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        headers={"Content-Type": "application/json"},
        body=body,
        chunked=chunked,
    )
    status = a_status(answer, codes=range(413, 414))
    assert status["reason"] == "RequestEntityTooLarge"
    assert status["message"] == f"Request entity too large: limit is {BODY_LIMIT}"
    assert wire.send("GET", f"/api/v1/namespaces/{namespace}/configmaps/huge").status == 404


def test_an_object_over_etcds_limit_gets_a_413_on_create_update_and_patch(
    wire: Wire, namespace: str, kubetrain_server: bool
) -> None:
    if not kubetrain_server:
        pytest.skip("kube-apiserver answers etcd's limit with a 500 (kubernetes#112152)")
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    json_ = {"Content-Type": "application/json"}

    def refused(answer: Answer) -> None:
        status = a_status(answer, codes=range(413, 414))
        assert status["reason"] == "RequestEntityTooLarge"
        assert status["message"].startswith('Request entity too large: configmaps "big" is ')
        assert status["message"].endswith(f"bytes when stored; limit is {OBJECT_LIMIT}")

    refused(
        wire.send(
            "POST",
            collection,
            headers=json_,
            body=json.dumps(configmap("big", OBJECT_LIMIT)).encode(),
        )
    )
    assert wire.send("GET", f"{collection}/big").status == 404
    fits = OBJECT_LIMIT - 4096  # the stored form adds metadata: uid, managedFields, ...
    created = wire.send(
        "POST", collection, headers=json_, body=json.dumps(configmap("big", fits)).encode()
    )
    assert created.status == 201, created.body[:300]
    stored = wire.send("GET", f"{collection}/big")
    grown = json.loads(stored.body)
    grown["data"]["more"] = "z" * 8192
    refused(wire.send("PUT", f"{collection}/big", headers=json_, body=json.dumps(grown).encode()))
    refused(
        wire.send(
            "PATCH",
            f"{collection}/big",
            headers={"Content-Type": "application/merge-patch+json"},
            body=b'{"data":{"more":"' + b"z" * 8192 + b'"}}',
        )
    )
    assert wire.send("GET", f"{collection}/big").body == stored.body
    deleted = wire.send("DELETE", f"{collection}/big")
    assert deleted.status == 200, deleted.body[:300]


BILLION_LAUGHS: Final = (
    b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\n"
    b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + b"".join(
        f"{x}: &{x} [{','.join(['*' + p] * 9)}]\n".encode()
        for p, x in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_yaml_aliases_that_expand_a_billion_times_get_a_4xx(
    wire: Wire, namespace: str, method: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    content_type = "application/yaml"
    if method == "PATCH":
        assert dry_create(wire, path, configmap("lol", 1)).status == 201
        wire.send(
            "POST",
            path,
            headers={"Content-Type": "application/json"},
            body=json.dumps(configmap("lol", 1)).encode(),
        )
        path, content_type = f"{path}/lol?fieldManager=fuzz", "application/apply-patch+yaml"
    started = time.monotonic()
    answer = wire.send(method, path, headers={"Content-Type": content_type}, body=BILLION_LAUGHS)
    a_status(answer)
    assert time.monotonic() - started < 10


UNSTORABLE: Final = [
    pytest.param(b'"\\ud800"', id="a lone surrogate"),
    pytest.param(b"1e400", id="a number beyond float64"),
    pytest.param(b"-1e400", id="a negative one"),
]


@pytest.mark.parametrize("value", UNSTORABLE)
@pytest.mark.parametrize(
    ("method", "content_type"),
    [
        ("POST", "application/json"),
        ("POST", "application/yaml"),
        ("PUT", "application/json"),
        ("PATCH", "application/merge-patch+json"),
        ("PATCH", "application/strategic-merge-patch+json"),
        ("PATCH", "application/json-patch+json"),
        ("PATCH", "application/apply-patch+yaml"),
    ],
)
def test_what_json_cannot_hold_is_a_400_and_nothing_is_stored(
    wire: Wire,
    namespace: str,
    kubetrain_server: bool,
    value: bytes,
    method: str,
    content_type: str,
) -> None:
    """A lone UTF-16 surrogate (``\\ud800``) and a number that overflows to infinity decode
    in Python, but no UTF-8 JSON holds them; stored, they would be served as invalid JSON."""
    if not kubetrain_server:
        pytest.skip("kube-apiserver decodes these in Go: a surrogate becomes U+FFFD")
    collection = f"/api/v1/namespaces/{namespace}/pods"
    pod = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"odd","annotations":{"a":"b"}},'
    pod += b'"spec":{"containers":[{"name":"m","image":"i","args":[%s]}]}}'
    plain = json.dumps(json.loads(pod % b'"x"')).encode()
    if method != "POST":
        created = wire.send(
            "POST", collection, headers={"Content-Type": "application/json"}, body=plain
        )
        assert created.status == 201, created.body[:300]
    before = wire.send("GET", f"{collection}/odd")
    if "yaml" in content_type and value != b'"\\ud800"':
        value = value.replace(b"1e400", b"1.0e+400")  # a float to YAML 1.1 needs the dot
    body = {
        "POST": pod % value,
        "PUT": pod % value,
        "PATCH": b'{"spec":{"activeDeadlineSeconds":%s}}' % value,
    }[method]
    if content_type == "application/json-patch+json":
        body = b'[{"op":"add","path":"/metadata/annotations/a","value":%s}]' % value
    target = collection if method == "POST" else f"{collection}/odd?fieldManager=fuzz"
    answer = wire.send(method, target, headers={"Content-Type": content_type}, body=body)
    status = a_status(answer, codes=range(400, 401))
    assert "holds" in status["message"], status
    assert wire.send("GET", f"{collection}/odd").body == before.body


# --- what the store holds ---------------------------------------------------------------------

COLLECTIONS: Final = (
    "/api/v1/namespaces/{ns}/configmaps",
    "/api/v1/namespaces/{ns}/pods",
    "/api/v1/namespaces/{ns}/services",
    "/api/v1/namespaces/{ns}/secrets",
    PYTORCHJOBS,
)


@settings(SETTINGS, max_examples=scaled(15))  # each example reads and writes back every object
@given(
    which=st.integers(0, 2),
    patches=st.lists(PATCH_BODIES, min_size=5, max_size=5),
)
def test_after_any_patches_the_store_holds_only_what_the_server_accepts(
    wire: Wire,
    namespace: str,
    patch_targets: list[str],
    counted: Figures,
    which: int,
    patches: list[tuple[str, str]],
) -> None:
    path = patch_targets[which % len(patch_targets)]
    for content_type, body in patches:
        answer = wire.send(
            "PATCH",
            path + "?fieldManager=fuzz",
            headers={"Content-Type": content_type},
            body=body.encode(),
        )
        sane(answer)
    counted.add("inputs: api requests", len(patches))
    check_store(wire, namespace)


def check_store(wire: Wire, namespace: str) -> None:
    """Every object of the namespace reads back as listed and is accepted again as it is."""
    for collection in COLLECTIONS:
        path = collection.format(ns=namespace)
        listed = wire.send("GET", path)
        if listed.status == 404:
            continue  # no such resource on this server
        assert listed.status == 200, listed.body[:300]
        items = listed.json()["items"]
        versions = [item["metadata"]["resourceVersion"] for item in items]
        assert len(set(versions)) == len(versions)
        for item in items:
            name = item["metadata"]["name"]
            got = wire.send("GET", f"{path}/{name}")
            assert got.status == 200
            one = got.json()
            assert one["metadata"] == item["metadata"]
            again = wire.send(
                "PUT", f"{path}/{name}", headers={"Content-Type": "application/json"}, body=got.body
            )
            assert again.status == 200, (name, again.body[:500])


def test_the_server_still_serves_and_its_store_is_whole(wire: Wire, namespace: str) -> None:
    assert wire.send("GET", "/readyz", token=False).body == b"ok"
    created = dry_create(wire, f"/api/v1/namespaces/{namespace}/configmaps", configmap("fine", 10))
    assert created.status == 201
    check_store(wire, namespace)
    encoded = base64.b64encode(b"x").decode()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"k": encoded},
    }
    assert dry_create(wire, f"/api/v1/namespaces/{namespace}/secrets", secret).status == 201
