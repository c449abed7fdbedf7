"""PaddleJob: PADDLE_* env in collective and parameter-server modes, and Paddle's status."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import frameworks
from tests.builders import paddlejob

POD_IP = {"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def v(name: str, value: str) -> dict[str, str]:
    return {"name": name, "value": value}


COMMON_3 = [
    v("PYTHONUNBUFFERED", "1"),
    v("PADDLE_JOB_ID", "test-paddlejob"),
    v("PADDLE_NNODES", "3"),
]
COMMON_2 = [
    v("PYTHONUNBUFFERED", "1"),
    v("PADDLE_JOB_ID", "test-paddlejob"),
    v("PADDLE_NNODES", "2"),
]

ENV = [
    pytest.param(
        True, "Master", 0,
        [*COMMON_3, POD_IP, v("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"),
         v("PADDLE_SERVER_NUM", "1")],
        id="with a master, master 0 advertises its own IP and is the one server",
    ),
    pytest.param(
        True, "Worker", 0,
        [*COMMON_3, v("PADDLE_MASTER", "test-paddlejob-master-0:36543"),
         v("PADDLE_TRAINER_NUM", "1")],
        id="with a master, worker 0 dials the master service and is a trainer",
    ),
    pytest.param(
        False, "Worker", 0,
        [*COMMON_2, POD_IP, v("PADDLE_MASTER", "$(POD_IP_DUMMY):36543")],
        id="without a master, worker 0 advertises its own IP",
    ),
    pytest.param(
        False, "Worker", 1,
        [*COMMON_2, v("PADDLE_MASTER", "test-paddlejob-worker-0:36543")],
        id="without a master, worker 1 dials worker 0",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("with_master", "rtype", "index", "expected"), ENV)
def test_env(with_master: bool, rtype: str, index: int, expected: list[Any]) -> None:
    builder = paddlejob()
    if with_master:
        builder.master()
    builder.workers(2)
    env = frameworks.pod_contract(builder.build(), rtype, index).env
    assert env == {"paddle": tuple(expected)}


def test_the_rendezvous_port_is_the_port_named_master() -> None:
    job = paddlejob().workers(2, ports=[{"name": "master", "containerPort": 12345}]).build()
    env = frameworks.pod_contract(job, "Worker", 1).env["paddle"]
    assert env[-1] == v("PADDLE_MASTER", "test-paddlejob-worker-0:12345")


def test_a_missing_master_port_falls_back_to_36543() -> None:
    job = paddlejob().workers(2).build()
    job.replica_specs()["Worker"].template["spec"]["containers"][0]["ports"] = []
    env = frameworks.pod_contract(job, "Worker", 1).env["paddle"]
    assert env[-1] == v("PADDLE_MASTER", "test-paddlejob-worker-0:36543")


def C(kind: str, message: str) -> frameworks.Condition:
    return frameworks.Condition(kind, f"PaddleJob{kind}", message)


STATUS = [
    pytest.param(True, False, {"Master": (1, 0, 0)},
                 (C("Running", "PaddleJob test-paddlejob is running."),),
                 id="a running master makes the job Running"),
    pytest.param(True, False, {"Master": (0, 1, 0), "Worker": (1, 0, 1)},
                 (C("Succeeded", "PaddleJob test-paddlejob is successfully completed."),),
                 id="a succeeded master ends the job"),
    pytest.param(False, True, {"Worker": (1, 1, 0)},
                 (C("Running", "PaddleJob default/test-paddlejob is running."),),
                 id="paddle has no elastic shortcut, so one succeeded worker is not enough"),
    pytest.param(False, False, {"Worker": (0, 2, 0)},
                 (C("Succeeded", "PaddleJob default/test-paddlejob successfully completed."),),
                 id="without a master all workers must succeed"),
    pytest.param(True, False, {"Master": (1, 0, 0), "Worker": (1, 0, 1)},
                 (C("Running", "PaddleJob test-paddlejob is running."),
                  C("Restarting",
                    "PaddleJob test-paddlejob is restarting because 1 Worker replica(s) failed.")),
                 id="a failed worker under the default OnFailure makes the job Restarting"),
]  # fmt: skip


@pytest.mark.parametrize(("with_master", "elastic", "observed", "expected"), STATUS)
def test_status(
    with_master: bool, elastic: bool, observed: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    builder = paddlejob()
    if with_master:
        builder.master()
    builder.workers(2)
    if elastic:
        builder.spec(elasticPolicy={"minReplicas": 1, "maxReplicas": 2})
    counts = {
        rtype: frameworks.ReplicaCounts(active=a, succeeded=s, failed=f)
        for rtype, (a, s, f) in observed.items()
    }
    assert frameworks.evaluate(builder.build(), counts).changes == expected


# --- host-network pods, each on its own port -----------------------------------------------

PADDLE_PORTS = {("Master", 0): 20000, ("Worker", 0): 20001, ("Worker", 1): 20002}
HOST_PORTS = [
    pytest.param(True, "Master", 0, "$(POD_IP_DUMMY):20000",
                 id="master 0 advertises its own IP at its own host port"),
    pytest.param(True, "Worker", 1, "test-paddlejob-master-0:20000",
                 id="a worker dials the master at the master's host port"),
    pytest.param(False, "Worker", 0, "$(POD_IP_DUMMY):20001",
                 id="without a master, worker 0 advertises its own host port"),
    pytest.param(False, "Worker", 1, "test-paddlejob-worker-0:20001",
                 id="without a master, worker 1 dials worker 0's host port"),
]  # fmt: skip


@pytest.mark.parametrize(("with_master", "rtype", "index", "expected"), HOST_PORTS)
def test_paddle_master_is_at_the_host_port(
    with_master: bool, rtype: str, index: int, expected: str
) -> None:
    builder = paddlejob()
    if with_master:
        builder.master()
    builder.workers(2)
    settings = frameworks.Settings(host_ports=PADDLE_PORTS)
    env = frameworks.pod_contract(builder.build(), rtype, index, settings).env["paddle"]
    assert [var["value"] for var in env if var["name"] == "PADDLE_MASTER"] == [expected]
