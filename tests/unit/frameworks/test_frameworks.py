"""The framework registry and the contracts every framework shares: names, labels, services,
restart policies, and the pod loop's answer to a failed pod (reference 1.2, 1.3, 2.1)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api, frameworks
from tests.builders import (
    jaxjob,
    mpijob,
    mxjob,
    paddlejob,
    pytorchjob,
    tfjob,
    xgboostjob,
)

NAMES = [
    ("TFJob", "tensorflow", "tfjob-controller", True),
    ("PyTorchJob", "pytorch", "pytorchjob-controller", True),
    ("XGBoostJob", "xgboost", "xgboostjob-controller", True),
    ("PaddleJob", "paddle", "paddlejob-controller", True),
    ("JAXJob", "jax", "jaxjob-controller", True),
    ("MPIJob", "mpi", "mpijob-controller", False),
    ("MXJob", "mxnet", "mxjob-controller", True),
]


def test_frameworks_are_listed_in_the_order_of_the_api_kinds() -> None:
    assert [f.job_class for f in frameworks.FRAMEWORKS] == list(api.V1_KINDS)
    assert [f.kind for f in frameworks.FRAMEWORKS] == [n[0] for n in NAMES]


@pytest.mark.parametrize(
    ("kind", "name", "controller", "services"),
    NAMES,
    ids=[f"{n[0]} is {n[1]} in metrics and {n[2]} in labels" for n in NAMES],
)
def test_metric_and_controller_names(kind: str, name: str, controller: str, services: bool) -> None:
    framework = frameworks.for_kind(kind)
    assert (framework.name, framework.controller) == (name, controller)
    assert framework.creates_services is services


def test_an_unknown_kind_is_a_key_error_naming_the_accepted_kinds() -> None:
    with pytest.raises(KeyError, match="accepted: TFJob, PyTorchJob, XGBoostJob, PaddleJob"):
        frameworks.for_kind("TrainJob")


NAMING = [
    pytest.param(tfjob("ns", "j").workers(2).replica("PS", 1), "PS", 0, "j-ps-0",
                 id="TF types are lower-cased in pod names"),
    pytest.param(mxjob("ns", "j").replica("TunerServer", 1).replica("Tuner", 1), "TunerServer",
                 0, "j-tunerserver-0", id="MXNet camel-case types are lower-cased whole"),
    pytest.param(mpijob("ns", "j").replica("Launcher", 1).workers(1), "Launcher", 0,
                 "j-launcher", id="the MPI launcher has no index"),
    pytest.param(mpijob("ns", "j").replica("Launcher", 1).workers(3), "Worker", 2,
                 "j-worker-2", id="MPI workers have one"),
]  # fmt: skip


@pytest.mark.parametrize(("builder", "rtype", "index", "name"), NAMING)
def test_pod_names(builder: Any, rtype: str, index: int, name: str) -> None:
    assert frameworks.pod_contract(builder.build(), rtype, index).name == name


def test_labels_are_the_five_operator_labels_on_a_master_role_pod() -> None:
    job = pytorchjob("ns", "a").master().workers(1).build()
    assert dict(frameworks.pod_contract(job, "Master", 0).labels) == {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": "a",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }


MASTER_ROLE = [
    pytest.param(pytorchjob().master().workers(2), "Master", 0, True,
                 id="PyTorch: the Master when there is one"),
    pytest.param(pytorchjob().master().workers(2), "Worker", 0, False,
                 id="PyTorch: not worker 0 when there is a Master"),
    pytest.param(pytorchjob().workers(2), "Worker", 0, True,
                 id="PyTorch: worker 0 without a Master"),
    pytest.param(pytorchjob().workers(2), "Worker", 1, False, id="PyTorch: not worker 1"),
    pytest.param(paddlejob().workers(2), "Worker", 0, False,
                 id="Paddle: only a Master, so a worker-only job has none"),
    pytest.param(paddlejob().master().workers(1), "Master", 0, True, id="Paddle: the Master"),
    pytest.param(xgboostjob().master().workers(1), "Master", 0, True, id="XGBoost: the Master"),
    pytest.param(jaxjob().workers(2), "Worker", 0, True, id="JAX: index 0"),
    pytest.param(mxjob().replica("Scheduler", 1).replica("Server", 2).workers(1), "Server", 1,
                 True, id="MXNet: every Server, as upstream has it"),
    pytest.param(mpijob().replica("Launcher", 1).workers(2), "Worker", 0, False,
                 id="MPI: never a worker"),
]  # fmt: skip


@pytest.mark.parametrize(("builder", "rtype", "index", "master"), MASTER_ROLE)
def test_master_role(builder: Any, rtype: str, index: int, master: bool) -> None:
    labels = frameworks.pod_contract(builder.build(), rtype, index).labels
    assert (labels.get(frameworks.JOB_ROLE_LABEL) == "master") is master


RESTART = [
    pytest.param(None, "OnFailure", id="PyTorch's default OnFailure is the pod's"),
    pytest.param("Always", "Always", id="Always is the pod's"),
    pytest.param("Never", "Never", id="Never is the pod's"),
    pytest.param("ExitCode", "Never", id="ExitCode becomes Never and the operator decides"),
]


@pytest.mark.parametrize(("replica_policy", "pod_policy"), RESTART)
def test_pod_restart_policy(replica_policy: str | None, pod_policy: str) -> None:
    job = pytorchjob().workers(1, restart_policy=replica_policy).build()
    assert frameworks.pod_contract(job, "Worker", 0).restart_policy == pod_policy


def test_apply_lays_the_contract_over_a_copy_of_the_template() -> None:
    job = (
        pytorchjob("ns", "a")
        .workers(
            1,
            labels={"team": "ml", "training.kubeflow.org/job-role": "user"},
            annotations={"note": "kept"},
        )
        .build()
    )
    template = job.replica_specs()["Worker"].template
    template["spec"]["restartPolicy"] = "Always"
    before = repr(template)
    pod = frameworks.pod_contract(job, "Worker", 0).apply(template)
    assert repr(template) == before
    assert pod["metadata"]["name"] == "a-worker-0"
    assert pod["metadata"]["annotations"] == {"note": "kept"}
    assert pod["metadata"]["labels"]["team"] == "ml"
    assert pod["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert pod["spec"]["restartPolicy"] == "OnFailure"


def _containers_in(value: Any) -> dict[int, Any]:
    """Every dict, list and tuple reachable from ``value``, by id."""
    found: dict[int, Any] = {}
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found[id(item)] = item
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            found[id(item)] = item
            stack.extend(item)
    return found


def test_a_pod_shares_no_dict_or_list_with_its_template_its_contract_or_another_pod() -> None:
    # MPI's launcher gets every kind of addition: env, init containers, mounts and volumes.
    job = mpijob("ns", "m").replica("Launcher", 1).workers(1).build()
    template = job.replica_specs()["Launcher"].template
    template["spec"]["tolerations"] = ({"key": "a", "operator": "Exists"},)  # not JSON: a tuple
    contract = frameworks.pod_contract(job, "Launcher", 0)
    first, second = contract.apply(template), contract.apply(template)
    assert first == second
    assert first["spec"]["tolerations"] == template["spec"]["tolerations"]
    assert first["spec"]["initContainers"]
    assert first["spec"]["volumes"]
    sources = (
        template,
        contract.env,
        contract.init_containers,
        contract.volumes,
        contract.volume_mounts,
    )
    shared = _containers_in(sources).keys() & _containers_in(first).keys()
    assert not shared
    assert not _containers_in(first).keys() & _containers_in(second).keys()


def test_asking_for_a_replica_type_the_job_lacks_is_an_error() -> None:
    job = pytorchjob("ns", "a").workers(1).build()
    with pytest.raises(frameworks.ContractError) as error:
        frameworks.pod_contract(job, "Master", 0)
    assert str(error.value) == (
        "PyTorchJob ns/a: spec.pytorchReplicaSpecs: no replica type Master; accepted: Worker"
    )


def test_a_service_selects_its_pod_and_exposes_every_port_of_the_default_container() -> None:
    ports = [
        {"name": "pytorchjob-port", "containerPort": 23456},
        {"name": "metrics", "containerPort": 8080},
    ]
    job = pytorchjob("ns", "a").workers(2, ports=ports).build()
    service = frameworks.service_contract(job, "Worker", 1)
    assert service.manifest("ns") == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "a-worker-1",
            "namespace": "ns",
            "labels": {
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/job-name": "a",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
        },
        "spec": {
            "clusterIP": "None",
            "selector": {
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/job-name": "a",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
            "ports": [
                {"name": "pytorchjob-port", "port": 23456},
                {"name": "metrics", "port": 8080},
            ],
        },
    }


def test_a_default_container_without_ports_gets_a_service_without_ports() -> None:
    job = tfjob("ns", "t").workers(2).build()
    job.replica_specs()["Worker"].template["spec"]["containers"][0]["ports"] = []
    assert frameworks.service_contract(job, "Worker", 0).ports == ()


def test_a_replica_without_the_default_container_cannot_get_a_service() -> None:
    job = tfjob("ns", "t").workers(2).build()
    job.replica_specs()["Worker"].template["spec"]["containers"][0]["name"] = "trainer"
    with pytest.raises(frameworks.ContractError) as error:
        frameworks.service_contract(job, "Worker", 0)
    assert str(error.value) == (
        "TFJob ns/t: spec.tfReplicaSpecs[Worker].template.spec.containers: "
        "failed to find the port: no container named tensorflow; "
        "accepted: a containerPort named tfjob-port on container tensorflow"
    )


# --- a failed pod (common/pod.go ReconcilePods) ---------------------------------------------

RESTARTING = frameworks.Condition(
    "Restarting", "PyTorchJobRestarting", "job a is restarting because Worker replica(s) failed."
)
FAILING = frameworks.Condition(
    "Failed", "PyTorchJobFailed", 'job "a" is failing because "Worker" replica(s) failed.'
)

POD_FAILED = [
    pytest.param("OnFailure", 1, frameworks.PodFailure(True, RESTARTING),
                 id="OnFailure restarts whatever the code"),
    pytest.param("Always", 0, frameworks.PodFailure(True, RESTARTING),
                 id="Always restarts whatever the code"),
    pytest.param("ExitCode", 137, frameworks.PodFailure(True, RESTARTING),
                 id="ExitCode restarts on a retryable code such as 137"),
    pytest.param("ExitCode", None, frameworks.PodFailure(True, RESTARTING),
                 id="ExitCode restarts when the container has not terminated (0xbeef)"),
    pytest.param("ExitCode", 1, frameworks.PodFailure(False, FAILING),
                 id="ExitCode fails the job on a permanent code"),
    pytest.param("Never", 137, None, id="Never leaves the verdict to the status rules"),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "code", "expected"), POD_FAILED)
def test_on_pod_failed(policy: str, code: int | None, expected: Any) -> None:
    job = pytorchjob("ns", "a").workers(2, restart_policy=policy).build()
    assert frameworks.on_pod_failed(job, "Worker", code) == expected


@pytest.mark.parametrize(
    ("code", "retryable"),
    [(0, False), (1, False), (127, False), (128, True), (130, True), (143, True), (255, True)],
    ids=lambda value: str(value),
)
def test_exit_codes_from_128_are_retryable(code: int, retryable: bool) -> None:
    assert frameworks.is_retryable(code) is retryable


def test_the_outcome_of_a_pass_is_its_first_failure_else_its_last_change() -> None:
    running = frameworks.Condition("Running", "XRunning", "r")
    failed = frameworks.Condition("Failed", "XFailed", "f")
    done = frameworks.Condition("Succeeded", "XSucceeded", "s")
    assert frameworks.Outcome((running, failed, done)).condition == failed
    assert frameworks.Outcome((running, done)).condition == done
    assert frameworks.Outcome((running,)).finished is False
    assert frameworks.Outcome((running, done)).finished is True
    assert frameworks.Outcome().condition is None


# --- host ports ----------------------------------------------------------------------------


def test_settings_with_host_ports_stay_an_immutable_hashable_value() -> None:
    given = {("Worker", 0): 20000}
    settings = frameworks.Settings(host_ports=given)
    given[("Worker", 1)] = 20001
    assert dict(settings.host_ports) == {("Worker", 0): 20000}
    assert settings == frameworks.Settings(host_ports={("Worker", 0): 20000})
    assert hash(settings) == hash(frameworks.Settings(host_ports={("Worker", 0): 20000}))
    assert frameworks.Settings().host_ports == {}


HOST_PORT_CONTAINERS = [
    pytest.param(
        [{"name": "pytorch", "image": "x"}],
        [{"name": "pytorchjob-port", "containerPort": 20001, "hostPort": 20001}],
        id="a container without the named port gets it, at its host port",
    ),
    pytest.param(
        [{"name": "pytorch", "image": "x", "ports": [{"name": "metrics", "containerPort": 9}]}],
        [
            {"name": "metrics", "containerPort": 9},
            {"name": "pytorchjob-port", "containerPort": 20001, "hostPort": 20001},
        ],
        id="other ports of the container are kept",
    ),
]


@pytest.mark.parametrize(("containers", "expected"), HOST_PORT_CONTAINERS)
def test_a_host_port_becomes_the_named_container_port(
    containers: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    job = pytorchjob().workers(1).build()
    settings = frameworks.Settings(host_ports={("Worker", 0): 20001})
    pod = frameworks.pod_contract(job, "Worker", 0, settings).apply(
        {"spec": {"containers": containers}}
    )
    assert pod["spec"]["containers"][0]["ports"] == expected


def test_an_unindexed_pod_gets_no_host_port() -> None:
    job = mpijob().replica("Launcher", 1).workers(1).build()
    settings = frameworks.Settings(host_ports={("Launcher", 0): 20001})
    assert frameworks.pod_contract(job, "Launcher", 0, settings).host_port is None
