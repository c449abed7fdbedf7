"""The node's container runtime end to end, on Docker: jobs whose replicas run in busybox
containers (not host processes) keep the env contract and reach each other by name and port
over the host network, share a PVC, fail and restart by their policies; ``kubectl logs`` and
``exec`` reach into a container; a pull that cannot succeed waits with the engine's message;
and a control plane that stops leaves no container and no network in the engine.

One dockerd and one control plane serve the whole file (see conftest.py); each test's jobs and
pods run side by side, so the file costs about as much as its slowest scenario.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from tests import engines
from tests.apiserver.conftest import wait_for
from tests.e2e.conftest import local_plane
from tests.e2e.containers.conftest import Kubectl
from tests.fixtures import containers

TIMEOUT = 60.0
# Each TF replica listens on its own address of TF_CONFIG, reaches every other one, then waits
# on the shared claim until all have (so no listener goes before its peers reached it).
TF_REPLICA = r"""
set -e
echo "TF_CONFIG=$TF_CONFIG"
me=$(echo "$TF_CONFIG" | sed 's/.*"index": *\([0-9]*\).*/\1/')
peers=$(echo "$TF_CONFIG" | grep -o '"[a-z0-9.-][a-z0-9.-]*:[0-9][0-9]*"' | tr -d '"')
mine=$(echo "$peers" | sed -n "$((me + 1))p")
nc -ll -p "${mine##*:}" -e /bin/true &
for peer in $peers; do
  until nc -w 2 "${peer%:*}" "${peer##*:}" </dev/null 2>/dev/null; do sleep 0.2; done
  echo "reached $peer"
done
touch "/shared/tf-$me"
until [ "$(ls /shared | grep -c '^tf-')" = "$(echo "$peers" | wc -l)" ]; do sleep 0.2; done
"""
PT_REPLICA = r"""
set -e
echo "MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT WORLD_SIZE=$WORLD_SIZE RANK=$RANK"
if [ "$RANK" = 0 ]; then
  nc -ll -p "$MASTER_PORT" -e /bin/true &
  echo from-master > /shared/pt-file
  until [ -f /shared/pt-ack ]; do sleep 0.2; done
else
  until nc -w 2 "$MASTER_ADDR" "$MASTER_PORT" </dev/null 2>/dev/null; do sleep 0.2; done
  echo "reached $MASTER_ADDR:$MASTER_PORT"
  until [ -f /shared/pt-file ]; do sleep 0.2; done
  echo "read $(cat /shared/pt-file)"
  touch /shared/pt-ack
fi
"""
# OnFailure: the first attempt fails (3), the second runs until stopped, gracefully on TERM
RESTARTED = r"""
if [ ! -f /scratch/tried ]; then touch /scratch/tried; echo "first attempt"; exit 3; fi
echo "second attempt in $(pwd) as $POD_NAME, init said $(cat /scratch/init)"
trap 'echo "stopping gracefully"; exit 0' TERM
while true; do sleep 0.1; done
"""

# securityContext.runAsUser/runAsGroup: the image's user is not root, and still reaches its
# emptyDir, its ConfigMap and its hosts file
AS_USER = r"""
echo wrote > /scratch/file
name=$(grep -ow nonroot /etc/hosts)
echo "$(id -u):$(id -g) $(cat /scratch/file) $(cat /etc/settings/mode) $name"
"""


def _replica(image: str, script: str, restart: str = "Never") -> dict[str, Any]:
    return {
        "replicas": 1,
        "restartPolicy": restart,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "",  # set by the caller: tensorflow or pytorch
                        "image": image,
                        "command": ["sh", "-c", script],
                        "volumeMounts": [{"name": "shared", "mountPath": "/shared"}],
                    }
                ],
                "volumes": [{"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}}],
            }
        },
    }


def _job(kind: str, name: str, container: str, replicas: dict[str, dict[str, Any]]) -> dict:
    field = "tfReplicaSpecs" if kind == "TFJob" else "pytorchReplicaSpecs"
    for spec in replicas.values():
        spec["template"]["spec"]["containers"][0]["name"] = container
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {field: replicas, "runPolicy": {"cleanPodPolicy": "None"}},
    }


def _condition(job: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def _finished(kubectl: Kubectl, what: str, kind: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        job = kubectl.get(what)
        if _condition(job, "Failed") and kind != "Failed":
            raise AssertionError(f"{what} failed: {job['status']}\n{kubectl.plane.tail()}")
        return job if _condition(job, kind) else None

    try:
        return wait_for(check, timeout=TIMEOUT, interval=0.2)
    except BaseException:
        print(kubectl("get", "pods", "-o", "wide", check=False))
        for pod in kubectl("get", "pods", "-o", "name", check=False).split():
            print(pod, kubectl("logs", pod, "--all-containers", check=False))
        raise


def test_jobs_in_containers_keep_the_env_contract_reach_peers_and_share_a_claim(
    kubectl: Kubectl, image: str, engine: engines.Engine
) -> None:
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "shared"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": "1Mi"}},
            },
        },
        _job(
            "TFJob", "tf", "tensorflow", {"Worker": _replica(image, TF_REPLICA) | {"replicas": 2}}
        ),
        _job(
            "PyTorchJob",
            "pt",
            "pytorch",
            {"Master": _replica(image, PT_REPLICA), "Worker": _replica(image, PT_REPLICA)},
        ),
        _job(
            "PyTorchJob",
            "bad",
            "pytorch",
            {"Master": _replica(image, "echo failing; exit 1", restart="ExitCode")},
        ),
    )
    _finished(kubectl, "tfjob/tf", "Succeeded")
    _finished(kubectl, "pytorchjob/pt", "Succeeded")
    bad = _finished(kubectl, "pytorchjob/bad", "Failed")
    assert not _condition(bad, "Succeeded"), bad["status"]

    # every replica ran in a container of the image, labelled with its pod
    namespace = kubectl.namespace
    labelled = f"label=io.kubetrain.pod-namespace={namespace}"
    listed = engine.docker("ps", "-a", "--filter", labelled, "--format", "{{json .}}")
    containers = [json.loads(line) for line in listed.splitlines()]
    assert sorted(c["Labels"].count("io.kubetrain.pod-name=") for c in containers) == [1] * 5
    assert {c["Image"] for c in containers} == {image}, containers

    tf = {i: kubectl("logs", f"tf-worker-{i}") for i in (0, 1)}
    said = next(line for line in tf[0].splitlines() if line.startswith("TF_CONFIG="))
    config = json.loads(said.removeprefix("TF_CONFIG="))
    peers = config["cluster"]["worker"]
    assert len(peers) == 2, config
    assert config["task"] == {"type": "worker", "index": 0}, config
    for i in (0, 1):
        for peer in peers:
            assert f"reached {peer}" in tf[i], tf[i]

    master, worker = kubectl("logs", "pt-master-0"), kubectl("logs", "pt-worker-0")
    said = next(line for line in worker.splitlines() if line.startswith("MASTER_ADDR="))
    env = dict(pair.split("=", 1) for pair in said.split())
    assert (env["MASTER_ADDR"], env["WORLD_SIZE"], env["RANK"]) == ("pt-master-0", "2", "1")
    assert f"reached pt-master-0:{env['MASTER_PORT']}" in worker, worker
    assert "read from-master" in worker, worker  # written on the claim by the master
    assert "RANK=0" in master, master

    failed = kubectl.get("pod/bad-master-0")["status"]["containerStatuses"][0]["state"]
    assert failed["terminated"]["exitCode"] == 1, failed
    assert failed["terminated"]["reason"] == "Error", failed


def test_a_pod_restarts_on_failure_and_kubectl_logs_and_exec_reach_its_container(
    kubectl: Kubectl, image: str, engine: engines.Engine
) -> None:
    kubectl.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings"},
            "data": {"mode": "container"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "life"},
            "spec": {
                "restartPolicy": "OnFailure",
                "terminationGracePeriodSeconds": 10,
                "initContainers": [
                    {
                        "name": "init",
                        "image": image,
                        "command": ["sh", "-c", "echo ready > /scratch/init"],
                        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                    }
                ],
                "containers": [
                    {
                        "name": "main",
                        "image": image,
                        "command": ["sh", "-c", RESTARTED],
                        "workingDir": "/tmp",
                        "env": [
                            {
                                "name": "POD_NAME",
                                "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                            }
                        ],
                        "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}},
                        "volumeMounts": [
                            {"name": "scratch", "mountPath": "/scratch"},
                            {"name": "settings", "mountPath": "/etc/settings"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "scratch", "emptyDir": {}},
                    {"name": "settings", "configMap": {"name": "settings"}},
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "nonroot"},
            "spec": {
                "restartPolicy": "Never",
                "securityContext": {"runAsUser": 1000, "runAsGroup": 1000},
                "containers": [
                    {
                        "name": "main",
                        "image": image,
                        "command": ["sh", "-c", AS_USER],
                        "volumeMounts": [
                            {"name": "scratch", "mountPath": "/scratch"},
                            {"name": "settings", "mountPath": "/etc/settings"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "scratch", "emptyDir": {}},
                    {"name": "settings", "configMap": {"name": "settings"}},
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "nopull"},
            "spec": {
                "containers": [
                    {"name": "main", "image": "kubetrain-test/missing:1", "command": ["true"]}
                ]
            },
        },
    )

    def restarted() -> dict[str, Any] | None:
        status = kubectl.get("pod/life").get("status") or {}
        for s in status.get("containerStatuses") or []:
            if s.get("restartCount") == 1 and "running" in (s.get("state") or {}):
                return s
        return None

    main = wait_for(restarted, timeout=TIMEOUT, interval=0.2)
    assert main["lastState"]["terminated"]["exitCode"] == 3, main
    assert main["lastState"]["terminated"]["reason"] == "Error", main

    def logged() -> str:
        text = kubectl("logs", "life", "-c", "main")
        return text if "second attempt" in text else ""

    assert wait_for(logged, timeout=TIMEOUT) == "second attempt in /tmp as life, init said ready\n"
    assert kubectl("logs", "life", "-c", "main", "--previous") == "first attempt\n"
    stamped = kubectl("logs", "life", "-c", "main", "--timestamps").split(" ", 1)
    assert stamped[0].startswith("20"), stamped
    assert stamped[0].endswith("Z"), stamped

    shown = "cat /etc/settings/mode; echo; grep -w life /etc/hosts"
    seen = kubectl("exec", "life", "-c", "main", "--", "sh", "-c", shown)
    mode, _, hosts = seen.partition("\n")
    assert mode == "container", seen
    assert "life" in hosts, seen
    echoed = kubectl("exec", "-i", "life", "-c", "main", "--", "cat", input="piped in\n")
    assert echoed == "piped in\n", echoed
    exited = kubectl("exec", "life", "-c", "main", "--", "sh", "-c", "exit 7", check=False)
    assert "exit code 7" in exited, exited

    second = _container(engine, kubectl.namespace, "life", "main", 1)
    record = json.loads(engine.docker("inspect", second))[0]
    assert record["HostConfig"]["NetworkMode"] == "host"
    assert record["HostConfig"]["Memory"] == 64 * 1024 * 1024
    assert record["HostConfig"]["NanoCpus"] == 500_000_000

    def waiting() -> dict[str, Any] | None:
        status = kubectl.get("pod/nopull").get("status") or {}
        for s in status.get("containerStatuses") or []:
            state = (s.get("state") or {}).get("waiting") or {}
            if state.get("reason") in ("ErrImagePull", "ImagePullBackOff"):
                return state
        return None

    pull = wait_for(waiting, timeout=TIMEOUT, interval=0.2)
    assert "kubetrain-test/missing:1" in pull["message"], pull
    assert kubectl.get("pod/nopull")["status"]["phase"] == "Pending"

    kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/nonroot", "--timeout=60s")
    assert kubectl("logs", "nonroot") == "1000:1000 wrote container nonroot\n"

    began = time.monotonic()
    kubectl("delete", "pod", "life", "--timeout=60s")
    assert time.monotonic() - began < 8, "stopped by SIGKILL after the grace period, not TERM"

    def removed() -> bool:
        return _container(engine, kubectl.namespace, "life", "main", None) == ""

    wait_for(removed, timeout=TIMEOUT, interval=0.2)


def test_a_control_plane_that_stops_leaves_no_container_and_no_network(
    engine: engines.Engine, image: str
) -> None:
    networks = engine.docker("network", "ls", "--format", "{{.Name}}")
    with tempfile.TemporaryDirectory(prefix="kt-down-") as home:
        with local_plane(
            Path(home),
            environ={"DOCKER_HOST": engine.host},
            args=("--container-runtime", containers.kind()),
        ) as plane:
            kubectl = Kubectl(plane, "default")
            kubectl.apply(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "sleeper"},
                    "spec": {
                        "containers": [
                            {"name": "main", "image": image, "command": ["sleep", "300"]}
                        ]
                    },
                }
            )
            kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=60s")
            assert _container(engine, "default", "sleeper", "main", 0) != ""
        left = engine.docker("ps", "-a", "--filter", "label=io.kubetrain.pod-name=sleeper", "-q")
        assert left == "", left
    assert engine.docker("network", "ls", "--format", "{{.Name}}") == networks


def _container(
    engine: engines.Engine, namespace: str, pod: str, name: str, attempt: int | None
) -> str:
    filters = [
        f"label=io.kubetrain.pod-namespace={namespace}",
        f"label=io.kubetrain.pod-name={pod}",
        f"label=io.kubetrain.container={name}",
    ]
    if attempt is not None:
        filters.append(f"label=io.kubetrain.attempt={attempt}")
    args = [part for f in filters for part in ("--filter", f)]
    return engine.docker("ps", "-a", "-q", *args).strip()
