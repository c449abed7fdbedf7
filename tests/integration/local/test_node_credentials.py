"""In-cluster credentials in local pods: the ServiceAccount token volume the API server's
admission adds is filled by the node (a TokenRequest bound to the pod, the cluster CA, the
namespace), the pod's environment names the API server, and so ``kubectl`` run inside a pod
works with no kubeconfig, as on a cluster. Also the ``kubectl-delivery`` image the MPI
launcher's init container names, which runs with no command on this node."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes import client

from tests.integration.local.conftest import (
    Node,
    container,
    make_pod,
    phase_is,
    python,
    wait_pod,
)

SECRETS_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

REPORT = f"""
import json, os
root = {SECRETS_DIR!r}
files = {{}}
if os.path.isdir(root):
    for name in sorted(os.listdir(root)):
        if not name.startswith('..'):
            files[name] = open(os.path.join(root, name)).read()
print(json.dumps({{
    'files': files,
    'env': {{k: v for k, v in os.environ.items() if k.startswith('KUBERNETES_')}},
}}))
"""


def kubectl_on_host() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl is not installed (it is on CI and on our machines)")
    return found


def log_of(core: client.CoreV1Api, namespace: str, pod: str) -> str:
    return str(core.read_namespaced_pod_log(pod, namespace))


def server_of(kubeconfig: str) -> tuple[str, str]:
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    url = urlsplit(doc["clusters"][0]["cluster"]["server"])
    return str(url.hostname), str(url.port)


def test_a_pod_gets_its_token_the_ca_its_namespace_and_the_api_address(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    node: Node,
    namespace: str,
    kubeconfig: str,
) -> None:
    node.needs_isolation()
    make_pod(core, namespace, "creds", node, container("main", python(REPORT)))
    pod = wait_pod(api_client, namespace, "creds", phase_is("Succeeded", "Failed"))
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    seen: dict[str, Any] = json.loads(log_of(core, namespace, "creds"))

    files = seen["files"]
    assert sorted(files) == ["ca.crt", "namespace", "token"]
    assert files["namespace"] == namespace
    root_ca = core.read_namespaced_config_map("kube-root-ca.crt", namespace).data["ca.crt"]
    assert files["ca.crt"] == root_ca
    # the token authenticates: it reads this namespace's pods
    probe = client.Configuration()
    probe.host = api_client.configuration.host
    probe.ssl_ca_cert = api_client.configuration.ssl_ca_cert
    probe.api_key = {"authorization": f"Bearer {files['token']}"}
    with client.ApiClient(probe) as as_pod:
        names = [
            p.metadata.name for p in client.CoreV1Api(as_pod).list_namespaced_pod(namespace).items
        ]
    assert "creds" in names

    host, port = server_of(kubeconfig)
    env = seen["env"]
    assert env["KUBERNETES_SERVICE_HOST"] == host
    assert env["KUBERNETES_SERVICE_PORT"] == env["KUBERNETES_SERVICE_PORT_HTTPS"] == port
    assert env["KUBERNETES_PORT"] == f"tcp://{host}:{port}"
    assert env[f"KUBERNETES_PORT_{port}_TCP_ADDR"] == host


def test_kubectl_in_a_pod_works_with_in_cluster_configuration(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    node.needs_isolation()
    binary = kubectl_on_host()
    command = [binary, "get", "pods", "-o", "name"]  # no kubeconfig, no --namespace
    make_pod(core, namespace, "lister", node, container("main", command))
    pod = wait_pod(api_client, namespace, "lister", phase_is("Succeeded", "Failed"))
    log = log_of(core, namespace, "lister")
    assert pod["status"]["phase"] == "Succeeded", log
    assert "pod/lister" in log.split()


def test_automount_false_leaves_a_pod_without_credentials(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    node.needs_isolation()
    make_pod(
        core,
        namespace,
        "bare",
        node,
        container("main", python(REPORT)),
        automountServiceAccountToken=False,
    )
    pod = wait_pod(api_client, namespace, "bare", phase_is("Succeeded", "Failed"))
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert not pod["spec"].get("volumes")
    seen = json.loads(log_of(core, namespace, "bare"))
    assert seen["files"] == {}
    assert "KUBERNETES_SERVICE_HOST" in seen["env"], "the API's address is there regardless"


def test_the_kubectl_delivery_image_copies_kubectl_into_its_volume(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    node.needs_isolation()
    kubectl_on_host()
    delivery = {
        "name": "kubectl-delivery",
        "image": "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest",  # no command
        "env": [{"name": "TARGET_DIR", "value": "/opt/kube"}],
        "volumeMounts": [{"name": "kube", "mountPath": "/opt/kube"}],
    }
    main = container(
        "main",
        ["/opt/kube/kubectl", "version", "--client", "-o", "json"],
        volumeMounts=[{"name": "kube", "mountPath": "/opt/kube"}],
    )
    make_pod(
        core,
        namespace,
        "delivered",
        node,
        main,
        initContainers=[delivery],
        volumes=[{"name": "kube", "emptyDir": {}}],
    )
    pod = wait_pod(api_client, namespace, "delivered", phase_is("Succeeded", "Failed"))
    log = log_of(core, namespace, "delivered")
    assert pod["status"]["phase"] == "Succeeded", (pod["status"], log)
    assert "clientVersion" in json.loads(log)
