"""Fixtures for the command line's tests: the real ``kubetrain`` binary run as a subprocess
against the session's API server (tests/fixtures), and a stand-in for the
operator and the node.

The operator and the node agent are not part of these tests: a test does what they would do
through the API (creates a job's pods with the labels the operator puts on them, patches pod
and job status), so each test decides exactly what the command line sees. Logs come from the
fake kubelet-shaped node of tests/apiserver/test_pod_log_exec.py, which the API server
proxies ``pods/log`` to; those tests need the local control plane started by the session.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.apiserver import test_pod_log_exec as fake_nodes

# Found by name: the fake node (module-scoped) and its Node object.
local_home = fake_nodes.local_home
fake_node = fake_nodes.fake_node
node = fake_nodes.node

CLI_TIMEOUT = 60.0
NO_SCHEDULER = fake_nodes.NO_SCHEDULER
OPERATOR_NAMES = {"PyTorchJob": "pytorchjob-controller", "TFJob": "tfjob-controller"}
PLURALS = {"PyTorchJob": "pytorchjobs", "TFJob": "tfjobs"}

Cli = Callable[..., subprocess.CompletedProcess[str]]


def cli_env(kubeconfig: str, home: Path) -> dict[str, str]:
    """The environment of a ``kubetrain`` child: the target from KUBETRAIN_KUBECONFIG, and a
    private KUBETRAIN_HOME so that no test can reach (or start) a developer's control plane."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBETRAIN_KUBECONFIG")}
    env["KUBETRAIN_KUBECONFIG"] = kubeconfig
    env["KUBETRAIN_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "200"
    return env


@pytest.fixture
def cli_home(tmp_path: Path) -> Path:
    return tmp_path / "kubetrain-home"


@pytest.fixture
def kt(kubeconfig: str, namespace: str, cli_home: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Runs ``kubetrain ARGS`` against the test API server, in the test's namespace unless
    ``namespaced=False``: ``kt("list", "-o", "json")``.

    ``binary=True`` runs the real ``python -m kubetrain`` as a child process. Otherwise the
    same entry point runs in this process (``kubetrain.cli.main.main`` with the child's
    environment, stdin and captured output), which spares half a second of interpreter
    start-up per call; each test file still goes through the binary where it matters.
    """

    def run(
        *args: str,
        input: str | None = None,
        timeout: float = CLI_TIMEOUT,
        namespaced: bool = True,
        binary: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        if namespaced:
            env_ns = ["-n", namespace]
            if "--" in args:  # options go before the command of `submit`
                cut = args.index("--")
                args = (*args[:cut], *env_ns, *args[cut:])
            else:
                args = (*args, *env_ns)
        env = cli_env(kubeconfig, cli_home)
        if binary:
            return subprocess.run(
                [sys.executable, "-m", "kubetrain", *args],
                input=input,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
            )
        return in_process(list(args), env, input, monkeypatch)

    return run


def in_process(
    args: list[str], env: dict[str, str], input: str | None, monkeypatch: pytest.MonkeyPatch
) -> subprocess.CompletedProcess[str]:
    from kubetrain.cli import main

    with monkeypatch.context() as patched:
        for key in ("KUBECONFIG", "KUBETRAIN_KUBECONFIG", "KUBETRAIN_HOME"):
            patched.delenv(key, raising=False)
        for key in ("KUBETRAIN_KUBECONFIG", "KUBETRAIN_HOME"):
            patched.setenv(key, env[key])
        patched.setattr(sys, "stdin", io.StringIO(input or ""))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main.main(args)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def stamp(seconds_ago: float = 0) -> str:
    return (datetime.now(timezone.utc) - timedelta(seconds=seconds_ago)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def pytorchjob(name: str, workers: int = 1, *, master: bool = True) -> dict[str, Any]:
    def replica(count: int) -> dict[str, Any]:
        container = {"name": "pytorch", "image": "example/train:1", "command": ["python", "t.py"]}
        container["resources"] = {"requests": {"cpu": "500m", "memory": "1Gi"}}
        return {"replicas": count, "template": {"spec": {"containers": [container]}}}

    specs = {"Worker": replica(workers)}
    if master:
        specs = {"Master": replica(1), **specs}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": specs},
    }


@dataclass
class Operator:
    """Does through the API what the operator and the node would do for a job."""

    core: client.CoreV1Api
    custom: client.CustomObjectsApi
    namespace: str

    def job(self, kind: str, name: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(
            "kubeflow.org", "v1", self.namespace, PLURALS[kind], name
        )

    def pod(
        self,
        job: str,
        rtype: str,
        index: int,
        *,
        kind: str = "PyTorchJob",
        node: str | None = None,
        container: str = "pytorch",
    ) -> str:
        """Creates the pod the operator would create for replica ``rtype``-``index``."""
        name = f"{job}-{rtype.lower()}-{index}"
        spec: dict[str, Any] = {
            "containers": [
                {
                    "name": container,
                    "image": "example/train:1",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ]
        }
        if node:
            spec["nodeName"] = node
        else:
            spec["schedulerName"] = NO_SCHEDULER
        labels = {
            "training.kubeflow.org/job-name": job,
            "training.kubeflow.org/operator-name": OPERATOR_NAMES[kind],
            "training.kubeflow.org/replica-type": rtype.lower(),
            "training.kubeflow.org/replica-index": str(index),
        }
        self.core.create_namespaced_pod(
            self.namespace,
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
             "spec": spec},
        )  # fmt: skip
        return name

    def pod_status(
        self,
        pod: str,
        phase: str,
        *,
        container: str = "pytorch",
        exit_code: int | None = None,
        restarts: int = 0,
    ) -> None:
        state: dict[str, Any] = {"running": {"startedAt": stamp(5)}}
        if exit_code is not None:
            reason = "Completed" if exit_code == 0 else "Error"
            state = {"terminated": {"exitCode": exit_code, "reason": reason,
                                    "startedAt": stamp(5), "finishedAt": stamp()}}  # fmt: skip
        if phase == "Pending":
            state = {"waiting": {"reason": "ContainerCreating"}}
        running = phase == "Running"
        container_status = {
            "name": container,
            "state": state,
            "restartCount": restarts,
            "ready": running,
            "started": running,
            "image": "example/train:1",
            "imageID": "",
        }
        status = {"phase": phase, "startTime": stamp(5), "containerStatuses": [container_status]}
        self.core.patch_namespaced_pod_status(pod, self.namespace, {"status": status})

    def conditions(
        self, kind: str, name: str, *types: str, reason: str = "", message: str = "", **status: Any
    ) -> None:
        """Sets the job's conditions: each of ``types`` True, in that order."""
        conditions = [
            {"type": t, "status": "True", "reason": reason or f"{kind}{t}",
             "message": message or f"{kind} {name} is {t.lower()}.",
             "lastUpdateTime": stamp(), "lastTransitionTime": stamp()}
            for t in types
        ]  # fmt: skip
        body = {"status": {"conditions": conditions, **status}}
        self.custom.patch_namespaced_custom_object_status(
            "kubeflow.org", "v1", self.namespace, PLURALS[kind], name, body
        )

    def event(self, involved_kind: str, name: str, reason: str, message: str) -> None:
        self.core.create_namespaced_event(
            self.namespace,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"generateName": f"{name}."},
                "involvedObject": {
                    "kind": involved_kind,
                    "name": name,
                    "namespace": self.namespace,
                },
                "reason": reason,
                "message": message,
                "type": "Normal",
                "firstTimestamp": stamp(),
                "lastTimestamp": stamp(),
                "count": 1,
                "source": {"component": "pytorchjob-controller"},
            },
        )


@pytest.fixture
def operator(core: client.CoreV1Api, custom: client.CustomObjectsApi, namespace: str) -> Operator:
    return Operator(core, custom, namespace)


@pytest.fixture
def job_file(tmp_path: Path) -> Callable[[dict[str, Any]], str]:
    import yaml

    def write(manifest: dict[str, Any]) -> str:
        path = tmp_path / f"{manifest['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(manifest), encoding="utf-8")
        return str(path)

    return write


@dataclass
class Child:
    """A long-running ``kubetrain`` (``logs -f``, ``run``, ``wait``) and its output so far."""

    process: subprocess.Popen[bytes]
    out: fake_nodes.Output
    err: fake_nodes.Output

    def exit_code(self, timeout: float = CLI_TIMEOUT) -> int:
        return self.process.wait(timeout=timeout)

    def ended(self, timeout: float = CLI_TIMEOUT) -> tuple[int, str, str]:
        """Waits for the exit and for both streams to close; (status, stdout, stderr)."""
        code = self.process.wait(timeout=timeout)
        self.out.wait_closed(timeout)
        self.err.wait_closed(timeout)
        return code, self.out.text, self.err.text


class Output(fake_nodes.Output):
    def wait_closed(self, timeout: float) -> None:
        self._thread.join(timeout)
        while not self._chunks.empty():
            self.text += self._chunks.get().decode()


Spawn = Callable[..., Child]


@pytest.fixture
def spawn(kubeconfig: str, cli_home: Path, namespace: str) -> Iterator[Spawn]:
    """Starts ``python -m kubetrain ARGS -n <test namespace>`` in the background."""
    children: list[subprocess.Popen[bytes]] = []

    def start(*args: str, **popen: Any) -> Child:
        process = subprocess.Popen(
            [sys.executable, "-m", "kubetrain", *args, "-n", namespace],
            stdout=popen.pop("stdout", subprocess.PIPE),
            stderr=popen.pop("stderr", subprocess.PIPE),
            env=cli_env(kubeconfig, cli_home),
            **popen,
        )
        children.append(process)
        out = Output(process.stdout) if process.stdout else None
        err = Output(process.stderr) if process.stderr else None
        return Child(process, out, err)  # type: ignore[arg-type]

    try:
        yield start
    finally:
        for process in children:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
