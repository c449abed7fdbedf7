"""JobSet's volumeClaimPolicies, as the workload realises them: one shared claim per template,
named ``<template>-<jobset>``, owned by the TrainJob unless retained, and a volume for it in
every pod whose containers mount it by name (the initializers' shared ``/workspace``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.operator.trainjob import workload
from tests.unit.operator.trainjob.test_workload import OWNER, jobset, pods_of, rjob

MOUNT = {"name": "initializer", "mountPath": "/workspace"}
CLAIM_SPEC = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}


def template(name: str = "initializer", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta}, "spec": CLAIM_SPEC}


def mounting(name: str, *mounts: dict[str, Any], init: bool = False) -> dict[str, Any]:
    job = rjob(name)
    key = "initContainers" if init else "containers"
    pod = job["template"]["spec"]["template"]["spec"]
    pod[key] = [{"name": name, "image": "x", "volumeMounts": list(mounts)}]
    if init:
        pod["containers"] = [{"name": "node", "image": "x"}]
    return job


def test_one_shared_claim_per_template_owned_by_the_trainjob() -> None:
    js = jobset(
        mounting("node", MOUNT),
        volumeClaimPolicies=[{"templates": [template(labels={"content": "data"})]}],
    )
    (claim,) = workload.volume_claims(js)
    assert claim == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "initializer-job",
            "namespace": "ns",
            "labels": {"content": "data", "jobset.sigs.k8s.io/jobset-name": "job"},
            "ownerReferences": [OWNER],
        },
        "spec": CLAIM_SPEC,
    }


@pytest.mark.parametrize(
    ("retention", "owned"),
    [
        pytest.param(None, True, id="no retention policy: deleted with the job (JobSet's default)"),
        pytest.param({"whenDeleted": "Delete"}, True, id="whenDeleted Delete: owned"),
        pytest.param({"whenDeleted": "Retain"}, False, id="whenDeleted Retain: not owned"),
    ],
)
def test_retention_decides_ownership(retention: dict[str, str] | None, owned: bool) -> None:
    policy: dict[str, Any] = {"templates": [template("cache"), template("out")]}
    if retention is not None:
        policy["retentionPolicy"] = retention
    claims = workload.volume_claims(jobset(rjob("node"), volumeClaimPolicies=[policy]))
    assert [c["metadata"]["name"] for c in claims] == ["cache-job", "out-job"]
    assert all(("ownerReferences" in c["metadata"]) is owned for c in claims)


def test_pods_that_mount_a_template_get_its_claim_and_others_do_not() -> None:
    js = jobset(
        mounting("dataset-initializer", MOUNT),
        mounting("node", MOUNT, init=True),
        rjob("sidecar"),
        volumeClaimPolicies=[{"templates": [template()]}],
    )
    pods = pods_of(js)
    volume = {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-job"}}
    assert pods["job-dataset-initializer-0-0"]["spec"]["volumes"] == [volume]
    assert pods["job-node-0-0"]["spec"]["volumes"] == [volume], "an init container's mount counts"
    assert "volumes" not in pods["job-sidecar-0-0"]["spec"]


def test_a_pod_that_declares_the_volume_itself_keeps_its_own() -> None:
    own = {"name": "initializer", "emptyDir": {}}
    job = mounting("node", MOUNT)
    job["template"]["spec"]["template"]["spec"]["volumes"] = [own]
    pods = pods_of(jobset(job, volumeClaimPolicies=[{"templates": [template()]}]))
    assert pods["job-node-0-0"]["spec"]["volumes"] == [own]


def test_no_policies_no_claims() -> None:
    assert workload.volume_claims(jobset(rjob("node"))) == []
    assert workload.volume_claims(jobset(rjob("node"), volumeClaimPolicies=[{}])) == []
