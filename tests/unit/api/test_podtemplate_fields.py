"""Unknown field names inside the Kubernetes objects a job keeps as written (pod templates,
and a TrainJob's env, resources and overrides) are errors naming the full path and the
nearest known name, as kube-apiserver's strict decoding reports them for CRDs that carry the
PodTemplateSpec schema; and admission reports them along with every other problem."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from tests.builders import job
from tests.unit.api.trainers import lookup, messages, replicated_job, runtime, trainjob

POD = "spec.pytorchReplicaSpecs[Worker].template"


def pytorch_with(**container: Any) -> dict[str, Any]:
    doc = job("PyTorchJob", "p").replica("Worker", replicas=2).doc()
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(
        container
    )
    return doc


def pytorch_pod(**spec: Any) -> dict[str, Any]:
    doc = job("PyTorchJob", "p").replica("Worker", replicas=2).doc()
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"].update(spec)
    return doc


def pytorch_template(**template: Any) -> dict[str, Any]:
    doc = job("PyTorchJob", "p").replica("Worker", replicas=2).doc()
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"].update(template)
    return doc


V1_CASES = {
    "a misspelt container field suggests the right one": (
        pytorch_with(comand=["python3", "train.py"]),
        f'{POD}.spec.containers[0].comand: Unknown field: did you mean "command"?',
    ),
    "a field of the pod spec": (
        pytorch_pod(restartPolicey="Never"),
        f'{POD}.spec.restartPolicey: Unknown field: did you mean "restartPolicy"?',
    ),
    "a capitalised field finds its name": (
        pytorch_pod(Volumes=[]),
        f'{POD}.spec.Volumes: Unknown field: did you mean "volumes"?',
    ),
    "deep inside a volume": (
        pytorch_pod(volumes=[{"name": "d", "emptyDir": {"sizeLimt": "1Gi"}}]),
        f'{POD}.spec.volumes[0].emptyDir.sizeLimt: Unknown field: did you mean "sizeLimit"?',
    ),
    "inside an env var's source": (
        pytorch_with(env=[{"name": "A", "valueFrom": {"fieldRef": {"feldPath": "x"}}}]),
        f"{POD}.spec.containers[0].env[0].valueFrom.fieldRef.feldPath: Unknown field: "
        'did you mean "fieldPath"?',
    ),
    "inside an init container's probe": (
        pytorch_pod(
            initContainers=[
                {"name": "i", "image": "x", "startupProbe": {"exec": {"comand": ["true"]}}}
            ]
        ),
        f"{POD}.spec.initContainers[0].startupProbe.exec.comand: Unknown field: "
        'did you mean "command"?',
    ),
    "in the template's metadata": (
        pytorch_template(metadata={"labelz": {"a": "b"}}),
        f'{POD}.metadata.labelz: Unknown field: did you mean "labels"?',
    ),
    "in the template itself": (
        pytorch_template(specs={}),
        f'{POD}.specs: Unknown field: did you mean "spec"?',
    ),
    "a name far from any lists what the type accepts": (
        pytorch_with(resources={"limits": {"cpu": 1}, "maximums": {"cpu": 2}}),
        f"{POD}.spec.containers[0].resources.maximums: Unknown field: "
        "accepted: claims, limits, requests",
    ),
}


@pytest.mark.parametrize(("doc", "expected"), V1_CASES.values(), ids=V1_CASES.keys())
def test_an_unknown_field_in_a_v1_pod_template_is_named_with_its_path(
    doc: dict[str, Any], expected: str
) -> None:
    assert f"PyTorchJob/p: {expected}" in api.review(doc).messages()


def test_every_v1_kind_checks_its_replica_templates() -> None:
    for kind in api.V1_KINDS:
        rtype = kind.REPLICA_TYPES[-1]
        doc = job(kind.KIND, "j").replica(rtype).doc()
        template = doc["spec"][kind.REPLICA_FIELD][rtype]["template"]
        template["spec"]["containers"][0]["imagePulPolicy"] = "Always"
        path = f"spec.{kind.REPLICA_FIELD}[{rtype}].template.spec.containers[0].imagePulPolicy"
        assert f'{path}: Unknown field: did you mean "imagePullPolicy"?' in [
            str(e) for e in api.review(doc).errors
        ], kind.KIND


def test_known_fields_everywhere_in_a_template_are_accepted() -> None:
    doc = pytorch_pod(
        volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "c", "readOnly": True}}],
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}
                    ]
                }
            }
        },
        nodeSelector={"any-key": "any-value"},
    )
    container = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container.update(
        command=["python3"],
        env=[{"name": "R", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
        resources={"limits": {"cpu": 1, "nvidia.com/gpu": 1}},
        readinessProbe={"tcpSocket": {"port": "http"}, "periodSeconds": 2},
        volumeMounts=[{"name": "d", "mountPath": "/d"}],
    )
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "labels": {"a": "b"},
        "annotations": {"c": "d"},
    }
    assert api.review(doc).ok, api.review(doc).messages()


def test_a_template_keeps_only_the_metadata_a_crd_may_carry() -> None:
    """kube-apiserver refuses ``creationTimestamp: null`` inside a template under strict
    validation (controller-gen's embedded ObjectMeta has five fields); admission says so too."""
    doc = pytorch_template(metadata={"labels": {"a": "b"}, "creationTimestamp": None})
    assert api.review(doc).messages() == [
        f"PyTorchJob/p: {POD}.metadata.creationTimestamp: Unknown field: "
        "accepted: annotations, finalizers, labels, name, namespace"
    ]


def test_unknown_template_fields_come_with_every_other_problem() -> None:
    doc = pytorch_with(comand=["python3"])
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = -1
    lines = [str(e) for e in api.review(doc).errors]
    assert lines[0].startswith(f"{POD}.spec.containers[0].comand: Unknown field")
    assert any(line.startswith("spec.pytorchReplicaSpecs[Worker].replicas:") for line in lines)


def test_a_model_field_reads_the_same_as_a_template_field() -> None:
    doc = job("PyTorchJob", "p").replica("Worker").doc()
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["Template"] = {}
    assert 'spec.pytorchReplicaSpecs[Worker].Template: Unknown field: did you mean "template"?' in [
        str(e) for e in api.review(doc).errors
    ]


# -- Trainer v2 -----------------------------------------------------------------------------------

RUNTIME = runtime().build()
FIND = lookup(RUNTIME)
OVERRIDE = {"targetJobs": [{"name": "node"}]}

TRAINJOB_CASES = {
    "an override's volume": (
        trainjob().spec(
            podTemplateOverrides=[
                {**OVERRIDE, "spec": {"volumes": [{"name": "v", "hostPath": {"pth": "/d"}}]}}
            ]
        ),
        "spec.podTemplateOverrides[0].spec.volumes[0].hostPath.pth: Unknown field: "
        'did you mean "path"?',
    ),
    "an override's container env": (
        trainjob().spec(
            podTemplateOverrides=[
                {
                    **OVERRIDE,
                    "spec": {"containers": [{"name": "node", "env": [{"nme": "A", "value": "1"}]}]},
                }
            ]
        ),
        "spec.podTemplateOverrides[0].spec.containers[0].env[0].nme: Unknown field: "
        'did you mean "name"?',
    ),
    "an override's toleration": (
        trainjob().spec(
            podTemplateOverrides=[{**OVERRIDE, "spec": {"tolerations": [{"efect": "NoSchedule"}]}}]
        ),
        "spec.podTemplateOverrides[0].spec.tolerations[0].efect: Unknown field: "
        'did you mean "effect"?',
    ),
    "the trainer's env": (
        trainjob().trainer(env=[{"name": "A", "valeu": "1"}]),
        'spec.trainer.env[0].valeu: Unknown field: did you mean "value"?',
    ),
    "the trainer's resources": (
        trainjob().trainer(resourcesPerNode={"limit": {"cpu": 1}}),
        'spec.trainer.resourcesPerNode.limit: Unknown field: did you mean "limits"?',
    ),
    "an initializer's env": (
        trainjob().initializer(
            dataset={"storageUri": "hf://x", "env": [{"name": "A", "vlue": "1"}]}
        ),
        'spec.initializer.dataset.env[0].vlue: Unknown field: did you mean "value"?',
    ),
    "a runtime patch's pod spec": (
        trainjob().patch(
            "me",
            {
                "name": "node",
                "template": {"spec": {"template": {"spec": {"nodeSelecter": {"a": "b"}}}}},
            },
        ),
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec"
        '.template.spec.nodeSelecter: Unknown field: did you mean "nodeSelector"?',
    ),
}


@pytest.mark.parametrize(
    ("builder", "expected"), TRAINJOB_CASES.values(), ids=TRAINJOB_CASES.keys()
)
def test_an_unknown_field_in_a_trainjob_is_named_with_its_path(builder: Any, expected: str) -> None:
    assert expected in messages(builder.build(), find_runtime=FIND)


def test_an_unknown_field_in_a_runtime_pod_template_is_named_with_its_path() -> None:
    container = {"name": "node", "image": "x", "arg": []}
    doc = runtime().jobs(replicated_job("node", ancestor="trainer", containers=[container])).build()
    assert (
        "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].arg: "
        'Unknown field: did you mean "args"?'
    ) in messages(doc)


def test_an_unknown_field_of_a_runtime_job_template_is_named_with_its_path() -> None:
    doc = runtime().build()
    doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["paralelism"] = 2
    assert (
        "spec.template.spec.replicatedJobs[0].template.spec.paralelism: Unknown field: "
        'did you mean "parallelism"?'
    ) in messages(doc)


def test_a_runtime_with_an_unknown_template_field_still_parses_for_lookups() -> None:
    doc = runtime().build()
    doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["paralelism"] = 2
    obj, errors = api.parse(doc)
    assert obj is not None
    assert errors == []
    assert not api.review(doc).ok
