"""TrainingClient against the API server with the v1 job controllers running: a PyTorchJob
from a function to Succeeded, conditions, pods, failing fast, jobs given whole, deletion.

Pods do not run here: the test moves them through pods/status as the node would.
"""

from __future__ import annotations

import pytest

from kubetrain import kube
from kubetrain.sdk import InvalidTrainer, JobFailedError, NotFoundError, TrainingClient
from tests.fixtures.waits import wait_for
from tests.integration.sdk.conftest import Cluster

LEARNING_RATE = 0.1


def train_func(parameters: dict) -> None:
    print("training with", parameters)


def uses_a_global(parameters: dict) -> None:
    print(LEARNING_RATE)


def test_a_pytorchjob_from_a_function_reaches_succeeded(
    cluster: Cluster, training_client: TrainingClient, namespace: str
) -> None:
    name = training_client.create_job(
        name="fn", train_func=train_func, parameters={"lr": "0.1"}, num_workers=2
    )
    assert name == "fn"
    pods = cluster.wait_pods(namespace, {"fn-master-0", "fn-worker-0"})
    container = pods["fn-master-0"]["spec"]["containers"][0]
    assert container["name"] == "pytorch"
    assert container["command"][:5] == ["torchrun", "--no-python", "python3", "-u", "-c"]
    assert container["command"][5].rstrip().endswith("train_func({'lr': '0.1'})")

    assert training_client.get_job_pod_names(name) == ["fn-master-0", "fn-worker-0"]
    assert training_client.get_job_pod_names(name, is_master=True) == ["fn-master-0"]
    workers = training_client.get_job_pods(name, replica_type="Worker", replica_index=0)
    assert [p["metadata"]["name"] for p in workers] == ["fn-worker-0"]

    wait_for(lambda: training_client.is_job_created(name), timeout=20)
    for pod in pods:
        cluster.set_phase(namespace, pod, "Running", container="pytorch")
    running = training_client.wait_for_job_conditions(
        name, expected_conditions={"Running"}, wait_timeout=20, polling_interval=1
    )
    assert training_client.is_job_running(job=running)
    for pod in pods:
        cluster.set_phase(namespace, pod, "Succeeded", container="pytorch")
    done = training_client.wait_for_job_conditions(name, wait_timeout=20, polling_interval=1)
    assert training_client.is_job_succeeded(job=done)
    assert training_client.is_job_succeeded(name)
    assert not training_client.is_job_failed(name)
    types = [c["type"] for c in training_client.get_job_conditions(name)]
    assert "Succeeded" in types
    assert [j["metadata"]["name"] for j in training_client.list_jobs()] == [name]


def test_wait_fails_fast_naming_the_replica_and_its_exit_code(
    cluster: Cluster, training_client: TrainingClient, namespace: str
) -> None:
    name = training_client.create_job(name="bad", train_func=train_func, num_workers=2)
    pods = cluster.wait_pods(namespace, {"bad-master-0", "bad-worker-0"})
    for pod in pods:
        cluster.set_phase(namespace, pod, "Running", container="pytorch")
    training_client.wait_for_job_conditions(
        name, expected_conditions={"Running"}, wait_timeout=20, polling_interval=1
    )
    cluster.set_phase(namespace, "bad-worker-0", "Failed", container="pytorch", exit_code=2)
    with pytest.raises(JobFailedError) as raised:
        training_client.wait_for_job_conditions(name, wait_timeout=20, polling_interval=1)
    assert isinstance(raised.value, RuntimeError)
    assert (raised.value.step, raised.value.exit_code) == ("worker-0", 2)
    assert "replica worker-0 (pod bad-worker-0) exited with code 2" in str(raised.value)

    # with Failed among the expected conditions nothing fails early; the operator restarts the
    # worker (restartPolicy OnFailure: a new pod for the index). Restarting itself is brief:
    # upstream's condition rules drop it again as soon as Running is set.
    training_client.wait_for_job_conditions(
        name, expected_conditions={"Failed", "Restarting", "Running"}, wait_timeout=20
    )
    failed_uid = pods["bad-worker-0"]["metadata"]["uid"]

    async def replaced(client: kube.Client) -> bool:
        try:
            pod = await client.get(kube.resource.PODS, "bad-worker-0", namespace=namespace)
        except kube.NotFound:
            return False
        return pod["metadata"]["uid"] != failed_uid

    cluster.eventually(replaced, "the failed worker's pod replaced")


def test_wait_names_the_failure_even_after_the_failed_pod_was_replaced(
    cluster: Cluster, training_client: TrainingClient, namespace: str
) -> None:
    """The operator replaces a failed OnFailure pod at once; a wait that starts after that
    still names the replica and exit code, from the operator's ExitedWithCode event."""
    name = training_client.create_job(name="gone", train_func=train_func, num_workers=2)
    pods = cluster.wait_pods(namespace, {"gone-master-0", "gone-worker-0"})
    for pod in pods:
        cluster.set_phase(namespace, pod, "Running", container="pytorch")
    failed_uid = pods["gone-worker-0"]["metadata"]["uid"]
    cluster.set_phase(namespace, "gone-worker-0", "Failed", container="pytorch", exit_code=3)

    async def replaced(client: kube.Client) -> bool:
        try:
            pod = await client.get(kube.resource.PODS, "gone-worker-0", namespace=namespace)
        except kube.NotFound:
            return False
        return pod["metadata"]["uid"] != failed_uid

    cluster.eventually(replaced, "the failed worker's pod replaced")
    with pytest.raises(JobFailedError) as raised:
        training_client.wait_for_job_conditions(name, wait_timeout=20, polling_interval=1)
    assert (raised.value.step, raised.value.exit_code) == ("worker-0", 3)


def test_a_job_given_whole_is_created_in_the_clients_namespace(
    cluster: Cluster, training_client: TrainingClient, namespace: str
) -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf:1"}]}},
                }
            }
        },
    }
    assert training_client.create_job(job, labels={"team": "a"}) == "tf"
    got = training_client.get_job("tf", job_kind="TFJob")
    assert (got["metadata"]["namespace"], got["metadata"]["labels"]) == (namespace, {"team": "a"})
    cluster.wait_pods(namespace, {"tf-worker-0"})
    training_client.delete_job("tf", job_kind="tfjob")
    wait_for(lambda: not training_client.list_jobs(job_kind="TFJob"), timeout=20)
    with pytest.raises(NotFoundError, match=f"TFJob {namespace}/tf not found"):
        training_client.get_job("tf", job_kind="TFJob")


def test_what_cannot_be_submitted_is_refused_before_the_server(
    training_client: TrainingClient,
) -> None:
    with pytest.raises(InvalidTrainer, match="LEARNING_RATE is a global variable"):
        training_client.create_job(name="g", train_func=uses_a_global)
    with pytest.raises(InvalidTrainer, match="name is required"):
        training_client.create_job(train_func=train_func)
    with pytest.raises(InvalidTrainer, match="job_kind: 'Spark'"):
        training_client.get_job("x", job_kind="Spark")
    assert training_client.list_jobs() == []
