"""The manifest corpus through ``kubectl apply`` on a real kube-apiserver with kubetrain's
admission webhooks registered (``kubetrain operator --webhook-url``), beside the local API
server, each manifest applied to both the same way:

- an invalid manifest (``corpus/invalid``, and a seed with ``# expect:`` lines) is refused.
  Where the webhook judged it, kubectl prints each ``# expect:`` message of ``kubetrain
  validate``. Where kube-apiserver refused it before calling the webhook (its own checks of
  metadata, or the CRD's schema), or kubectl refused to send it at all, the local API server
  must refuse it with the same words, as it mimics both;
- a valid manifest (``corpus/valid``, and a seed without ``# expect:`` lines) is stored by both
  servers with the same defaults (every field but the server-owned metadata). It is applied
  twice, since a TrainJob may come before the runtime it names in its file.

The control plane is this module's own (kube-apiserver and etcd only: no controller acts on
what is stored), since the corpus writes cluster-scoped runtimes and the webhook registers
cluster-scoped configurations that must not leak into other tests of the session.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from kubetrain import envtest
from tests import localapiserver, realcluster
from tests.test_corpus import corpus, expectations
from tests.webhookoperator import WebhookOperator

KUBECTL_TIMEOUT = 60.0
SERVER_OWNED = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")
NAMESPACE_LINE = re.compile(r"(?m)^(  namespace: ).*$")
WEBHOOK_DENIED = re.compile(r'admission webhook "[^"]+" denied the request: ')
INVALID = '" is invalid: '
CRD_RULE = re.compile(
    r'(?P<field>\S+): Invalid value: "(object|array|string|integer|number|boolean|)": '
    r"(?P<message>.+)"
)
NO_OPENAPI_V2 = "the server was unable to respond with a content type that the client supports"


def invalid_manifests() -> list[Path]:
    return corpus("invalid") + [p for p in corpus("seeds") if expectations(p)]


def valid_manifests() -> list[Path]:
    return corpus("valid") + [p for p in corpus("seeds") if not expectations(p)]


@dataclass
class Servers:
    real: str  # kubeconfig of kube-apiserver, with the webhooks
    local: str  # kubeconfig of the local API server
    # each server's client, for what is only setting the scene (a kubectl run per namespace
    # would be most of the module's time)
    clients: dict[str, client.ApiClient] = field(default_factory=dict)

    def core(self, server: str) -> client.CoreV1Api:
        if server not in self.clients:
            self.clients[server] = config.new_client_from_config(config_file=getattr(self, server))
        return client.CoreV1Api(self.clients[server])

    def kubectl(
        self, server: str, *args: str, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        binary = shutil.which("kubectl")
        if binary is None:
            pytest.skip("kubectl is not installed (it is on CI and on our machines)")
        return subprocess.run(
            [binary, "--kubeconfig", getattr(self, server), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT,
            env=localapiserver.environment(Path(getattr(self, server)).parent),
        )

    def namespace(self) -> str:
        """A fresh namespace of the same name on both servers."""
        name = "corpus-" + secrets.token_hex(4)
        for server in ("real", "local"):
            self.core(server).create_namespace({"metadata": {"name": name}})
        return name


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    if not realcluster.available():
        pytest.skip(f"no real Kubernetes control plane: {'; '.join(realcluster.missing)}")
    plane = envtest.ControlPlane(
        envtest.find_assets(),
        tmp_path_factory.mktemp("corpus-kube-apiserver"),
        controllers=False,
        scheduler=False,
        crds=(realcluster.CRDS,),
    )
    try:
        plane.start()
    except RuntimeError as exc:
        pytest.fail(f"the real control plane did not start: {exc}")
    webhook = WebhookOperator(plane.kubeconfig, tmp_path_factory.mktemp("corpus-webhook"))
    try:
        webhook.start()
        with localapiserver.running(tmp_path_factory.mktemp("corpus-local")) as local:
            servers = Servers(real=plane.kubeconfig, local=local)
            try:
                yield servers
            finally:
                for api in servers.clients.values():
                    api.close()
    finally:
        webhook.stop()
        plane.stop()


def in_namespace(text: str, namespace: str) -> str:
    """The manifest with every object's ``metadata.namespace`` set to ``namespace``."""
    return NAMESPACE_LINE.sub(rf"\g<1>{namespace}", text)


def apply(servers: Servers, server: str, text: str, namespace: str) -> subprocess.CompletedProcess:
    return servers.kubectl(server, "apply", "-n", namespace, "-f", "-", input=text)


def bodies(path: Path) -> list[str]:
    """Each ``# expect:`` line without its ``<Kind>/<name>: `` subject: what kubectl prints
    after ``The <Kind> "<name>" is invalid: ``."""
    return [line.split(": ", 1)[1] for line in expectations(path) if ": " in line]


def said(stderr: str) -> list[str]:
    """kubectl's refusal, one item per line and per cause: ``The X "n" is invalid`` apart
    from its causes, and without the words kube-apiserver puts before a webhook's message
    (``admission webhook "<name>" denied the request: ``), which the local server, judging
    itself, has no reason to say."""
    found = []
    for line in WEBHOOK_DENIED.sub("", stderr).splitlines():
        header, sep, cause = line.partition(INVALID)
        if sep and header.startswith("The "):
            found.append(header + sep.rstrip())
            line = cause
        line = line.removeprefix("* ").strip()
        if line:
            found.append(line)
    return found


def by_crd_rule(cause: str, others: list[str]) -> bool:
    """Whether ``cause`` is a CRD's own validation rule (x-kubernetes-validations, which
    kube-apiserver checks before calling any webhook and reports with the value's type in
    place of the value) whose message one of ``others`` gives for the same value."""
    rule = CRD_RULE.fullmatch(cause)
    return rule is not None and any(o.endswith(": " + rule["message"]) for o in others)


@pytest.mark.parametrize("path", invalid_manifests(), ids=lambda p: p.name)
def test_an_invalid_manifest_is_refused_on_a_cluster_as_kubetrain_validate_refuses_it(
    path: Path, servers: Servers
) -> None:
    """Judged by the webhook, kubectl prints kubetrain validate's messages. Refused before
    (by kube-apiserver's own checks, or by kubectl), everything kubectl says is what it says
    for the local API server too, except that a CRD's validation rule, which only
    kube-apiserver evaluates, shows the value's type where kubetrain's admission, which
    checks the same rule locally, shows the value."""
    namespace = servers.namespace()
    text = in_namespace(path.read_text(encoding="utf-8"), namespace)
    real = apply(servers, "real", text, namespace)
    assert real.returncode != 0, f"kube-apiserver stored it:\n{real.stdout}"
    expected = bodies(path)
    if expected and all(body in real.stderr for body in expected):
        return  # the webhook judged it, in kubetrain validate's words
    local = apply(servers, "local", text, namespace)
    if NO_OPENAPI_V2 in local.stderr:
        # kubectl validates a kind the server does not serve (or a List) against the
        # OpenAPI v2 document in protobuf, which the local server does not serve
        local = servers.kubectl(
            "local", "apply", "--validate=false", "-n", namespace, "-f", "-", input=text
        )
    assert local.returncode != 0, f"the local API server stored it:\n{local.stdout}"
    real_said, local_said = said(real.stderr), said(local.stderr)
    unexplained = [
        line
        for line in real_said
        if line not in local_said and not by_crd_rule(line, local_said + expected)
    ]
    assert real_said
    assert unexplained == [], (
        f"refused before the webhook, but not as the local server refuses it:\n"
        f"kube-apiserver: {real.stderr}\nlocal:          {local.stderr}\n"
        f"kubetrain validate: {expected}"
    )


def documents(path: Path, namespace: str) -> list[dict[str, Any]]:
    """The manifest's objects (a List's items), runtimes first: a TrainJob may come before
    the runtime it names in its file, and kubectl applies in the file's order."""
    found: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if isinstance(doc, dict):
            found += doc["items"] if doc.get("kind") == "List" else [doc]
    for obj in found:
        if obj["kind"] != "ClusterTrainingRuntime":
            obj["metadata"]["namespace"] = namespace
    return sorted(found, key=lambda o: not o["kind"].endswith("TrainingRuntime"))


def written(servers: Servers, server: str, obj: dict[str, Any]) -> subprocess.CompletedProcess:
    """Apply ``obj`` (create it, when its name is generated) and print what was stored."""
    verb = "create" if "generateName" in obj["metadata"] else "apply"
    return servers.kubectl(server, verb, "-o", "json", "-f", "-", input=json.dumps(obj))


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object without what each server sets its own way: server-owned metadata, a
    generated name's suffix, and the time each server stamped on a TrainJob's patches."""
    for owned in SERVER_OWNED:
        obj["metadata"].pop(owned, None)
    if "generateName" in obj["metadata"]:
        obj["metadata"]["name"] = obj["metadata"]["generateName"] + "<generated>"
    for patch in (obj.get("spec") or {}).get("runtimePatches") or []:
        if "time" in patch:
            patch["time"] = "<stamped>"
    return obj


@pytest.mark.parametrize("path", valid_manifests(), ids=lambda p: p.name)
def test_a_valid_manifest_is_stored_with_the_local_servers_defaults(
    path: Path, servers: Servers
) -> None:
    """A TrainJob whose runtime is not in its file is judged on a server against the runtime
    of that name stored there, if any (``kubetrain validate`` leaves those checks out): then
    both servers must refuse it alike."""
    namespace = servers.namespace()
    for obj in documents(path, namespace):
        real, local = (written(servers, server, obj) for server in ("real", "local"))
        what = f"{obj['kind']} {obj['metadata'].get('name') or obj['metadata']['generateName']}"
        if real.returncode != 0 or local.returncode != 0:
            assert (real.returncode, real.stderr) == (local.returncode, local.stderr), what
            assert obj["kind"] == "TrainJob", f"{what}: {real.stderr}"
            continue
        assert comparable(json.loads(real.stdout)) == comparable(json.loads(local.stdout)), what
