"""The runtime snapshot ConfigMap: its shape (upstream's name, key and owner), the round trip,
and upstream's refusals of a snapshot that is not this job's or not this runtime's."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.operator.trainjob import snapshot
from tests.unit.api.trainers import runtime

JOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "job", "namespace": "ns", "uid": "u-1"},
    "spec": {
        "runtimeRef": {
            "name": "torch-distributed",
            "kind": "ClusterTrainingRuntime",
            "apiGroup": "trainer.kubeflow.org",
        }
    },
}


def _stored_runtime() -> dict[str, Any]:
    doc = runtime("torch").build()
    doc["metadata"].update({"uid": "r-1", "resourceVersion": "7", "managedFields": [{"x": 1}]})
    doc["status"] = {}
    return doc


def test_the_snapshot_is_a_configmap_owned_by_the_trainjob() -> None:
    cm = snapshot.config_map(JOB, _stored_runtime())
    assert cm["metadata"]["name"] == "job-runtime-snapshot"
    assert cm["metadata"]["namespace"] == "ns"
    (owner,) = cm["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "TrainJob",
        "job",
        "u-1",
        True,
    )
    assert list(cm["data"]) == ["runtime"]
    assert "managedFields" not in cm["data"]["runtime"]


def test_the_round_trip_gives_the_defaulted_runtime() -> None:
    frozen = snapshot.read(JOB, snapshot.config_map(JOB, _stored_runtime()))
    typed = snapshot.typed(frozen)
    assert isinstance(typed, api.ClusterTrainingRuntime)
    assert typed.name == "torch-distributed"
    assert typed.spec is not None
    assert typed.spec.ml_policy is not None
    assert typed.spec.ml_policy.num_nodes == 1, "defaulted"


def _with(cm: dict[str, Any], **changes: Any) -> dict[str, Any]:
    for path, value in changes.items():
        target = cm
        *parents, last = path.split("__")
        for part in parents:
            target = target[part]
        target[last] = value
    return cm


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            {"metadata__ownerReferences": []},
            "invalid runtime snapshot: a snapshot configmap exists but is owned by another object",
            id="not controlled by the job",
        ),
        pytest.param(
            {"data": {}},
            'invalid runtime snapshot: snapshot ConfigMap missing "runtime" data key',
            id="no runtime key",
        ),
        pytest.param(
            {"data": {"runtime": "kind: ClusterTrainingRuntime\nmetadata: {name: other}\n"}},
            "invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a "
            'runtime with name, api group and kind of "torch-distributed", '
            '"trainer.kubeflow.org", "ClusterTrainingRuntime" but found runtime with name, '
            'api group and kind of "other", "", "ClusterTrainingRuntime"',
            id="another runtime",
        ),
    ],
)
def test_snapshots_that_do_not_belong_are_refused(change: dict[str, Any], message: str) -> None:
    cm = _with(snapshot.config_map(JOB, _stored_runtime()), **change)
    with pytest.raises(snapshot.InvalidSnapshot) as caught:
        snapshot.read(JOB, cm)
    assert str(caught.value) == message
