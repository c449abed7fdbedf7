"""A TrainJob the operator refuses, through the reconciler on in-memory caches and API: one that
admission would reject, as written or against its runtime, but that reached the operator
anyway (no webhook ran). Its ``Failed`` condition carries the admission's words, it is written
once per change, and fixing the spec removes it and lets the job's pods be created."""

from __future__ import annotations

import asyncio
import copy
import datetime
from typing import Any

import pytest

from kubetrain import api, kube
from kubetrain.kube import cache
from kubetrain.operator.runtime import controller, expectations
from kubetrain.operator.trainjob import kinds, reconciler
from tests.unit.api.trainers import initializer_job, lookup, runtime, trainer_job, trainjob

NOW = datetime.datetime(2030, 1, 1, 0, 0, 0, tzinfo=datetime.timezone.utc)
STAMP = "2030-01-01T00:00:00Z"
KEY = controller.Key("ns", "job")


class FakeApi:
    """The calls the reconciler makes, against a dict; a status patch lands on the job."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: list[str] = []
        self.status_patches: list[dict[str, Any]] = []

    async def create(
        self, resource: kube.Resource, body: Any, *, namespace: str | None = None, **_: Any
    ) -> dict[str, Any]:
        name = body["metadata"]["name"]
        self.calls.append(f"create {resource.plural}/{name}")
        key = (resource.plural, namespace or "", name)
        if key in self.objects:
            raise kube.AlreadyExists("exists", code=409, reason="AlreadyExists")
        self.objects[key] = copy.deepcopy(body)
        return body

    async def get(
        self, resource: kube.Resource, name: str, *, namespace: str | None = None, **_: Any
    ) -> dict[str, Any]:
        self.calls.append(f"get {resource.plural}/{name}")
        found = self.objects.get((resource.plural, namespace or "", name))
        if found is None:
            raise kube.NotFound("not found", code=404, reason="NotFound")
        return found

    async def patch(
        self,
        resource: kube.Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        where = f"/{subresource}" if subresource else ""
        self.calls.append(f"patch {resource.plural}{where}/{name}")
        if subresource == "status":
            self.status_patches.append(copy.deepcopy(patch))
        return {}

    async def apply(self, resource: kube.Resource, body: Any, **_: Any) -> dict[str, Any]:
        self.calls.append(f"apply {resource.plural}/{body['metadata']['name']}")
        return body

    async def delete(self, resource: kube.Resource, name: str, **_: Any) -> dict[str, Any]:
        self.calls.append(f"delete {resource.plural}/{name}")
        return {}


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    async def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))


def stored(doc: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    """The TrainJob as kube-apiserver stores it without kubetrain's webhook: the CRD's
    defaults only."""
    job = copy.deepcopy(doc)
    job["spec"]["runtimeRef"].setdefault("apiGroup", "trainer.kubeflow.org")
    job["spec"]["runtimeRef"].setdefault("kind", "ClusterTrainingRuntime")
    job["metadata"].update(uid="job-uid", resourceVersion="1", creationTimestamp=STAMP)
    if status is not None:
        job["status"] = status
    return job


class Harness:
    def __init__(self, job: dict[str, Any], runtime_doc: dict[str, Any]) -> None:
        self.api = FakeApi()
        self.recorder = FakeRecorder()
        self.stores = reconciler.Stores(
            trainjobs=cache.Store(kinds.TRAINJOBS),
            training_runtimes=cache.Store(kinds.TRAINING_RUNTIMES),
            cluster_training_runtimes=cache.Store(kinds.CLUSTER_TRAINING_RUNTIMES),
            pods=cache.Store(kinds.PODS),
            services=cache.Store(kinds.SERVICES),
            configmaps=cache.Store(kinds.CONFIGMAPS),
            secrets=cache.Store(kinds.SECRETS),
        )
        for store in vars(self.stores).values():
            if isinstance(store, cache.Store):
                store.replace([])
        self.stores.cluster_training_runtimes.replace([runtime_doc])
        self.stores.trainjobs.replace([job])
        self.reconciler = reconciler.TrainJobReconciler(
            self.api,  # type: ignore[arg-type]
            self.stores,
            self.recorder,  # type: ignore[arg-type]
            expectations.Expectations(),
            clock=lambda: NOW,
        )

    @property
    def job(self) -> dict[str, Any]:
        found = self.stores.trainjobs.get("ns", "job")
        assert found is not None
        return found

    def reconcile(self) -> controller.Result:
        return asyncio.run(self.reconciler.reconcile(KEY))

    def refused(self) -> str:
        """Reconcile, expecting a refusal; its message."""
        with pytest.raises(controller.TerminalError) as raised:
            self.reconcile()
        return str(raised.value)

    def settle(self) -> None:
        """The cache shows the status written last, as the watch would bring it."""
        job = copy.deepcopy(self.job)
        for patch in self.api.status_patches:
            job.setdefault("status", {}).update(patch["status"])
        job["metadata"]["resourceVersion"] = str(int(job["metadata"]["resourceVersion"]) + 1)
        self.stores.trainjobs.replace([job])
        self.api.status_patches.clear()

    def edit(self, doc: dict[str, Any]) -> None:
        job = stored(doc, self.job.get("status"))
        job["metadata"]["resourceVersion"] = str(int(self.job["metadata"]["resourceVersion"]) + 1)
        self.stores.trainjobs.replace([job])


def admission_words(doc: dict[str, Any], runtime_doc: dict[str, Any]) -> str:
    """What ``kubetrain validate`` prints for the job beside its runtime, less the subject,
    joined as the condition joins them."""
    verdict = api.review(doc, find_runtime=lookup(runtime_doc))
    assert not verdict.ok
    return "; ".join(line.split(": ", 1)[1] for line in verdict.messages())


TORCH = runtime("torch").build()
NEGATIVE = trainjob("job", namespace="ns").trainer(numNodes=-1).build()
FIXED = trainjob("job", namespace="ns").trainer(numNodes=1).build()


def test_a_job_admission_rejects_gets_failed_in_its_words_and_its_event() -> None:
    harness = Harness(stored(NEGATIVE), TORCH)
    error = harness.refused()
    words = admission_words(NEGATIVE, TORCH)
    assert words == "spec.trainer.numNodes: Invalid value: -1: should be greater than or equal to 0"
    message = f"TrainJob failed validation because {words}"
    assert error == f"TrainJob ns/job: {message}"
    assert harness.api.calls == ["patch trainjobs/status/job"]
    (patch,) = harness.api.status_patches
    assert patch == {
        "status": {
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "TrainJobFailedValidation",
                    "message": message,
                    "lastTransitionTime": STAMP,
                }
            ]
        }
    }
    assert harness.recorder.events == [("Warning", "TrainJobFailedValidation", message)]


def test_a_refused_job_seen_again_writes_nothing_and_says_nothing() -> None:
    harness = Harness(stored(NEGATIVE), TORCH)
    harness.refused()
    harness.settle()
    harness.api.calls.clear()
    harness.recorder.events.clear()
    harness.refused()
    assert (harness.api.calls, harness.recorder.events) == ([], [])


def test_fixing_the_spec_removes_the_refusal_and_the_job_gets_its_pods() -> None:
    harness = Harness(stored(NEGATIVE), TORCH)
    harness.refused()
    harness.settle()
    harness.edit(FIXED)
    assert harness.reconcile() == controller.Result()
    assert "create pods/job-node-0-0" in harness.api.calls
    (patch,) = harness.api.status_patches
    assert [c["type"] for c in patch["status"]["conditions"]] == []
    harness.settle()
    assert "Failed" not in [c["type"] for c in harness.job["status"]["conditions"]]


def test_a_job_its_runtime_rejects_is_refused_in_the_words_of_admission_with_that_runtime() -> None:
    doc = (
        trainjob("job", namespace="ns")
        .initializer(dataset={"storageUri": "hf://some/dataset"})
        .build()
    )
    assert api.review(doc).ok, "valid as written: only its runtime makes it wrong"
    harness = Harness(stored(doc), TORCH)
    error = harness.refused()
    words = admission_words(doc, TORCH)
    assert "dataset-initializer" in words
    assert error == f"TrainJob ns/job: TrainJob failed validation because {words}"
    assert [c for c in harness.api.calls if c.startswith("create pods")] == []


def test_the_same_job_on_a_runtime_with_the_initializer_runs() -> None:
    doc = (
        trainjob("job", namespace="ns")
        .initializer(dataset={"storageUri": "hf://some/dataset"})
        .build()
    )
    with_initializer = runtime("torch").jobs(initializer_job("dataset-initializer"), trainer_job())
    harness = Harness(stored(doc), with_initializer.build())
    assert harness.reconcile() == controller.Result()
    created = [c for c in harness.api.calls if c.startswith("create pods")]
    assert created == ["create pods/job-dataset-initializer-0-0", "create pods/job-node-0-0"]
    assert [e for e in harness.recorder.events if e[1] == "TrainJobFailedValidation"] == []
