"""Builders for Trainer v2 manifests in tests: plain dicts, as a user would write them.

``runtime("torch").build()`` is a valid ClusterTrainingRuntime with one trainer-ancestor
``node`` job; ``trainjob("a").trainer(numNodes=2).build()`` a TrainJob that references it.
Helpers ``as_runtime``/``lookup`` turn built runtimes into what validation's lookup returns.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain import api

API_VERSION = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def replicated_job(
    name: str,
    *,
    ancestor: str | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    replicas: int | None = None,
    parallelism: int | None = None,
) -> dict[str, Any]:
    """A JobSet replicated job; the ancestor label goes on the Job template, as upstream reads."""
    if containers is None:
        containers = [{"name": name, "image": "example/train:1"}]
    pod_spec: dict[str, Any] = {"containers": containers}
    if init_containers is not None:
        pod_spec["initContainers"] = init_containers
    job_spec: dict[str, Any] = {"template": {"spec": pod_spec}}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    rjob: dict[str, Any] = {"name": name, "template": {"spec": job_spec}}
    if ancestor is not None:
        rjob["template"]["metadata"] = {"labels": {ANCESTOR: ancestor}}
    if replicas is not None:
        rjob["replicas"] = replicas
    return rjob


def trainer_job(**resources: Any) -> dict[str, Any]:
    """The conventional ``node`` job labelled as the trainer ancestor, with optional resources."""
    container: dict[str, Any] = {"name": "node", "image": "example/train:1"}
    if resources:
        container["resources"] = resources
    return replicated_job("node", ancestor="trainer", containers=[container])


def initializer_job(name: str, *, mount: bool = True) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": f"example/{name}:1"}
    if mount:
        container["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace"}]
    return replicated_job(name, ancestor=name, containers=[container])


class RuntimeBuilder:
    def __init__(self, policy: str | None, name: str, kind: str, namespace: str) -> None:
        metadata: dict[str, Any] = {"name": name}
        if kind == "TrainingRuntime":
            metadata["namespace"] = namespace
        self.doc: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": metadata,
            "spec": {"template": {"spec": {"replicatedJobs": [trainer_job()]}}},
        }
        if policy is not None:
            self.doc["spec"]["mlPolicy"] = {policy: {}}

    def ml_policy(self, **fields: Any) -> RuntimeBuilder:
        self.doc["spec"].setdefault("mlPolicy", {}).update(fields)
        return self

    def policy(self, name: str, **fields: Any) -> RuntimeBuilder:
        self.doc["spec"].setdefault("mlPolicy", {}).setdefault(name, {}).update(fields)
        return self

    def pod_group_policy(self, **fields: Any) -> RuntimeBuilder:
        self.doc["spec"]["podGroupPolicy"] = fields
        return self

    def jobs(self, *jobs: dict[str, Any]) -> RuntimeBuilder:
        self.doc["spec"]["template"]["spec"]["replicatedJobs"] = list(jobs)
        return self

    def jobset(self, **fields: Any) -> RuntimeBuilder:
        self.doc["spec"]["template"]["spec"].update(fields)
        return self

    def template_metadata(self, **fields: Any) -> RuntimeBuilder:
        self.doc["spec"]["template"]["metadata"] = fields
        return self

    def labels(self, **labels: str) -> RuntimeBuilder:
        self.doc["metadata"]["labels"] = labels
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self.doc)


def runtime(
    policy: str | None = "torch",
    name: str = "torch-distributed",
    *,
    kind: str = "ClusterTrainingRuntime",
    namespace: str = "default",
) -> RuntimeBuilder:
    return RuntimeBuilder(policy, name, kind, namespace)


class TrainJobBuilder:
    def __init__(self, name: str, namespace: str, runtime_name: str, kind: str | None) -> None:
        ref: dict[str, Any] = {"name": runtime_name}
        if kind is not None:
            ref["kind"] = kind
        self.doc: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"runtimeRef": ref},
        }

    def trainer(self, **fields: Any) -> TrainJobBuilder:
        self.doc["spec"].setdefault("trainer", {}).update(fields)
        return self

    def spec(self, **fields: Any) -> TrainJobBuilder:
        self.doc["spec"].update(fields)
        return self

    def initializer(self, **sources: Any) -> TrainJobBuilder:
        self.doc["spec"]["initializer"] = sources
        return self

    def patch(self, manager: str, *jobs: dict[str, Any], **template: Any) -> TrainJobBuilder:
        """A runtime patch; each job is ``{"name": ..., "template": ...}``."""
        body: dict[str, Any] = dict(template)
        if jobs:
            body.setdefault("spec", {})["replicatedJobs"] = list(jobs)
        patch: dict[str, Any] = {"manager": manager}
        if body:
            patch["trainingRuntimeSpec"] = {"template": body}
        self.doc["spec"].setdefault("runtimePatches", []).append(patch)
        return self

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self.doc)


def trainjob(
    name: str = "job",
    *,
    namespace: str = "default",
    runtime_name: str = "torch-distributed",
    kind: str | None = None,
) -> TrainJobBuilder:
    return TrainJobBuilder(name, namespace, runtime_name, kind)


def pod_spec_patch(job: str, **spec: Any) -> dict[str, Any]:
    """A ``replicatedJobs[]`` entry of a runtime patch that patches the pod spec."""
    return {"name": job, "template": {"spec": {"template": {"spec": spec}}}}


def as_runtime(doc: dict[str, Any]) -> api.Runtime:
    obj, errors = api.parse(doc)
    assert obj is not None, errors
    assert isinstance(obj, api.TrainingRuntime | api.ClusterTrainingRuntime)
    return obj


def as_trainjob(doc: dict[str, Any]) -> api.TrainJob:
    obj, errors = api.parse(doc)
    assert isinstance(obj, api.TrainJob), errors
    return obj


def lookup(*docs: dict[str, Any]) -> api.RuntimeLookup:
    """A runtime lookup over built runtimes, keyed as admission asks: (kind, namespace, name)."""
    found = {}
    for doc in docs:
        rt = as_runtime(doc)
        namespace = rt.metadata.namespace if rt.KIND == "TrainingRuntime" else None
        found[(rt.KIND, namespace, rt.name)] = rt

    def find(kind: str, namespace: str | None, name: str) -> api.Runtime | None:
        return found.get((kind, namespace, name))

    return find


def messages(doc: dict[str, Any], old: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
    """The ``<field path>: <message>`` lines admission gives ``doc`` (subject dropped)."""
    verdict = api.review(doc, old, **kwargs)
    return [str(error) for error in verdict.errors]
