"""The real kubectl against the API server: the commands people type every day."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.fixtures.cluster import Kubectl
from tests.fixtures.waits import wait_for

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    app: demo
data:
  mode: {mode}
"""

PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: example/trainer:1
    Worker:
      replicas: {workers}
      template:
        spec:
          containers:
            - name: pytorch
              image: example/trainer:1
"""


def test_get_raw_healthz(kubectl: Kubectl) -> None:
    assert kubectl("get", "--raw", "/healthz").stdout == "ok"
    assert kubectl("get", "--raw", "/readyz").stdout == "ok"


def test_version_reports_the_server(kubectl: Kubectl) -> None:
    out = json.loads(kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["major"] == "1"
    assert out["serverVersion"]["gitVersion"].startswith("v1.")


def test_api_resources_lists_core_kinds_and_kubetrain_kinds(kubectl: Kubectl) -> None:
    out = kubectl("api-resources", "-o", "name").stdout.split()
    for name in (
        "pods",
        "configmaps",
        "namespaces",
        "services",
        "events",
        "leases.coordination.k8s.io",
        "customresourcedefinitions.apiextensions.k8s.io",
        "pytorchjobs.kubeflow.org",
        "trainjobs.trainer.kubeflow.org",
    ):
        assert name in out, name
    wide = kubectl("api-resources", "--api-group=kubeflow.org").stdout
    assert "PyTorchJob" in wide


def test_apply_creates_then_updates(kubectl: Kubectl, namespace: str) -> None:
    out = kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="a"))
    assert out.stdout.strip() == "configmap/settings created"
    out = kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="b"))
    assert out.stdout.strip() == "configmap/settings configured"
    out = kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="b"))
    assert out.stdout.strip() == "configmap/settings unchanged"
    shown = yaml.safe_load(kubectl("get", "-n", namespace, "cm", "settings", "-o", "yaml").stdout)
    assert shown["data"] == {"mode": "b"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in shown["metadata"]["annotations"]


def test_server_side_apply(kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "--server-side", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="x"))
    shown = json.loads(
        kubectl(
            "get", "-n", namespace, "cm", "settings", "-o", "json", "--show-managed-fields"
        ).stdout
    )
    managers = {(m["manager"], m["operation"]) for m in shown["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers
    assert shown["data"] == {"mode": "x"}


def test_get_output_formats(kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="a"))
    names = kubectl("get", "-n", namespace, "cm", "-o", "name").stdout.split()
    assert [n for n in names if n != "configmap/kube-root-ca.crt"] == ["configmap/settings"]
    doc = json.loads(kubectl("get", "-n", namespace, "cm", "settings", "-o", "json").stdout)
    assert doc["kind"] == "ConfigMap"
    assert doc["metadata"]["name"] == "settings"
    listed = yaml.safe_load(
        kubectl("get", "-n", namespace, "cm", "-l", "app=demo", "-o", "yaml").stdout
    )
    assert listed["kind"] == "List"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["settings"]
    assert listed["items"][0]["kind"] == "ConfigMap"
    table = kubectl("get", "-n", namespace, "cm", "settings").stdout.splitlines()
    assert table[0].split() == ["NAME", "DATA", "AGE"]
    assert table[1].split()[:2] == ["settings", "1"]
    wide = kubectl("get", "-n", namespace, "cm", "settings", "-o", "wide").stdout.splitlines()
    assert wide[1].split()[0] == "settings"


def test_get_pods_wide_shows_the_wide_columns(kubectl: Kubectl, namespace: str) -> None:
    kubectl("run", "-n", namespace, "p", "--image=busybox", "--restart=Never", "--", "true")
    header = kubectl("get", "-n", namespace, "pods", "-o", "wide").stdout.splitlines()[0]
    assert header.split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "NODE" in header
    assert "IP" in header


def test_selectors(kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="a"))
    other = CONFIGMAP.format(mode="a").replace("settings", "other").replace("app: demo", "app: x")
    kubectl("create", "-n", namespace, "-f", "-", input=other)
    assert kubectl(
        "get", "-n", namespace, "cm", "--selector", "app=demo", "-o", "name"
    ).stdout.split() == ["configmap/settings"]
    assert kubectl(
        "get", "-n", namespace, "cm", "-l", "app in (x)", "-o", "name"
    ).stdout.split() == ["configmap/other"]
    assert kubectl(
        "get", "-n", namespace, "cm", "--field-selector", "metadata.name=other", "-o", "name"
    ).stdout.split() == ["configmap/other"]
    bad = kubectl("get", "-n", namespace, "cm", "--field-selector", "data.mode=a", check=False)
    assert bad.returncode != 0
    assert (
        '"data.mode" is not a known field selector: only "metadata.name", "metadata.namespace"'
    ) in bad.stderr


def test_label_annotate_and_describe(kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="a"))
    kubectl("label", "-n", namespace, "cm", "settings", "tier=backend")
    kubectl("annotate", "-n", namespace, "cm", "settings", "note=hello")
    doc = json.loads(kubectl("get", "-n", namespace, "cm", "settings", "-o", "json").stdout)
    assert doc["metadata"]["labels"]["tier"] == "backend"
    assert doc["metadata"]["annotations"]["note"] == "hello"
    described = kubectl("describe", "-n", namespace, "cm", "settings").stdout
    assert "Name:" in described
    assert "settings" in described
    assert "tier=backend" in described
    kubectl("label", "-n", namespace, "cm", "settings", "tier-")
    doc = json.loads(kubectl("get", "-n", namespace, "cm", "settings", "-o", "json").stdout)
    assert "tier" not in doc["metadata"]["labels"]


def test_patch_merge_json_and_strategic(kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="a"))
    kubectl(
        "patch", "-n", namespace, "cm", "settings", "--type", "merge", "-p", '{"data":{"m":"1"}}'
    )
    kubectl(
        "patch",
        "-n",
        namespace,
        "cm",
        "settings",
        "--type",
        "json",
        "-p",
        '[{"op":"add","path":"/data/j","value":"2"}]',
    )
    kubectl(
        "patch",
        "-n",
        namespace,
        "cm",
        "settings",
        "--type",
        "strategic",
        "-p",
        '{"data":{"s":"3"}}',
    )
    doc = json.loads(kubectl("get", "-n", namespace, "cm", "settings", "-o", "json").stdout)
    assert doc["data"] == {"mode": "a", "m": "1", "j": "2", "s": "3"}
    failed = kubectl(
        "patch",
        "-n",
        namespace,
        "cm",
        "settings",
        "--type",
        "json",
        "-p",
        '[{"op":"test","path":"/data/mode","value":"zzz"}]',
        check=False,
    )
    assert failed.returncode != 0


def test_create_with_server_dry_run_stores_nothing(kubectl: Kubectl, namespace: str) -> None:
    out = kubectl(
        "create",
        "-n",
        namespace,
        "--dry-run=server",
        "-o",
        "json",
        "-f",
        "-",
        input=CONFIGMAP.format(mode="a"),
    )
    assert json.loads(out.stdout)["metadata"]["name"] == "settings"
    missing = kubectl("get", "-n", namespace, "cm", "settings", check=False)
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr


def test_delete(kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="a"))
    out = kubectl("delete", "-n", namespace, "cm", "settings")
    assert out.stdout.strip() == 'configmap "settings" deleted'
    missing = kubectl("get", "-n", namespace, "cm", "settings", check=False)
    assert 'configmaps "settings" not found' in missing.stderr


def test_delete_cascades_to_owned_objects(
    kubectl: Kubectl, core: client.CoreV1Api, namespace: str
) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
    }
    for name in ("child-1", "child-2"):
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": name, "ownerReferences": [reference]}}
        )
    kubectl("delete", "-n", namespace, "cm", "owner")

    def children_gone() -> bool:
        names = [i.metadata.name for i in core.list_namespaced_config_map(namespace).items]
        return not any(n.startswith("child-") for n in names)

    wait_for(children_gone)


def test_delete_with_orphan_keeps_the_dependents(
    kubectl: Kubectl, core: client.CoreV1Api, namespace: str
) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
    }
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "child", "ownerReferences": [reference]}}
    )
    kubectl("delete", "-n", namespace, "cm", "owner", "--cascade=orphan")

    def released() -> bool:
        try:
            core.read_namespaced_config_map("owner", namespace)
            return False
        except ApiException as exc:
            if exc.status != 404:
                raise
        child = core.read_namespaced_config_map("child", namespace)
        return not child.metadata.owner_references

    wait_for(released)


def test_delete_in_the_foreground_waits_for_blocking_dependents(
    kubectl: Kubectl, core: client.CoreV1Api, namespace: str
) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": True,
    }
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "child", "ownerReferences": [reference]}}
    )
    kubectl("delete", "-n", namespace, "cm", "owner", "--cascade=foreground")

    def both_gone() -> bool:
        names = [i.metadata.name for i in core.list_namespaced_config_map(namespace).items]
        return "owner" not in names and "child" not in names

    wait_for(both_gone)


def test_get_watch_prints_changes(
    kubectl: Kubectl, core: client.CoreV1Api, namespace: str, kubeconfig: str
) -> None:
    # kubectl lists, prints what is there, then watches from the list's version: once the
    # marker is printed, both writes after it must come through the watch.
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "marker"}})
    command = ["--kubeconfig", kubeconfig, "get", "-n", namespace, "cm", "-w", "-o", "name"]
    process = subprocess.Popen(
        [shutil.which("kubectl") or "kubectl", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.strip())

    reader = threading.Thread(target=read, name="kubectl-get-w")
    reader.start()
    printed: list[str] = []

    def next_line() -> str:
        try:
            printed.append(lines.get(timeout=30))
        except queue.Empty:
            pytest.fail(f"kubectl get -w printed nothing more after {printed}")
        return printed[-1]

    try:
        while next_line() != "configmap/marker":
            pass
        kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="a"))
        kubectl("apply", "-n", namespace, "-f", "-", input=CONFIGMAP.format(mode="b"))
        while printed.count("configmap/settings") < 2:
            next_line()
    finally:
        process.kill()
        process.communicate(timeout=30)
        reader.join(timeout=30)
    assert printed.count("configmap/settings") == 2, "one line for the create, one for the change"


def test_wait_for_a_crd_to_be_established_and_use_it(kubectl: Kubectl, namespace: str) -> None:
    suffix = namespace.removeprefix("kt-")
    group = f"kt{suffix}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "replicas": {"type": "integer", "default": 1},
                                        "color": {"type": "string"},
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"replicas": {"type": "integer"}},
                                },
                            },
                        }
                    },
                }
            ],
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(crd))
    try:
        kubectl("wait", "--for=condition=established", "--timeout=30s", f"crd/widgets.{group}")
        widget = {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"color": "red", "extra": 1},
        }
        created = kubectl(
            "apply", "-n", namespace, "-f", "-", input=json.dumps(widget), check=False
        )
        assert created.returncode != 0, "strict field validation refuses spec.extra"
        assert 'unknown field "spec.extra"' in created.stderr
        del widget["spec"]["extra"]
        kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(widget))
        doc = json.loads(
            kubectl("get", "-n", namespace, f"widgets.{group}", "w1", "-o", "json").stdout
        )
        assert doc["spec"] == {"color": "red", "replicas": 1}, "the schema default applies"
        table = kubectl("get", "-n", namespace, f"widgets.{group}").stdout.splitlines()
        assert table[0].split() == ["NAME", "REPLICAS"]
        assert table[1].split() == ["w1", "1"]
        kubectl("scale", "-n", namespace, f"widgets.{group}/w1", "--replicas=4")
        doc = json.loads(
            kubectl("get", "-n", namespace, f"widgets.{group}", "w1", "-o", "json").stdout
        )
        assert doc["spec"]["replicas"] == 4
        assert doc["metadata"]["generation"] == 2
    finally:
        kubectl("delete", "crd", f"widgets.{group}", "--wait=false", check=False)


def test_pytorchjob_apply_and_scale(kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=PYTORCHJOB.format(name="job", workers=2))
    kubectl("scale", "-n", namespace, "pytorchjob/job", "--replicas=3")
    doc = json.loads(kubectl("get", "-n", namespace, "pytorchjob", "job", "-o", "json").stdout)
    assert doc["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
    header = kubectl("get", "-n", namespace, "pytorchjobs").stdout.splitlines()[0]
    assert header.split() == ["NAME", "STATE", "AGE"]
    # the CRD's scale subresource reads the Worker count: kube's CRD validation refuses a
    # negative one there, before any admission
    bad = kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input=PYTORCHJOB.format(name="bad", workers=-1),
        check=False,
    )
    assert bad.returncode != 0
    assert (
        'The PyTorchJob "bad" is invalid: .spec.pytorchReplicaSpecs.Worker.replicas: '
        "Invalid value: -1: should be a non-negative integer"
    ) in bad.stderr


def test_pytorchjob_admission_speaks_upstream(kubectl: Kubectl, namespace: str) -> None:
    """kubectl prints the same lines for the local API server's own admission and for
    kube-apiserver passing on the refusal of kubetrain's validating webhook."""
    bad = kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input=PYTORCHJOB.format(name="bad", workers=0),
        check=False,
    )
    assert bad.returncode != 0
    assert (
        'The PyTorchJob "bad" is invalid: '
        "spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1"
    ) in bad.stderr


def test_create_generators_send_protobuf_and_are_understood(
    kubectl: Kubectl, namespace: str
) -> None:
    """kubectl's typed clients post protobuf for built-in kinds."""
    ns = ("-n", namespace)
    kubectl("create", *ns, "configmap", "gen", "--from-literal=a=b", "--from-literal=c=d")
    kubectl("create", *ns, "secret", "generic", "gen", "--from-literal=p=q")
    kubectl("create", *ns, "serviceaccount", "robot")
    kubectl("create", *ns, "quota", "gen", "--hard=pods=3,cpu=2")
    kubectl("create", *ns, "service", "clusterip", "web", "--tcp=80:8080")
    get = lambda *what: json.loads(kubectl("get", *ns, *what, "-o", "json").stdout)  # noqa: E731
    assert get("cm", "gen")["data"] == {"a": "b", "c": "d"}
    assert get("secret", "gen")["data"] == {"p": "cQ=="}
    assert get("sa", "robot")["metadata"]["name"] == "robot"
    assert get("quota", "gen")["spec"]["hard"] == {"cpu": "2", "pods": "3"}
    port = get("svc", "web")["spec"]["ports"][0]
    assert (port["port"], port["targetPort"], port["protocol"]) == (80, 8080, "TCP")
    preview = kubectl(
        "create", *ns, "configmap", "dry", "--from-literal=a=b", "--dry-run=server", "-o", "json"
    )
    assert json.loads(preview.stdout)["data"] == {"a": "b"}
    assert kubectl("get", *ns, "cm", "dry", check=False).returncode != 0


def test_unknown_fields_of_built_in_kinds_are_refused(kubectl: Kubectl, namespace: str) -> None:
    bad = CONFIGMAP.format(mode="a").replace("\ndata:", "\ndat:")
    out = kubectl("apply", "-n", namespace, "-f", "-", input=bad, check=False)
    assert out.returncode != 0
    assert 'strict decoding error: unknown field "dat"' in out.stderr
    loose = kubectl("apply", "--validate=false", "-n", namespace, "-f", "-", input=bad)
    assert loose.returncode == 0
    doc = json.loads(kubectl("get", "-n", namespace, "cm", "settings", "-o", "json").stdout)
    assert "dat" not in doc
