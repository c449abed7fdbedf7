"""``kubetrain node`` as a kubelet of a real control plane (kube-apiserver, kube-scheduler,
kube-controller-manager 1.28).

The node runs as ``kubetrain node --kubeconfig ... --tls-cert-file ... --tls-private-key-file
... --client-ca-file <the plane's CA>``, with a serving certificate the plane's CA issued for
127.0.0.1, as an administrator would start it. Then, with nothing done by hand:

- the node-lifecycle controller lifts the ``node.kubernetes.io/not-ready`` taint that admission
  put on the new Node, and the node stays Ready and untainted past the controller's
  ``--node-monitor-grace-period`` (20 s here: :data:`tests.realcluster.NODE_MONITOR_GRACE`),
  renewing its Lease;
- kube-scheduler binds pods to it, and it runs them;
- ``kubectl logs`` (``-f``, ``--previous``, ``--tail``, ``--timestamps``), ``kubectl exec``
  and ``kubectl port-forward`` reach it through kube-apiserver, which authenticates with its
  kubelet client certificate (``kubectl`` speaks SPDY to kube-apiserver 1.28, which passes it
  on; the Python client speaks WebSocket, passed on as well).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import portforward as portforward_stream
from kubernetes.stream import stream

from kubetrain import envtest
from kubetrain.local import tls
from kubetrain.local.node import agent as node_agent
from kubetrain.local.node import settings as node_settings
from tests import portforward, processes, realcluster
from tests.apiserver.test_pod_log_exec import Output

START_TIMEOUT = 90.0  # seconds for the node to be Ready and untainted (2 busy cores)
POD_TIMEOUT = 60.0
GRACE = float(realcluster.NODE_MONITOR_GRACE.rstrip("s"))
LEASE_DURATION = 40
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass
class Agent:
    """A ``kubetrain node`` process on the real control plane."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    core: client.CoreV1Api
    kubeconfig: str
    ready_at: datetime = EPOCH  # when it was first seen Ready and untainted

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def node(self) -> dict[str, Any]:
        return dict(self.core.api_client.sanitize_for_serialization(self.core.read_node(self.name)))

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        result = subprocess.run(
            ["kubectl", "--kubeconfig", self.kubeconfig, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        if check and result.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr}")
        return result


def wait_for(what: str, condition: Callable[[], Any], timeout: float, agent: Agent) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if agent.process.poll() is not None:
            pytest.fail(f"kubetrain node exited ({agent.process.returncode}):\n{agent.tail()}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f}s; the node's log:\n{agent.tail()}")
        time.sleep(0.2)


def condition(node: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [c for c in (node.get("status") or {}).get("conditions") or [] if c["type"] == kind]
    return found[0] if found else {}


def ready_and_untainted(agent: Agent) -> bool:
    try:
        node = agent.node()
    except ApiException:
        return False
    taints = (node.get("spec") or {}).get("taints") or []
    return condition(node, "Ready").get("status") == "True" and not taints


def remove_pods(root: Path, container_runtime: str, environ: Mapping[str, str]) -> None:
    """Stop and remove every pod the node left on disk (they outlive it by design), and their
    containers in the node's engine, if it has one."""
    config = node_settings.Settings(
        root=str(root),
        container_runtime=container_runtime,  # type: ignore[arg-type]  # the CLI's choices
        container_host=environ.get("DOCKER_HOST") or environ.get("CONTAINER_HOST") or "",
    )

    async def sweep() -> None:
        node_runtime = node_agent.make_runtime(config, None)
        try:
            for uid in node_runtime.pods():
                await node_runtime.remove(uid, 0)
        finally:
            if container_runtime != "none":
                await node_runtime.close()

    asyncio.run(sweep())


@contextlib.contextmanager
def running_node(
    plane: envtest.ControlPlane,
    home: Path,
    *,
    container_runtime: str = "none",
    args: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Iterator[Agent]:
    """``kubetrain node`` joined to ``plane`` as an administrator starts it (a serving
    certificate of the plane's CA, the plane's CA for clients), with ``args`` after its own
    flags and ``environ`` over the test's environment; yielded once its Node is Ready and
    untainted. On the way out it stops the node, removes what it left (its pods' processes,
    directories and containers) and deletes the Node."""
    name = "kt-node-" + secrets.token_hex(3)
    cert, key = tls.issue_certificate(plane.pki, name, [name, "localhost"], ["127.0.0.1"])
    (home / "node.crt").write_bytes(cert)
    (home / "node.key").write_bytes(key)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = str(home)
    env.update(environ or {})
    command = [
        sys.executable,
        "-m",
        "kubetrain",
        "node",
        "--kubeconfig",
        plane.kubeconfig,
        "--name",
        name,
        "--root",
        str(home / "node"),
        "--tls-cert-file",
        str(home / "node.crt"),
        "--tls-private-key-file",
        str(home / "node.key"),
        "--client-ca-file",
        plane.ca_cert,
        "--backoff-initial",
        "0.2",
        "--backoff-max",
        "2",
        *(("--container-runtime", container_runtime) if container_runtime != "none" else ()),
        *args,
    ]
    log = home / "node.log"
    api = config.new_client_from_config(config_file=plane.kubeconfig)
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    handle = Agent(name, process, log, client.CoreV1Api(api), plane.kubeconfig)
    try:
        wait_for(
            "the Node Ready and untainted",
            lambda: ready_and_untainted(handle),
            START_TIMEOUT,
            handle,
        )
        handle.ready_at = datetime.now(timezone.utc)
        yield handle
    finally:
        processes.stop(process, timeout=30)
        remove_pods(home / "node", container_runtime, env)
        with contextlib.suppress(ApiException):
            handle.core.delete_node(name)
        api.close()


@pytest.fixture(scope="module")
def agent(
    real_control_plane: envtest.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Agent]:
    with running_node(real_control_plane, tmp_path_factory.mktemp("kubetrain-node")) as started:
        yield started


@pytest.fixture
def namespace(agent: Agent) -> Iterator[str]:
    name = "kt-node-" + secrets.token_hex(4)
    agent.core.create_namespace({"metadata": {"name": name}})
    try:
        yield name
    finally:
        with contextlib.suppress(ApiException):
            agent.core.delete_namespace(name)


def make_pod(
    agent: Agent,
    namespace: str,
    name: str,
    code: str,
    env: dict[str, str] | None = None,
    **spec: Any,
) -> None:
    """A pod for kube-scheduler to bind: it may only go to this test's node."""
    main = {
        "name": "main",
        "image": "python:3",
        "command": ["python3", "-c", code],
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
    }
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": agent.name},
            "automountServiceAccountToken": False,
            "containers": [main],
            **spec,
        },
    }
    agent.core.create_namespaced_pod(namespace, body)


def pod_is(agent: Agent, namespace: str, name: str, test: Callable[[Any], bool]) -> Any:
    def check() -> Any:
        pod = agent.core.read_namespaced_pod(name, namespace)
        return pod if test(pod) else None

    return wait_for(f"pod {namespace}/{name}", check, POD_TIMEOUT, agent)


def running(restarts: int = 0) -> Callable[[Any], bool]:
    def test(pod: Any) -> bool:
        statuses = pod.status.container_statuses or []
        return bool(
            statuses
            and statuses[0].state.running is not None
            and statuses[0].restart_count == restarts
        )

    return test


# -- the Node ------------------------------------------------------------------------------


def test_the_node_registers_as_a_kubelet_and_keeps_a_lease(agent: Agent) -> None:
    node = agent.node()
    status = node["status"]
    # its name resolves nowhere: kube-apiserver (Hostname first by default) gets the address
    assert status["addresses"] == [{"type": "InternalIP", "address": "127.0.0.1"}]
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        assert condition(node, kind)["status"] == "False"
    assert condition(node, "Ready")["reason"] == "KubeletReady"
    assert status["allocatable"] == status["capacity"]
    assert status["nodeInfo"]["kubeletVersion"]
    leases = client.CoordinationV1Api(agent.core.api_client)
    lease = leases.read_namespaced_lease(agent.name, "kube-node-lease")
    assert lease.spec.holder_identity == agent.name
    assert lease.spec.lease_duration_seconds == LEASE_DURATION
    assert lease.metadata.owner_references[0].uid == node["metadata"]["uid"]
    first = lease.spec.renew_time
    wait_for(
        "the Lease renewed",
        lambda: (
            leases.read_namespaced_lease(agent.name, "kube-node-lease").spec.renew_time != first
        ),
        30,
        agent,
    )


# -- pods, logs and exec --------------------------------------------------------------------


def test_logs_follow_previous_tail_and_timestamps(
    agent: Agent, namespace: str, tmp_path: Path
) -> None:
    """Run 1 prints and fails; run 2 prints three lines, waits for a go, and ends."""
    code = (
        "import os, sys, time\n"
        "state = os.environ['STATE']\n"
        "open(os.path.join(state, 'runs'), 'a').write('x')\n"
        "run = len(open(os.path.join(state, 'runs')).read())\n"
        "print(f'run {run} line 1', flush=True)\n"
        "if run == 1: sys.exit(1)\n"
        "print(f'run {run} line 2', flush=True)\n"
        "print(f'run {run} line 3', flush=True)\n"
        "while not os.path.exists(os.path.join(state, 'go')): time.sleep(0.05)\n"
        "print('done', flush=True)\n"
    )
    state = {"STATE": str(tmp_path)}  # the node runs pods on this host: they see the path
    make_pod(agent, namespace, "chatty", code, state, restartPolicy="OnFailure")
    pod = pod_is(agent, namespace, "chatty", running(restarts=1))
    assert pod.spec.node_name == agent.name  # bound by kube-scheduler
    logs = ("logs", "-n", namespace, "chatty")
    assert agent.kubectl(*logs, "--previous").stdout == "run 1 line 1\n"
    wait_for(
        "run 2's lines",
        lambda: agent.kubectl(*logs).stdout.startswith("run 2 line 1\nrun 2 line 2\nrun 2 line 3"),
        30,
        agent,
    )
    assert agent.kubectl(*logs, "--tail=1").stdout == "run 2 line 3\n"
    stamped = agent.kubectl(*logs, "--timestamps").stdout.splitlines()
    stamps = [
        datetime.fromisoformat(line.partition(" ")[0].replace("Z", "+00:00")) for line in stamped
    ]
    assert all(abs((datetime.now(timezone.utc) - s).total_seconds()) < 300 for s in stamps)
    assert [line.partition(" ")[2] for line in stamped] == [
        "run 2 line 1",
        "run 2 line 2",
        "run 2 line 3",
    ]
    follow = subprocess.Popen(
        ["kubectl", "--kubeconfig", agent.kubeconfig, "logs", "-f", *logs[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        output = Output(follow.stdout)
        output.wait_for("run 2 line 3\n")
        assert follow.poll() is None, "the follow ended while the container ran"
        (tmp_path / "go").write_text("")
        output.wait_for("done\n")
        assert follow.wait(timeout=30) == 0
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()
    assert output.text == "run 2 line 1\nrun 2 line 2\nrun 2 line 3\ndone\n"
    pod_is(agent, namespace, "chatty", lambda p: p.status.phase == "Succeeded")


def test_kubectl_exec_prints_output_and_returns_the_exit_code(agent: Agent, namespace: str) -> None:
    make_pod(agent, namespace, "shell", "import time; print('up', flush=True); time.sleep(300)")
    pod_is(agent, namespace, "shell", running())
    out = agent.kubectl(
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
    assert out.returncode == 4, out.stderr
    assert out.stdout == "out\n"
    assert "err\n" in out.stderr
    echoed = agent.kubectl("exec", "-i", "-n", namespace, "shell", "--", "cat", input="a\nb\n")
    assert echoed.stdout == "a\nb\n"
    missing = agent.kubectl("exec", "-n", namespace, "shell", "--", "no-such-tool", check=False)
    assert missing.returncode != 0
    assert "no-such-tool" in missing.stderr
    over_websocket = stream(
        agent.core.connect_get_namespaced_pod_exec,
        "shell",
        namespace,
        command=["sh", "-c", "echo via websocket"],
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
    )
    assert over_websocket == "via websocket\n"


def test_kubectl_port_forward_to_a_pod_and_a_service(agent: Agent, namespace: str) -> None:
    """kube-apiserver 1.28 has no WebSocket tunnel: kubectl's first try reaches the node,
    which refuses it as a kubelet does, and kubectl falls back to SPDY, passed through."""
    port, closed = portforward.free_port(), portforward.free_port()
    main = {
        "name": "main",
        "image": "python:3",
        "command": portforward.echo_command(port),
        "ports": [{"name": "echo", "containerPort": port}, {"containerPort": closed}],
    }
    make_pod(agent, namespace, "echo", "", containers=[main])
    agent.core.patch_namespaced_pod("echo", namespace, {"metadata": {"labels": {"app": "echo"}}})
    agent.core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "echo"},
            "spec": {"selector": {"app": "echo"}, "ports": [{"port": 80, "targetPort": "echo"}]},
        },
    )
    pod = pod_is(agent, namespace, "echo", running())
    wait_for(
        "the echo server",
        lambda: "listening" in agent.core.read_namespaced_pod_log("echo", namespace),
        POD_TIMEOUT,
        agent,
    )
    base = ["kubectl", "--kubeconfig", agent.kubeconfig, "-n", namespace, "port-forward"]
    payloads = [b"first " * 5000, b"second " * 7000]
    with portforward.forwarding([*base, "pod/echo", f":{port}"]) as forward:
        assert portforward.echoes_concurrently(forward, payloads) == payloads
    with portforward.forwarding([*base, "svc/echo", ":80"]) as forward:
        assert forward.remote == port
        assert portforward.echoes_concurrently(forward, [b"via the service"]) == [
            b"via the service"
        ]
    with portforward.forwarding([*base, "pod/echo", f":{closed}"]) as forward:
        assert portforward.closed_without_data(forward)
        message = forward.err.wait_for(portforward.ERROR)[0]
        assert f"error forwarding port {closed} to pod {pod.metadata.uid}" in message
        assert f"dial tcp4 127.0.0.1:{closed}: connect: connection refused" in message
    # the kubelet's WebSocket channels (what `kubetrain port-forward` speaks), passed on too
    over_websocket = portforward_stream(
        agent.core.connect_get_namespaced_pod_portforward, "echo", namespace, ports=str(port)
    )
    try:
        conn = over_websocket.socket(port)
        conn.setblocking(True)
        conn.settimeout(20)
        conn.sendall(b"via websocket")
        assert portforward.read_exactly(conn, len(b"via websocket")) == b"via websocket"
    finally:
        over_websocket.close()


# -- health, past the controller's grace period ---------------------------------------------


def test_the_node_stays_ready_and_untainted_past_the_grace_period(agent: Agent) -> None:
    """The node-lifecycle controller marks a node whose Lease and status went quiet for its
    grace period Unknown and taints it unreachable; this one renews, so it never does. Waits
    for a renewal well past the grace period; Ready never changed meanwhile (its
    lastTransitionTime is still the one it had when the node came up)."""
    first = condition(agent.node(), "Ready")["lastTransitionTime"]
    past = agent.ready_at + timedelta(seconds=GRACE + 10)
    leases = client.CoordinationV1Api(agent.core.api_client)

    def renewed_past_the_grace() -> bool:
        lease = leases.read_namespaced_lease(agent.name, "kube-node-lease")
        return bool(lease.spec.renew_time > past)

    wait_for("a Lease renewal past the grace period", renewed_past_the_grace, GRACE + 60, agent)
    node = agent.node()
    assert condition(node, "Ready")["status"] == "True"
    assert condition(node, "Ready")["lastTransitionTime"] == first
    assert not (node.get("spec") or {}).get("taints")
