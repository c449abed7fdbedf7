"""PyTorchJob: torchrun env (reference 2.2), elastic_test.go, initcontainer_test.go, status."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import frameworks
from kubetrain.frameworks import pytorch
from tests.builders import drop_ports, pytorchjob


def env_of(job: Any, rtype: str, index: int) -> list[tuple[str, str]]:
    env = frameworks.pod_contract(job, rtype, index).env["pytorch"]
    return [(var["name"], var["value"]) for var in env]


MASTER_JOB = [
    pytest.param(
        "Master",
        0,
        [
            ("PYTHONUNBUFFERED", "1"),
            ("MASTER_PORT", "23456"),
            ("PET_MASTER_PORT", "23456"),
            ("MASTER_ADDR", "test-pytorchjob-master-0"),
            ("PET_MASTER_ADDR", "test-pytorchjob-master-0"),
            ("WORLD_SIZE", "3"),
            ("RANK", "0"),
            ("PET_NODE_RANK", "0"),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_NNODES", "3"),
        ],
        id="the master has rank 0 and every var in upstream's order",
    ),
    pytest.param(
        "Worker",
        1,
        [
            ("PYTHONUNBUFFERED", "1"),
            ("MASTER_PORT", "23456"),
            ("PET_MASTER_PORT", "23456"),
            ("MASTER_ADDR", "test-pytorchjob-master-0"),
            ("PET_MASTER_ADDR", "test-pytorchjob-master-0"),
            ("WORLD_SIZE", "3"),
            ("RANK", "2"),
            ("PET_NODE_RANK", "2"),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_NNODES", "3"),
        ],
        id="worker 1 ranks after the master, as index plus one",
    ),
]


@pytest.mark.parametrize(("rtype", "index", "expected"), MASTER_JOB)
def test_env_of_a_job_with_a_master(rtype: str, index: int, expected: list[Any]) -> None:
    job = pytorchjob().master().workers(2).build()
    assert env_of(job, rtype, index) == expected


def test_the_master_port_is_the_masters_named_port_for_every_pod() -> None:
    port = [{"name": "pytorchjob-port", "containerPort": 29500}]
    job = pytorchjob().master(ports=port).workers(1).build()
    assert dict(env_of(job, "Worker", 0))["MASTER_PORT"] == "29500"
    assert dict(env_of(job, "Worker", 0))["PET_MASTER_PORT"] == "29500"


def test_a_job_without_a_master_gets_no_master_address_rank_or_world_size() -> None:
    job = pytorchjob().workers(2).build()
    assert env_of(job, "Worker", 1) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_NNODES", "2"),
    ]


NPROC = [
    pytest.param("4", "12", id="a number multiplies the world size"),
    pytest.param("+2", "6", id="a signed number is read as Go's Atoi reads it"),
    pytest.param("gpu", "3", id="gpu counts as one process per node"),
    pytest.param("cpu", "3", id="cpu counts as one process per node"),
    pytest.param("auto", "3", id="auto counts as one process per node"),
]


@pytest.mark.parametrize(("nproc", "world_size"), NPROC)
def test_world_size_is_replicas_times_a_numeric_nproc_per_node(nproc: str, world_size: str) -> None:
    job = pytorchjob().master().workers(2).spec(nprocPerNode=nproc).build()
    env = dict(env_of(job, "Master", 0))
    assert env["WORLD_SIZE"] == world_size
    assert env["PET_NPROC_PER_NODE"] == nproc


def test_user_env_stays_first_and_duplicates_are_kept_as_upstream_does() -> None:
    user = [{"name": "PYTHONUNBUFFERED", "value": "0"}, {"name": "A", "value": "b"}]
    job = pytorchjob().workers(1, env=user).build()
    contract = frameworks.pod_contract(job, "Worker", 0)
    pod = contract.apply(job.replica_specs()["Worker"].template)
    env = pod["spec"]["containers"][0]["env"]
    assert [var["name"] for var in env] == [
        "PYTHONUNBUFFERED",
        "A",
        "PYTHONUNBUFFERED",
        "PET_NPROC_PER_NODE",
        "PET_NNODES",
    ]
    assert env[0]["value"] == "0"
    assert env[2]["value"] == "1"


def test_every_container_of_the_pod_gets_the_same_vars() -> None:
    job = pytorchjob().workers(2, sidecars=("sidecar",)).build()
    env = frameworks.pod_contract(job, "Worker", 0).env
    assert list(env) == ["pytorch", "sidecar"]
    assert env["pytorch"] == env["sidecar"]


# --- elastic: upstream pytorch/elastic_test.go --------------------------------------------


def test_without_elastic_policy_there_are_no_rendezvous_vars() -> None:
    job = pytorchjob().workers(1).build()
    assert pytorch.elastic_env(job) == []


def test_with_elastic_policy_every_field_becomes_a_pet_var_in_upstreams_order() -> None:
    job = (
        pytorchjob()
        .workers(1)
        .spec(
            elasticPolicy={
                "minReplicas": 1,
                "maxReplicas": 3,
                "rdzvBackend": "c10d",
                "rdzvPort": 1234,
                "rdzvHost": "localhost",
                "rdzvId": "rdzv-id",
                "rdzvConf": [
                    {"key": "rdzv-conf-name", "value": "rdzv-conf-value"},
                    {"key": "rdzv-conf-name-1", "value": "rdzv-conf-value-1"},
                ],
                "maxRestarts": 3,
            }
        )
        .build()
    )
    assert pytorch.elastic_env(job) == [
        {"name": "PET_RDZV_ENDPOINT", "value": "localhost:1234"},
        {"name": "PET_RDZV_BACKEND", "value": "c10d"},
        {"name": "PET_NNODES", "value": "1:3"},
        {"name": "PET_MAX_RESTARTS", "value": "3"},
        {"name": "PET_RDZV_ID", "value": "rdzv-id"},
        {
            "name": "PET_RDZV_CONF",
            "value": "rdzv-conf-name=rdzv-conf-value,rdzv-conf-name-1=rdzv-conf-value-1",
        },
    ]


def test_an_empty_elastic_policy_rendezvous_at_worker_0_with_c10d_and_fixed_size() -> None:
    job = pytorchjob("ns", "el").workers(2).spec(elasticPolicy={}).build()
    assert env_of(job, "Worker", 1) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_RDZV_ENDPOINT", "el-worker-0:23456"),
        ("PET_RDZV_BACKEND", "c10d"),
        ("PET_NNODES", "2:2"),
    ]


def test_standalone_and_the_deprecated_elastic_nproc_come_last() -> None:
    job = (
        pytorchjob("ns", "el")
        .workers(2)
        .spec(elasticPolicy={"maxReplicas": 4, "standalone": True, "nProcPerNode": 2})
        .build()
    )
    assert env_of(job, "Worker", 0) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PET_RDZV_ENDPOINT", "el-worker-0:23456"),
        ("PET_RDZV_BACKEND", "c10d"),
        ("PET_NNODES", "4:4"),
        ("PET_NPROC_PER_NODE", "2"),
        ("PET_STANDALONE", ""),
    ]


def test_a_missing_worker_port_for_the_rendezvous_names_job_replica_and_field() -> None:
    job = drop_ports(pytorchjob("ns", "el").workers(2).spec(elasticPolicy={}).build(), "Worker")
    with pytest.raises(frameworks.ContractError) as error:
        frameworks.pod_contract(job, "Worker", 0)
    assert str(error.value) == (
        "PyTorchJob ns/el: spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].ports: "
        "failed to find the port named pytorchjob-port; "
        "accepted: a containerPort named pytorchjob-port on container pytorch"
    )


def test_a_master_without_its_named_port_is_an_error_as_upstream() -> None:
    job = drop_ports(pytorchjob("ns", "a").master().workers(1).build(), "Master")
    with pytest.raises(frameworks.ContractError, match=r"spec\.pytorchReplicaSpecs\[Master\]"):
        frameworks.pod_contract(job, "Worker", 0)


# --- init container: upstream pytorch/initcontainer_test.go -------------------------------

INIT = [
    pytest.param(False, "Worker", 0, id="a worker of a job without a master waits for nothing"),
    pytest.param(True, "Worker", 1, id="a worker of a job with a master waits for it"),
    pytest.param(True, "Master", 0, id="the master itself waits for nothing"),
]


@pytest.mark.parametrize(("with_master", "rtype", "count"), INIT)
def test_init_container_count(with_master: bool, rtype: str, count: int) -> None:
    builder = pytorchjob().workers(1)
    if with_master:
        builder.master()
    contract = frameworks.pod_contract(builder.build(), rtype, 0)
    assert len(contract.init_containers) == count


def test_init_container_is_upstreams_template_with_default_image_and_tries() -> None:
    job = pytorchjob("ns", "a").master().workers(1).build()
    (init,) = frameworks.pod_contract(job, "Worker", 0).init_containers
    assert init == {
        "name": "init-pytorch",
        "image": "alpine:3.10",
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "100m", "memory": "20Mi"},
            "requests": {"cpu": "50m", "memory": "10Mi"},
        },
        "command": [
            "sh",
            "-c",
            "err=1;for i in $(seq 100); do if nslookup a-master-0; then err=0 && break; fi;"
            "echo waiting for master; sleep 2; done; exit $err",
        ],
    }


def test_init_container_image_and_tries_are_operator_settings() -> None:
    job = pytorchjob("ns", "a").master().workers(1).build()
    settings = frameworks.Settings(init_container_image="busybox:1", init_container_max_tries=5)
    (init,) = frameworks.pod_contract(job, "Worker", 0, settings).init_containers
    assert init["image"] == "busybox:1"
    assert "$(seq 5);" in init["command"][2]


def test_the_init_container_is_appended_after_the_users_own() -> None:
    job = pytorchjob("ns", "a").master().workers(1).build()
    template = job.replica_specs()["Worker"].template
    template["spec"]["initContainers"] = [{"name": "fetch-data", "image": "x"}]
    pod = frameworks.pod_contract(job, "Worker", 0).apply(template)
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["fetch-data", "init-pytorch"]


# --- status ---------------------------------------------------------------------------------


def counts(**by_type: tuple[int, int, int]) -> dict[str, frameworks.ReplicaCounts]:
    """``Worker=(active, succeeded, failed)``."""
    return {
        rtype: frameworks.ReplicaCounts(active=a, succeeded=s, failed=f)
        for rtype, (a, s, f) in by_type.items()
    }


def C(kind: str, message: str) -> frameworks.Condition:
    return frameworks.Condition(kind, f"PyTorchJob{kind}", message)


RESTARTING_1_WORKER = "PyTorchJob test-pytorchjob is restarting because 1 Worker replica(s) failed."

STATUS = [
    pytest.param(
        dict(master=True, workers=2),
        counts(Master=(1, 0, 0), Worker=(2, 0, 0)),
        (C("Running", "PyTorchJob test-pytorchjob is running."),),
        id="a running master makes the job Running",
    ),
    pytest.param(
        dict(master=True, workers=2),
        counts(Master=(0, 1, 0), Worker=(0, 0, 2)),
        (C("Succeeded", "PyTorchJob test-pytorchjob is successfully completed."),),
        id="a succeeded master ends the job whatever the workers did",
    ),
    pytest.param(
        dict(master=False, workers=2),
        counts(Worker=(0, 2, 0)),
        (C("Succeeded", "PyTorchJob default/test-pytorchjob successfully completed."),),
        id="without a master all workers must succeed",
    ),
    pytest.param(
        dict(master=False, workers=3),
        counts(Worker=(2, 1, 0)),
        (C("Running", "PyTorchJob default/test-pytorchjob is running."),),
        id="without elastic one succeeded worker of three is still Running",
    ),
    pytest.param(
        dict(master=False, workers=3, elastic=True),
        counts(Worker=(2, 1, 0)),
        (C("Succeeded", "PyTorchJob default/test-pytorchjob successfully completed."),),
        id="with elastic one succeeded worker ends the job",
    ),
    pytest.param(
        dict(master=True, workers=2),
        counts(Master=(1, 0, 0), Worker=(1, 0, 1)),
        (
            C("Running", "PyTorchJob test-pytorchjob is running."),
            C("Restarting", RESTARTING_1_WORKER),
        ),
        id="a failed worker under OnFailure makes the job Restarting",
    ),
    pytest.param(
        dict(master=True, workers=2, policy="Never"),
        counts(Master=(1, 0, 0), Worker=(1, 0, 1)),
        (
            C("Running", "PyTorchJob test-pytorchjob is running."),
            C("Failed", "PyTorchJob test-pytorchjob is failed because 1 Worker replica(s) failed."),
        ),
        id="a failed worker under Never fails the job",
    ),
    pytest.param(
        dict(master=True, workers=2, policy="Never"),
        counts(Master=(1, 0, 0), Worker=(2, 0, 1)),
        (C("Running", "PyTorchJob test-pytorchjob is running."),),
        id="a failure is ignored once its replacement runs",
    ),
    pytest.param(
        dict(master=False, workers=2, policy="ExitCode"),
        counts(Worker=(1, 0, 1)),
        (
            C("Running", "PyTorchJob default/test-pytorchjob is running."),
            C("Restarting", RESTARTING_1_WORKER),
        ),
        id="ExitCode counts as a restarting policy",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("shape", "observed", "expected"), STATUS)
def test_status(shape: dict[str, Any], observed: Any, expected: tuple[Any, ...]) -> None:
    builder = pytorchjob()
    policy = shape.get("policy")
    if shape["master"]:
        builder.master(restart_policy=policy)
    builder.workers(shape["workers"], restart_policy=policy)
    if shape.get("elastic"):
        builder.spec(elasticPolicy={})
    assert frameworks.evaluate(builder.build(), observed).changes == expected


def test_replica_status_selector_is_sorted_labels_with_the_lower_case_type() -> None:
    job = pytorchjob("ns", "a").master().workers(1).build()
    assert frameworks.for_kind("PyTorchJob").reports_selector
    assert frameworks.replica_selector(job, "Worker") == (
        "training.kubeflow.org/job-name=a,"
        "training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=worker"
    )


# --- host-network pods, each on its own port -----------------------------------------------

TORCH_PORTS = {("Master", 0): 20000, ("Worker", 0): 20001, ("Worker", 1): 20002}


def host_env_of(job: Any, rtype: str, index: int, ports: dict[Any, int]) -> dict[str, str]:
    settings = frameworks.Settings(host_ports=ports)
    env = frameworks.pod_contract(job, rtype, index, settings).env["pytorch"]
    return {var["name"]: var["value"] for var in env}


HOST_PORTS = [
    pytest.param(
        dict(master=True, elastic=None),
        "Worker",
        1,
        {"MASTER_PORT": "20000", "PET_MASTER_PORT": "20000"},
        id="every pod is told the master's host port, not the template's",
    ),
    pytest.param(
        dict(master=True, elastic=None),
        "Master",
        0,
        {"MASTER_PORT": "20000", "PET_MASTER_PORT": "20000"},
        id="the master is told its own host port, where it listens",
    ),
    pytest.param(
        dict(master=False, elastic={}),
        "Worker",
        1,
        {"PET_RDZV_ENDPOINT": "el-worker-0:20001"},
        id="the rendezvous is at worker 0's host port",
    ),
    pytest.param(
        dict(master=False, elastic={"rdzvPort": 29400}),
        "Worker",
        1,
        {"PET_RDZV_ENDPOINT": "el-worker-0:29400"},
        id="a rendezvous port the job sets is kept as written",
    ),
]


@pytest.mark.parametrize(("shape", "rtype", "index", "expected"), HOST_PORTS)
def test_ports_in_the_env_are_the_host_ports(
    shape: dict[str, Any], rtype: str, index: int, expected: dict[str, str]
) -> None:
    builder = pytorchjob("ns", "el")
    if shape["master"]:
        builder.master()
    builder.workers(2)
    if shape["elastic"] is not None:
        builder.spec(elasticPolicy=shape["elastic"])
    env = host_env_of(builder.build(), rtype, index, TORCH_PORTS)
    assert {name: env.get(name) for name in expected} == expected


def test_a_pytorch_pod_with_a_host_port_listens_there_and_others_keep_theirs() -> None:
    job = pytorchjob().master().workers(1, sidecars=("logger",)).build()
    settings = frameworks.Settings(host_ports={("Worker", 0): 20001})
    template = job.replica_specs()["Worker"].template
    pod = frameworks.pod_contract(job, "Worker", 0, settings).apply(template)
    main, sidecar = pod["spec"]["containers"]
    assert main["ports"] == [{"name": "pytorchjob-port", "containerPort": 20001, "hostPort": 20001}]
    assert "ports" not in sidecar
    master = frameworks.pod_contract(job, "Master", 0, settings).apply(
        job.replica_specs()["Master"].template
    )
    assert master["spec"]["containers"][0]["ports"] == [
        {"name": "pytorchjob-port", "containerPort": 23456}
    ]
    assert template["spec"]["containers"][0]["ports"][0] == {
        "name": "pytorchjob-port",
        "containerPort": 23456,
    }, "the job's template is not changed"
