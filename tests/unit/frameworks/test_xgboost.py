"""XGBoostJob: Rabit/LightGBM env (reference 2.2) and XGBoost's status rules (reference 3.3)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import frameworks
from tests.builders import drop_ports, xgboostjob


def env_of(job: Any, rtype: str, index: int) -> list[tuple[str, str]]:
    env = frameworks.pod_contract(job, rtype, index).env["xgboost"]
    return [(var["name"], var["value"]) for var in env]


ENV = [
    pytest.param(
        "Master",
        0,
        [
            ("MASTER_PORT", "9999"),
            ("MASTER_ADDR", "test-xgboostjob-master-0"),
            ("WORLD_SIZE", "3"),
            ("RANK", "0"),
            ("PYTHONUNBUFFERED", "1"),
            ("WORKER_PORT", "9999"),
            ("WORKER_ADDRS", "test-xgboostjob-worker-0,test-xgboostjob-worker-1"),
        ],
        id="the master is rank 0 and learns every worker address",
    ),
    pytest.param(
        "Worker",
        1,
        [
            ("MASTER_PORT", "9999"),
            ("MASTER_ADDR", "test-xgboostjob-master-0"),
            ("WORLD_SIZE", "3"),
            ("RANK", "2"),
            ("PYTHONUNBUFFERED", "1"),
            ("WORKER_PORT", "9999"),
            ("WORKER_ADDRS", "test-xgboostjob-worker-0,test-xgboostjob-worker-1"),
        ],
        id="worker 1 ranks after the one master",
    ),
]


@pytest.mark.parametrize(("rtype", "index", "expected"), ENV)
def test_env_in_upstreams_order(rtype: str, index: int, expected: list[Any]) -> None:
    job = xgboostjob().master().workers(2).build()
    assert env_of(job, rtype, index) == expected


def test_a_master_alone_gets_no_worker_port_or_addresses() -> None:
    job = xgboostjob().master().build()
    assert env_of(job, "Master", 0) == [
        ("MASTER_PORT", "9999"),
        ("MASTER_ADDR", "test-xgboostjob-master-0"),
        ("WORLD_SIZE", "1"),
        ("RANK", "0"),
        ("PYTHONUNBUFFERED", "1"),
    ]


def test_ports_come_from_each_types_named_port() -> None:
    job = (
        xgboostjob()
        .master(ports=[{"name": "xgboostjob-port", "containerPort": 9000}])
        .workers(1, ports=[{"name": "xgboostjob-port", "containerPort": 9001}])
        .build()
    )
    env = dict(env_of(job, "Worker", 0))
    assert (env["MASTER_PORT"], env["WORKER_PORT"]) == ("9000", "9001")


def test_a_master_without_its_named_port_is_an_error() -> None:
    job = drop_ports(xgboostjob("ns", "x").master().workers(1).build(), "Master")
    with pytest.raises(frameworks.ContractError) as error:
        frameworks.pod_contract(job, "Worker", 0)
    assert str(error.value).startswith(
        "XGBoostJob ns/x: spec.xgbReplicaSpecs[Master].template.spec.containers[0].ports: "
        "failed to find the port named xgboostjob-port"
    )


def test_only_the_master_has_the_master_role() -> None:
    job = xgboostjob().master().workers(2).build()
    roles = {
        (rtype, i): frameworks.pod_contract(job, rtype, i).labels.get(frameworks.JOB_ROLE_LABEL)
        for rtype, i in (("Master", 0), ("Worker", 0), ("Worker", 1))
    }
    assert roles == {("Master", 0): "master", ("Worker", 0): None, ("Worker", 1): None}


RUNNING = frameworks.Condition(
    "Running", "XGBoostJobRunning", "XGBoostJob test-xgboostjob is running."
)

STATUS = [
    pytest.param(
        None, {"Master": (1, 0, 0)}, (RUNNING,),
        id="a running master makes the job Running",
    ),
    pytest.param(
        None, {"Master": (0, 1, 0), "Worker": (0, 0, 1)},
        (RUNNING, frameworks.Condition(
            "Succeeded", "XGBoostJobSucceeded",
            "XGBoostJob test-xgboostjob is successfully completed.")),
        id="a succeeded master sets Running then Succeeded and ends the evaluation",
    ),
    pytest.param(
        None, {"Master": (1, 0, 0), "Worker": (1, 0, 1)},
        (RUNNING, RUNNING, frameworks.Condition(
            "Failed", "XGBoostJobFailed",
            "XGBoostJob test-xgboostjob is failed because 1 Worker replica(s) failed.")),
        id="any failed worker fails the job under Never",
    ),
    pytest.param(
        "OnFailure", {"Master": (1, 0, 0), "Worker": (2, 0, 1)},
        (RUNNING, RUNNING, frameworks.Condition(
            "Failed", "XGBoostJobFailed",
            "XGBoostJob test-xgboostjob is failed because 1 Worker replica(s) failed.")),
        id="only ExitCode restarts, so OnFailure fails the job too",
    ),
    pytest.param(
        "ExitCode", {"Master": (1, 0, 0), "Worker": (1, 0, 1)},
        (RUNNING, RUNNING, frameworks.Condition(
            "Restarting", "XGBoostJobRestarting",
            "XGBoostJob test-xgboostjob is restarting because 1 Worker replica(s) failed.")),
        id="ExitCode makes the job Restarting",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "observed", "expected"), STATUS)
def test_status(policy: str | None, observed: dict[str, Any], expected: tuple[Any, ...]) -> None:
    job = xgboostjob().master(restart_policy=policy).workers(2, restart_policy=policy).build()
    counts = {
        rtype: frameworks.ReplicaCounts(active=a, succeeded=s, failed=f)
        for rtype, (a, s, f) in observed.items()
    }
    assert frameworks.evaluate(job, counts).changes == expected


# --- host-network pods, each on its own port -----------------------------------------------

XGB_PORTS = {("Master", 0): 20000, ("Worker", 0): 20001, ("Worker", 1): 20002}
HOST_PORTS = [
    pytest.param("Master", 0, ("20000", "20001"),
                 id="the master listens on its host port and is told worker 0's"),
    pytest.param("Worker", 0, ("20000", "20001"),
                 id="worker 0 is told the master's host port and listens on its own"),
    pytest.param("Worker", 1, ("20000", "20002"),
                 id="worker 1's WORKER_PORT is its own host port"),
]  # fmt: skip


@pytest.mark.parametrize(("rtype", "index", "expected"), HOST_PORTS)
def test_master_and_worker_ports_are_host_ports(
    rtype: str, index: int, expected: tuple[str, str]
) -> None:
    job = xgboostjob().master().workers(2).build()
    settings = frameworks.Settings(host_ports=XGB_PORTS)
    env = dict(
        (var["name"], var["value"])
        for var in frameworks.pod_contract(job, rtype, index, settings).env["xgboost"]
    )
    assert (env["MASTER_PORT"], env["WORKER_PORT"]) == expected
