"""TrainJob validation without a runtime: the CRD schema, CEL rules and webhook shape checks.

Each case pins the exact ``<field path>: <message>`` line, upstream's words where it has them.
Cases follow ``test/integration/webhooks/trainjob_test.go``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from tests.unit.api.trainers import messages, pod_spec_patch, trainjob

NAME_FORMAT = "metadata.name must match RFC 1035 DNS label format"
NAME_LENGTH = "metadata.name must be no more than 63 characters"
MANAGED_BY = (
    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
)
STORAGE_URI = "storageUri may be empty, or it must be a valid URI (scheme://...)"


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(trainjob("valid-job-name").build(), id="an RFC 1035 name"),
        pytest.param(trainjob("a" * 63).build(), id="a name of exactly 63 characters"),
        pytest.param(trainjob("a").trainer(numNodes=0).build(), id="zero numNodes"),
        pytest.param(
            trainjob("a").trainer(numNodes=2, numProcPerNode=4).build(),
            id="positive numNodes and numProcPerNode",
        ),
        pytest.param(
            trainjob("a").trainer(numProcPerNode="gpu").build(), id="numProcPerNode gpu (v2.1)"
        ),
        pytest.param(
            trainjob("a").spec(managedBy="trainer.kubeflow.org/trainjob-controller").build(),
            id="managedBy the trainjob controller",
        ),
        pytest.param(
            trainjob("a").spec(managedBy="kueue.x-k8s.io/multikueue").build(),
            id="managedBy multikueue",
        ),
        pytest.param(
            trainjob("a").initializer(dataset={"storageUri": ""}).build(),
            id="an empty dataset storageUri",
        ),
        pytest.param(
            trainjob("a").initializer(dataset={"storageUri": "s3://bucket/path"}).build(),
            id="a valid dataset storageUri",
        ),
        pytest.param(
            trainjob("a").initializer(model={"storageUri": "gs://bucket/model"}).build(),
            id="a valid model storageUri",
        ),
        pytest.param(
            trainjob("a").trainer(command=["a" * 1048576]).build(),
            id="a command item at the max length",
        ),
        pytest.param(
            trainjob("a").trainer(args=["a" * 1048576]).build(), id="an args item at the max length"
        ),
        pytest.param(
            trainjob("a")
            .patch(
                "acme.io/manager",
                pod_spec_patch("node", terminationGracePeriodSeconds=300),
                pod_spec_patch("launcher", terminationGracePeriodSeconds=0),
            )
            .build(),
            id="runtimePatches with two replicated jobs and valid grace periods",
        ),
        pytest.param(
            trainjob("a").patch("kueue.k8s.io/manager").build(), id="a valid patch manager"
        ),
        pytest.param(trainjob("a").spec(activeDeadlineSeconds=1).build(), id="a 1s deadline"),
    ],
)
def test_a_valid_trainjob_is_accepted(doc: dict[str, Any]) -> None:
    assert messages(doc) == []


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            trainjob("Invalid-job-name").build(),
            f'metadata.name: Invalid value: "Invalid-job-name": {NAME_FORMAT}',
            id="uppercase letters in the name",
        ),
        pytest.param(
            trainjob("1jobname").build(),
            f'metadata.name: Invalid value: "1jobname": {NAME_FORMAT}',
            id="a name starting with a digit",
        ),
        pytest.param(
            trainjob("jobname-").build(),
            f'metadata.name: Invalid value: "jobname-": {NAME_FORMAT}',
            id="a name ending with a hyphen",
        ),
        pytest.param(
            trainjob("a" * 64).build(),
            f'metadata.name: Invalid value: "{"a" * 64}": {NAME_LENGTH}',
            id="a name over 63 characters",
        ),
        pytest.param(
            trainjob("a").spec(managedBy="example.com/other").build(),
            f'spec.managedBy: Invalid value: "example.com/other": {MANAGED_BY}',
            id="an unknown managedBy",
        ),
        pytest.param(
            trainjob("a").trainer(numNodes=-1).build(),
            "spec.trainer.numNodes: Invalid value: -1: should be greater than or equal to 0",
            id="negative numNodes",
        ),
        pytest.param(
            trainjob("a").trainer(numProcPerNode=0).build(),
            "spec.trainer.numProcPerNode: Invalid value: 0: "
            "numProcPerNode must be greater than or equal to 1",
            id="zero numProcPerNode",
        ),
        pytest.param(
            trainjob("a").trainer(numProcPerNode=-1).build(),
            "spec.trainer.numProcPerNode: Invalid value: -1: "
            "numProcPerNode must be greater than or equal to 1",
            id="negative numProcPerNode",
        ),
        pytest.param(
            trainjob("a").trainer(numProcPerNode="many").build(),
            'spec.trainer.numProcPerNode: Invalid value: "many": '
            "must have an int value or [auto cpu gpu]",
            id="a numProcPerNode word other than auto, cpu or gpu",
        ),
        pytest.param(
            trainjob("a").initializer(dataset={"storageUri": "invalid-uri"}).build(),
            f'spec.initializer.dataset.storageUri: Invalid value: "invalid-uri": {STORAGE_URI}',
            id="a dataset storageUri without a scheme",
        ),
        pytest.param(
            trainjob("a").initializer(dataset={"storageUri": "s3://"}).build(),
            f'spec.initializer.dataset.storageUri: Invalid value: "s3://": {STORAGE_URI}',
            id="a dataset storageUri missing its path",
        ),
        pytest.param(
            trainjob("a").initializer(model={"storageUri": "invalid-uri"}).build(),
            f'spec.initializer.model.storageUri: Invalid value: "invalid-uri": {STORAGE_URI}',
            id="a model storageUri without a scheme",
        ),
        pytest.param(
            trainjob("a").initializer(model={"storageUri": "hf://" + "m" * 2044}).build(),
            "spec.initializer.model.storageUri: Too long: may not be more than 2048 bytes",
            id="a storageUri over 2048 characters",
        ),
        pytest.param(
            trainjob("a").trainer(command=["a" * 1048577]).build(),
            "spec.trainer.command[0]: Too long: may not be more than 1048576 bytes",
            id="a command item over the max length",
        ),
        pytest.param(
            trainjob("a").trainer(args=["ok", "a" * 1048577]).build(),
            "spec.trainer.args[1]: Too long: may not be more than 1048576 bytes",
            id="an args item over the max length",
        ),
        pytest.param(
            trainjob("a").trainer(args=["x"] * 129).build(),
            "spec.trainer.args: Too many: must have at most 128 items",
            id="more than 128 args",
        ),
        pytest.param(
            trainjob("a")
            .trainer(env=[{"name": f"V{i}", "value": "1"} for i in range(129)])
            .build(),
            "spec.trainer.env: Too many: must have at most 128 items",
            id="more than 128 env vars",
        ),
        pytest.param(
            trainjob("a").trainer(env=[{"name": "A", "value": "1"}, {"name": "A"}]).build(),
            'spec.trainer.env[1].name: Duplicate value: "A"',
            id="an env var set twice",
        ),
        pytest.param(
            trainjob("a").trainer(image="i" * 501).build(),
            "spec.trainer.image: Too long: may not be more than 500 bytes",
            id="an image over 500 characters",
        ),
        pytest.param(
            trainjob("a").trainer(resourcesPerNode={"limits": {"cpu": "two"}}).build(),
            'spec.trainer.resourcesPerNode.limits[cpu]: Invalid value: "two": '
            "must be a quantity such as 2, 500m or 16Gi",
            id="a malformed quantity in resourcesPerNode",
        ),
        pytest.param(
            trainjob("a").spec(activeDeadlineSeconds=0).build(),
            "spec.activeDeadlineSeconds: Invalid value: 0: should be greater than or equal to 1",
            id="a zero active deadline",
        ),
        pytest.param(
            trainjob("a").patch("kueue.k8s.io/").build(),
            'spec.runtimePatches[0].manager: Invalid value: "kueue.k8s.io/": '
            'must be a domain-prefixed path (such as "acme.io/foo")',
            id="a patch manager without a path",
        ),
        pytest.param(
            trainjob("a").patch("Kueue/manager").build(),
            'spec.runtimePatches[0].manager: Invalid value: "Kueue": a lowercase RFC 1123 '
            "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            r"validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="a patch manager whose domain is not lowercase",
        ),
        pytest.param(
            trainjob("a").patch("acme.io/a b").build(),
            'spec.runtimePatches[0].manager: Invalid value: "a b": Invalid path '
            "(regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
            id="a patch manager whose path has a blank",
        ),
        pytest.param(
            trainjob("a").patch("acme.io/x").patch("acme.io/x").build(),
            'spec.runtimePatches[1].manager: Duplicate value: "acme.io/x"',
            id="two patches by one manager",
        ),
        pytest.param(
            trainjob("a")
            .patch("acme.io/x", pod_spec_patch("node", terminationGracePeriodSeconds=-1))
            .build(),
            "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
            ".template.spec.template.spec.terminationGracePeriodSeconds: Invalid value: -1: "
            "should be greater than or equal to 0",
            id="a negative grace period in a patch",
        ),
        pytest.param(
            trainjob("a").spec(podTemplateOverrides=[{"targetJobs": []}]).build(),
            "spec.podTemplateOverrides[0].targetJobs: Required value",
            id="a v2.1 override without target jobs",
        ),
        pytest.param(
            trainjob("a").spec(runtimeRef={"name": "x", "kind": "Deployment"}).build(),
            "spec.runtimeRef: Unsupported value: unsupported runtime: "
            "Deployment.trainer.kubeflow.org; accepted: "
            "ClusterTrainingRuntime.trainer.kubeflow.org, TrainingRuntime.trainer.kubeflow.org",
            id="a runtime kind no plugin handles",
        ),
        pytest.param(
            trainjob("a").spec(runtimeRef={"name": ""}).build(),
            "spec.runtimeRef.name: Required value",
            id="a runtimeRef without a name",
        ),
    ],
)
def test_an_invalid_trainjob_is_rejected_with_upstreams_message(
    doc: dict[str, Any], expected: str
) -> None:
    assert expected in messages(doc)


def test_a_trainjob_without_spec_needs_a_runtime_ref() -> None:
    doc = trainjob("a").build()
    del doc["spec"]
    assert messages(doc) == ["spec.runtimeRef: Required value"]


def test_every_problem_is_reported_at_once() -> None:
    doc = (
        trainjob("Bad")
        .spec(managedBy="nobody", activeDeadlineSeconds=0)
        .trainer(numNodes=-1, numProcPerNode=0)
        .build()
    )
    assert len(messages(doc)) == 5


def test_a_generated_name_is_left_to_the_server() -> None:
    doc = trainjob("a").build()
    doc["metadata"] = {"generateName": "job-"}
    assert messages(doc) == []


def test_without_a_lookup_no_runtime_check_runs() -> None:
    doc = trainjob("a", runtime_name="missing").initializer(dataset={"storageUri": "hf://d"})
    assert messages(doc.build()) == []


def test_an_env_entry_that_is_not_an_object_is_a_field_error() -> None:
    doc = trainjob("a").trainer(env=["PET_NNODES"]).build()
    assert messages(doc) == ['spec.trainer.env[0]: Invalid value: "PET_NNODES": must be an object']
    assert api.review(doc).obj is None
