"""JAXJob: upstream jax/envvar_test.go, the index-0 master rule, and JAX's status rules."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import frameworks
from tests.builders import jaxjob


def test_successful_environment_variable_setup() -> None:
    job = (
        jaxjob("default", "test-jaxjob")
        .workers(1, ports=[{"name": "jaxjob-port", "containerPort": 6666}])
        .build()
    )
    assert frameworks.pod_contract(job, "Worker", 0).env == {
        "jax": (
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "COORDINATOR_PORT", "value": "6666"},
            {"name": "COORDINATOR_ADDRESS", "value": "test-jaxjob-worker-0"},
            {"name": "NUM_PROCESSES", "value": "1"},
            {"name": "PROCESS_ID", "value": "0"},
        )
    }


def test_missing_container_port_in_jaxjob() -> None:
    job = jaxjob("default", "test-jaxjob").workers(1).build()
    container = job.replica_specs()["Worker"].template["spec"]["containers"][0]
    container["ports"] = [{"name": "wrong-port", "containerPort": 1}]
    with pytest.raises(frameworks.ContractError) as error:
        frameworks.pod_contract(job, "Worker", 0)
    assert str(error.value) == (
        "JAXJob default/test-jaxjob: "
        "spec.jaxReplicaSpecs[Worker].template.spec.containers[0].ports: "
        "failed to find the port named jaxjob-port; "
        "accepted: a containerPort named jaxjob-port on container jax"
    )


def test_each_process_gets_its_index_and_the_same_coordinator() -> None:
    job = jaxjob("ns", "j").workers(4, ports=[{"name": "jaxjob-port", "containerPort": 1234}])
    env = frameworks.pod_contract(job.build(), "Worker", 3).env["jax"]
    assert {var["name"]: var["value"] for var in env} == {
        "PYTHONUNBUFFERED": "1",
        "COORDINATOR_PORT": "1234",
        "COORDINATOR_ADDRESS": "j-worker-0",
        "NUM_PROCESSES": "4",
        "PROCESS_ID": "3",
    }


def test_worker_0_alone_has_the_master_role() -> None:
    job = jaxjob().workers(2).build()
    labels = [frameworks.pod_contract(job, "Worker", i).labels for i in (0, 1)]
    assert [label.get(frameworks.JOB_ROLE_LABEL) for label in labels] == ["master", None]


def C(kind: str, message: str) -> frameworks.Condition:
    return frameworks.Condition(kind, f"JAXJob{kind}", message)


STATUS = [
    pytest.param(None, (2, 0, 0), (C("Running", "JAXJob default/test-jaxjob is running."),),
                 id="running workers make the job Running"),
    pytest.param(None, (0, 2, 0),
                 (C("Succeeded", "JAXJob default/test-jaxjob successfully completed."),),
                 id="all workers succeeded ends the job"),
    pytest.param(None, (1, 0, 1),
                 (C("Running", "JAXJob default/test-jaxjob is running."),
                  C("Failed", "JAXJob test-jaxjob is failed because 1 Worker replica(s) failed.")),
                 id="a failed worker under Never fails the job"),
    pytest.param("OnFailure", (1, 0, 1),
                 (C("Running", "JAXJob default/test-jaxjob is running."),
                  C("Restarting",
                    "JAXJob test-jaxjob is restarting because 1 Worker replica(s) failed.")),
                 id="a failed worker under OnFailure makes the job Restarting"),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "observed", "expected"), STATUS)
def test_status(policy: str | None, observed: Any, expected: tuple[Any, ...]) -> None:
    job = jaxjob().workers(2, restart_policy=policy).build()
    active, succeeded, failed = observed
    counts = {"Worker": frameworks.ReplicaCounts(active=active, succeeded=succeeded, failed=failed)}
    assert frameworks.evaluate(job, counts).changes == expected


# --- host-network pods, each on its own port -----------------------------------------------

HOST_PORTS = [
    pytest.param(2, "6666", id="a worker is told worker 0's host port as the coordinator's"),
    pytest.param(0, "6666", id="the coordinator is told its own host port"),
]


@pytest.mark.parametrize(("index", "expected"), HOST_PORTS)
def test_the_coordinator_port_is_worker_0s_host_port(index: int, expected: str) -> None:
    job = jaxjob("ns", "j").workers(3).build()
    ports = {("Worker", 0): 6666, ("Worker", 1): 6667, ("Worker", 2): 6668}
    env = frameworks.pod_contract(job, "Worker", index, frameworks.Settings(host_ports=ports))
    assert {"name": "COORDINATOR_PORT", "value": expected} in env.env["jax"]
