"""The JobSet build (initializers, trainer, labels, overrides, patches, suspend) and the gang
scheduling plugins (coscheduling and Volcano PodGroups), as upstream's jobset, coscheduling and
volcano plugin tests and trainingruntime_test's PodGroup expectations describe them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.api.trainers import (
    initializer_job,
    pod_spec_patch,
    replicated_job,
    runtime,
    trainer_job,
    trainjob,
)
from tests.unit.operator.trainjob.building import (
    build,
    container,
    env,
    jobset,
    objects,
)
from tests.unit.operator.trainjob.building import (
    replicated_job as built_job,
)


def _pod_template(built: Any, job: str) -> dict[str, Any]:
    template: dict[str, Any] = built_job(built, job)["template"]["spec"]["template"]
    return template


def test_the_jobset_is_named_owned_and_labelled_like_the_trainjob() -> None:
    rt = runtime("torch").template_metadata(labels={"a": "runtime"}, annotations={"x": "1"})
    job = trainjob("job").spec(labels={"a": "job", "b": "job"}, annotations={"y": "2"})
    js = jobset(build(job.build(), rt.build()))
    assert js["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert js["metadata"]["name"] == "job"
    assert js["metadata"]["labels"] == {"a": "job", "b": "job"}, "the TrainJob's value wins"
    assert js["metadata"]["annotations"] == {"x": "1", "y": "2"}
    (owner,) = js["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "name": "job",
        "uid": "0000-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert js["spec"]["suspend"] is False


def test_suspend_is_copied() -> None:
    js = jobset(build(trainjob("job").spec(suspend=True).build(), runtime("torch").build()))
    assert js["spec"]["suspend"] is True


def test_initializers_get_storage_uri_env_and_secret_and_one_replica() -> None:
    rt = runtime("torch").jobs(
        initializer_job("dataset-initializer"), initializer_job("model-initializer"), trainer_job()
    )
    job = trainjob("job").initializer(
        dataset={
            "storageUri": "hf://org/data",
            "env": [{"name": "IGNORE_PATTERNS", "value": "*.bin"}],
            "secretRef": {"name": "hf-token"},
        },
        model={"storageUri": "s3://bucket/model"},
    )
    built = build(job.build(), rt.build())
    assert env(built, "dataset-initializer", "dataset-initializer") == {
        "STORAGE_URI": "hf://org/data",
        "IGNORE_PATTERNS": "*.bin",
    }
    dataset = container(built, "dataset-initializer", "dataset-initializer")
    assert dataset["envFrom"] == [{"secretRef": {"name": "hf-token"}}]
    assert env(built, "model-initializer", "model-initializer") == {
        "STORAGE_URI": "s3://bucket/model"
    }
    assert built_job(built, "dataset-initializer")["replicas"] == 1


def test_pod_template_overrides_merge_into_their_targets_only() -> None:
    rt = runtime("torch").jobs(
        trainer_job(), replicated_job("helper", containers=[{"name": "helper", "image": "x"}])
    )
    job = trainjob("job").spec(
        podTemplateOverrides=[
            {
                "targetJobs": [{"name": "node"}],
                "metadata": {"labels": {"team": "a"}},
                "spec": {
                    "nodeSelector": {"disk": "ssd"},
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "containers": [
                        {"name": "node", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}
                    ],
                },
            }
        ]
    )
    built = build(job.build(), rt.build())
    node = _pod_template(built, "node")
    assert node["metadata"]["labels"] == {"team": "a"}
    assert node["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert node["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert container(built, "node")["image"] == "example/train:1", "merged, not replaced"
    assert container(built, "node")["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert "nodeSelector" not in _pod_template(built, "helper")["spec"]


def test_runtime_patches_merge_metadata_and_pod_specs_in_order() -> None:
    job = (
        trainjob("job")
        .patch(
            "kueue.x-k8s.io/manager",
            pod_spec_patch("node", nodeSelector={"zone": "a"}, serviceAccountName="first"),
            metadata={"labels": {"kueue": "yes"}},
        )
        .patch("example.com/tool", pod_spec_patch("node", nodeSelector={"rack": "7"}))
    )
    built = build(job.build(), runtime("torch").build())
    spec = _pod_template(built, "node")["spec"]
    assert spec["nodeSelector"] == {"zone": "a", "rack": "7"}
    assert spec["serviceAccountName"] == "first"
    assert jobset(built)["metadata"]["labels"] == {"kueue": "yes"}


# --- gang scheduling --------------------------------------------------------------------------


def _gang_runtime(policy: dict[str, Any]) -> dict[str, Any]:
    return (
        runtime("torch")
        .jobs(
            initializer_job("dataset-initializer"),
            trainer_job(requests={"cpu": "1", "memory": "2Gi"}),
        )
        .pod_group_policy(**policy)
        .build()
    )


def test_coscheduling_labels_every_pod_and_counts_initializers_too() -> None:
    job = trainjob("job").trainer(numNodes=30)
    built = build(job.build(), _gang_runtime({"coscheduling": {}}))
    for name in ("dataset-initializer", "node"):
        labels = _pod_template(built, name)["metadata"]["labels"]
        assert labels["scheduling.x-k8s.io/pod-group"] == "job"
    (group,) = objects(built, "PodGroup")
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["metadata"]["name"] == "job"
    assert group["spec"] == {
        "minMember": 31,  # 30 trainer nodes + the initializer (upstream: 32, with two)
        "minResources": {"cpu": "30", "memory": "60Gi"},
        "scheduleTimeoutSeconds": 60,
    }


def test_resources_per_node_count_in_min_resources() -> None:
    job = trainjob("job").trainer(numNodes=2, resourcesPerNode={"requests": {"cpu": "500m"}})
    built = build(job.build(), _gang_runtime({"coscheduling": {"scheduleTimeoutSeconds": 5}}))
    (group,) = objects(built, "PodGroup")
    assert group["spec"]["minResources"] == {"cpu": "1"}, "2 × 500m; the runtime's 1 CPU is gone"
    assert group["spec"]["scheduleTimeoutSeconds"] == 5


@pytest.mark.parametrize(
    ("runtime_annotations", "job_annotations", "queue"),
    [
        pytest.param({}, {}, None, id="no queue annotation: Volcano's default queue"),
        pytest.param({"scheduling.volcano.sh/queue-name": "q1"}, {}, "q1", id="the runtime's"),
        pytest.param(
            {"scheduling.volcano.sh/queue-name": "q1"},
            {"scheduling.volcano.sh/queue-name": "q2"},
            "q2",
            id="the TrainJob's wins",
        ),
    ],
)
def test_volcano_podgroup_queue_priority_and_topology(
    runtime_annotations: dict[str, str], job_annotations: dict[str, str], queue: str | None
) -> None:
    doc = _gang_runtime({"volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 2}}})
    doc["spec"]["template"]["metadata"] = {"annotations": runtime_annotations}
    node = doc["spec"]["template"]["spec"]["replicatedJobs"][1]
    node["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    job = trainjob("job").trainer(numNodes=2).spec(annotations=job_annotations)
    built = build(job.build(), doc)
    for name in ("dataset-initializer", "node"):
        annotations = _pod_template(built, name)["metadata"]["annotations"]
        assert annotations["scheduling.k8s.io/group-name"] == "job"
    (group,) = objects(built, "PodGroup")
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    expected: dict[str, Any] = {
        "minMember": 3,
        "minResources": {"cpu": "2", "memory": "4Gi"},
        "priorityClassName": "high",
        "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
    }
    if queue is not None:
        expected["queue"] = queue
    assert group["spec"] == expected


def test_no_pod_group_policy_no_pod_group() -> None:
    built = build(trainjob("job").build(), runtime("torch").build())
    assert objects(built, "PodGroup") == []
    assert "metadata" not in _pod_template(built, "node")
