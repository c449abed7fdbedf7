"""How users name job kinds and jobs on the command line (kubetrain.cli.jobkinds)."""

from __future__ import annotations

import pytest

from kubetrain.cli import jobkinds
from kubetrain.cli.errors import UserError

NAMES = [
    ("pytorchjob", "PyTorchJob"),
    ("pytorchjobs", "PyTorchJob"),
    ("PyTorchJob", "PyTorchJob"),
    ("pytorchjobs.kubeflow.org", "PyTorchJob"),
    ("pytorch", "PyTorchJob"),
    ("tf", "TFJob"),
    ("xgboostjob", "XGBoostJob"),
    ("mpijobs", "MPIJob"),
    ("mx", "MXJob"),
    ("trainjob", "TrainJob"),
    ("trainjobs.trainer.kubeflow.org", "TrainJob"),
]


@pytest.mark.parametrize(("token", "kind"), NAMES, ids=[f"{t} names {k}" for t, k in NAMES])
def test_a_kind_is_named_as_kubectl_or_by_its_framework(token: str, kind: str) -> None:
    assert jobkinds.find(token).kind == kind


def test_the_eight_job_kinds_in_order() -> None:
    assert [k.kind for k in jobkinds.KINDS] == [
        "TFJob", "PyTorchJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob", "MXJob", "TrainJob",
    ]  # fmt: skip
    assert jobkinds.TRAINJOB.resource.api_version == "trainer.kubeflow.org/v1alpha1"
    assert (
        jobkinds.find("pytorch").resource.path("ns")
        == "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs"
    )


def test_an_unknown_kind_lists_the_accepted_ones() -> None:
    with pytest.raises(UserError, match="no job kind 'pods'; accepted: tfjob, pytorchjob"):
        jobkinds.find("pods")


REFS = [
    ("train", None, "train"),
    ("pytorchjob/train", "PyTorchJob", "train"),
    ("pytorchjobs/train", "PyTorchJob", "train"),
    ("trainjob/t", "TrainJob", "t"),
    ("pytorchjob.kubeflow.org/train", "PyTorchJob", "train"),
]


@pytest.mark.parametrize(
    ("text", "kind", "name"), REFS, ids=[f"{t} is a job reference" for t, _, _ in REFS]
)
def test_job_references(text: str, kind: str | None, name: str) -> None:
    ref = jobkinds.parse_ref(text)
    assert ref.name == name
    assert (ref.kind.kind if ref.kind else None) == kind


@pytest.mark.parametrize(
    ("text", "message"),
    [("/train", "names no kind"), ("pytorchjob/", "names no job"), ("podz/train", "no job kind")],
    ids=["a slash without a kind", "a kind without a name", "a kind that is no job kind"],
)
def test_malformed_references_say_how_to_write_one(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        jobkinds.parse_ref(text)


def test_pods_of_a_v1_job_are_found_by_job_name_and_operator_name() -> None:
    assert jobkinds.find("pytorchjob").pod_selector("a") == (
        "training.kubeflow.org/job-name=a,training.kubeflow.org/operator-name=pytorchjob-controller"
    )


def test_pods_of_a_trainjob_are_found_by_their_jobset() -> None:
    assert jobkinds.TRAINJOB.pod_selector("a") == "jobset.sigs.k8s.io/jobset-name=a"


def test_is_job_needs_the_group_to_match() -> None:
    assert jobkinds.is_job({"apiVersion": "kubeflow.org/v1", "kind": "TFJob"})
    assert jobkinds.is_job({"apiVersion": "trainer.kubeflow.org/v2alpha1", "kind": "TrainJob"})
    assert not jobkinds.is_job({"apiVersion": "batch/v1", "kind": "Job"})
    assert not jobkinds.is_job({"apiVersion": "example.com/v1", "kind": "TFJob"})


def test_the_table_says_what_the_job_models_and_frameworks_say() -> None:
    """The command line writes its kinds out so as not to import the models; they decide."""
    from kubetrain import api, frameworks  # the authorities, which jobkinds must not import

    v1 = [
        (
            k.kind,
            k.resource.group,
            k.resource.version,
            k.resource.plural,
            k.replica_field,
            k.replica_types,
            k.default_container,
            k.controller,
            k.unindexed,
        )
        for k in jobkinds.KINDS
        if k.v1
    ]
    assert v1 == [
        (
            f.job_class.KIND,
            "kubeflow.org",
            "v1",
            f.job_class.PLURAL,
            f.job_class.REPLICA_FIELD,
            f.job_class.REPLICA_TYPES,
            f.job_class.DEFAULT_CONTAINER,
            f.controller,
            f.unindexed,
        )
        for f in frameworks.FRAMEWORKS
    ]
    assert [api.KINDS[(k.resource.group, k.kind)] for k in jobkinds.KINDS] == [
        *(f.job_class for f in frameworks.FRAMEWORKS),
        api.TrainJob,
    ]
    trainjob = jobkinds.TRAINJOB
    assert (trainjob.kind, trainjob.resource.plural) == (api.TrainJob.KIND, api.TrainJob.PLURAL)
    assert trainjob.replica_types == (api.NODE,)
    assert trainjob.default_container == api.NODE
    labels = ("JOB_NAME_LABEL", "OPERATOR_NAME_LABEL", "REPLICA_TYPE_LABEL", "REPLICA_INDEX_LABEL")
    assert [getattr(jobkinds, n) for n in labels] == [getattr(api, n) for n in labels]
