"""train() for real: the TrainJob controller builds the pods, the node agent runs them as
processes of this machine, and get_job_logs shows what the function printed on each node.

The node agent is the session's (tests/integration/local/conftest.py); the test binds the
pods to it, as the scheduler would. The torch test needs torch and pods that resolve each
other's names (a private mount namespace for /etc/hosts), and skips without them.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

import pytest

from kubetrain.operator.trainjob import kinds
from kubetrain.sdk import CustomTrainer, JobFailedError, TrainerClient, TrainingClient
from tests.integration.local import conftest as local_fixtures
from tests.integration.sdk.conftest import NO_SCHEDULER, Cluster, training_runtime

node = local_fixtures.node  # the session's node agent (found by name)

PLAIN_RUNTIME = "plain-python"


def greet(greeting: str, count: int) -> None:
    import sys

    print(f"{greeting}: {sum(range(count))}")
    print("to stderr", file=sys.stderr)


def all_reduce(offset: int) -> None:
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    value = torch.tensor([float(dist.get_rank() + offset)])
    dist.all_reduce(value)
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} on node "
          f"{os.environ['GROUP_RANK']}: sum={int(value.item())}")  # fmt: skip
    dist.destroy_process_group()


def plain_runtime() -> dict[str, Any]:
    container = {"name": "node", "image": "python:3", "command": ["python3"]}
    pod_spec = {"schedulerName": NO_SCHEDULER, "containers": [container]}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {
            "name": PLAIN_RUNTIME,
            "labels": {"trainer.kubeflow.org/framework": "plainml"},
        },
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {"template": {"spec": pod_spec}},
                            },
                        }
                    ]
                }
            },
        },
    }


def run_on_node(cluster: Cluster, namespace: str, pods: set[str], node_name: str) -> None:
    for pod in sorted(pods):
        cluster.bind(namespace, pod, node_name)


def test_a_function_on_two_nodes_prints_and_its_logs_show_it(
    cluster: Cluster,
    trainer_client: TrainerClient,
    namespace: str,
    node: local_fixtures.Node,
) -> None:
    cluster.create(kinds.TRAINING_RUNTIMES, plain_runtime(), namespace)
    trainer = CustomTrainer(func=greet, func_args={"greeting": "hello", "count": 5}, num_nodes=2)
    name = trainer_client.train(PLAIN_RUNTIME, trainer=trainer)
    pods = {f"{name}-node-0-0", f"{name}-node-0-1"}
    cluster.wait_pods(namespace, pods)
    follower = trainer_client.get_job_logs(name, step="node-1", follow=True)
    run_on_node(cluster, namespace, pods, node.name)

    assert next(follower) in ("hello: 10", "to stderr")
    done = trainer_client.wait_for_job_status(name, timeout=60, polling_interval=5)
    assert done.status == "Complete"
    assert [(s.name, s.status, s.node, s.exit_code) for s in done.steps] == [
        ("node-0", "Succeeded", node.name, 0),
        ("node-1", "Succeeded", node.name, 0),
    ]
    for step in ("node-0", "node-1"):
        assert sorted(trainer_client.get_job_logs(name, step=step)) == ["hello: 10", "to stderr"]


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed (pip install kubetrain[train]); the gloo all-reduce needs it",
)
def test_a_torch_function_on_two_nodes_of_two_processes_all_reduces(
    cluster: Cluster,
    trainer_client: TrainerClient,
    namespace: str,
    node: local_fixtures.Node,
) -> None:
    node.needs_isolation()
    cluster.create(kinds.TRAINING_RUNTIMES, training_runtime("torch_distributed.yaml"), namespace)
    trainer = CustomTrainer(
        func=all_reduce, func_args={"offset": 1}, num_nodes=2, num_proc_per_node=2
    )
    name = trainer_client.train(trainer=trainer)
    pods = {f"{name}-node-0-0", f"{name}-node-0-1"}
    cluster.wait_pods(namespace, pods)
    run_on_node(cluster, namespace, pods, node.name)
    done = trainer_client.wait_for_job_status(name, timeout=120, polling_interval=5)
    assert done.status == "Complete"
    # A node's two processes share its stdout, so one's line may land inside the other's.
    text = "\n".join(trainer_client.get_job_logs(name))
    lines = re.findall(r"rank \d+ of \d+ on node \d+: sum=\d+", text)
    # ranks 0..3 add rank + 1: 1 + 2 + 3 + 4
    assert sorted(lines) == [
        "rank 0 of 4 on node 0: sum=10",
        "rank 1 of 4 on node 0: sum=10",
    ]


def crash(code: int) -> None:
    import sys

    print("starting", flush=True)
    sys.exit(code)


def test_a_step_that_exits_non_zero_fails_the_wait_with_its_code_and_last_lines(
    cluster: Cluster,
    trainer_client: TrainerClient,
    namespace: str,
    node: local_fixtures.Node,
) -> None:
    cluster.create(kinds.TRAINING_RUNTIMES, plain_runtime(), namespace)
    trainer = CustomTrainer(func=crash, func_args={"code": 3}, num_nodes=2)
    name = trainer_client.train(PLAIN_RUNTIME, trainer=trainer)
    pods = {f"{name}-node-0-0", f"{name}-node-0-1"}
    cluster.wait_pods(namespace, pods)
    run_on_node(cluster, namespace, pods, node.name)
    with pytest.raises(JobFailedError) as raised:
        trainer_client.wait_for_job_status(name, timeout=60, polling_interval=5)
    error = raised.value
    assert error.step in ("node-0", "node-1")
    assert error.exit_code == 3
    assert error.logs == ("starting",)
    assert str(error).endswith(f"exited with code 3\nlast lines of {error.step}:\n  starting")
    trainer_client.delete_job(name)


def v1_train(parameters: dict) -> None:
    import os

    print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}: {parameters['word']}")


def test_a_pytorchjob_from_a_function_runs_to_succeeded(
    cluster: Cluster,
    training_client: TrainingClient,
    namespace: str,
    node: local_fixtures.Node,
) -> None:
    name = training_client.create_job(
        name="fn", train_func=v1_train, parameters={"word": "hi"}, num_workers=2
    )
    pods = {"fn-master-0", "fn-worker-0"}
    cluster.wait_pods(namespace, pods)
    run_on_node(cluster, namespace, pods, node.name)
    training_client.wait_for_job_conditions(name, wait_timeout=60, polling_interval=5)
    logs, _ = training_client.get_job_logs(name, is_master=False)
    assert logs["fn-master-0"].splitlines() == ["rank 0 of 2: hi"]
