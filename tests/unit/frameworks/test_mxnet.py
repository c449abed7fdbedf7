"""MXJob (v1.8.1): MX_CONFIG text, DMLC_* vars, the Server master role, and MXNet's status."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import frameworks
from tests.builders import mxjob


def env_of(job: Any, rtype: str, index: int) -> dict[str, str]:
    env = frameworks.pod_contract(job, rtype, index).env["mxnet"]
    return {var["name"]: var["value"] for var in env}


def ps_job() -> Any:
    return mxjob().replica("Scheduler", 1).replica("Server", 1).workers(2).build()


def test_a_worker_gets_mx_config_and_dmlc_vars_in_upstreams_order() -> None:
    env = frameworks.pod_contract(ps_job(), "Worker", 1).env["mxnet"]
    assert [(var["name"], var["value"]) for var in env] == [
        (
            "MX_CONFIG",
            '{"cluster":{"scheduler":[{"url":"test-mxjob-scheduler-0","port":9091}],'
            '"server":[{"url":"test-mxjob-server-0","port":9091}],'
            '"worker":[{"url":"test-mxjob-worker-0","port":9091},'
            '{"url":"test-mxjob-worker-1","port":9091}]},'
            '"labels":{"scheduler":"","server":"","worker":""},'
            '"task":{"type":"worker","index":1}}',
        ),
        ("DMLC_PS_ROOT_PORT", "9091"),
        ("DMLC_PS_ROOT_URI", "test-mxjob-scheduler-0"),
        ("DMLC_NUM_SERVER", "1"),
        ("DMLC_NUM_WORKER", "2"),
        ("DMLC_ROLE", "worker"),
        ("DMLC_USE_KUBERNETES", "1"),
        ("DMLC_WORKER_ID", "1"),
    ]


def test_a_server_has_no_worker_id_and_carries_the_master_role() -> None:
    contract = frameworks.pod_contract(ps_job(), "Server", 0)
    env = {var["name"]: var["value"] for var in contract.env["mxnet"]}
    assert env["DMLC_ROLE"] == "server"
    assert "DMLC_WORKER_ID" not in env
    assert contract.labels[frameworks.JOB_ROLE_LABEL] == "master"
    scheduler = frameworks.pod_contract(ps_job(), "Scheduler", 0)
    assert frameworks.JOB_ROLE_LABEL not in scheduler.labels


def test_without_a_scheduler_the_root_is_empty_and_port_zero() -> None:
    env = env_of(mxjob().workers(1).build(), "Worker", 0)
    assert (env["DMLC_PS_ROOT_URI"], env["DMLC_PS_ROOT_PORT"]) == ("", "0")
    assert (env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"]) == ("0", "1")


def test_tuner_server_key_annotations_become_labels_escaped_as_go_does() -> None:
    job = (
        mxjob("ns", "t")
        .replica("TunerTracker", 1)
        .replica("TunerServer", 1, annotations={"tuner-server-key": "a<b&c>"})
        .replica("Tuner", 1)
        .build()
    )
    assert env_of(job, "Tuner", 0)["MX_CONFIG"] == (
        '{"cluster":{"tuner":[{"url":"t-tuner-0","port":9091}],'
        '"tunerserver":[{"url":"t-tunerserver-0","port":9091}],'
        '"tunertracker":[{"url":"t-tunertracker-0","port":9091}]},'
        '"labels":{"tuner":"","tunerserver":"a\\u003cb\\u0026c\\u003e","tunertracker":""},'
        '"task":{"type":"tuner","index":0}}'
    )


def C(kind: str, message: str, reason: str | None = None) -> frameworks.Condition:
    return frameworks.Condition(kind, reason or f"MXJob{kind}", message)


STATUS = [
    pytest.param(True, 2, None, {"Scheduler": (1, 0, 0)},
                 (C("Running", "MXJob test-mxjob is running."),),
                 id="a running scheduler makes the job Running"),
    pytest.param(True, 2, None, {"Scheduler": (0, 1, 0), "Worker": (0, 0, 2)},
                 (C("Succeeded", "MXJob test-mxjob is successfully completed."),),
                 id="a succeeded scheduler ends the job"),
    pytest.param(False, 1, None, {"Worker": (0, 1, 0)},
                 (C("Succeeded", "MXJob test-mxjob is successfully completed."),),
                 id="a single worker job is led by its worker"),
    pytest.param(False, 2, None, {"Worker": (2, 0, 0)}, (),
                 id="two workers without a scheduler decide nothing"),
    pytest.param(True, 2, None, {"Scheduler": (1, 0, 0), "Worker": (1, 0, 1)},
                 (C("Running", "MXJob test-mxjob is running."),
                  C("Failed", "mxjob test-mxjob is failed because 1 Worker replica(s) failed.")),
                 id="a failed worker fails the job in upstream's lower-case wording"),
    pytest.param(True, 2, "ExitCode", {"Scheduler": (1, 0, 0), "Worker": (1, 0, 1)},
                 (C("Running", "MXJob test-mxjob is running."),
                  C("Restarting",
                    "mxjob test-mxjob is restarting because 1 Worker replica(s) failed.")),
                 id="ExitCode makes the job Restarting"),
]  # fmt: skip


@pytest.mark.parametrize(("scheduler", "workers", "policy", "observed", "expected"), STATUS)
def test_status(
    scheduler: bool,
    workers: int,
    policy: str | None,
    observed: dict[str, Any],
    expected: tuple[Any, ...],
) -> None:
    builder = mxjob()
    if scheduler:
        builder.replica("Scheduler", 1, restart_policy=policy)
    builder.workers(workers, restart_policy=policy)
    counts = {
        rtype: frameworks.ReplicaCounts(active=a, succeeded=s, failed=f)
        for rtype, (a, s, f) in observed.items()
    }
    assert frameworks.evaluate(builder.build(), counts).changes == expected


# --- host-network pods, each on its own port -----------------------------------------------

MX_PORTS = {
    ("Scheduler", 0): 20000,
    ("Server", 0): 20001,
    ("Worker", 0): 20002,
    ("Worker", 1): 20003,
}


def host_env_of(job: Any, rtype: str, index: int) -> dict[str, str]:
    settings = frameworks.Settings(host_ports=MX_PORTS)
    env = frameworks.pod_contract(job, rtype, index, settings).env["mxnet"]
    return {var["name"]: var["value"] for var in env}


HOST_PORTS = [
    pytest.param(
        "Worker",
        1,
        "MX_CONFIG",
        '{"cluster":{"scheduler":[{"url":"test-mxjob-scheduler-0","port":20000}],'
        '"server":[{"url":"test-mxjob-server-0","port":20001}],'
        '"worker":[{"url":"test-mxjob-worker-0","port":20002},'
        '{"url":"test-mxjob-worker-1","port":20003}]},'
        '"labels":{"scheduler":"","server":"","worker":""},'
        '"task":{"type":"worker","index":1}}',
        id="MX_CONFIG lists every pod at its own host port",
    ),
    pytest.param(
        "Server",
        0,
        "DMLC_PS_ROOT_PORT",
        "20000",
        id="the scheduler's host port is the root port every pod dials",
    ),
]


@pytest.mark.parametrize(("rtype", "index", "name", "expected"), HOST_PORTS)
def test_mxnet_env_names_host_ports(rtype: str, index: int, name: str, expected: str) -> None:
    assert host_env_of(ps_job(), rtype, index)[name] == expected
