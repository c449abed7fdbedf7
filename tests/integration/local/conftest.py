"""Fixtures for the node agent's integration tests: the session's local control plane (from
tests/fixtures), and a node agent run in-process beside it with short back-off
timings and a temporary root.

Pods are created with ``spec.nodeName`` set (no scheduler needed) and run for real, as
processes of this machine; every process a test leaves behind is removed when the session's
agent stops. The agent must serve a certificate from the control plane's CA and be reached by
it, so these tests run against the local control plane only, and skip when
``KUBETRAIN_TEST_KUBECONFIG`` names another API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from kubetrain import kube
from kubetrain.kube import watch
from kubetrain.local.node import agent, runtime, settings
from tests.fixtures.waits import wait_for

START_TIMEOUT = 60.0
BACKOFF_INITIAL = 0.25
BACKOFF_MAX = 2.0


def node_settings(kubeconfig: str, root: Path, name: str) -> settings.Settings:
    """Settings for a test node on the local control plane of ``kubeconfig``."""
    home = Path(kubeconfig).parent
    token = yaml.safe_load(Path(kubeconfig).read_text())["users"][0]["user"]["token"]
    return settings.Settings(
        root=str(root),
        name=name,
        ca_cert=str(home / "pki" / "ca.crt"),
        ca_key=str(home / "pki" / "ca.key"),
        token=token,
        gpus=2,  # pretend: CUDA_VISIBLE_DEVICES shows what a pod was given
        backoff_initial=BACKOFF_INITIAL,
        backoff_max=BACKOFF_MAX,
        resync=2.0,
        retry_initial=0.1,
        retry_max=1.0,
        orphan_grace=1.0,
        status_interval=5.0,
        lease_renew=1.0,
        watch=watch.Settings(timeout_seconds=60, inactivity=90.0),
        environment=(("PATH", os.environ.get("PATH", "/usr/bin:/bin")),),
    )


def local_only(kubeconfig: str) -> None:
    if os.environ.get("KUBETRAIN_TEST_KUBECONFIG"):
        pytest.skip(
            "a node agent's endpoint must serve a certificate from the API server's CA: only "
            "the local control plane started by the tests is set up for that"
        )


@dataclass
class Node:
    """A node agent running in a thread of the test process, with its own event loop."""

    name: str
    root: Path
    kubeconfig: str
    config: settings.Settings
    isolation: str = ""
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    _thread: threading.Thread | None = None
    _task: asyncio.Task[None] | None = None
    _error: list[BaseException] = field(default_factory=list)

    def start(self) -> None:
        ready = threading.Event()

        async def main() -> None:
            async with await kube.Client.from_kubeconfig(self.kubeconfig) as api:
                node_agent = agent.Agent(api, self.config)
                self.isolation = await asyncio.to_thread(lambda: node_agent.runtime.isolation)
                self._task = asyncio.current_task()
                ready.set()
                await node_agent.run()

        def body() -> None:
            try:
                self._loop.run_until_complete(main())
            except asyncio.CancelledError:
                pass
            except BaseException as exc:  # reported by the fixture
                self._error.append(exc)
            finally:
                ready.set()
                self._loop.close()

        self._thread = threading.Thread(target=body, name=f"node {self.name}", daemon=True)
        self._thread.start()
        ready.wait(START_TIMEOUT)

    def stop(self) -> None:
        if self._task is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._task.cancel)
        if self._thread is not None:
            self._thread.join(30)

    def failed(self) -> BaseException | None:
        return self._error[0] if self._error else None

    def needs_isolation(self) -> None:
        if self.isolation != "namespace":
            pytest.skip(
                "this host gives pods no private mount namespace (needs root or unprivileged "
                "user namespaces), so pod volumes at other paths and /etc/hosts names cannot work"
            )

    def pod_dir(self, uid: str) -> Path:
        return self.root / "pods" / uid


def remove_all(root: Path) -> None:
    """Stop and remove every pod a node left on disk."""

    async def sweep() -> None:
        node_runtime = runtime.Runtime(runtime.Settings(root=str(root)))
        for uid in node_runtime.pods():
            await node_runtime.remove(uid, 0)

    asyncio.run(sweep())


def keep_schedulers_away(core: client.CoreV1Api, name: str) -> None:
    """Taint a test node so that no scheduler tested in the same session places pods on it;
    the tests' own pods name it in ``spec.nodeName`` and need no scheduling."""
    taint = {"key": "kubetrain.io/test-node", "value": "true", "effect": "NoSchedule"}
    core.patch_node(name, {"spec": {"taints": [taint]}})


def node_ready(core: client.CoreV1Api, name: str) -> bool:
    try:
        node = core.read_node(name)
    except ApiException:
        return False
    return any(
        c.type == "Ready" and c.status == "True"
        for c in (node.status and node.status.conditions) or []
    )


@contextlib.contextmanager
def running_node(
    core: client.CoreV1Api, kubeconfig: str, root: Path, name: str, config: settings.Settings
) -> Iterator[Node]:
    """A node agent with ``config``, registered and Ready for the block; removed after it."""
    handle = Node(name, root, kubeconfig, config)
    handle.start()
    try:
        wait_for(lambda: node_ready(core, name) or handle.failed(), timeout=START_TIMEOUT)
        if handle.failed():
            raise AssertionError(f"the node agent failed: {handle.failed()!r}")
        keep_schedulers_away(core, name)
        yield handle
    finally:
        handle.stop()
        remove_all(root)
        with contextlib.suppress(ApiException):
            core.delete_node(name)


@pytest.fixture(scope="session")
def node(
    kubeconfig: str, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Node]:
    """The session's node agent, registered and Ready."""
    local_only(kubeconfig)
    root = tmp_path_factory.mktemp("node")
    name = "kt-node-" + secrets.token_hex(3)
    with running_node(core, kubeconfig, root, name, node_settings(kubeconfig, root, name)) as n:
        yield n


# -- pods -----------------------------------------------------------------------------------------


def container(name: str, command: list[str], **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "python:3", "command": command, **fields}


def python(code: str) -> list[str]:
    """A command running ``code`` with the node's python3 (kubetrain's environment)."""
    return ["python3", "-c", code]


def make_pod(
    core: client.CoreV1Api,
    namespace: str,
    name: str,
    node: Node,
    *containers: dict[str, Any],
    restart: str = "Never",
    **spec: Any,
) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node.name,
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 5,
            "containers": list(containers),
            **spec,
        },
    }
    created = core.create_namespaced_pod(namespace, body)
    return {"name": name, "uid": created.metadata.uid}


def pod_json(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    """The pod as plain JSON (field names as the API writes them)."""
    pod = client.CoreV1Api(api).read_namespaced_pod(name, namespace)
    return dict(api.sanitize_for_serialization(pod))


def wait_pod(
    api: client.ApiClient,
    namespace: str,
    name: str,
    condition: Callable[[dict[str, Any]], Any],
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Poll the pod until ``condition(pod)`` holds; returns the pod."""
    seen: list[dict[str, Any]] = []

    def check() -> bool:
        pod = pod_json(api, namespace, name)
        seen[:] = [pod]
        return bool(condition(pod))

    try:
        wait_for(check, timeout=timeout)
    except pytest.fail.Exception:
        status = seen[0].get("status") if seen else None
        pytest.fail(f"pod {namespace}/{name} did not get there in {timeout}s; status: {status}")
    return seen[0]


def phase_is(*phases: str) -> Callable[[dict[str, Any]], bool]:
    return lambda pod: (pod.get("status") or {}).get("phase") in phases


def container_status(pod: dict[str, Any], name: str) -> dict[str, Any]:
    status = pod.get("status") or {}
    for entry in [*status.get("initContainerStatuses", []), *status.get("containerStatuses", [])]:
        if entry["name"] == name:
            return dict(entry)
    raise AssertionError(f"no status for container {name}: {status}")


def events_of(core: client.CoreV1Api, namespace: str, pod: str) -> list[Any]:
    events = core.list_namespaced_event(namespace).items
    return [e for e in events if e.involved_object.name == pod]
