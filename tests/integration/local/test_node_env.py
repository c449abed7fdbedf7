"""What a pod's process sees: its environment (values, ConfigMap and Secret references,
envFrom, the downward API, ``$(VAR)`` expansion), its command line, its volumes (ConfigMap,
Secret, downwardAPI, PersistentVolumeClaim, emptyDir) at their mount paths with their modes,
and the GPUs it was given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.integration.local.conftest import (
    Node,
    container,
    make_pod,
    phase_is,
    wait_for,
    wait_pod,
)

REPORT = """
import json, os, stat, sys
def walk(root):
    out = {}
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith('..')]
        for f in files:
            if f.startswith('..'):
                continue
            path = os.path.join(base, f)
            out[os.path.relpath(path, root)] = [
                open(path).read(), oct(stat.S_IMODE(os.stat(path).st_mode))]
    return out
open('/data/written', 'w').write('kept')
print(json.dumps({
    'argv': sys.argv[1:],
    'env': dict(os.environ),
    'config': walk('/etc/config'),
    'creds': walk('/etc/creds'),
    'podinfo': walk('/etc/podinfo'),
    'scratch': os.path.isdir('/scratch') and os.access('/scratch', os.W_OK),
    'hostname': os.uname().nodename,
}))
"""


def fields(*pairs: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": name, "valueFrom": source} for name, source in pairs]


def test_env_downward_api_and_volumes_as_the_process_sees_them(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    node.needs_isolation()
    core.create_namespaced_config_map(
        namespace,
        {"metadata": {"name": "settings"}, "data": {"MODE": "fast", "config.yaml": "lr: 0.1"}},
    )
    core.create_namespaced_secret(
        namespace, {"metadata": {"name": "creds"}, "stringData": {"TOKEN": "s3cret"}}
    )
    core.create_namespaced_persistent_volume_claim(
        namespace,
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    env = [
        {"name": "GREETING", "value": "hello $(POD_NAME)"},  # defined later: stays as written
        *fields(
            ("POD_NAME", {"fieldRef": {"fieldPath": "metadata.name"}}),
            ("POD_NAMESPACE", {"fieldRef": {"fieldPath": "metadata.namespace"}}),
            ("POD_UID", {"fieldRef": {"fieldPath": "metadata.uid"}}),
            ("APP", {"fieldRef": {"fieldPath": "metadata.labels['app']"}}),
            (
                "INDEX",
                {
                    "fieldRef": {
                        "fieldPath": "metadata.annotations['batch.kubernetes.io/"
                        "job-completion-index']"
                    }
                },
            ),
            ("POD_IP", {"fieldRef": {"fieldPath": "status.podIP"}}),
            ("NODE", {"fieldRef": {"fieldPath": "spec.nodeName"}}),
            ("ACCOUNT", {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}),
            ("MEMORY_MI", {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}),
            ("MODE", {"configMapKeyRef": {"name": "settings", "key": "MODE"}}),
            ("TOKEN", {"secretKeyRef": {"name": "creds", "key": "TOKEN"}}),
        ),
        {"name": "WELCOME", "value": "hello $(POD_NAME) in $$(NOT_EXPANDED)"},
    ]
    made = make_pod(
        core,
        namespace,
        "inspect",
        node,
        container(
            "main",
            ["python3", "-c", REPORT],
            args=["--mode=$(MODE)", "$(UNDEFINED)"],
            env=env,
            envFrom=[{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
            resources={"limits": {"memory": "200Mi", "nvidia.com/gpu": "1"}},
            volumeMounts=[
                {"name": "config", "mountPath": "/etc/config"},
                {"name": "creds", "mountPath": "/etc/creds", "readOnly": True},
                {"name": "podinfo", "mountPath": "/etc/podinfo"},
                {"name": "data", "mountPath": "/data"},
                {"name": "scratch", "mountPath": "/scratch"},
            ],
        ),
        volumes=[
            {
                "name": "config",
                "configMap": {
                    "name": "settings",
                    "items": [{"key": "config.yaml", "path": "app/app.yaml", "mode": 0o400}],
                },
            },
            {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o440}},
            {
                "name": "podinfo",
                "downwardAPI": {
                    "items": [
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                    ]
                },
            },
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "scratch", "emptyDir": {}},
        ],
        hostname="inspector",
    )
    core.patch_namespaced_pod(
        "inspect",
        namespace,
        {
            "metadata": {
                "labels": {"app": "train", "role": "worker"},
                "annotations": {"batch.kubernetes.io/job-completion-index": "2"},
            }
        },
    )
    pod = wait_pod(api_client, namespace, "inspect", phase_is("Succeeded", "Failed"))
    text = core.read_namespaced_pod_log("inspect", namespace)
    assert pod["status"]["phase"] == "Succeeded", text
    seen = json.loads(text)
    environ = seen["env"]
    assert seen["argv"] == ["--mode=fast", "$(UNDEFINED)"]
    expected = {
        "GREETING": "hello $(POD_NAME)",
        "WELCOME": "hello inspect in $(NOT_EXPANDED)",
        "POD_NAME": "inspect",
        "POD_NAMESPACE": namespace,
        "POD_UID": made["uid"],
        "POD_IP": "127.0.0.1",
        "NODE": node.name,
        "ACCOUNT": "default",
        "MEMORY_MI": "200",
        "MODE": "fast",
        "TOKEN": "s3cret",
        "CFG_MODE": "fast",
        "CFG_config.yaml": "lr: 0.1",
        "HOSTNAME": "inspector",
    }
    assert {k: environ.get(k) for k in expected} == expected
    # the labels and annotation were patched in after creation: whichever the agent saw first
    assert environ["APP"] in ("", "train")
    assert environ["INDEX"] in ("", "2")
    assert environ["CUDA_VISIBLE_DEVICES"] in ("0", "1")
    assert seen["hostname"] == "inspector"
    assert seen["config"] == {"app/app.yaml": ["lr: 0.1", "0o400"]}
    assert seen["creds"] == {"TOKEN": ["s3cret", "0o440"]}
    assert seen["podinfo"]["name"] == ["inspect", "0o644"]
    assert seen["scratch"] is True
    claim = core.read_namespaced_persistent_volume_claim("data", namespace)
    volume = core.read_persistent_volume(claim.spec.volume_name)
    assert (Path(volume.spec.host_path.path) / "written").read_text() == "kept"


def test_the_downward_api_reports_labels_and_completion_index_set_at_creation(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "indexed",
            "labels": {"job-name": "pi"},
            "annotations": {"batch.kubernetes.io/job-completion-index": "4"},
        },
        "spec": {
            "nodeName": node.name,
            "restartPolicy": "Never",
            "containers": [
                container(
                    "main",
                    ["python3", "-c", "import os; print(os.environ['INDEX'], os.environ['JOB'])"],
                    env=fields(
                        (
                            "INDEX",
                            {
                                "fieldRef": {
                                    "fieldPath": "metadata.annotations['batch.kubernetes.io/"
                                    "job-completion-index']"
                                }
                            },
                        ),
                        ("JOB", {"fieldRef": {"fieldPath": "metadata.labels['job-name']"}}),
                    ),
                )
            ],
        },
    }
    core.create_namespaced_pod(namespace, body)
    wait_pod(api_client, namespace, "indexed", phase_is("Succeeded"))
    assert core.read_namespaced_pod_log("indexed", namespace) == "4 pi\n"


def test_a_missing_config_map_holds_the_container_until_it_exists(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    make_pod(
        core,
        namespace,
        "needs-config",
        node,
        container(
            "main",
            ["python3", "-c", "import os; print(os.environ['LR'])"],
            env=fields(("LR", {"configMapKeyRef": {"name": "later", "key": "lr"}})),
        ),
    )

    def config_error(pod: dict[str, Any]) -> bool:
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        waiting = (statuses[0].get("state") or {}).get("waiting") or {}
        return waiting.get("reason") == "CreateContainerConfigError"

    pod = wait_pod(api_client, namespace, "needs-config", config_error)
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["message"] == 'configmap "later" not found'
    assert pod["status"]["phase"] == "Pending"
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "later"}, "data": {"lr": "0.01"}}
    )
    wait_pod(api_client, namespace, "needs-config", phase_is("Succeeded"), timeout=20)
    assert core.read_namespaced_pod_log("needs-config", namespace) == "0.01\n"


def test_gpus_are_given_exclusively(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    """The test node offers two (pretend) GPUs: a pod that finished gives its GPU back
    though its record stays, two pods holding one each then get different devices, and a
    pod without GPUs sees none."""
    show = "import os, time; print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')), flush=True); "
    make_pod(
        core,
        namespace,
        "gpu-done",
        node,
        container("main", ["python3", "-c", show], resources={"limits": {"nvidia.com/gpu": "1"}}),
        restart="Never",
    )
    wait_pod(api_client, namespace, "gpu-done", phase_is("Succeeded"))
    assert core.read_namespaced_pod_log("gpu-done", namespace) in ("'0'\n", "'1'\n")
    for name, gpus in (("gpu-a", 1), ("gpu-b", 1), ("cpu", 0)):
        limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
        make_pod(
            core,
            namespace,
            name,
            node,
            container(
                "main",
                ["python3", "-c", show + "time.sleep(60)"],
                resources={"limits": limits},
            ),
            restart="Always",
        )
    seen = {}
    for name in ("gpu-a", "gpu-b", "cpu"):
        wait_pod(api_client, namespace, name, phase_is("Running"))
        seen[name] = wait_for(lambda name=name: core.read_namespaced_pod_log(name, namespace))
    assert {seen["gpu-a"], seen["gpu-b"]} == {"'0'\n", "'1'\n"}
    assert seen["cpu"] == "''\n"
