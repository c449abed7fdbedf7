"""Elastic PyTorch end to end: examples/pytorch/elastic scaled up and down while it trains.

The example as shipped (a PersistentVolumeClaim for the checkpoints and a PyTorchJob of 2 to 3
Workers running torchrun with the c10d rendezvous) runs on both planes (tests/e2e/conftest.py;
on the real one the claim binds one of the PersistentVolumes an administrator made). The test
plays the user or an autoscaler: once the log shows training at world size 2, it scales the
Workers to 3 through the PyTorchJob's scale subresource, and once the log shows world size 3,
back to 2 by editing ``spec.pytorchReplicaSpecs.Worker.replicas``. Each change makes torchrun's
agents restart their worker group with the new world size, which resumes from the shared
checkpoint; the Worker pods that stay are never recreated or restarted, and the job succeeds.

Everything is read back through the API: the job, its scale, pods, services and pod logs. The
logs are kept as they were last seen, so a pod removed by the scale-down still counts.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from kubetrain import kube
from kubetrain.operator import hostports
from kubetrain.operator.jobs import reasons
from tests.apiserver.cascade import eventually, run
from tests.integration.operator.jobs_fixtures import (
    PODS,
    PYTORCHJOBS,
    SERVICES,
    condition,
    get,
    wait_condition,
)

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE = REPOSITORY / "examples" / "pytorch" / "elastic" / "pytorchjob-elastic.yaml"
CLAIMS = kube.Resource("", "v1", "persistentvolumeclaims", kind="PersistentVolumeClaim")
JOB = "pytorch-elastic"
EPOCHS = 20  # fewer than the example's 30, which leave a person time to scale it by hand
STEP_TIMEOUT = 60.0  # seconds for one step: torch starts slowly on two busy cores
LOG_POLL = 0.5  # seconds between reads of the logs
EPOCH_LINE = re.compile(r"^epoch (\d+)/(\d+) world size (\d+) ", re.MULTILINE)
RESUMED_LINE = re.compile(
    r"^rank (\d+): world size (\d+), resuming at epoch (\d+)/\d+ \(restart (\d+)\)", re.MULTILINE
)


def worker(index: int) -> str:
    return f"{JOB}-worker-{index}"


def example(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The example's claim and job in ``namespace``, training :data:`EPOCHS` epochs. The job's
    command paths are relative to the repository, so its containers run there whatever
    directory pytest runs in."""
    documents = list(yaml.safe_load_all(EXAMPLE.read_text(encoding="utf-8")))
    claim = next(d for d in documents if d["kind"] == "PersistentVolumeClaim")
    job = next(d for d in documents if d["kind"] == "PyTorchJob")
    for document in (claim, job):
        document["metadata"]["namespace"] = namespace
    for container in job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]:
        container["workingDir"] = str(REPOSITORY)
        epochs = [a for a in container["command"] if a.startswith("--epochs=")]
        assert epochs, container["command"]  # the example's knob this test relies on
        container["command"][container["command"].index(epochs[0])] = f"--epochs={EPOCHS}"
    return claim, job


class Logs:
    """Every Worker's log as last read, pod by pod (a pod scaled away keeps its last text)."""

    def __init__(self, client: kube.Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.text: dict[str, str] = {}

    async def refresh(self) -> None:
        listed = await self.client.list(PODS, namespace=self.namespace)
        for pod in listed.get("items") or []:
            name = pod["metadata"]["name"]
            if not (pod.get("status") or {}).get("containerStatuses"):
                continue  # not started: no log yet
            path = PODS.path(self.namespace, name, "log")
            try:
                async with self.client.stream(path, query={"container": "pytorch"}) as lines:
                    text = "\n".join([line.decode(errors="replace") async for line in lines])
            except kube.NotFound:
                continue  # deleted meanwhile: keep what was read before
            self.text[name] = text

    def epochs(self) -> dict[int, int]:
        """World size by epoch, from rank 0's lines in any pod (the last one printed wins)."""
        found: dict[int, int] = {}
        for text in self.text.values():
            for epoch, _, world in EPOCH_LINE.findall(text):
                found[int(epoch)] = int(world)
        return found

    def resumed(self, pod: str) -> list[tuple[int, int, int, int]]:
        """(rank, world size, first epoch, restart count) each time ``pod`` started training."""
        found = RESUMED_LINE.findall(self.text.get(pod, ""))
        return [(int(r), int(w), int(e), int(n)) for r, w, e, n in found]

    def dump(self) -> str:
        return "\n".join(f"--- {pod}\n{text[-3000:]}" for pod, text in sorted(self.text.items()))

    async def until(self, check: Callable[[], Any], what: str) -> Any:
        """Re-read the logs every :data:`LOG_POLL` seconds (whole logs: not too often, on two
        cores shared with the training) until ``check()`` holds; fail with the logs."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STEP_TIMEOUT
        while True:
            await self.refresh()
            found = check()
            if found:
                return found
            if loop.time() > deadline:
                raise AssertionError(f"within {STEP_TIMEOUT:.0f}s: {what}\n{self.dump()}")
            await asyncio.sleep(LOG_POLL)


def env_of(pod: Mapping[str, Any]) -> dict[str, str]:
    container = pod["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def restart_count(pod: Mapping[str, Any]) -> int:
    return sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses") or [])


def world_sizes_in_epoch_order(epochs: Mapping[int, int]) -> list[int]:
    """The world sizes the epochs ran with, each run of equal sizes told once: [2, 3, 2]."""
    sizes: list[int] = []
    for epoch in sorted(epochs):
        if not sizes or sizes[-1] != epochs[epoch]:
            sizes.append(epochs[epoch])
    return sizes


def test_an_elastic_pytorchjob_scaled_up_and_down_while_training_resumes_and_succeeds(
    torch_installed: None, kubeconfig: str, namespace: str
) -> None:
    claim, job = example(namespace)

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            logs = Logs(client, namespace)
            await client.create(CLAIMS, claim, namespace=namespace)
            await client.create(PYTORCHJOBS, job, namespace=namespace)

            # 2 Workers train.
            await logs.until(lambda: 2 in logs.epochs().values(), "an epoch at world size 2")
            first = {i: await get(client, PODS, namespace, worker(i)) for i in (0, 1)}
            assert all(first.values()), first
            assert await get(client, PODS, namespace, worker(2)) is None

            # Scale to 3, as `kubectl scale` or an autoscaler does.
            await client.patch(
                PYTORCHJOBS,
                JOB,
                {"spec": {"replicas": 3}},
                namespace=namespace,
                subresource="scale",
            )
            scaled = await get(client, PYTORCHJOBS, namespace, JOB)
            assert scaled is not None
            assert scaled["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3

            async def third_pod() -> dict[str, Any] | None:
                return await get(client, PODS, namespace, worker(2))

            joined = await eventually(third_pod, "the third Worker's pod", timeout=STEP_TIMEOUT)
            # It meets the others at worker 0's rendezvous port, with the same elastic env.
            service = await get(client, SERVICES, namespace, worker(0))
            assert service is not None
            port = hostports.recorded(service)
            assert env_of(joined)["PET_RDZV_ENDPOINT"] == f"{worker(0)}:{port}", env_of(joined)
            assert env_of(joined) == env_of(first[0])
            assert env_of(joined)["PET_NNODES"] == "2:3"

            await logs.until(
                lambda: any(w == 3 for _, w, _, _ in logs.resumed(worker(2))),
                "the third Worker training at world size 3",
            )
            await logs.until(lambda: 3 in logs.epochs().values(), "an epoch at world size 3")
            resumed_at = [e for _, w, e, _ in logs.resumed(worker(2)) if w == 3]
            assert min(resumed_at) > 1, logs.dump()  # from the checkpoint, not from scratch

            async def scale_shows_three() -> dict[str, Any] | None:
                scale = await client.get(PYTORCHJOBS, JOB, namespace=namespace, subresource="scale")
                return scale if scale["status"].get("replicas") == 3 else None

            scale = await eventually(scale_shows_three, "3 active in the scale", timeout=30)
            assert scale["spec"]["replicas"] == 3
            assert f"training.kubeflow.org/job-name={JOB}" in scale["status"]["selector"]

            # Back to 2, by editing the job.
            before_down = max(logs.epochs())
            patch = {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}}
            await client.patch(PYTORCHJOBS, JOB, patch, namespace=namespace)

            async def third_gone() -> bool:
                pod = await get(client, PODS, namespace, worker(2))
                return pod is None and await get(client, SERVICES, namespace, worker(2)) is None

            await eventually(third_gone, "the third Worker's pod and service deleted", timeout=30)
            await logs.until(
                lambda: any(e > before_down and w == 2 for e, w in logs.epochs().items()),
                "an epoch at world size 2 after the scale-down",
            )

            await wait_condition(
                client, PYTORCHJOBS, namespace, JOB, "Succeeded", timeout=STEP_TIMEOUT
            )
            finished = await get(client, PYTORCHJOBS, namespace, JOB)
            succeeded = condition(finished, "Succeeded")
            assert succeeded is not None
            assert succeeded["reason"] == reasons.reason("PyTorchJob", reasons.SUCCEEDED)
            assert condition(finished, "Failed") is None, finished
            await logs.refresh()
            epochs = logs.epochs()
            # Every epoch ran; one whose checkpoint was written just before a change of the
            # world size may have gone unprinted.
            assert max(epochs) == EPOCHS, logs.dump()
            assert len(epochs) >= EPOCHS - 2, logs.dump()
            assert world_sizes_in_epoch_order(epochs) == [2, 3, 2], epochs
            assert any(f"done: {EPOCHS} epochs" in text for text in logs.text.values())

            # The Workers that stayed are the pods they were, never restarted: every change of
            # the world size happened inside torchrun.
            for index, pod in first.items():
                now = await get(client, PODS, namespace, worker(index))
                assert now is not None
                assert now["metadata"]["uid"] == pod["metadata"]["uid"]
                assert restart_count(now) == 0, now["status"]

    run(body())
