"""TrainJobs on a shared host network: the job's port (picked, recorded, read back), the env
and pods built with it, and rank 0 alone declaring it."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.operator import hostports
from kubetrain.operator.trainjob import hostport, workload
from kubetrain.operator.trainjob import setup as trainjob_setup
from tests.unit.api.trainers import replicated_job, runtime, trainjob
from tests.unit.operator.trainjob.building import (
    build,
    container,
    env,
    jobset,
    torchtune_runtime,
)

RANGE = {"low": 20000, "high": 20009}


def service(port: Any) -> dict[str, Any]:
    return {"metadata": {"name": "s", "annotations": {hostports.HOST_PORT_ANNOTATION: str(port)}}}


def pod(host_port: int) -> dict[str, Any]:
    ports = [{"containerPort": host_port, "hostPort": host_port}]
    return {"spec": {"containers": [{"name": "node", "ports": ports}]}}


def first_pick(name: str = "job") -> int:
    port = hostports.choose(hostport.seed("ns", name), set(), 20000, 20009)
    assert port is not None
    return port


PICKS = [
    pytest.param(
        dict(service=service(20005), remembered=20001, pods=[pod(20002)]),
        [],
        20005,
        id="the port the job's Service records wins",
    ),
    pytest.param(
        dict(service=None, remembered=20001, pods=[pod(20002)]),
        [],
        20001,
        id="before its Service shows, the port handed out to the job is kept",
    ),
    pytest.param(
        dict(service=None, remembered=None, pods=[pod(20002)]),
        [],
        20002,
        id="a job whose Service was lost keeps the port its rank 0 listens on",
    ),
    pytest.param(
        dict(service=service("x"), remembered=None, pods=[]),
        [],
        first_pick(),
        id="a Service recording no valid port means a new pick",
    ),
    pytest.param(
        dict(service=None, remembered=None, pods=[]),
        [service(first_pick())],
        first_pick() + 1 if first_pick() < 20009 else 20000,
        id="a port another Service records is passed over",
    ),
]


@pytest.mark.parametrize(("known", "services", "expected"), PICKS)
def test_port_for(known: dict[str, Any], services: list[dict[str, Any]], expected: int) -> None:
    port = hostport.port_for("ns", "job", taken=lambda: hostports.taken(services), **known, **RANGE)
    assert port == expected


def test_a_port_just_handed_out_to_another_job_is_not_handed_out_again() -> None:
    given = hostport.port_for(
        "ns", "job", service=None, remembered=None, pods=[], taken=set, **RANGE
    )
    assert given is not None
    again = hostport.port_for(
        "ns", "job", service=None, remembered=None, pods=[], taken=lambda: {given}, **RANGE
    )
    assert again not in (None, given)


def test_a_full_range_gives_no_port() -> None:
    port = hostport.port_for(
        "ns",
        "job",
        service=None,
        remembered=None,
        pods=[],
        taken=lambda: set(range(20000, 20010)),
        **RANGE,
    )
    assert port is None


def test_the_ports_taken_are_asked_for_only_when_a_new_port_is_picked() -> None:
    def unexpected() -> set[int]:
        raise AssertionError("asked for the ports taken for a job that has a port")

    port = hostport.port_for(
        "ns",
        "job",
        service=service(20003),
        remembered=None,
        pods=[],
        taken=unexpected,
        **RANGE,
    )
    assert port == 20003


# --- what is built with the port ----------------------------------------------------------

ENV = [
    pytest.param(
        runtime("torch").build(),
        {"PET_MASTER_PORT": "20007"},
        id="torch: rank 0 is the master at the job's port",
    ),
    pytest.param(
        runtime("torch").policy("torch", elasticPolicy={"minNodes": 1, "maxNodes": 3}).build(),
        {"PET_MASTER_PORT": "20007", "PET_RDZV_ENDPOINT": "job-node-0-0.job:20007"},
        id="torch elastic: the rendezvous is at the job's port",
    ),
    pytest.param(
        runtime("jax").build(),
        {"JAX_COORDINATOR_ADDRESS": "job-node-0-0.job:20007"},
        id="jax: the coordinator is at the job's port",
    ),
    pytest.param(
        runtime("xgboost").build(),
        {"DMLC_TRACKER_PORT": "20007"},
        id="xgboost: the tracker is at the job's port",
    ),
]


@pytest.mark.parametrize(("runtime_doc", "expected"), ENV)
def test_the_env_names_the_jobs_port(runtime_doc: dict[str, Any], expected: dict[str, str]) -> None:
    built = build(trainjob("job").trainer(numNodes=2).build(), runtime_doc, host_port=20007)
    found = env(built)
    assert {name: found.get(name) for name in expected} == expected
    assert container(built, "node")["ports"] == [{"containerPort": 20007}]


def test_torchtune_is_given_the_rendezvous_at_the_jobs_port() -> None:
    job = trainjob("job", runtime_name="torchtune-llama3.3-70b").trainer(
        command=["tune", "run"], numNodes=2
    )
    built = build(job.build(), torchtune_runtime("torchtune-llama3.3-70b"), host_port=20007)
    assert "--rdzv_endpoint=job-node-0-0.job:20007" in container(built, "node")["command"]


def test_host_network_pods_and_the_jobs_port_recorded_on_the_jobset() -> None:
    doc = (
        runtime("torch")
        .jobs(replicated_job("init"), replicated_job("node", ancestor="trainer"))
        .build()
    )
    built = build(trainjob("job").build(), doc, host_port=20007)
    js = jobset(built)
    assert hostports.recorded(js) == 20007
    for rjob in js["spec"]["replicatedJobs"]:
        spec = rjob["template"]["spec"]["template"]["spec"]
        assert (spec["hostNetwork"], spec["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")


def test_without_a_host_port_pods_keep_their_own_network_and_29500() -> None:
    built = build(trainjob("job").build(), runtime("torch").build())
    js = jobset(built)
    assert hostports.recorded(js) is None
    spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert "hostNetwork" not in spec
    assert env(built)["PET_MASTER_PORT"] == "29500"


# --- the workload: the Service records the port, rank 0 alone declares it -------------------


def workload_pods(host_port: int | None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    doc = runtime("torch").jobs(replicated_job("node", ancestor="trainer")).build()
    js = jobset(build(trainjob("job").trainer(numNodes=3).build(), doc, host_port=host_port))
    (rjob,) = js["spec"]["replicatedJobs"]
    spec = rjob["template"]["spec"]["template"]["spec"]
    spec["containers"][0]["ports"].append({"name": "metrics", "containerPort": 9090})
    pods = {
        workload.name_of(p): p for p in (workload.desired_pod(js, rjob, 0, i, 0) for i in range(3))
    }
    return js, pods


def declared(pod_doc: dict[str, Any]) -> list[dict[str, Any]]:
    return pod_doc["spec"]["containers"][0]["ports"]


DECLARED = [
    pytest.param(
        "job-node-0-0",
        [{"containerPort": 20007, "hostPort": 20007}, {"name": "metrics", "containerPort": 9090}],
        id="rank 0 declares the job's port as its host port",
    ),
    pytest.param(
        "job-node-0-2",
        [{"name": "metrics", "containerPort": 9090}],
        id="another node does not declare the port it does not listen on, and keeps the rest",
    ),
]


@pytest.mark.parametrize(("name", "expected"), DECLARED)
def test_only_rank_0_declares_the_jobs_port(name: str, expected: list[dict[str, Any]]) -> None:
    _, pods = workload_pods(20007)
    assert declared(pods[name]) == expected


def test_the_service_records_the_jobs_port() -> None:
    js, _ = workload_pods(20007)
    assert hostports.recorded(workload.desired_service(js)) == 20007


def test_off_the_host_network_every_pod_keeps_the_template_ports() -> None:
    js, pods = workload_pods(None)
    assert {name: declared(p) for name, p in pods.items()} == {
        name: [{"containerPort": 29500}, {"name": "metrics", "containerPort": 9090}]
        for name in pods
    }
    assert hostports.recorded(workload.desired_service(js)) is None


@pytest.mark.parametrize(
    "bounds",
    [
        pytest.param((0, 10), id="port 0 is not a port"),
        pytest.param((30000, 20000), id="the low end above the high end"),
        pytest.param((60000, 70000), id="past 65535"),
    ],
)
def test_a_range_that_is_not_a_port_range_is_refused(bounds: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match=r"^host_port_range: .* accepted: 1 <= low <= high"):
        trainjob_setup.Settings(host_port_range=bounds)
