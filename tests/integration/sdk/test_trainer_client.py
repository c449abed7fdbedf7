"""TrainerClient against the API server with the TrainJob controller running: submitting a
function, steps and status as pods move, failing fast, runtimes, events, deletion.

Pods do not run here (the test moves them through pods/status); test_node_agent.py runs them
for real, and test_logs.py streams logs from a node.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kubetrain.operator.trainjob import kinds
from kubetrain.sdk import (
    CommandTrainer,
    CustomTrainer,
    InvalidTrainer,
    JobFailedError,
    Name,
    NotFoundError,
    RuntimeKind,
    TrainerClient,
    WaitTimeout,
)
from tests.fixtures.waits import wait_for
from tests.integration.operator import trainjob_fixtures
from tests.integration.sdk.conftest import Cluster, training_runtime

LEARNING_RATE = 0.1


def hello(greeting: str, repeat: int = 1) -> None:
    import os

    for _ in range(repeat):
        print(greeting, os.environ.get("PET_NODE_RANK"))


def not_self_contained() -> float:
    return LEARNING_RATE


def node_pods(name: str, nodes: int = 2) -> set[str]:
    return {f"{name}-node-0-{i}" for i in range(nodes)}


@pytest.fixture
def torch_runtime(cluster: Cluster, namespace: str) -> str:
    """The built-in torch-distributed runtime, as a TrainingRuntime of the test's namespace."""
    cluster.create(kinds.TRAINING_RUNTIMES, training_runtime("torch_distributed.yaml"), namespace)
    return "torch-distributed"


def test_train_submits_a_function_and_reports_steps_until_complete(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, torch_runtime: str
) -> None:
    trainer = CustomTrainer(func=hello, func_args={"greeting": "hi"}, num_nodes=2)
    name = trainer_client.train(trainer=trainer)  # the default runtime: torch-distributed
    pods = cluster.wait_pods(namespace, node_pods(name))

    container = pods[f"{name}-node-0-0"]["spec"]["containers"][0]
    assert container["command"][:5] == ["torchrun", "--no-python", "python3", "-u", "-c"]
    assert container["command"][5].rstrip().endswith("hello(**{'greeting': 'hi'})")
    env = trainjob_fixtures.env_of(pods[f"{name}-node-0-1"])
    assert (env["PET_NNODES"], env["PYTHONUNBUFFERED"]) == ("2", "1")

    job = trainer_client.get_job(name)
    assert (job.name, job.namespace, job.num_nodes, job.status) == (name, namespace, 2, "Created")
    assert job.runtime.name == torch_runtime
    assert job.runtime.kind is RuntimeKind.TRAINING_RUNTIME
    assert [(s.name, s.status, s.pod_name) for s in job.steps] == [
        ("node-0", "Pending", f"{name}-node-0-0"),
        ("node-1", "Pending", f"{name}-node-0-1"),
    ]

    for pod in pods:
        cluster.set_phase(namespace, pod, "Running")
    running = trainer_client.wait_for_job_status(name, {"Running"}, timeout=20, polling_interval=1)
    assert [s.status for s in running.steps] == ["Running", "Running"]

    seen: list[str] = []
    for pod in pods:
        cluster.set_phase(namespace, pod, "Succeeded")
    done = trainer_client.wait_for_job_status(
        name, timeout=20, polling_interval=1, callbacks=[lambda j: seen.append(j.status)]
    )
    assert done.status == "Complete"
    assert seen[-1] == "Complete"
    assert [j.name for j in trainer_client.list_jobs()] == [name]
    assert [j.name for j in trainer_client.list_jobs(runtime=torch_runtime)] == [name]
    assert trainer_client.list_jobs(runtime="another") == []


def test_a_command_trainer_and_a_chosen_name(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, torch_runtime: str
) -> None:
    trainer = CommandTrainer(command=["python3", "train.py"], args=["--epochs", "1"])
    name = trainer_client.train(torch_runtime, trainer=trainer, options=[Name("mine")])
    assert name == "mine"
    pods = cluster.wait_pods(namespace, node_pods(name, 1))
    container = pods["mine-node-0-0"]["spec"]["containers"][0]
    assert (container["command"], container["args"]) == (["python3", "train.py"], ["--epochs", "1"])


def test_wait_fails_within_two_seconds_of_a_failure_with_the_steps_exit_code(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, torch_runtime: str
) -> None:
    name = trainer_client.train(
        trainer=CustomTrainer(func=hello, func_args={"greeting": "x"}, num_nodes=2)
    )
    pods = cluster.wait_pods(namespace, node_pods(name))
    for pod in pods:
        cluster.set_phase(namespace, pod, "Running")
    trainer_client.wait_for_job_status(name, {"Running"}, timeout=20, polling_interval=1)

    waiting = threading.Event()
    outcome: dict[str, Any] = {}

    def wait() -> None:
        try:
            trainer_client.wait_for_job_status(
                name, timeout=60, polling_interval=30, callbacks=[lambda j: waiting.set()]
            )
        except Exception as exc:  # the outcome under test
            outcome["error"], outcome["at"] = exc, time.monotonic()

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert waiting.wait(20), "the waiter never looked at the job"
    failed_at = time.monotonic()
    cluster.set_phase(namespace, f"{name}-node-0-1", "Failed", exit_code=3)
    waiter.join(20)

    error = outcome.get("error")
    assert isinstance(error, JobFailedError), error
    assert isinstance(error, RuntimeError)  # what the Kubeflow SDK raises
    assert outcome["at"] - failed_at < 2.0
    assert (error.step, error.exit_code) == ("node-1", 3)
    assert f"step node-1 (pod {name}-node-0-1) exited with code 3" in str(error)


def test_wait_gives_up_after_its_timeout(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, torch_runtime: str
) -> None:
    name = trainer_client.train(trainer=CustomTrainer(func=hello, func_args={"greeting": "x"}))
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match=f"TrainJob {namespace}/{name} did not reach Complete"):
        trainer_client.wait_for_job_status(name, timeout=1, polling_interval=0.5)
    assert time.monotonic() - started < 5


def test_a_function_that_is_not_self_contained_submits_nothing(
    trainer_client: TrainerClient,
) -> None:
    with pytest.raises(InvalidTrainer, match="LEARNING_RATE is a global variable"):
        trainer_client.train(trainer=CustomTrainer(func=not_self_contained))
    with pytest.raises(ValueError, match="func_args"):  # InvalidTrainer is a ValueError too
        trainer_client.train(trainer=CustomTrainer(func=hello, func_args={"greting": "x"}))
    assert trainer_client.list_jobs() == []


def test_runtimes_are_listed_and_a_missing_one_is_named(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, torch_runtime: str
) -> None:
    cluster.create(kinds.TRAINING_RUNTIMES, training_runtime("jax_distributed.yaml"), namespace)
    runtimes = {r.name: r for r in trainer_client.list_runtimes()}
    assert runtimes["jax-distributed"].trainer.framework == "jax"
    torch = trainer_client.get_runtime(torch_runtime)
    assert torch == runtimes[torch_runtime]
    assert (torch.kind, torch.trainer.framework, torch.trainer.command) == (
        RuntimeKind.TRAINING_RUNTIME,
        "torch",
        ("torchrun",),
    )
    with pytest.raises(NotFoundError, match="runtime 'nope' not found") as raised:
        trainer_client.get_runtime("nope")
    assert "jax-distributed" in str(raised.value)  # the accepted names are listed
    with pytest.raises(NotFoundError):
        trainer_client.train("nope", trainer=CustomTrainer(func=hello, func_args={"greeting": "x"}))


def test_events_of_the_job_and_its_pods(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, torch_runtime: str, core: Any
) -> None:
    name = trainer_client.train(trainer=CustomTrainer(func=hello, func_args={"greeting": "x"}))
    (pod,) = cluster.wait_pods(namespace, node_pods(name, 1))
    involved = [("TrainJob", name), ("Pod", pod), ("Pod", "someone-else-node-0-0")]
    for second, (kind, who) in enumerate(involved):
        core.create_namespaced_event(
            namespace,
            {
                "metadata": {"generateName": "e-"},
                "involvedObject": {"kind": kind, "name": who, "namespace": namespace},
                "reason": f"About{kind}",
                "message": f"about {who}",
                "type": "Normal",
                "lastTimestamp": f"2030-01-01T00:00:0{5 - second}Z",
            },
        )
    found = [e for e in trainer_client.get_job_events(name) if e.reason.startswith("About")]
    assert [(e.involved_object_kind, e.involved_object_name, e.reason) for e in found] == [
        ("Pod", pod, "AboutPod"),  # the older one first
        ("TrainJob", name, "AboutTrainJob"),
    ]
    assert found[1].message == f"about {name}"


def test_delete_job_removes_it(
    cluster: Cluster, trainer_client: TrainerClient, namespace: str, torch_runtime: str
) -> None:
    name = trainer_client.train(trainer=CustomTrainer(func=hello, func_args={"greeting": "x"}))
    cluster.wait_pods(namespace, node_pods(name, 1))
    trainer_client.delete_job(name)

    def gone() -> bool:
        return name not in {j.name for j in trainer_client.list_jobs()}

    wait_for(gone, timeout=20)
    with pytest.raises(NotFoundError, match=f"TrainJob {namespace}/{name} not found"):
        trainer_client.get_job(name)
    with pytest.raises(NotFoundError):
        trainer_client.delete_job(name)
