"""A node agent killed with SIGKILL and started again (``kubetrain node`` on the same root)
adopts what it left: every running pod keeps exactly one copy, a pod that finished meanwhile is
reported, and a pod deleted meanwhile has its processes stopped and its directory removed."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests import processes
from tests.integration.local.conftest import (
    BACKOFF_INITIAL,
    BACKOFF_MAX,
    Node,
    container,
    container_status,
    keep_schedulers_away,
    local_only,
    make_pod,
    node_ready,
    node_settings,
    phase_is,
    python,
    remove_all,
    wait_for,
    wait_pod,
)

# Each run notes its pid, then runs until killed; `finisher` ends once told to.
STEADY = "import os, sys, time; open(sys.argv[1], 'a').write(f'{os.getpid()}\\n'); time.sleep(600)"
FINISHER = (
    "import os, sys, time\n"
    "open(sys.argv[1], 'a').write(f'{os.getpid()}\\n')\n"
    "while not os.path.exists(sys.argv[1] + '.go'): time.sleep(0.05)\n"
)


class AgentProcess:
    """``kubetrain node`` as a child process, its output in a file."""

    def __init__(self, kubeconfig: str, root: Path, name: str, log: Path) -> None:
        self.command = [
            sys.executable,
            "-m",
            "kubetrain",
            "node",
            "--kubeconfig",
            kubeconfig,
            "--name",
            name,
            "--root",
            str(root),
            "--gpus",
            "0",
            "--backoff-initial",
            str(BACKOFF_INITIAL),
            "--backoff-max",
            str(BACKOFF_MAX),
        ]
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                self.command, stdout=out, stderr=subprocess.STDOUT, env=env
            )

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            processes.stop(self.process, timeout=15)


@pytest.fixture
def agent_process(
    kubeconfig: str, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[AgentProcess, Node]]:
    local_only(kubeconfig)
    root = tmp_path_factory.mktemp("node-restart")
    name = "kt-restart-" + secrets.token_hex(3)
    agent = AgentProcess(kubeconfig, root, name, root.parent / f"{name}.log")
    handle = Node(name, root, kubeconfig, node_settings(kubeconfig, root, name))
    agent.start()
    try:
        wait_for(lambda: node_ready(core, name), timeout=60)
        keep_schedulers_away(core, name)
        yield agent, handle
    finally:
        agent.stop()
        print(agent.log.read_text(errors="replace")[-6000:])  # shown when the test failed
        remove_all(root)
        with contextlib.suppress(ApiException):
            core.delete_node(name)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def runs(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_a_restarted_agent_adopts_its_pods(
    core: client.CoreV1Api,
    api_client: client.ApiClient,
    agent_process: tuple[AgentProcess, Node],
    namespace: str,
    tmp_path: Path,
) -> None:
    agent, node = agent_process
    volume = [{"name": "out", "hostPath": {"path": str(tmp_path)}}]
    mount = [{"name": "out", "mountPath": str(tmp_path)}]
    uids = {}
    for name, code, restart in (
        ("steady-0", STEADY, "Always"),
        ("steady-1", STEADY, "Always"),
        ("finisher", FINISHER, "Never"),
        ("doomed", STEADY, "Always"),
    ):
        made = make_pod(
            core,
            namespace,
            name,
            node,
            container("main", [*python(code), str(tmp_path / name)], volumeMounts=mount),
            restart=restart,
            volumes=volume,
        )
        uids[name] = made["uid"]
    for name in uids:
        wait_pod(api_client, namespace, name, phase_is("Running"))
        wait_for(lambda name=name: runs(tmp_path / name))
    before = {name: runs(tmp_path / name) for name in uids}

    agent.kill()
    assert all(alive(pids[0]) for pids in before.values()), "pods must outlive their agent"
    (tmp_path / "finisher.go").write_text("")
    core.delete_namespaced_pod("doomed", namespace, grace_period_seconds=0)
    wait_for(lambda: not alive(before["finisher"][0]))
    agent.start()

    pod = wait_pod(api_client, namespace, "finisher", phase_is("Succeeded"), timeout=30)
    assert container_status(pod, "main")["state"]["terminated"]["reason"] == "Completed"
    wait_for(lambda: not alive(before["doomed"][0]), timeout=20)
    wait_for(lambda: not node.pod_dir(uids["doomed"]).exists(), timeout=20)
    for name in ("steady-0", "steady-1"):
        pod = wait_pod(api_client, namespace, name, phase_is("Running"))
        entry = container_status(pod, "main")
        assert (entry["restartCount"], entry["ready"]) == (0, True)
        assert runs(tmp_path / name) == before[name], f"{name} was started a second time"
        assert alive(before[name][0])
    # the adopted containers are still watched: an exit is noticed and restarted
    os.kill(before["steady-0"][0], signal.SIGKILL)
    wait_pod(
        api_client,
        namespace,
        "steady-0",
        lambda p: (
            container_status(p, "main")["restartCount"] == 1
            and "running" in container_status(p, "main")["state"]
        ),
        timeout=20,
    )
    wait_for(lambda: len(runs(tmp_path / "steady-0")) == 2)
