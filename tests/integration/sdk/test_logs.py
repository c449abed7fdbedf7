"""get_job_logs reads a step's log through the API server from the node the step runs on; with
follow it waits for the step to start and hands over each line as the node writes it.

The node is the fake kubelet-shaped endpoint of tests/apiserver/test_pod_log_exec.py: every
container's log is five lines, ``<container> line <i>``, and a follow gets the last two only
once the test releases them. It must be reached by the API server with a certificate from its
CA, so these tests need the local control plane the tests start.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import pytest

from kubetrain.operator.trainjob import kinds
from kubetrain.sdk import CustomTrainer, NotFoundError, TrainerClient
from tests.apiserver import test_pod_log_exec as fake_nodes
from tests.integration.sdk.conftest import Cluster, training_runtime

# Found by name: the fake node (module-scoped) and its Node object.
local_home = fake_nodes.local_home
fake_node = fake_nodes.fake_node
node = fake_nodes.node

LINES = [f"node line {i}" for i in range(1, fake_nodes.LINES + 1)]
SHOWN_BEFORE_RELEASE = fake_nodes.LINES - fake_nodes.HELD_BACK


def hello() -> None:
    print("hello")


@pytest.fixture
def job(cluster: Cluster, trainer_client: TrainerClient, namespace: str) -> str:
    """A two-node TrainJob whose pods exist and are not yet on a node."""
    cluster.create(kinds.TRAINING_RUNTIMES, training_runtime("torch_distributed.yaml"), namespace)
    name = trainer_client.train(trainer=CustomTrainer(func=hello, num_nodes=2))
    cluster.wait_pods(namespace, {f"{name}-node-0-0", f"{name}-node-0-1"})
    return name


def start(cluster: Cluster, namespace: str, pod: str, node: str) -> None:
    """What the scheduler and the node would do: bind the pod, run its container."""
    cluster.bind(namespace, pod, node)
    cluster.set_phase(namespace, pod, "Running")


def collect(lines: Iterator[str]) -> queue.Queue[str | None]:
    """Lines as the iterator yields them, None at its end, from a thread of their own."""
    out: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        try:
            for line in lines:
                out.put(line)
        finally:
            out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


def take(out: queue.Queue[str | None], count: int) -> list[str | None]:
    return [out.get(timeout=20) for _ in range(count)]


def test_follow_waits_for_the_step_then_streams_lines_as_they_are_written(
    cluster: Cluster,
    trainer_client: TrainerClient,
    namespace: str,
    job: str,
    node: str,
    fake_node: fake_nodes.FakeNode,
) -> None:
    out = collect(trainer_client.get_job_logs(job, step="node-1", follow=True))
    assert out.empty()  # the step has not started: nothing, and no end either
    start(cluster, namespace, f"{job}-node-0-1", node)
    assert take(out, SHOWN_BEFORE_RELEASE) == LINES[:SHOWN_BEFORE_RELEASE]
    assert out.empty()  # the rest is not written yet, and the stream is still open
    fake_node.release(namespace, f"{job}-node-0-1")
    assert take(out, fake_nodes.HELD_BACK + 1) == [*LINES[SHOWN_BEFORE_RELEASE:], None]
    assert fake_node.seen(f"/containerLogs/{namespace}/{job}-node-0-1/node")["follow"] == ["true"]


def test_without_follow_the_log_is_read_as_it_is(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, job: str, node: str
) -> None:
    assert list(trainer_client.get_job_logs(job, step="node-0")) == []  # not started: no log
    start(cluster, namespace, f"{job}-node-0-0", node)
    assert list(trainer_client.get_job_logs(job)) == LINES  # node-0 by default
    assert list(trainer_client.get_job_logs(job, step="node-7")) == []  # no such step


def test_follow_ends_when_the_job_finishes_without_the_step_starting(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, job: str
) -> None:
    out = collect(trainer_client.get_job_logs(job, step="node-1", follow=True))
    cluster.set_phase(namespace, f"{job}-node-0-0", "Failed", exit_code=1)
    assert take(out, 1) == [None]


def test_logs_of_a_missing_job_fail_at_once(trainer_client: TrainerClient) -> None:
    with pytest.raises(NotFoundError, match=r"TrainJob .*/nope not found"):
        trainer_client.get_job_logs("nope", follow=True)
