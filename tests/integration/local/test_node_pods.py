"""The node agent runs pods as processes and reports them as a kubelet does: registration and
lease, exit codes and reasons, restart policies with back-off, OOM kills, init containers in
order, deadlines, and the container that cannot be created because it names no command."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.fixtures.cluster import Kubectl
from tests.integration.local.conftest import (
    BACKOFF_INITIAL,
    Node,
    container,
    container_status,
    events_of,
    make_pod,
    phase_is,
    python,
    wait_for,
    wait_pod,
)


def test_the_node_registers_with_its_capacity_and_keeps_a_lease(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node
) -> None:
    registered = api_client.sanitize_for_serialization(core.read_node(node.name))
    status = registered["status"]
    assert {"cpu", "memory", "pods", "ephemeral-storage"} <= set(status["capacity"])
    assert status["capacity"]["pods"] == "110"
    assert status["capacity"]["nvidia.com/gpu"] == "2"
    assert status["allocatable"] == status["capacity"]
    # The test node's name resolves nowhere: an API server preferring Hostname (kube-apiserver's
    # default) would dial it and fail, so only the address it listens on is reported.
    assert status["addresses"] == [{"type": "InternalIP", "address": "127.0.0.1"}]
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    assert status["nodeInfo"]["kubeletVersion"] == "v1.32.0-kubetrain"
    assert status["nodeInfo"]["operatingSystem"] == "linux"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    leases = client.CoordinationV1Api(api_client)
    lease = leases.read_namespaced_lease(node.name, "kube-node-lease")
    assert lease.spec.holder_identity == node.name
    first = lease.spec.renew_time
    wait_for(
        lambda: leases.read_namespaced_lease(node.name, "kube-node-lease").spec.renew_time != first,
        timeout=10,
    )


def test_a_failing_pod_reports_its_exit_code_and_kubectl_shows_its_log(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubectl: Kubectl,
    node: Node,
    namespace: str,
) -> None:
    code = (
        "import sys; print('hello from the pod', flush=True); "
        "print('to stderr', file=sys.stderr); sys.exit(3)"
    )
    make_pod(core, namespace, "fails", node, container("main", python(code)))
    pod = wait_pod(api_client, namespace, "fails", phase_is("Failed"))
    terminated = container_status(pod, "main")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert terminated["containerID"].startswith(f"kubetrain://{pod['metadata']['uid']}/main/")
    assert pod["status"]["podIP"] == "127.0.0.1"
    logs = kubectl("logs", "-n", namespace, "fails").stdout
    assert logs == "hello from the pod\nto stderr\n"
    reasons = [e.reason for e in events_of(core, namespace, "fails")]
    assert "Created" in reasons
    assert "Started" in reasons
    started = next(e for e in events_of(core, namespace, "fails") if e.reason == "Started")
    assert (started.source.component, started.source.host) == ("kubelet", node.name)


def test_on_failure_restarts_with_growing_back_off(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    node: Node,
    namespace: str,
    tmp_path: Path,
) -> None:
    """Each run appends its start time; the fifth run succeeds. The first restart is at once,
    then the waits double from the initial back-off."""
    code = (
        "import sys, time\n"
        "with open('/runs/starts', 'a') as f: f.write(f'{time.time()}\\n')\n"
        "runs = len(open('/runs/starts').read().split())\n"
        "sys.exit(0 if runs >= 5 else 1)\n"
    )
    make_pod(
        core,
        namespace,
        "flaky",
        node,
        container("main", python(code), volumeMounts=[{"name": "runs", "mountPath": "/runs"}]),
        restart="OnFailure",
        volumes=[{"name": "runs", "hostPath": {"path": str(tmp_path)}}],
    )
    node.needs_isolation()
    seen_back_off = []

    def done(pod: dict) -> bool:
        entry = (pod.get("status") or {}).get("containerStatuses") or [{}]
        if "CrashLoopBackOff" in json.dumps(entry[0].get("state")):
            seen_back_off.append(entry[0]["state"]["waiting"]["message"])
        return (pod.get("status") or {}).get("phase") == "Succeeded"

    pod = wait_pod(api_client, namespace, "flaky", done, timeout=30)
    assert container_status(pod, "main")["restartCount"] == 4
    starts = [float(t) for t in (tmp_path / "starts").read_text().split()]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(gaps) == 4
    assert gaps[1] >= BACKOFF_INITIAL * 0.9
    assert gaps[2] >= BACKOFF_INITIAL * 2 * 0.9
    assert gaps[3] >= BACKOFF_INITIAL * 4 * 0.9
    assert gaps[3] > gaps[1]
    assert any("restarting failed container=main" in m for m in seen_back_off)
    back_offs = [e for e in events_of(core, namespace, "flaky") if e.reason == "BackOff"]
    assert back_offs
    assert back_offs[0].message.startswith("Back-off restarting failed container main in pod")

    def started_five_times() -> bool:  # one Event, counted, as the kubelet writes it
        started = [e for e in events_of(core, namespace, "flaky") if e.reason == "Started"]
        return [e.count for e in started] == [5]

    wait_for(started_five_times, timeout=10)


def test_a_pod_over_its_memory_limit_is_oom_killed(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    code = "import time; blocks = [bytearray(10 * 2**20) for _ in range(30)]; time.sleep(30)"
    make_pod(
        core,
        namespace,
        "hungry",
        node,
        container("main", python(code), resources={"limits": {"memory": "100Mi"}}),
    )
    pod = wait_pod(api_client, namespace, "hungry", phase_is("Failed"))
    terminated = container_status(pod, "main")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")


def test_init_containers_run_in_order_before_the_app(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    kubectl: Kubectl,
    node: Node,
    namespace: str,
) -> None:
    node.needs_isolation()
    mount = [{"name": "shared", "mountPath": "/shared"}]
    step = "import sys; open('/shared/steps', 'a').write(sys.argv[1] + '\\n')"
    make_pod(
        core,
        namespace,
        "ordered",
        node,
        container(
            "main", python("print(open('/shared/steps').read(), end='')"), volumeMounts=mount
        ),
        initContainers=[
            container("first", [*python(step), "first"], volumeMounts=mount),
            container(
                "second",
                [*python("import time; time.sleep(0.3); " + step), "second"],
                volumeMounts=mount,
            ),
        ],
        volumes=[{"name": "shared", "emptyDir": {}}],
    )
    pod = wait_pod(api_client, namespace, "ordered", phase_is("Succeeded"))
    assert kubectl("logs", "-n", namespace, "ordered").stdout == "first\nsecond\n"
    for name in ("first", "second"):
        entry = container_status(pod, name)
        assert entry["state"]["terminated"]["reason"] == "Completed"
        assert entry["ready"] is True
    conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert conditions["Initialized"] == "True"


def test_a_failed_init_container_with_never_fails_the_pod(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    make_pod(
        core,
        namespace,
        "no-init",
        node,
        container("main", python("print('must not run')")),
        initContainers=[container("setup", python("raise SystemExit(2)"))],
    )
    pod = wait_pod(api_client, namespace, "no-init", phase_is("Failed"))
    assert container_status(pod, "setup")["state"]["terminated"]["exitCode"] == 2
    assert "running" not in container_status(pod, "main")["state"]
    assert "terminated" not in container_status(pod, "main")["state"]


def test_a_pod_past_its_active_deadline_is_killed(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    created = time.monotonic()
    make_pod(
        core,
        namespace,
        "late",
        node,
        container("main", python("import time; time.sleep(60)")),
        restart="Always",
        activeDeadlineSeconds=1,
    )
    pod = wait_pod(api_client, namespace, "late", phase_is("Failed"), timeout=20)
    assert time.monotonic() - created >= 1.0
    assert pod["status"]["reason"] == "DeadlineExceeded"
    assert (
        pod["status"]["message"] == "Pod was active on the node longer than the specified deadline"
    )
    assert "terminated" in container_status(pod, "main")["state"]


def test_a_container_without_a_command_waits_as_create_container_error_and_is_retried(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    make_pod(
        core,
        namespace,
        "imageonly",
        node,
        {"name": "main", "image": "pytorch/pytorch:latest", "args": ["train.py"]},
        restart="OnFailure",
    )

    def cannot_create(pod: dict[str, Any]) -> bool:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        return any(
            (s["state"].get("waiting") or {}).get("reason") == "CreateContainerError"
            for s in statuses
        )

    pod = wait_pod(api_client, namespace, "imageonly", cannot_create)
    assert pod["status"]["phase"] == "Pending"
    waiting = container_status(pod, "main")["state"]["waiting"]
    assert "spec.containers[0].command: required" in waiting["message"]
    assert "images are not pulled locally" in waiting["message"]
    assert "reason" not in pod["status"]

    def retried() -> list[Any]:
        failed = [e for e in events_of(core, namespace, "imageonly") if e.reason == "Failed"]
        return failed if failed and failed[0].count >= 2 else []

    failed = wait_for(retried, timeout=20)
    assert failed[0].type == "Warning"
    assert "images are not pulled locally" in failed[0].message
    pod = wait_pod(api_client, namespace, "imageonly", lambda p: True)
    assert pod["status"]["phase"] == "Pending"
    assert container_status(pod, "main")["restartCount"] == 0


def test_a_command_not_on_this_host_fails_with_the_reason(
    core: client.CoreV1Api, api_client: client.ApiClient, node: Node, namespace: str
) -> None:
    make_pod(core, namespace, "missing", node, container("main", ["no-such-tool", "--help"]))
    pod = wait_pod(api_client, namespace, "missing", phase_is("Failed"))
    terminated = container_status(pod, "main")["state"]["terminated"]
    assert terminated["reason"] == "ContainerCannotRun"
    assert "no-such-tool" in terminated["message"]
    # the event is written beside the status, not before it: wait for it too
    wait_for(
        lambda: any(
            e.reason == "Failed" and "no-such-tool" in e.message
            for e in events_of(core, namespace, "missing")
        ),
        timeout=10,
    )
