"""Upstream's v1 webhook scenarios (reference 5.1, "Webhooks"), plus the gaps kubetrain closes."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from tests.builders import job

NAME_MSG = (
    "should match: a lowercase RFC 1035 label must consist of lower case alphanumeric "
    "characters or '-', start with an alphabetic character, and end with an alphanumeric "
    "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
    "'[a-z]([-a-z0-9]*[a-z0-9])?')"
)
MANAGED_BY_MSG = (
    'Unsupported value: "other.io/controller": supported values: '
    '"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"'
)


def errors_of(doc: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in api.review(doc, old).errors]


def no_containers(kind: str, rtype: str) -> dict[str, Any]:
    return job(kind).replica(rtype, 1, containers=[]).doc()


def empty_image(kind: str, rtype: str, container: str) -> dict[str, Any]:
    return job(kind).replica(rtype, 1, containers=[{"name": container, "image": ""}]).doc()


def wrong_container(kind: str, rtype: str) -> dict[str, Any]:
    return job(kind).replica(rtype, 1, containers=[{"name": "main", "image": "x"}]).doc()


def bad_name(kind: str, rtype: str) -> dict[str, Any]:
    return job(kind, "Bad.Name").replica(rtype, 1).doc()


def managed_by(kind: str, rtype: str) -> dict[str, Any]:
    return job(kind).replica(rtype, 1).run_policy(managedBy="other.io/controller").doc()


def nil_specs(kind: str) -> dict[str, Any]:
    doc = job(kind).doc()
    del doc["spec"][next(iter(doc["spec"]))]
    return doc


CASES = [
    # --- TFJob -------------------------------------------------------------------------------
    ("a valid TFJob", job("TFJob").replica("Chief").replica("Worker", 2).doc(), []),
    (
        "a TFJob name that is not a DNS-1035 label",
        bad_name("TFJob", "Worker"),
        [f'metadata.name: Invalid value: "Bad.Name": {NAME_MSG}'],
    ),
    (
        "a TFJob replica without containers",
        no_containers("TFJob", "Worker"),
        [
            "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must be specified",
            "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must have at least one container with name tensorflow",
        ],
    ),
    (
        "a TFJob container with an empty image",
        empty_image("TFJob", "Worker", "tensorflow"),
        [
            "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value: "
            "must be required"
        ],
    ),
    (
        "a TFJob without a tensorflow container",
        wrong_container("TFJob", "Worker"),
        [
            "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must have at least one container with name tensorflow"
        ],
    ),
    (
        "a TFJob with both a Chief and a Master",
        job("TFJob").replica("Chief").replica("Master").doc(),
        ["spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"],
    ),
    (
        "a TFJob with an unsupported managedBy",
        managed_by("TFJob", "Worker"),
        [f"spec.runPolicy.managedBy: {MANAGED_BY_MSG}"],
    ),
    # --- PyTorchJob --------------------------------------------------------------------------
    ("a valid PyTorchJob", job("PyTorchJob").replica("Master").replica("Worker", 2).doc(), []),
    (
        "a PyTorchJob name that is not a DNS-1035 label",
        bad_name("PyTorchJob", "Master"),
        [f'metadata.name: Invalid value: "Bad.Name": {NAME_MSG}'],
    ),
    (
        "a PyTorchJob replica without containers",
        no_containers("PyTorchJob", "Master"),
        [
            "spec.pytorchReplicaSpecs[Master].template.spec.containers: Required value: "
            "must be specified",
            "spec.pytorchReplicaSpecs[Master].template.spec.containers: Required value: "
            "must have at least one container with name pytorch",
        ],
    ),
    (
        "a PyTorchJob container with an empty image",
        empty_image("PyTorchJob", "Master", "pytorch"),
        [
            "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required value: "
            "must be required"
        ],
    ),
    (
        "a PyTorchJob without a pytorch container",
        wrong_container("PyTorchJob", "Master"),
        [
            "spec.pytorchReplicaSpecs[Master].template.spec.containers: Required value: "
            "must have at least one container with name pytorch"
        ],
    ),
    (
        "a PyTorchJob Master with two replicas",
        job("PyTorchJob").replica("Master", 2).doc(),
        ["spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"],
    ),
    (
        "a PyTorchJob Master without replicas (validated before defaulting, as upstream)",
        job("PyTorchJob").replica("Master", None).doc(),
        ["spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"],
    ),
    (
        "a PyTorchJob Worker with zero replicas",
        job("PyTorchJob").replica("Master").replica("Worker", 0).doc(),
        ["spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1"],
    ),
    (
        "a PyTorchJob elastic policy without a Worker",
        job("PyTorchJob").replica("Master").spec(elasticPolicy={"maxReplicas": 2}).doc(),
        [
            "spec.pytorchReplicaSpecs[Worker]: Required value: "
            "must be configured if elastic policy is used"
        ],
    ),
    (
        "a PyTorchJob with both nproc fields",
        job("PyTorchJob")
        .replica("Worker", 2)
        .spec(nprocPerNode="2", elasticPolicy={"nProcPerNode": 2})
        .doc(),
        ["spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode"],
    ),
    (
        "a PyTorchJob with an unsupported managedBy",
        managed_by("PyTorchJob", "Master"),
        [f"spec.runPolicy.managedBy: {MANAGED_BY_MSG}"],
    ),
    (
        "a PyTorchJob with an unknown replica type",
        job("PyTorchJob").replica("Master").replica("Chief").doc(),
        [
            'spec.pytorchReplicaSpecs[Chief]: Unsupported value: "Chief": '
            'supported values: "Master", "Worker"'
        ],
    ),
    # --- XGBoostJob --------------------------------------------------------------------------
    ("a valid XGBoostJob", job("XGBoostJob").replica("Master").replica("Worker", 2).doc(), []),
    (
        "an XGBoostJob name that is not a DNS-1035 label",
        bad_name("XGBoostJob", "Master"),
        [f'metadata.name: Invalid value: "Bad.Name": {NAME_MSG}'],
    ),
    (
        "an XGBoostJob with empty containers",
        no_containers("XGBoostJob", "Master"),
        [
            "spec.xgbReplicaSpecs[Master].template.spec.containers: Required value: "
            "must be specified",
            "spec.xgbReplicaSpecs[Master].template.spec.containers: Required value: "
            "must have at least one container with name xgboost",
        ],
    ),
    (
        "an XGBoostJob container with an empty image",
        empty_image("XGBoostJob", "Master", "xgboost"),
        [
            "spec.xgbReplicaSpecs[Master].template.spec.containers[0].image: Required value: "
            "must be required"
        ],
    ),
    (
        "an XGBoostJob without an xgboost container",
        wrong_container("XGBoostJob", "Master"),
        [
            "spec.xgbReplicaSpecs[Master].template.spec.containers: Required value: "
            "must have at least one container with name xgboost"
        ],
    ),
    (
        "an XGBoostJob Master with two replicas",
        job("XGBoostJob").replica("Master", 2).doc(),
        ["spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1"],
    ),
    (
        "an XGBoostJob without a Master",
        job("XGBoostJob").replica("Worker", 2).doc(),
        ["spec.xgbReplicaSpecs[Master]: Required value: must be present"],
    ),
    (
        "an XGBoostJob with an unsupported managedBy",
        managed_by("XGBoostJob", "Master"),
        [f"spec.runPolicy.managedBy: {MANAGED_BY_MSG}"],
    ),
    # --- PaddleJob ---------------------------------------------------------------------------
    ("a valid PaddleJob", job("PaddleJob").replica("Worker", 2).doc(), []),
    (
        "a PaddleJob name that is not a DNS-1035 label",
        bad_name("PaddleJob", "Worker"),
        [f'metadata.name: Invalid value: "Bad.Name": {NAME_MSG}'],
    ),
    (
        "a PaddleJob without containers",
        no_containers("PaddleJob", "Worker"),
        [
            "spec.paddleReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must be specified",
            "spec.paddleReplicaSpecs[Worker].template.spec.containers: Required value: "
            'must have at least one container with name "paddle"',
        ],
    ),
    (
        "a PaddleJob container with an empty image",
        empty_image("PaddleJob", "Worker", "paddle"),
        [
            "spec.paddleReplicaSpecs[Worker].template.spec.containers[0].image: Required value: "
            "must be required"
        ],
    ),
    (
        "a PaddleJob without a paddle container (the name is quoted, as upstream)",
        wrong_container("PaddleJob", "Worker"),
        [
            "spec.paddleReplicaSpecs[Worker].template.spec.containers: Required value: "
            'must have at least one container with name "paddle"'
        ],
    ),
    (
        "a PaddleJob without a replica-spec map",
        nil_specs("PaddleJob"),
        ["spec.paddleReplicaSpecs: Required value: must be required"],
    ),
    (
        "a PaddleJob with an unsupported managedBy",
        managed_by("PaddleJob", "Worker"),
        [f"spec.runPolicy.managedBy: {MANAGED_BY_MSG}"],
    ),
    # --- JAXJob ------------------------------------------------------------------------------
    ("a valid JAXJob", job("JAXJob").replica("Worker", 2).doc(), []),
    (
        "a JAXJob name that is not a DNS-1035 label",
        bad_name("JAXJob", "Worker"),
        [f'metadata.name: Invalid value: "Bad.Name": {NAME_MSG}'],
    ),
    (
        "a JAXJob without containers",
        no_containers("JAXJob", "Worker"),
        [
            "spec.jaxReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must be specified",
            "spec.jaxReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must have at least one container with name jax",
        ],
    ),
    (
        "a JAXJob container with an empty image",
        empty_image("JAXJob", "Worker", "jax"),
        [
            "spec.jaxReplicaSpecs[Worker].template.spec.containers[0].image: Required value: "
            "must be required"
        ],
    ),
    (
        "a JAXJob without a jax container",
        wrong_container("JAXJob", "Worker"),
        [
            "spec.jaxReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must have at least one container with name jax"
        ],
    ),
    (
        "a JAXJob without a replica-spec map",
        nil_specs("JAXJob"),
        ["spec.jaxReplicaSpecs: Required value: must be required"],
    ),
    (
        "a JAXJob with an unsupported managedBy (upstream skips this check)",
        managed_by("JAXJob", "Worker"),
        [f"spec.runPolicy.managedBy: {MANAGED_BY_MSG}"],
    ),
    (
        "a JAXJob with a Master replica type",
        job("JAXJob").replica("Master").doc(),
        ['spec.jaxReplicaSpecs[Master]: Unsupported value: "Master": supported values: "Worker"'],
    ),
    # --- MPIJob (validated in upstream's controller; field errors here) --------------------------
    (
        "a valid MPIJob",
        job("MPIJob")
        .replica("Launcher", containers=[{"name": "launcher", "image": "mpi:1"}])
        .replica("Worker", 2, containers=[{"name": "worker", "image": "mpi:1"}])
        .doc(),
        [],
    ),
    (
        "an MPIJob without a Launcher",
        job("MPIJob").replica("Worker", 2).doc(),
        ["spec.mpiReplicaSpecs[Launcher]: Required value: must be present"],
    ),
    (
        "an MPIJob with two launchers",
        job("MPIJob").replica("Launcher", 2).doc(),
        [
            "spec.mpiReplicaSpecs[Launcher].replicas: Forbidden: "
            "there must be only 1 launcher replica"
        ],
    ),
    (
        "an MPIJob with a lowercase launcher key (MPI keys are not normalised upstream)",
        job("MPIJob").replica("Launcher").replica("worker", 1).doc(),
        [
            'spec.mpiReplicaSpecs[worker]: Unsupported value: "worker": '
            'supported values: "Launcher", "Worker"'
        ],
    ),
    # --- MXJob (legacy) ----------------------------------------------------------------------
    (
        "a valid MXJob",
        job("MXJob").replica("Scheduler").replica("Server").replica("Worker", 2).doc(),
        [],
    ),
    (
        "an MXJob with two schedulers",
        job("MXJob").replica("Scheduler", 2).doc(),
        ["spec.mxReplicaSpecs[Scheduler].replicas: Forbidden: must be 1"],
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_webhook_scenarios(doc: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(doc) == expected


def test_replica_keys_are_normalised_before_validation() -> None:
    doc = job("PyTorchJob").replica("master").replica("WORKER", 2).doc()
    verdict = api.review(doc)
    assert verdict.ok, verdict.messages()
    assert list(verdict.obj.replica_specs()) == ["Master", "Worker"]  # type: ignore[union-attr]


def test_replica_keys_differing_only_in_case_are_a_duplicate() -> None:
    doc = job("TFJob").replica("Worker").replica("worker").doc()
    assert errors_of(doc) == ['spec.tfReplicaSpecs[worker]: Duplicate value: "worker"']


UPDATE_CASES = [
    (
        "PyTorchJob managedBy cannot change (upstream never enforced this)",
        "PyTorchJob",
        "Master",
        [
            'spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": '
            "field is immutable"
        ],
    ),
    (
        "TFJob managedBy cannot change",
        "TFJob",
        "Worker",
        [
            'spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": '
            "field is immutable"
        ],
    ),
    (
        "JAXJob managedBy cannot change (upstream skips runPolicy validation for JAX)",
        "JAXJob",
        "Worker",
        [
            'spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": '
            "field is immutable"
        ],
    ),
]


@pytest.mark.parametrize(
    ("kind", "rtype", "expected"), [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES]
)
def test_managed_by_is_immutable(kind: str, rtype: str, expected: list[str]) -> None:
    old = job(kind).replica(rtype).doc()
    new = job(kind).replica(rtype).run_policy(managedBy="kueue.x-k8s.io/multikueue").doc()
    assert errors_of(new, old) == expected
    assert errors_of(old, old) == []


def test_queue_is_immutable_once_set() -> None:
    old = job("PyTorchJob").replica("Master").run_policy(schedulingPolicy={"queue": "a"}).doc()
    new = job("PyTorchJob").replica("Master").run_policy(schedulingPolicy={"queue": "b"}).doc()
    assert errors_of(new, old) == [
        'spec.runPolicy.schedulingPolicy.queue: Invalid value: "b": '
        "spec.runPolicy.schedulingPolicy.queue is immutable"
    ]


def test_queue_may_be_set_on_a_job_that_had_none() -> None:
    old = job("PyTorchJob").replica("Master").doc()
    new = job("PyTorchJob").replica("Master").run_policy(schedulingPolicy={"queue": "b"}).doc()
    assert errors_of(new, old) == []


def test_elastic_nproc_per_node_is_deprecated_with_a_warning() -> None:
    doc = job("PyTorchJob").replica("Worker", 2).spec(elasticPolicy={"nProcPerNode": 2}).doc()
    verdict = api.review(doc)
    assert verdict.ok
    assert verdict.warnings == (
        "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead",
    )


def test_mxjob_is_accepted_with_a_deprecation_warning() -> None:
    verdict = api.review(job("MXJob").replica("Worker").doc())
    assert verdict.ok
    assert len(verdict.warnings) == 1
    assert "MXJob is deprecated" in verdict.warnings[0]


def test_every_problem_is_reported_at_once() -> None:
    doc = job("XGBoostJob", "X").replica("Worker", containers=[{"name": "a", "image": ""}]).doc()
    assert len(errors_of(doc)) == 4  # name, image, default container, missing Master


def test_admit_raises_invalid_with_every_message() -> None:
    with pytest.raises(api.Invalid) as caught:
        api.admit(job("XGBoostJob").replica("Worker").doc())
    assert caught.value.review.messages() == [
        "XGBoostJob/test-job: spec.xgbReplicaSpecs[Master]: Required value: must be present"
    ]
