"""Fixtures for the SDK's integration tests: the session's API server, a fresh namespace per
test, and the operator's controllers (TrainJob and v1) running in a thread beside a test that
uses the SDK as its users do, synchronously.

No scheduler runs and, except in the node agent's test, no node: the test does what they
would through the API. Runtimes are namespaced TrainingRuntimes made from
``deploy/runtimes``, so each test has its own ``torch-distributed``; their pods name a
scheduler nobody runs, and a test binds them itself where it needs them on a node.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from kubetrain import _aio, kube
from kubetrain.operator.jobs import setup as jobs_setup
from kubetrain.operator.jobs.settings import Settings as JobsSettings
from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import kinds
from kubetrain.operator.trainjob import setup as trainjob_setup
from kubetrain.sdk import KubernetesBackendConfig, TrainerClient, TrainingClient
from tests.apiserver.cascade import eventually
from tests.integration.operator import trainjob_fixtures

T = TypeVar("T")
START_TIMEOUT = 30.0
NO_SCHEDULER = "kubetrain-sdk-test-nobody"  # no scheduler binds pods that name it
STARTED = trainjob_fixtures.STARTED


def training_runtime(
    file: str, *, name: str | None = None, scheduler: str | None = NO_SCHEDULER
) -> dict[str, Any]:
    """A built-in runtime as a TrainingRuntime of the test's namespace (named as the file's
    unless ``name``), whose pods name ``scheduler``."""
    doc = copy.deepcopy(trainjob_fixtures.builtin_runtime(file, "x"))
    doc["kind"] = "TrainingRuntime"
    doc["metadata"]["name"] = name or file.removesuffix(".yaml").replace("_", "-")
    if scheduler:
        for rjob in doc["spec"]["template"]["spec"]["replicatedJobs"]:
            rjob["template"]["spec"]["template"]["spec"]["schedulerName"] = scheduler
    return doc


async def pod_status(
    client: kube.Client,
    namespace: str,
    pod: str,
    phase: str,
    container: str,
    exit_code: int | None,
) -> None:
    state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
    if phase == "Running":
        state = {"running": {"startedAt": STARTED}}
    elif phase in ("Succeeded", "Failed"):
        code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
        reason = "Completed" if code == 0 else "Error"
        state = {"terminated": {"exitCode": code, "reason": reason, "finishedAt": STARTED}}
    running = phase == "Running"
    status = {
        "phase": phase,
        "startTime": STARTED,
        "conditions": [{"type": "Ready", "status": "True" if running else "False"}],
        "containerStatuses": [
            {
                "name": container,
                "ready": running,
                "restartCount": 0,
                "image": "example",
                "imageID": "",
                "state": state,
            }
        ],
    }
    await client.patch(
        kinds.PODS, pod, {"status": status}, namespace=namespace, subresource="status"
    )


class Cluster:
    """The operator's controllers on an event loop in a thread, and a client on that loop for
    what a test does in the place of the scheduler and the node."""

    def __init__(self, kubeconfig: str, settings: manager.Settings) -> None:
        self.kubeconfig = kubeconfig
        self.settings = settings
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="sdk-test-operator", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._client: kube.Client | None = None
        self._error: list[BaseException] = []

    def _main(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported by the fixture
            self._error.append(exc)
        finally:
            self._ready.set()
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with await kube.Client.from_kubeconfig(self.kubeconfig) as client:
            self._client = client
            m = manager.Manager(client, self.settings)
            trainjob_setup.setup(m, trainjob_setup.Settings(workers=2))
            jobs_setup.setup(m, JobsSettings())
            async with _aio.TaskGroup() as group:
                task = group.create_task(m.run(), name="manager")
                self._ready.set()
                await self._stop.wait()
                task.cancel()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(START_TIMEOUT)
        if self._error:
            raise AssertionError(f"the operator did not start: {self._error[0]!r}")

    def stop(self) -> None:
        if self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def run(self, work: Callable[[kube.Client], Awaitable[T]], timeout: float = 60) -> T:
        """Run ``work(client)`` on the operator's loop; returns its result."""
        assert self._client is not None
        client = self._client

        async def call() -> T:
            return await work(client)

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(timeout)

    # -- what the scheduler and the node would do --------------------------------------------

    def wait_pods(self, namespace: str, names: set[str], timeout: float = 20) -> dict[str, Any]:
        return self.run(
            lambda c: trainjob_fixtures.wait_pods(c, namespace, names, timeout=timeout),
            timeout + 5,
        )

    def set_phase(
        self,
        namespace: str,
        pod: str,
        phase: str,
        *,
        container: str = "node",
        exit_code: int | None = None,
    ) -> None:
        """Write a pod's status as a kubelet would: phase, Ready, the container's state."""
        self.run(lambda c: pod_status(c, namespace, pod, phase, container, exit_code))

    def bind(self, namespace: str, pod: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self.run(
            lambda c: c.create(
                kinds.PODS, body, namespace=namespace, name=pod, subresource="binding"
            )
        )

    def create(self, resource: kube.Resource, body: dict[str, Any], namespace: str) -> None:
        self.run(lambda c: c.create(resource, body, namespace=namespace))

    def eventually(self, check: Callable[[kube.Client], Awaitable[Any]], what: str) -> Any:
        return self.run(lambda c: eventually(lambda: check(c), what))


@pytest.fixture
def cluster(
    kubeconfig: str, manager_settings: Callable[..., manager.Settings]
) -> Iterator[Cluster]:
    """The operator's controllers for this test's namespace, running beside it."""
    handle = Cluster(kubeconfig, manager_settings())
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def trainer_client(kubeconfig: str, namespace: str) -> Iterator[TrainerClient]:
    client = TrainerClient(KubernetesBackendConfig(namespace=namespace, config_file=kubeconfig))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def training_client(kubeconfig: str, namespace: str) -> Iterator[TrainingClient]:
    client = TrainingClient(config_file=kubeconfig, namespace=namespace)
    try:
        yield client
    finally:
        client.close()
