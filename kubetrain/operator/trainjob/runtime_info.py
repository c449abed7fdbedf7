"""The working object the runtime plugins edit: a runtime snapshot with the TrainJob merged over it.

:func:`new_info` starts from the (defaulted) runtime a TrainJob resolved to, merges what the
TrainJob may override, and cuts the JobSet template into pod sets, one per replicated job:

- labels and annotations: the runtime template's, then the TrainJob's ``spec.labels`` /
  ``spec.annotations`` (v2.1), then each runtime patch's template metadata (later wins);
- ``podTemplateOverrides`` (v2.1) and ``runtimePatches`` are strategic-merged into the pod
  templates (and Job template metadata) of the replicated jobs they target, in list order;
- ``trainer.resourcesPerNode`` replaces the ``node`` container's resources of the trainer job
  (and of the MPI ``node`` job when the launcher runs as a node), before pod requests are
  counted, so PodGroups see what the pods will ask for (upstream counted the runtime's values,
  kubeflow/trainer#2525). It replaces them, limits and requests together, as upstream does;
- each pod set's count is the Job's ``parallelism`` (default 1), or ``mlPolicy.numNodes`` for
  the trainer job of a runtime with an ML policy; the ML plugins then apply the TrainJob's;
- ``port``: where rank 0 listens for its peers (torch's rendezvous, JAX's coordinator,
  XGBoost's tracker): 29500, or, when the pods share the host's network, the port the job was
  given (``host_network`` then says the pods run there).

The TrainJob in an Info is a deep copy: plugins may change it (torchtune rewrites the trainer
command) and that change is never written back, as upstream. Pure: no I/O.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubetrain import accessors, api, patches
from kubetrain.frameworks.trainjob import node
from kubetrain.operator.trainjob import podrequests

TRAINJOB_API_VERSION = "trainer.kubeflow.org/v1alpha1"


@dataclass
class Container:
    """What plugins add to one container; copied into the pod template at build time."""

    name: str
    env: list[dict[str, Any]] = field(default_factory=list)
    ports: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class PodSet:
    """One replicated job: ``replicas`` Jobs of ``count`` pods each."""

    name: str
    ancestor: str | None
    count: int
    replicas: int
    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    endpoints: list[str] = field(default_factory=list)  # pod DNS names, filled before build
    single_pod_requests: dict[str, Fraction] = field(default_factory=dict)

    def container(self, name: str) -> Container | None:
        return next((c for c in self.containers if c.name == name), None)


@dataclass
class Scheduler:
    """Labels and annotations every pod gets (gang-scheduling membership)."""

    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class RuntimeInfo:
    job: api.TrainJob
    runtime: api.Runtime
    labels: dict[str, str]
    annotations: dict[str, str]
    ml_policy: api.MLPolicy | None
    pod_group_policy: Any
    jobset_spec: dict[str, Any]
    pod_sets: list[PodSet]
    scheduler: Scheduler = field(default_factory=Scheduler)
    port: int = node.PORT
    host_network: bool = False

    @property
    def name(self) -> str:
        return self.job.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.job.metadata.namespace or ""

    @property
    def trainer(self) -> Any:
        return self.job.spec.trainer if self.job.spec is not None else None

    def pod_set(self, name: str) -> PodSet | None:
        return next((p for p in self.pod_sets if p.name == name), None)

    def pod_set_by_ancestor(self, ancestor: str) -> PodSet | None:
        return next((p for p in self.pod_sets if p.ancestor == ancestor), None)

    def trainer_container(self) -> Container | None:
        """Container ``node`` of the trainer-ancestor job, where trainer settings go."""
        pod_set = self.pod_set_by_ancestor(api.TRAINER_ANCESTOR)
        return pod_set.container(api.NODE) if pod_set is not None else None

    def owner_reference(self) -> dict[str, Any]:
        """The controller reference every object built for the TrainJob carries."""
        return {
            "apiVersion": TRAINJOB_API_VERSION,
            "kind": api.TrainJob.KIND,
            "name": self.name,
            "uid": self.job.metadata.uid or "",
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def object_meta(self, name: str) -> dict[str, Any]:
        """Metadata of an object built for the TrainJob: its namespace and owner."""
        return {
            "name": name,
            "namespace": self.namespace,
            "ownerReferences": [self.owner_reference()],
        }

    def replicated_jobs(self) -> list[dict[str, Any]]:
        items = self.jobset_spec.get("replicatedJobs")
        return [j for j in items if isinstance(j, dict)] if isinstance(items, list) else []


def _ensure(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        value = obj.get(key)
        if not isinstance(value, dict):
            value = obj[key] = {}
        obj = value
    return obj


def ensure_pod_template(rjob: dict[str, Any]) -> dict[str, Any]:
    """The replicated job's pod template, created empty where missing (for editing)."""
    return _ensure(rjob, "template", "spec", "template")


def ensure_pod_spec(rjob: dict[str, Any]) -> dict[str, Any]:
    return _ensure(ensure_pod_template(rjob), "spec")


def pod_spec(rjob: dict[str, Any]) -> dict[str, Any]:
    """The replicated job's pod spec, for reading ({} where missing)."""
    value = accessors.dig(rjob, "template", "spec", "template", "spec")
    return value if isinstance(value, dict) else {}


def containers(rjob: dict[str, Any], key: str = "containers") -> list[dict[str, Any]]:
    items = accessors.dig(rjob, "template", "spec", "template", "spec", key)
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def new_info(job: api.TrainJob, runtime: api.Runtime, host_port: int | None = None) -> RuntimeInfo:
    """The Info for ``job`` built on ``runtime`` (both defaulted); see the module docstring.

    ``host_port``: the job's pods share the host's network, and rank 0 listens there.
    """
    job = job.model_copy(deep=True)
    spec = runtime.spec
    template = spec.template if spec is not None else None
    meta = template.metadata if template is not None else None
    labels = dict((meta.labels if meta else None) or {})
    annotations = dict((meta.annotations if meta else None) or {})
    jobset_spec = (
        copy.deepcopy(template.spec) if template and isinstance(template.spec, dict) else {}
    )
    job_spec = job.spec
    if job_spec is not None:
        labels.update(job_spec.labels or {})
        annotations.update(job_spec.annotations or {})
        _apply_overrides(jobset_spec, job_spec.pod_template_overrides or [])
        for patch in job_spec.runtime_patches or []:
            _apply_patch(jobset_spec, patch, labels, annotations)
    policy = spec.ml_policy if spec is not None else None
    _apply_resources_per_node(jobset_spec, job, policy)
    info = RuntimeInfo(
        job=job,
        runtime=runtime,
        labels=labels,
        annotations=annotations,
        ml_policy=policy.model_copy(deep=True) if policy is not None else None,
        pod_group_policy=(
            spec.pod_group_policy.model_copy(deep=True)
            if spec is not None and spec.pod_group_policy is not None
            else None
        ),
        jobset_spec=jobset_spec,
        pod_sets=[],
        port=node.PORT if host_port is None else host_port,
        host_network=host_port is not None,
    )
    counts = node.runtime_pod_counts(runtime)
    for rjob in info.replicated_jobs():
        name = rjob.get("name")
        if not isinstance(name, str):
            continue
        replicas = rjob.get("replicas", 1)
        info.pod_sets.append(
            PodSet(
                name=name,
                ancestor=node.ancestor(rjob),
                count=counts.get(name, 1),
                replicas=replicas if isinstance(replicas, int) and replicas >= 0 else 1,
                containers=[_container(c) for c in containers(rjob)],
                init_containers=[_container(c) for c in containers(rjob, "initContainers")],
                single_pod_requests=podrequests.pod_requests(pod_spec(rjob)),
            )
        )
    return info


def _container(raw: dict[str, Any]) -> Container:
    return Container(name=str(raw.get("name", "")))


def _apply_overrides(jobset_spec: dict[str, Any], overrides: list[Any]) -> None:
    """v2.1 ``podTemplateOverrides``: a strategic merge onto each target's pod template."""
    for override in overrides:
        targets = {t.name for t in override.target_jobs or () if t.name}
        patch: dict[str, Any] = {}
        if override.metadata is not None:
            metadata = override.metadata.to_dict()
            if metadata:
                patch["metadata"] = metadata
        if override.spec is not None:
            patch["spec"] = override.spec.to_dict()
        for rjob in _jobs(jobset_spec):
            if rjob.get("name") in targets:
                _merge_pod_template(rjob, patch)


def _apply_patch(
    jobset_spec: dict[str, Any], patch: Any, labels: dict[str, str], annotations: dict[str, str]
) -> None:
    """One ``runtimePatches`` entry: JobSet metadata, then each named replicated job."""
    wire = patch.to_dict().get("trainingRuntimeSpec", {}).get("template", {})
    metadata = wire.get("metadata") or {}
    labels.update(metadata.get("labels") or {})
    annotations.update(metadata.get("annotations") or {})
    for rjob_patch in (wire.get("spec") or {}).get("replicatedJobs") or []:
        for rjob in _jobs(jobset_spec):
            if rjob.get("name") != rjob_patch.get("name"):
                continue
            job_template = rjob_patch.get("template") or {}
            if job_template.get("metadata"):
                template = _ensure(rjob, "template")
                template["metadata"] = patches.strategic_merge_patch(
                    template.get("metadata") or {},
                    job_template["metadata"],
                    patches.OBJECT_META,
                    new_items_last=True,
                )
            pod_patch = (job_template.get("spec") or {}).get("template")
            if pod_patch:
                _merge_pod_template(rjob, pod_patch)


def _merge_pod_template(rjob: dict[str, Any], patch: dict[str, Any]) -> None:
    job_spec = _ensure(rjob, "template", "spec")
    job_spec["template"] = patches.strategic_merge_patch(
        job_spec.get("template") or {}, patch, patches.POD_TEMPLATE, new_items_last=True
    )


def _jobs(jobset_spec: dict[str, Any]) -> list[dict[str, Any]]:
    items = jobset_spec.get("replicatedJobs")
    return [j for j in items if isinstance(j, dict)] if isinstance(items, list) else []


def _apply_resources_per_node(
    jobset_spec: dict[str, Any], job: api.TrainJob, policy: api.MLPolicy | None
) -> None:
    trainer = job.spec.trainer if job.spec is not None else None
    resources = trainer.resources_per_node if trainer is not None else None
    if not resources or not (resources.get("limits") or resources.get("requests")):
        return
    launcher_as_node = bool(policy and policy.mpi and policy.mpi.run_launcher_as_node)
    for rjob in _jobs(jobset_spec):
        is_trainer = node.ancestor(rjob) == api.TRAINER_ANCESTOR
        if not (is_trainer or (launcher_as_node and rjob.get("name") == api.NODE)):
            continue
        for container in containers(rjob):
            if container.get("name") == api.NODE:
                container["resources"] = {k: copy.deepcopy(v) for k, v in resources.items() if v}
