"""Schemathesis against the API server's own OpenAPI: requests generated from ``/openapi/v3``
for the create, get, list, update, patch and delete operations of core Pods, Services and
ConfigMaps and of the Training Operator's ``kubeflow.org`` kinds (their ``status`` and
``scale`` subresources included) never get a 5xx, and every answer the document describes
(200, 201) matches the schema it gives for it.

What is left out, and why:

- ``watch=true`` (the ``watch`` parameter is taken out of the documents) and the operations
  that stream or connect (``exec``, ``attach``, ``portforward``, ``proxy``, ``log``): they
  hold the connection open by design.
- Schemathesis's ``status_code_conformance``: like Kubernetes' own documents, ours declare
  only the success codes and 401, so every refusal (400, 404, 409, 422) would count as a
  finding. Instead each error answer here must be a ``Status`` whose ``code`` is the HTTP
  status and whose message says what is wrong.

Generation is steered towards requests that get past the first check: half the time a case
names one of two objects kept in place (a create: one of two new names), leaves out the query
parameters (most random values of ``dryRun`` or ``fieldValidation`` are a 422 at once), and
gives its body just the metadata of the object its path names, half of those also the fields
of a valid object (the generated body's other fields stay). Both positive and negative data
(schema-violating, from schemathesis's negative mode) are sent; the budget is fixed
(``EXAMPLES`` per operation, derandomized), times ``$KUBETRAIN_FUZZ_SCALE``.

The target is the session's API server (tests/fixtures/cluster.py); a group-version the
target does not serve is skipped. Requests go through schemathesis's own transport (requests),
with the kubeconfig's CA, token or client certificate.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kubernetes import client

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the test extra")
requests = pytest.importorskip("requests", reason="schemathesis sends with requests")

from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi import checks as openapi_checks  # noqa: E402

if TYPE_CHECKING:  # imported by pytest as a plugin, before this module (see below)
    from tests.reliability.security_fixtures import Figures

pytest_plugins = ["tests.reliability.security_fixtures"]  # the bad_input_figures fixture

EXAMPLES: Final = 8  # per operation
DEADLINE: Final = 15.0  # seconds for any answer
SEEDED: Final = ("seed-a", "seed-b")  # objects each test keeps in place
FRESH: Final = ("new-a", "new-b")  # names steered creates use
CHECKS: Final = (
    not_a_server_error,
    openapi_checks.response_schema_conformance,
    openapi_checks.content_type_conformance,
)
STREAMING: Final = re.compile(r"/(exec|attach|portforward|proxy|log)(/|$)")


def scaled(examples: int) -> int:
    """``examples`` times ``$KUBETRAIN_FUZZ_SCALE`` (default 1): a longer hunt on demand."""
    return max(1, round(examples * float(os.environ.get("KUBETRAIN_FUZZ_SCALE", "1"))))


@dataclasses.dataclass(frozen=True)
class Kind:
    group_version: str  # the /openapi/v3 index key: "api/v1", "apis/kubeflow.org/v1"
    plural: str
    kind: str
    spec: dict[str, Any]  # a valid object's fields besides apiVersion, kind and metadata

    @property
    def api_version(self) -> str:
        return self.group_version.removeprefix("apis/").removeprefix("api/")


def _job(plural: str, kind: str, rtype: str, container: str, **spec: Any) -> Kind:
    """A Training Operator kind whose valid object has one replica of ``rtype``."""
    field = f"{kind.removesuffix('Job').lower()}ReplicaSpecs".replace("xgboost", "xgb")
    template = {"spec": {"containers": [{"name": container, "image": "example/none:1"}]}}
    spec[field] = {rtype: {"replicas": 1, "template": template}}
    return Kind("apis/kubeflow.org/v1", plural, kind, {"spec": spec})


KINDS: Final = (
    Kind("api/v1", "configmaps", "ConfigMap", {"data": {"key": "value"}}),
    Kind("api/v1", "services", "Service", {"spec": {"ports": [{"port": 80}]}}),
    Kind("api/v1", "pods", "Pod", {"spec": {"containers": [{"name": "c", "image": "x/y:1"}]}}),
    _job("pytorchjobs", "PyTorchJob", "Master", "pytorch"),
    _job("tfjobs", "TFJob", "Worker", "tensorflow"),
    _job("mpijobs", "MPIJob", "Launcher", "mpi"),
    _job("xgboostjobs", "XGBoostJob", "Master", "xgboost"),
    _job("paddlejobs", "PaddleJob", "Master", "paddle"),
    _job("jaxjobs", "JAXJob", "Worker", "jax"),
    _job("mxjobs", "MXJob", "Worker", "mxnet", jobMode="MXTrain"),
)


@dataclasses.dataclass(frozen=True)
class Target:
    """How schemathesis reaches the API server: its URL, and a session with its credentials."""

    url: str
    session: requests.Session
    verify: str | bool

    def send(self, case: Any) -> Any:
        return case.call(
            base_url=self.url, session=self.session, verify=self.verify, timeout=DEADLINE
        )


@pytest.fixture(scope="module")
def target(api_client: client.ApiClient) -> Iterator[Target]:
    config = api_client.configuration
    session = requests.Session()
    session.trust_env = False  # REQUESTS_CA_BUNDLE would replace the kubeconfig's CA
    session.headers.update({"Accept": "application/json"})
    token = str(config.auth_settings().get("BearerToken", {}).get("value") or "")
    if token:
        session.headers["Authorization"] = token
    if config.cert_file and config.key_file:
        session.cert = (config.cert_file, config.key_file)
    verify: str | bool = config.ssl_ca_cert or bool(config.verify_ssl)
    try:
        yield Target(config.host.rstrip("/"), session, verify)
    finally:
        session.close()


@pytest.fixture(scope="module")
def index(target: Target) -> dict[str, Any]:
    answer = target.session.get(f"{target.url}/openapi/v3", verify=target.verify, timeout=DEADLINE)
    assert answer.status_code == 200, answer.text[:500]
    return answer.json()["paths"]


@pytest.fixture(scope="module")
def counted(bad_input_figures: Figures) -> Figures:
    return bad_input_figures


def loaded(target: Target, index: dict[str, Any], kind: Kind) -> Any:
    """The group-version's document, without ``watch``, narrowed to ``kind``'s namespaced
    operations that answer and end."""
    entry = index.get(kind.group_version)
    if entry is None:
        pytest.skip(f"the target serves no OpenAPI document for {kind.group_version}")
    answer = target.session.get(
        target.url + entry["serverRelativeURL"], verify=target.verify, timeout=DEADLINE
    )
    assert answer.status_code == 200, answer.text[:500]
    document = answer.json()
    for path in list(document["paths"]):
        if STREAMING.search(path):
            del document["paths"][path]
            continue
        for operation in document["paths"][path].values():
            if isinstance(operation, dict) and "parameters" in operation:
                operation["parameters"] = [
                    p for p in operation["parameters"] if p.get("name") != "watch"
                ]
    prefix = f"/{kind.group_version}/namespaces/{{namespace}}/{kind.plural}"
    pattern = "^" + re.escape(prefix) + r"(/\{name\}(/(status|scale))?)?$"
    return schemathesis.openapi.from_dict(document).include(path_regex=pattern)


def seed(target: Target, kind: Kind, namespace: str) -> None:
    """Make sure the :data:`SEEDED` objects exist (an earlier operation may have deleted
    them, or changed them: either is fine)."""
    base = f"{target.url}/{kind.group_version}/namespaces/{namespace}/{kind.plural}"
    for name in SEEDED:
        body = {
            "apiVersion": kind.api_version,
            "kind": kind.kind,
            "metadata": {"name": name, "namespace": namespace},
            **copy.deepcopy(kind.spec),
        }
        answer = target.session.post(base, json=body, verify=target.verify, timeout=DEADLINE)
        assert answer.status_code in (201, 409), (kind.kind, answer.status_code, answer.text[:500])


def steer(case: Any, data: st.DataObject, kind: Kind, namespace: str) -> None:
    """Half the time: an existing object's name (a new one for a create), no query
    parameters, and a body with just that object's metadata, sometimes a valid object's
    fields too (see the module docstring)."""
    if not data.draw(st.booleans(), label="steer"):
        return
    creates = case.method.upper() == "POST"
    name = data.draw(st.sampled_from(FRESH if creates else SEEDED), label="name")
    if "name" in (case.path_parameters or {}):
        case.path_parameters["name"] = name
    case.query = {}
    body = case.body
    if isinstance(body, dict) and case.method.upper() in ("POST", "PUT"):
        body["metadata"] = {"name": name, "namespace": namespace}
        body["apiVersion"] = kind.api_version
        body["kind"] = kind.kind if not case.path.endswith("/scale") else "Scale"
        if not case.path.endswith("/scale") and data.draw(st.booleans(), label="valid"):
            body.update(copy.deepcopy(kind.spec))  # the rest of the body stays as generated


def explained(answer: Any) -> str | None:
    """What is wrong with an error answer, or None: a 4xx must be a Status that says why."""
    if answer.status_code < 400 or "json" not in answer.headers.get("Content-Type", ""):
        return None
    try:
        status = answer.json()
    except ValueError:
        return "the body is not JSON"
    if not isinstance(status, dict) or status.get("kind") != "Status":
        return "the body is not a Status"
    if status.get("code") != answer.status_code:
        return f"Status code {status.get('code')!r} is not the HTTP status"
    if not status.get("message"):
        return "the Status has no message"
    return None


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{k.group_version}/{k.plural}")
def test_generated_requests_get_no_5xx_and_answers_match_the_schema(
    kind: Kind, target: Target, index: dict[str, Any], namespace: str, counted: Figures
) -> None:
    schema = loaded(target, index, kind)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert operations, f"the document lists no operations for {kind.plural}"
    findings: list[str] = []
    sent = 0
    for operation in operations:
        seed(target, kind, namespace)
        fixed = {"namespace": namespace}
        strategy = st.one_of(
            operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed),
            operation.as_strategy(GenerationMode.NEGATIVE, path_parameters=fixed),
        )

        @settings(
            max_examples=scaled(EXAMPLES),
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy, data=st.data())
        def run(case: Any, data: st.DataObject) -> None:
            nonlocal sent
            steer(case, data, kind, namespace)
            answer = target.send(case)
            sent += 1
            where = f"{case.method.upper()} {case.formatted_path} -> {answer.status_code}"
            problem = explained(answer)
            if problem is not None:
                findings.append(f"{where}: {problem}: {answer.text[:300]}")
            try:
                case.validate_response(answer, checks=list(CHECKS))
            except schemathesis.errors.FailureGroup as group:
                for failure in group.exceptions:
                    findings.append(f"{where}: {failure.title}: {failure.message[:600]}")
                findings.append(f"  to repeat: {case.as_curl_command()}")
            except AssertionError as failure:  # one failure alone
                findings.append(f"{where}: {str(failure)[:600]}")
                findings.append(f"  to repeat: {case.as_curl_command()}")

        run()
    counted.add("inputs: schemathesis requests", sent)
    assert sent >= len(operations)
    assert not findings, "\n".join(findings[:10])
