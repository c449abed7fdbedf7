"""The webhooks answer AdmissionReviews as the local API server admits: the same verdict
from ``kubetrain.api.review``, a refusal in the local server's 422 words, warnings as
warnings, and for the trainer kinds a patch to exactly what the local server would store."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest

from kubetrain import api, patches
from kubetrain.operator.webhook import admission, configurations
from tests.builders import pytorchjob
from tests.unit.api.trainers import runtime, trainjob

NOW = "2026-11-27T10:00:00Z"
HOOKS = {(h.kind, h.mutating): h for h in configurations.HOOKS}


class World:
    """What exists in the cluster, and what the webhook asked about it."""

    def __init__(self, *objects: dict[str, Any], classes: tuple[str, ...] = ()) -> None:
        self.runtimes = {
            (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects
        }
        self.classes = set(classes)
        self.asked: list[tuple[str, ...]] = []

    def lookups(self) -> admission.Lookups:
        async def runtime(kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None:
            self.asked.append(("runtime", kind, str(namespace), name))
            return self.runtimes.get((kind, namespace, name))

        async def priority_class(name: str) -> bool:
            self.asked.append(("priorityclass", name))
            return name in self.classes

        return admission.Lookups(runtime, priority_class)


def request(
    obj: dict[str, Any], old: dict[str, Any] | None = None, operation: str = ""
) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0df28fbd-5f5f-4e4f-8e5e-000000000001",
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "name": obj["metadata"].get("name", ""),
            "namespace": obj["metadata"].get("namespace"),
            "operation": operation or ("UPDATE" if old is not None else "CREATE"),
            "object": obj,
            "oldObject": old,
        },
    }


def answer(
    obj: dict[str, Any], *, mutating: bool = False, world: World | None = None, **kw: Any
) -> dict[str, Any]:
    hook = HOOKS[(obj["kind"], mutating)]
    review = request(obj, **kw)
    world = world or World()
    got = asyncio.run(admission.answer(hook, review, world.lookups(), NOW))
    assert got["apiVersion"] == "admission.k8s.io/v1"
    assert got["kind"] == "AdmissionReview"
    assert got["response"]["uid"] == review["request"]["uid"]
    return dict(got["response"])


def patched(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    if "patch" not in response:
        return obj
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    return dict(patches.json_patch(copy.deepcopy(obj), ops))


def stored_locally(obj: dict[str, Any], now: str = NOW, **lookups: Any) -> dict[str, Any]:
    """What the local API server stores for a valid trainer object (admission.admit_kubetrain)."""
    verdict = api.review(obj, now=now, **lookups)
    assert verdict.obj is not None, verdict.messages()
    defaulted = verdict.obj.to_dict()
    defaulted["metadata"] = obj["metadata"]
    if "status" in obj:
        defaulted["status"] = obj["status"]
    return defaulted


# -- validating ---------------------------------------------------------------------------------


def test_a_valid_v1_job_is_allowed_unchanged() -> None:
    job = pytorchjob("ns", "good").workers(2).doc()
    assert answer(job) == {"allowed": True, "uid": request(job)["request"]["uid"]}


def test_an_invalid_v1_job_is_refused_with_the_local_servers_422() -> None:
    job = pytorchjob("ns", "bad").workers(0).doc()
    response = answer(job)
    assert response["allowed"] is False
    status = response["status"]
    assert (status["code"], status["reason"], status["status"]) == (422, "Invalid", "Failure")
    assert status["message"] == (
        'PyTorchJob.kubeflow.org "bad" is invalid: '
        "spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1"
    )
    assert status["details"] == {
        "name": "bad",
        "group": "kubeflow.org",
        "kind": "PyTorchJob",
        "causes": [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: must be at least 1",
                "field": "spec.pytorchReplicaSpecs[Worker].replicas",
            }
        ],
    }


def test_every_error_is_a_cause_worded_as_kubetrain_validate_words_it() -> None:
    job = pytorchjob("ns", "Many_Problems").replica("Launcher", 1).master(3).doc()
    job["spec"]["runPolicy"] = {"managedBy": "nobody"}
    validate = api.review(job).messages()
    status = answer(job)["status"]
    causes = [f"{c['field']}: {c['message']}" for c in status["details"]["causes"]]
    assert [f"PyTorchJob/Many_Problems: {c}" for c in causes] == validate
    assert len(causes) > 2
    assert status["message"].startswith('PyTorchJob.kubeflow.org "Many_Problems" is invalid: [')


def test_an_update_is_judged_against_the_old_object() -> None:
    old = pytorchjob("ns", "a").workers(1).run_policy(managedBy="kueue.x-k8s.io/multikueue")
    new = copy.deepcopy(old.doc())
    new["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/training-operator"
    response = answer(new, old=old.doc())
    assert response["allowed"] is False, "managedBy is immutable"
    assert "spec.runPolicy.managedBy: Invalid value" in response["status"]["message"]
    assert "field is immutable" in response["status"]["message"]
    assert answer(old.doc(), old=old.doc())["allowed"] is True


def test_deprecations_are_warnings_of_an_allowed_review() -> None:
    doc = runtime(kind="TrainingRuntime", name="old", namespace="ns")
    doc = doc.labels(**{"trainer.kubeflow.org/support": "deprecated"}).build()
    response = answer(doc)
    assert response["allowed"] is True
    assert response["warnings"] == list(api.review(doc).warnings)
    assert any('TrainingRuntime "old" is deprecated' in w for w in response["warnings"])


# -- the cluster, looked up ---------------------------------------------------------------------


def test_a_trainjob_naming_a_missing_runtime_is_refused_as_locally() -> None:
    job = trainjob("a", namespace="ns").build()
    world = World()
    response = answer(job, world=world)
    assert response["allowed"] is False
    assert "must be created before the TrainJob is created" in response["status"]["message"]
    assert world.asked == [("runtime", "ClusterTrainingRuntime", "None", "torch-distributed")]


def test_a_trainjob_naming_an_existing_runtime_is_allowed_after_one_lookup() -> None:
    world = World(runtime("torch").build())
    job = trainjob("a", namespace="ns").trainer(numNodes=2).build()
    assert answer(job, world=world)["allowed"] is True
    assert world.asked == [("runtime", "ClusterTrainingRuntime", "None", "torch-distributed")]


def test_a_runtime_of_another_kind_under_the_name_is_not_the_one_asked_for() -> None:
    namespaced = runtime("torch", kind="TrainingRuntime", namespace="ns").build()
    world = World(namespaced | {"kind": "ClusterTrainingRuntime"})
    world.runtimes = {("ClusterTrainingRuntime", None, "torch-distributed"): namespaced}
    response = answer(trainjob("a", namespace="ns").build(), world=world)
    assert response["allowed"] is False


@pytest.mark.parametrize(("classes", "allowed"), [(("high",), True), ((), False)])
def test_a_volcano_runtimes_priority_class_is_looked_up_after_the_runtime(
    classes: tuple[str, ...], allowed: bool
) -> None:
    volcano = (
        runtime("torch", name="volcano")
        .pod_group_policy(volcano={})
        .template_metadata(annotations={"scheduling.volcano.sh/queue-name": "research"})
        .build()
    )
    for rjob in volcano["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    world = World(volcano, classes=classes)
    response = answer(trainjob("a", namespace="ns", runtime_name="volcano").build(), world=world)
    assert response["allowed"] is allowed
    assert world.asked == [
        ("runtime", "ClusterTrainingRuntime", "None", "volcano"),
        ("priorityclass", "high"),
    ]


# -- mutating -----------------------------------------------------------------------------------


def test_a_trainjob_is_patched_into_what_the_local_server_stores() -> None:
    world = World(runtime("torch").build())
    job = (
        trainjob("a", namespace="ns")
        .trainer(numNodes=2)
        .patch("kueue.x-k8s.io/manager", metadata={"labels": {"a": "b"}})
        .build()
    )
    response = answer(job, mutating=True, world=world)
    assert response["allowed"] is True
    result = patched(job, response)
    assert result == stored_locally(job, find_runtime=_as_lookup(world))
    assert result["spec"]["runtimePatches"][0]["time"] == NOW
    assert result["metadata"] == job["metadata"]
    assert "warnings" not in response, "the validating webhook gives them, once"


def test_runtimes_are_defaulted_too() -> None:
    doc = runtime("torch", kind="TrainingRuntime", namespace="ns").build()
    response = answer(doc, mutating=True)
    assert patched(doc, response) == stored_locally(doc)


def test_an_invalid_object_is_left_for_the_validating_webhook() -> None:
    job = trainjob("a", namespace="ns").trainer(numNodes=-1).build()
    response = answer(job, mutating=True, world=World(runtime("torch").build()))
    assert response == {"allowed": True, "uid": request(job)["request"]["uid"]}


def test_a_defaulted_object_needs_no_second_patch() -> None:
    world = World(runtime("torch").build())
    job = trainjob("a", namespace="ns").trainer(numNodes=2).build()
    once = patched(job, answer(job, mutating=True, world=world))
    assert "patch" not in answer(once, mutating=True, world=world)


# -- what is not a review ----------------------------------------------------------------------


def test_a_review_for_another_kind_is_refused_naming_the_path() -> None:
    job = pytorchjob("ns", "a").workers(1).doc()
    review = request(job)
    hook = HOOKS[("TFJob", False)]
    got = asyncio.run(admission.answer(hook, review, World().lookups(), NOW))
    status = got["response"]["status"]
    assert got["response"]["allowed"] is False
    assert status["code"] == 400
    assert status["message"] == (
        "/validate-kubeflow-org-v1-tfjob judges TFJob objects, not PyTorchJob.kubeflow.org"
    )


def test_a_delete_is_allowed_unjudged() -> None:
    job = pytorchjob("ns", "bad").workers(0).doc()
    assert answer(job, operation="DELETE")["allowed"] is True


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1", "request": {}},
        {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"},
        {"kind": "Pod", "apiVersion": "v1"},
    ],
    ids=["not an object", "v1beta1", "no request", "not a review"],
)
def test_what_is_not_a_v1_admission_review_is_a_bad_review(body: Any) -> None:
    hook = HOOKS[("PyTorchJob", False)]
    with pytest.raises(admission.BadReview):
        asyncio.run(admission.answer(hook, body, World().lookups(), NOW))


def _as_lookup(world: World) -> api.RuntimeLookup:
    def find(kind: str, namespace: str | None, name: str) -> Any:
        found = world.runtimes.get((kind, namespace, name))
        return api.parse(found)[0] if found else None

    return find
