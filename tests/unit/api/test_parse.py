"""Shape errors: wrong types, unknown fields, bad enums and kinds, reported with wire paths."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from tests.builders import job


def messages(doc: Any) -> list[str]:
    return api.review(doc).messages()


def with_master(**master: Any) -> dict[str, Any]:
    doc = job("PyTorchJob", "p").replica("Master").doc()
    doc["spec"]["pytorchReplicaSpecs"]["Master"].update(master)
    return doc


CASES = [
    (
        "a string where an integer belongs",
        with_master(replicas="1"),
        [
            'PyTorchJob/p: spec.pytorchReplicaSpecs[Master].replicas: Invalid value: "1": '
            "must be an integer"
        ],
    ),
    (
        "a number where a string belongs says how to quote it",
        job("PyTorchJob", "p").replica("Master").spec(nprocPerNode=4).doc(),
        ['PyTorchJob/p: spec.nprocPerNode: Invalid value: 4: must be a string (quote it: "4")'],
    ),
    (
        "a misspelt field suggests the right one",
        with_master(replica=1),
        [
            "PyTorchJob/p: spec.pytorchReplicaSpecs[Master].replica: Unknown field: "
            'did you mean "replicas"?'
        ],
    ),
    (
        "an unknown field far from any name lists the accepted ones",
        job("PyTorchJob", "p").replica("Master").run_policy(priority=1).doc(),
        [
            "PyTorchJob/p: spec.runPolicy.priority: Unknown field: accepted: cleanPodPolicy, "
            "ttlSecondsAfterFinished, activeDeadlineSeconds, backoffLimit, schedulingPolicy, "
            "suspend, managedBy"
        ],
    ),
    (
        "a value outside an enum lists the supported values",
        job("PyTorchJob", "p").replica("Master").run_policy(cleanPodPolicy="Always").doc(),
        [
            'PyTorchJob/p: spec.runPolicy.cleanPodPolicy: Unsupported value: "Always": '
            'supported values: "All", "Running", "None"'
        ],
    ),
    (
        "a boolean written as a string",
        job("PyTorchJob", "p").replica("Master").run_policy(suspend="yes").doc(),
        [
            'PyTorchJob/p: spec.runPolicy.suspend: Invalid value: "yes": '
            "must be a boolean (true or false)"
        ],
    ),
    (
        "an integer beyond int32",
        job("PyTorchJob", "p").replica("Master").run_policy(backoffLimit=2**31).doc(),
        [
            "PyTorchJob/p: spec.runPolicy.backoffLimit: Invalid value: 2147483648: "
            "must be less than or equal to 2147483647"
        ],
    ),
    (
        "a spec that is not an object",
        {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "t"}, "spec": []},
        ["TFJob/t: spec: Invalid value: []: must be an object"],
    ),
    (
        "a misspelt kind suggests the right one",
        {"apiVersion": "kubeflow.org/v1", "kind": "PytorchJob", "metadata": {"name": "p"}},
        [
            'PytorchJob/p: kind: Unsupported value: no kind "PytorchJob" is known in '
            'kubeflow.org/v1; did you mean "PyTorchJob"?'
        ],
    ),
    (
        "an unknown version of a known group",
        {"apiVersion": "kubeflow.org/v2", "kind": "PyTorchJob", "metadata": {"name": "p"}},
        [
            'PyTorchJob/p: apiVersion: Unsupported value: "kubeflow.org/v2": '
            'supported values: "kubeflow.org/v1"'
        ],
    ),
    (
        "no apiVersion and no kind",
        {"metadata": {"name": "p"}},
        [
            "<no kind>/p: apiVersion: Required value: "
            "e.g. kubeflow.org/v1 or trainer.kubeflow.org/v1alpha1",
            "<no kind>/p: kind: Required value: e.g. PyTorchJob or TrainJob",
        ],
    ),
    (
        "a document that is a list",
        [1, 2],
        ["<object>: <root>: Invalid value: must be an object with apiVersion and kind (got list)"],
    ),
    (
        "labels must be strings",
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "JAXJob",
            "metadata": {"name": "j", "labels": {"tier": 1}},
            "spec": {},
        },
        ['JAXJob/j: metadata.labels[tier]: Invalid value: 1: must be a string (quote it: "1")'],
    ),
    (
        "an int-or-string field given a list",
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "t"},
            "spec": {"trainer": {"numProcPerNode": [1]}},
        },
        [
            "TrainJob/t: spec.trainer.numProcPerNode: Invalid value: [1]: "
            "must be an integer or a string"
        ],
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_shape_errors(doc: Any, expected: list[str]) -> None:
    assert messages(doc) == expected


def test_trainjob_is_accepted_as_v2alpha1_too() -> None:
    doc = {
        "apiVersion": "trainer.kubeflow.org/v2alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }
    obj, errors = api.parse(doc)
    assert errors == []
    assert isinstance(obj, api.TrainJob)


def test_server_set_metadata_passes_through() -> None:
    doc = job("TFJob", "t").replica("Worker").doc()
    doc["metadata"].update(uid="1234", resourceVersion="7", managedFields=[{"manager": "kubectl"}])
    out = api.admit(doc).to_dict()
    assert out["metadata"]["uid"] == "1234"
    assert out["metadata"]["managedFields"] == [{"manager": "kubectl"}]
