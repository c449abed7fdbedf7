"""The API server's pruning of a custom resource (what kube-apiserver refuses as an unknown
field under strict field validation, and drops otherwise) and kubetrain's admission find the
same unknown fields inside the Kubernetes objects a job keeps: both read the schema of the
kind's CRD. Only the notation of a map key differs (kube: ``.Worker``; admission:
``[Worker]``)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from kubetrain import api
from kubetrain.local.apiserver import schema, schemavalidation
from tests.builders import job
from tests.unit.api.trainers import lookup, replicated_job, runtime, trainjob

CRD_SCHEMAS = {
    crd["spec"]["names"]["kind"]: crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for crd in api.crds()
}
RUNTIME = runtime().build()


def pruned(doc: dict[str, Any]) -> list[str]:
    """What the API server removes (and refuses under Strict), in kube's notation."""
    return schema.prune(copy.deepcopy(doc), CRD_SCHEMAS[doc["kind"]])


def admitted_unknown(doc: dict[str, Any]) -> list[str]:
    """The paths admission calls unknown fields, map keys written as kube writes them."""
    errors = api.review(doc, find_runtime=lookup(RUNTIME)).errors
    paths = [e.path for e in errors if e.type is api.ErrorType.UNKNOWN_FIELD]
    return sorted(re.sub(r"\[([^\]0-9][^\]]*)\]", r".\1", p) for p in paths)


def pytorchjob() -> dict[str, Any]:
    doc = job("PyTorchJob", "p").replica("Master").replica("Worker", replicas=2).doc()
    worker = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    worker["metadata"] = {"labels": {"a": "b"}, "creationTimestamp": None}
    container = worker["spec"]["containers"][0]
    container.update(
        comand=["python3"],
        env=[{"name": "A", "valueFrom": {"fieldRef": {"feldPath": "x"}}}],
        resources={"limits": {"cpu": 1}, "maximums": {}},
    )
    worker["spec"]["volumes"] = [{"name": "d", "emptyDir": {"sizeLimt": "1Gi"}}]
    return doc


def a_trainjob() -> dict[str, Any]:
    override = {
        "targetJobs": [{"name": "node"}],
        "spec": {
            "volumes": [{"name": "v", "hostPath": {"pth": "/d"}}],
            "tolerations": [{"efect": "NoSchedule"}],
            "containers": [{"name": "node", "env": [{"nme": "A", "value": "1"}]}],
        },
    }
    return (
        trainjob()
        .trainer(env=[{"name": "A", "valeu": "1"}], resourcesPerNode={"limit": {"cpu": 1}})
        .initializer(dataset={"storageUri": "hf://x", "env": [{"name": "A", "vlue": "1"}]})
        .spec(podTemplateOverrides=[override])
        .build()
    )


def a_runtime() -> dict[str, Any]:
    container = {"name": "node", "image": "x", "arg": []}
    doc = runtime().jobs(replicated_job("node", ancestor="trainer", containers=[container])).build()
    jobset = doc["spec"]["template"]["spec"]
    jobset["sucessPolicy"] = {"operator": "All"}
    jobset["replicatedJobs"][0]["template"]["spec"]["paralelism"] = 2
    return doc


CASES = {
    "a PyTorchJob's pod template": pytorchjob,
    "a TrainJob's env, resources and overrides": a_trainjob,
    "a runtime's JobSet, Job and pod template": a_runtime,
}


@pytest.mark.parametrize("build", CASES.values(), ids=CASES.keys())
def test_pruning_and_admission_find_the_same_unknown_fields(build: Any) -> None:
    doc = build()
    found = pruned(doc)
    assert len(found) >= 3, found
    assert admitted_unknown(doc) == found


def test_a_field_a_newer_kubernetes_has_is_unknown_to_both() -> None:
    """The schema is the pinned Kubernetes version's (1.28): a 1.34 field is pruned there,
    and admission says so rather than accept what the cluster would drop."""
    doc = job("PyTorchJob", "p").replica("Worker").doc()
    container = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["restartPolicyRules"] = []
    assert pruned(doc) == [
        "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].restartPolicyRules"
    ]
    assert admitted_unknown(doc) == pruned(doc)


QUANTITIES = [
    (2, True),
    (2.0, True),  # a whole number, however YAML wrote it
    ("500m", True),
    ("16Gi", True),
    (0.5, False),  # the CRD takes an integer or a string: "0.5" or 500m
    ("lots", False),
    ("2 GB", False),
]


@pytest.mark.parametrize(("quantity", "ok"), QUANTITIES, ids=lambda v: repr(v))
def test_a_quantity_the_schema_refuses_admission_refuses_too(quantity: Any, ok: bool) -> None:
    doc = job("PyTorchJob", "p").replica("Worker").doc()
    container = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": quantity}}
    causes = schemavalidation.validate(copy.deepcopy(doc), CRD_SCHEMAS["PyTorchJob"])
    assert (causes == []) is ok, causes
    assert api.review(doc).ok is ok
