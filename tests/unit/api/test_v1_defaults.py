"""Defaulting of the v1 kinds (reference 1.8 and upstream's ``*_defaults_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from tests.builders import job


def defaulted(doc: dict[str, Any]) -> dict[str, Any]:
    verdict = api.review(doc)
    assert verdict.ok, verdict.messages()
    assert verdict.obj is not None
    return verdict.obj.to_dict()


def replica(doc: dict[str, Any], field: str, rtype: str) -> dict[str, Any]:
    return doc["spec"][field][rtype]


def first_container(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["template"]["spec"]["containers"][0]


PORTS = [
    ("TFJob", "tfReplicaSpecs", "Worker", "tfjob-port", 2222, "Never"),
    ("PyTorchJob", "pytorchReplicaSpecs", "Worker", "pytorchjob-port", 23456, "OnFailure"),
    ("XGBoostJob", "xgbReplicaSpecs", "Worker", "xgboostjob-port", 9999, "Never"),
    ("PaddleJob", "paddleReplicaSpecs", "Worker", "master", 36543, "OnFailure"),
    ("JAXJob", "jaxReplicaSpecs", "Worker", "jaxjob-port", 6666, "Never"),
    ("MXJob", "mxReplicaSpecs", "Worker", "mxjob-port", 9091, "Never"),
]


@pytest.mark.parametrize(
    ("kind", "field", "rtype", "port_name", "port", "restart"),
    PORTS,
    ids=[f"{p[0]} gets port {p[4]} named {p[3]} and restartPolicy {p[5]}" for p in PORTS],
)
def test_each_framework_gets_its_named_port_replicas_and_restart_policy(
    kind: str, field: str, rtype: str, port_name: str, port: int, restart: str
) -> None:
    builder = job(kind)
    if kind == "XGBoostJob":
        builder.replica("Master", 1)  # XGBoost requires a Master with replicas: 1
    doc = defaulted(builder.replica(rtype, None).doc())
    spec = replica(doc, field, rtype)
    assert spec["replicas"] == 1
    assert spec["restartPolicy"] == restart
    assert first_container(spec)["ports"] == [{"name": port_name, "containerPort": port}]
    assert doc["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "suspend": False}


def test_a_port_with_the_default_name_is_kept_as_written() -> None:
    container = {
        "name": "pytorch",
        "image": "x",
        "ports": [{"name": "pytorchjob-port", "containerPort": 30000}],
    }
    doc = defaulted(job("PyTorchJob").replica("Master", containers=[container]).doc())
    ports = first_container(replica(doc, "pytorchReplicaSpecs", "Master"))["ports"]
    assert ports == [{"name": "pytorchjob-port", "containerPort": 30000}]


def test_other_ports_are_kept_and_the_default_is_appended() -> None:
    container = {"name": "tensorflow", "image": "x", "ports": [{"containerPort": 6006}]}
    doc = defaulted(job("TFJob").replica("Worker", containers=[container]).doc())
    ports = first_container(replica(doc, "tfReplicaSpecs", "Worker"))["ports"]
    assert ports == [{"containerPort": 6006}, {"name": "tfjob-port", "containerPort": 2222}]


def test_the_port_goes_on_the_default_container_not_a_sidecar() -> None:
    sidecar = {"name": "sidecar", "image": "s"}
    main = {"name": "pytorch", "image": "x"}
    doc = defaulted(job("PyTorchJob").replica("Master", containers=[sidecar, main]).doc())
    containers = replica(doc, "pytorchReplicaSpecs", "Master")["template"]["spec"]["containers"]
    assert "ports" not in containers[0]
    assert containers[1]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]


def test_user_values_are_never_overwritten() -> None:
    doc = defaulted(
        job("TFJob")
        .replica("Worker", 3, restart_policy="ExitCode")
        .run_policy(cleanPodPolicy="All", suspend=True)
        .spec(successPolicy="AllWorkers")
        .doc()
    )
    assert replica(doc, "tfReplicaSpecs", "Worker")["replicas"] == 3
    assert replica(doc, "tfReplicaSpecs", "Worker")["restartPolicy"] == "ExitCode"
    assert doc["spec"]["runPolicy"] == {"cleanPodPolicy": "All", "suspend": True}
    assert doc["spec"]["successPolicy"] == "AllWorkers"


def test_tf_success_policy_defaults_to_the_empty_string() -> None:
    assert defaulted(job("TFJob").replica("Worker").doc())["spec"]["successPolicy"] == ""


CAMEL = [
    (
        "TFJob",
        "tfReplicaSpecs",
        ["ps", "worker", "CHIEF", "evaluator"],
        ["PS", "Worker", "Chief", "Evaluator"],
    ),
    ("PyTorchJob", "pytorchReplicaSpecs", ["master", "WORKER"], ["Master", "Worker"]),
    ("XGBoostJob", "xgbReplicaSpecs", ["MASTER", "worker"], ["Master", "Worker"]),
    ("PaddleJob", "paddleReplicaSpecs", ["worker"], ["Worker"]),
    ("JAXJob", "jaxReplicaSpecs", ["worker"], ["Worker"]),
    (
        "MXJob",
        "mxReplicaSpecs",
        ["scheduler", "server", "tunertracker"],
        ["Scheduler", "Server", "TunerTracker"],
    ),
]


@pytest.mark.parametrize(
    ("kind", "field", "written", "normalised"),
    CAMEL,
    ids=[f"{c[0]} replica keys {c[2]} become {c[3]}" for c in CAMEL],
)
def test_replica_keys_become_camel_case(
    kind: str, field: str, written: list[str], normalised: list[str]
) -> None:
    builder = job(kind)
    for rtype in written:
        builder.replica(rtype)
    assert list(defaulted(builder.doc())["spec"][field]) == normalised


MPI_CASES = [
    ("launcher replicas default to 1 and workers to 0", None, None, 1, 0),
    ("given replicas are kept", 1, 4, 1, 4),
]


@pytest.mark.parametrize(
    ("launcher", "workers", "want_launcher", "want_workers"),
    [c[1:] for c in MPI_CASES],
    ids=[c[0] for c in MPI_CASES],
)
def test_mpi_replicas(
    launcher: int | None, workers: int | None, want_launcher: int, want_workers: int
) -> None:
    doc = defaulted(job("MPIJob").replica("Launcher", launcher).replica("Worker", workers).doc())
    specs = doc["spec"]["mpiReplicaSpecs"]
    assert specs["Launcher"]["replicas"] == want_launcher
    assert specs["Worker"]["replicas"] == want_workers
    assert specs["Launcher"]["restartPolicy"] == specs["Worker"]["restartPolicy"] == "Never"
    assert "ports" not in first_container(specs["Launcher"])  # MPI has no services


def test_mpi_clean_pod_policy_defaults_both_copies_only_when_neither_is_set() -> None:
    doc = defaulted(job("MPIJob").replica("Launcher").doc())
    assert doc["spec"]["cleanPodPolicy"] == "None"
    assert doc["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    doc = defaulted(job("MPIJob").replica("Launcher").spec(cleanPodPolicy="Running").doc())
    assert doc["spec"]["cleanPodPolicy"] == "Running"
    assert "cleanPodPolicy" not in doc["spec"]["runPolicy"]


ELASTIC = [
    ("min and max unset take the Worker replicas", {}, 3, (3, 3)),
    ("min and max both set are kept", {"minReplicas": 1, "maxReplicas": 4}, 3, (1, 4)),
    ("only max set copies it to min", {"maxReplicas": 4}, 3, (4, 4)),
    ("only min set copies it to max", {"minReplicas": 2}, 3, (2, 2)),
]


@pytest.mark.parametrize(
    ("policy", "workers", "bounds"), [c[1:] for c in ELASTIC], ids=[c[0] for c in ELASTIC]
)
@pytest.mark.parametrize("kind", ["PyTorchJob", "PaddleJob"])
def test_elastic_min_and_max(
    kind: str, policy: dict[str, int], workers: int, bounds: tuple[int, int]
) -> None:
    doc = defaulted(job(kind).replica("Worker", workers).spec(elasticPolicy=policy).doc())
    elastic = doc["spec"]["elasticPolicy"]
    assert (elastic["minReplicas"], elastic["maxReplicas"]) == bounds


NPROC = [
    ("nprocPerNode defaults to auto", {}, "auto"),
    ("a given nprocPerNode is kept", {"nprocPerNode": "4"}, "4"),
    ("an elastic policy without nProcPerNode still gets auto", {"elasticPolicy": {}}, "auto"),
    (
        "the deprecated elasticPolicy.nProcPerNode suppresses the default",
        {"elasticPolicy": {"nProcPerNode": 2}},
        None,
    ),
]


@pytest.mark.parametrize(("spec", "want"), [c[1:] for c in NPROC], ids=[c[0] for c in NPROC])
def test_pytorch_nproc_per_node(spec: dict[str, Any], want: str | None) -> None:
    doc = defaulted(job("PyTorchJob").replica("Worker", 2).spec(**spec).doc())
    assert doc["spec"].get("nprocPerNode") == want


def test_defaulting_is_idempotent() -> None:
    once = defaulted(job("PyTorchJob").replica("master").replica("worker", 2).doc())
    assert defaulted(once) == once


def test_defaulting_leaves_the_input_untouched() -> None:
    doc = job("PyTorchJob").replica("Master").doc()
    before = job("PyTorchJob").replica("Master").doc()
    api.review(doc)
    assert doc == before


def test_fields_the_user_wrote_survive_defaulting() -> None:
    container = {
        "name": "pytorch",
        "image": "x",
        "imagePullPolicy": "Always",
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "securityContext": {"runAsUser": 1000},
    }
    doc = job("PyTorchJob").replica("Master", containers=[container]).doc()
    doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "training-data"}}
    ]
    doc["metadata"]["labels"] = {"team": "vision"}
    out = defaulted(doc)
    master = out["spec"]["pytorchReplicaSpecs"]["Master"]
    assert master["template"]["spec"]["volumes"][0]["persistentVolumeClaim"] == {
        "claimName": "training-data"
    }
    got = first_container(master)
    assert got["imagePullPolicy"] == "Always"
    assert got["securityContext"] == {"runAsUser": 1000}
    assert out["metadata"]["labels"] == {"team": "vision"}
