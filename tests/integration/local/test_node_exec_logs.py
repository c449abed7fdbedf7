"""``kubectl exec`` and ``kubectl logs`` against pods the node agent runs, through the API
server's proxy to the node's endpoint: output, exit codes, stdin, the container's own world,
follow, tail, the previous attempt, and the kubelet's refusals."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kubernetes import client
from kubernetes.stream import stream

from tests.apiserver.test_pod_log_exec import following
from tests.fixtures.cluster import Kubectl
from tests.integration.local.conftest import (
    Node,
    container,
    container_status,
    make_pod,
    phase_is,
    python,
    wait_pod,
)

SLEEPER = python("import time; print('up', flush=True); time.sleep(120)")


def running(pod: dict) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return "running" in (statuses[0].get("state") or {})


def test_exec_returns_output_and_exit_code(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubectl: Kubectl,
    node: Node,
    namespace: str,
) -> None:
    make_pod(
        core,
        namespace,
        "shell",
        node,
        container("main", SLEEPER, env=[{"name": "ROLE", "value": "worker"}]),
        restart="Always",
    )
    wait_pod(api_client, namespace, "shell", running)
    out = kubectl(
        "exec",
        "-n",
        namespace,
        "shell",
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2; exit 4",
        check=False,
    )
    assert out.returncode == 4
    assert out.stdout == "out\n"
    assert "err\n" in out.stderr
    assert "command terminated with exit code 4" in out.stderr
    env = kubectl("exec", "-n", namespace, "shell", "--", "printenv", "ROLE")
    assert env.stdout == "worker\n"
    echoed = kubectl("exec", "-i", "-n", namespace, "shell", "--", "cat", input="one\ntwo\n")
    assert echoed.stdout == "one\ntwo\n"
    missing = kubectl("exec", "-n", namespace, "shell", "--", "no-such-tool", check=False)
    assert missing.returncode != 0
    assert "no-such-tool" in missing.stderr


def test_logs_follow_tail_and_previous(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubectl: Kubectl,
    kubeconfig: str,
    node: Node,
    namespace: str,
    tmp_path: Path,
) -> None:
    """Run 1 prints and fails; run 2 prints three lines, waits for a go, and ends."""
    node.needs_isolation()
    code = (
        "import os, sys, time\n"
        "open('/state/runs', 'a').write('x')\n"
        "run = len(open('/state/runs').read())\n"
        "print(f'run {run} line 1', flush=True)\n"
        "if run == 1: sys.exit(1)\n"
        "print(f'run {run} line 2', flush=True)\n"
        "print(f'run {run} line 3', flush=True)\n"
        "while not os.path.exists('/state/go'): time.sleep(0.05)\n"
        "print('done', flush=True)\n"
    )
    make_pod(
        core,
        namespace,
        "chatty",
        node,
        container("main", python(code), volumeMounts=[{"name": "state", "mountPath": "/state"}]),
        restart="OnFailure",
        volumes=[{"name": "state", "hostPath": {"path": str(tmp_path)}}],
    )
    wait_pod(
        api_client,
        namespace,
        "chatty",
        lambda p: running(p) and container_status(p, "main")["restartCount"] == 1,
    )
    assert kubectl("logs", "-n", namespace, "chatty", "--previous").stdout == "run 1 line 1\n"
    wait_pod(api_client, namespace, "chatty", lambda p: True)
    current = kubectl("logs", "-n", namespace, "chatty").stdout
    assert current.startswith("run 2 line 1\n")
    tail = kubectl("logs", "-n", namespace, "chatty", "--tail=1").stdout
    assert tail in ("run 2 line 1\n", "run 2 line 2\n", "run 2 line 3\n")
    stamped = kubectl("logs", "-n", namespace, "chatty", "--timestamps").stdout.splitlines()
    stamps = [line.partition(" ")[0] for line in stamped]
    assert all(stamp.startswith("20") and stamp.endswith("Z") for stamp in stamps)
    assert stamped[0].partition(" ")[2] == "run 2 line 1"
    argv = ["kubectl", "--kubeconfig", kubeconfig, "logs", "-f", "-n", namespace, "chatty"]
    with following(argv) as (follow, output):
        output.wait_for("run 2 line 3\n")
        assert follow.poll() is None, "the follow ended while the container ran"
        (tmp_path / "go").write_text("")
        output.wait_for("done\n")
        assert follow.wait(timeout=30) == 0
    assert output.text == "run 2 line 1\nrun 2 line 2\nrun 2 line 3\ndone\n"
    wait_pod(api_client, namespace, "chatty", phase_is("Succeeded"))


def test_logs_of_a_container_that_has_not_started_say_why(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubectl: Kubectl,
    node: Node,
    namespace: str,
) -> None:
    make_pod(
        core,
        namespace,
        "blocked",
        node,
        container(
            "main",
            SLEEPER,
            env=[{"name": "X", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "k"}}}],
        ),
    )
    wait_pod(
        api_client,
        namespace,
        "blocked",
        lambda p: "CreateContainerConfigError" in str(p.get("status")),
    )
    out = kubectl("logs", "-n", namespace, "blocked", check=False)
    assert out.returncode != 0
    assert (
        'container "main" in pod "blocked" is waiting to start: CreateContainerConfigError'
        in out.stderr
    )


def test_exec_with_the_python_client(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    """The official Python client speaks v4.channel.k8s.io."""
    make_pod(core, namespace, "py", node, container("main", SLEEPER), restart="Always")
    wait_pod(api_client, namespace, "py", running)
    out = stream(
        core.connect_get_namespaced_pod_exec,
        "py",
        namespace,
        command=["sh", "-c", "echo from $HOSTNAME"],
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
    )
    assert out == "from py\n"


def test_exec_over_spdy(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubeconfig: str,
    node: Node,
    namespace: str,
) -> None:
    """kubectl 1.29 and older speak SPDY/3.1: the API server passes the upgrade to the node,
    which serves it as the kubelet does."""
    make_pod(core, namespace, "old", node, container("main", SLEEPER), restart="Always")
    wait_pod(api_client, namespace, "old", running)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBECTL_REMOTE_COMMAND_WEBSOCKETS"] = "false"
    command = ["sh", "-c", "cat; echo bye >&2; exit 5"]
    out = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            kubeconfig,
            "exec",
            "-i",
            "-n",
            namespace,
            "old",
            "--",
            *command,
        ],
        input="typed\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 5, out.stderr
    assert out.stdout == "typed\n"
    assert "bye\n" in out.stderr
