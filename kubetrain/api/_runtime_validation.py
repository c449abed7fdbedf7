"""Validation of TrainingRuntime and ClusterTrainingRuntime; the reader of their JobSet template.

A runtime is the platform team's blueprint: an ML policy, a gang-scheduling policy, and a JobSet
template whose replicated jobs are marked by the ``trainer.kubeflow.org/trainjob-ancestor-step``
label. This module checks what upstream's CRD schema, CEL rules and runtime webhooks check,
with upstream's messages word for word, and returns every problem at once.

It also owns reading the JobSet template, which is a free-form object: :func:`replicated_jobs`
navigates it defensively (a wrong shape is a field error from :func:`validate_runtime`, never
an exception), and TrainJob validation reads runtimes through it. Small field checks shared
with TrainJob validation live here too. Pure: no I/O, never raises for malformed input.

kubetrain's additions, each because upstream would accept the runtime and then silently ignore
part of it:

- the ancestor label on a Pod template instead of the Job template is an error;
- a runtime with an ``mlPolicy`` must have a replicated job labelled as the trainer ancestor;
- the template must have at least one replicated job (JobSet would reject it later);
- an ancestor label value outside dataset-initializer/model-initializer/trainer is an error,
  and so is the same ancestor on two replicated jobs;
- only one of coscheduling and volcano may be set; MPI ``mpiImplementation`` must be OpenMPI
  at admission (upstream fails only when it builds the JobSet);
- v2.1 torch ``elasticPolicy``: minNodes >= 1 and maxNodes >= minNodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain import accessors
from kubetrain.api import _fielderrors as fe
from kubetrain.api import _podtemplate
from kubetrain.api._fielderrors import ErrorType, FieldError, Path
from kubetrain.api._trainer import (
    ANCESTOR_LABEL,
    ANCESTORS,
    LAUNCHER,
    NODE,
    TRAINER_ANCESTOR,
    ClusterTrainingRuntime,
    MLPolicy,
    TorchPolicy,
    TrainingRuntime,
    TrainingRuntimeSpec,
)

Runtime = TrainingRuntime | ClusterTrainingRuntime

MPI_LAUNCHER_AS_NODE_MESSAGE = (
    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either "
    "launcher and node"
)
ENV_INJECTION_NODE_MESSAGE = (
    "containerNames must not include the main node container because PET_* envs are always "
    "injected into it"
)
ONE_POLICY_MESSAGE = "Only one of the policy can be configured"
ELASTIC_NUM_NODES_MESSAGE = "numNodes should not be set if torch.elasticPolicy is configured"
TORCH_NUM_PROC_MESSAGE = "NumProcPerNode must be equal to auto, cpu, gpu, or int value"
MPI_NUM_PROC_MESSAGE = "NumProcPerNode in mpiPolicy must be >= 1"
FLUX_NUM_PROC_MESSAGE = "NumProcPerNode in fluxPolicy must be >= 1"
MPI_IMPLEMENTATION_MESSAGE = "MPI implementation for {impl} doesn't supported"
REPLICAS_MESSAGE = "always must be 1"
ANCESTOR_CONTAINER_MESSAGE = "must contain the required container for the ancestor: {ancestor}"
DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    r"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

# kubetrain's own messages
MISPLACED_ANCESTOR_MESSAGE = (
    "must be set on the Job template ({path}), where the trainer reads it, not on the Pod template"
)
NO_TRAINER_ANCESTOR_MESSAGE = (
    "must have a replicated job whose Job template is labelled "
    f"{ANCESTOR_LABEL}: {TRAINER_ANCESTOR} when mlPolicy is set"
)
NO_REPLICATED_JOBS_MESSAGE = "must have at least one replicated job"
ONE_POD_GROUP_POLICY_MESSAGE = "only one of coscheduling and volcano may be set"

SUBDOMAIN_MAX = 253
SSH_AUTH_MOUNT_PATH_MAX = 4096
LIST_MAX = 128
ENV_INJECTION_TARGETS_MAX = 16
ENV_INJECTION_CONTAINERS_MAX = 8
CONTAINER_NAME_MAX = 63
NUM_PROC_WORDS: tuple[str, ...] = ("auto", "cpu", "gpu")
SUPPORTED_MPI_IMPLEMENTATIONS: tuple[str, ...] = ("OpenMPI",)
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
TEMPLATE_JOBS_PATH = Path("spec").child("template", "spec", "replicatedJobs")
# From a replicated job to its Pod spec.
POD_SPEC_PATH = ("template", "spec", "template", "spec")


# --- small field checks shared with TrainJob validation -------------------------------------


def dns1123_subdomain_problems(value: str) -> list[str]:
    """Kubernetes' ``IsDNS1123Subdomain``: every reason ``value`` is not a valid subdomain."""
    problems = []
    if len(value) > SUBDOMAIN_MAX:
        problems.append(f"must be no more than {SUBDOMAIN_MAX} characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        problems.append(DNS1123_SUBDOMAIN_MESSAGE)
    return problems


def too_many(path: Path, limit: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, str(path), f"must have at most {limit} items")


def max_length(value: str | None, path: Path, limit: int) -> list[FieldError]:
    if value is not None and len(value) > limit:
        return [fe.too_long(str(path), limit)]
    return []


def minimum(value: int | None, path: Path, low: int) -> list[FieldError]:
    if value is not None and value < low:
        return [fe.invalid(str(path), value, f"should be greater than or equal to {low}")]
    return []


def env_errors(env: list[Any] | None, path: Path) -> list[FieldError]:
    """An env list keyed by name (``listType=map``): shape, size and unique names."""
    if env is None:
        return []
    errors = _podtemplate.check_env(env, path)
    if len(env) > LIST_MAX:
        errors.append(too_many(path, LIST_MAX))
    errors += duplicate_names(env, path)
    return errors


def duplicate_names(items: Iterable[Any], path: Path, key: str = "name") -> list[FieldError]:
    """Duplicate keys in a ``listType=map`` list; ``key`` is the wire name of the key field."""
    seen: set[Any] = set()
    errors = []
    for i, item in enumerate(items):
        name = item.get(key) if isinstance(item, Mapping) else getattr(item, _snake(key), None)
        if not isinstance(name, str) or not name:
            continue
        if name in seen:
            errors.append(fe.duplicate(str(path.index(i).child(key)), name))
        seen.add(name)
    return errors


def env_names(env: Iterable[Any] | None) -> list[str]:
    return [
        v["name"] for v in env or () if isinstance(v, Mapping) and isinstance(v.get("name"), str)
    ]


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


# --- the runtime's JobSet template, read defensively ----------------------------------------


@dataclass(frozen=True)
class ReplicatedJob:
    """One entry of ``spec.template.spec.replicatedJobs``, with the parts validation reads."""

    index: int
    path: Path
    name: str | None
    replicas: Any
    job_labels: Mapping[str, Any]
    pod_labels: Mapping[str, Any]
    pod_template: Any
    containers: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ancestor(self) -> str | None:
        """The ancestor step, read where upstream reads it: the Job template's labels."""
        value = self.job_labels.get(ANCESTOR_LABEL)
        return value if isinstance(value, str) else None

    @property
    def misplaced_ancestor(self) -> str | None:
        """An ancestor label written on the Pod template instead (upstream ignores it)."""
        if self.ancestor is not None:
            return None
        value = self.pod_labels.get(ANCESTOR_LABEL)
        return value if isinstance(value, str) else None

    def container_names(self) -> set[str]:
        return {
            c["name"]
            for c in self.containers + self.init_containers
            if isinstance(c.get("name"), str)
        }

    def container(self, name: str) -> dict[str, Any] | None:
        return next((c for c in self.containers if c.get("name") == name), None)


def _labels(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def jobset_spec(runtime: Runtime) -> dict[str, Any]:
    """The runtime's JobSet spec, or an empty one."""
    spec = runtime.spec
    if spec is None or spec.template is None or not isinstance(spec.template.spec, dict):
        return {}
    return spec.template.spec


def replicated_jobs(runtime: Runtime) -> list[ReplicatedJob]:
    """The replicated jobs that are objects; shape problems are reported by validation."""
    items = jobset_spec(runtime).get("replicatedJobs")
    if not isinstance(items, list):
        return []
    return [_read_job(i, item) for i, item in enumerate(items) if isinstance(item, dict)]


def _read_job(index: int, raw: dict[str, Any]) -> ReplicatedJob:
    pod_template = accessors.dig(raw, "template", "spec", "template")
    name = raw.get("name")
    return ReplicatedJob(
        index=index,
        path=TEMPLATE_JOBS_PATH.index(index),
        name=name if isinstance(name, str) else None,
        replicas=raw.get("replicas", 1),
        job_labels=_labels(accessors.dig(raw, "template", "metadata", "labels")),
        pod_labels=_labels(accessors.dig(pod_template, "metadata", "labels")),
        pod_template=pod_template,
        containers=_podtemplate.containers(pod_template),
        init_containers=_podtemplate.containers(pod_template, "initContainers"),
    )


def job_by_name(jobs: Iterable[ReplicatedJob], name: str) -> ReplicatedJob | None:
    return next((j for j in jobs if j.name == name), None)


def lacks_launcher_or_node(jobs: Iterable[ReplicatedJob]) -> bool:
    """What MPI's runLauncherAsNode needs for two or more nodes: both named jobs."""
    jobs = list(jobs)
    return job_by_name(jobs, LAUNCHER) is None or job_by_name(jobs, NODE) is None


def job_by_ancestor(jobs: Iterable[ReplicatedJob], ancestor: str) -> ReplicatedJob | None:
    return next((j for j in jobs if j.ancestor == ancestor), None)


# --- runtimes -------------------------------------------------------------------------------


def validate_runtime(runtime: Runtime) -> list[FieldError]:
    """A TrainingRuntime or ClusterTrainingRuntime: schema, CEL and webhook rules."""
    errors = _runtime_name_errors(runtime)
    spec = runtime.spec
    if spec is None:
        return [*errors, fe.required("spec", "must set mlPolicy, podGroupPolicy or template")]
    if spec.ml_policy is not None:
        errors += _ml_policy_errors(spec.ml_policy, Path("spec").child("mlPolicy"))
    errors += _pod_group_policy_errors(spec)
    errors += _template_errors(runtime, spec)
    return errors


def _runtime_name_errors(runtime: Runtime) -> list[FieldError]:
    meta = runtime.metadata
    if not meta.name:
        if meta.generate_name:
            return []
        return [fe.required("metadata.name", "name or generateName is required")]
    return [
        fe.invalid("metadata.name", meta.name, p) for p in dns1123_subdomain_problems(meta.name)
    ]


def _ml_policy_errors(policy: MLPolicy, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    sources = policy.sources()
    if len(sources) > 1:
        errors.append(fe.invalid(str(path), sources, ONE_POLICY_MESSAGE))
    errors += minimum(policy.num_nodes, path.child("numNodes"), 0)
    if policy.torch is not None:
        errors += _torch_policy_errors(policy, policy.torch, path)
    if policy.mpi is not None:
        mpi, mpi_path = policy.mpi, path.child("mpi")
        if mpi.num_proc_per_node is not None and mpi.num_proc_per_node < 1:
            errors.append(
                fe.invalid(
                    str(mpi_path.child("numProcPerNode")),
                    mpi.num_proc_per_node,
                    MPI_NUM_PROC_MESSAGE,
                )
            )
        impl = mpi.mpi_implementation
        if impl is not None and impl not in SUPPORTED_MPI_IMPLEMENTATIONS:
            detail = MPI_IMPLEMENTATION_MESSAGE.format(impl=impl) + '; supported values: "OpenMPI"'
            errors.append(
                FieldError(
                    ErrorType.NOT_SUPPORTED, str(mpi_path.child("mpiImplementation")), detail, impl
                )
            )
        errors += max_length(
            mpi.ssh_auth_mount_path, mpi_path.child("sshAuthMountPath"), SSH_AUTH_MOUNT_PATH_MAX
        )
    if policy.flux is not None:
        nproc = policy.flux.num_proc_per_node
        if nproc is not None and nproc < 1:
            errors.append(
                fe.invalid(str(path.child("flux", "numProcPerNode")), nproc, FLUX_NUM_PROC_MESSAGE)
            )
    return errors


def _torch_policy_errors(policy: MLPolicy, torch: TorchPolicy, path: Path) -> list[FieldError]:
    tpath = path.child("torch")
    errors: list[FieldError] = []
    nproc = torch.num_proc_per_node
    if nproc is not None and not _is_torch_num_proc(nproc):
        errors.append(fe.invalid(str(tpath.child("numProcPerNode")), nproc, TORCH_NUM_PROC_MESSAGE))
    elastic = torch.elastic_policy
    if elastic is not None:
        epath = tpath.child("elasticPolicy")
        if policy.num_nodes is not None:
            errors.append(fe.invalid(str(path), "object", ELASTIC_NUM_NODES_MESSAGE))
        errors += minimum(elastic.min_nodes, epath.child("minNodes"), 1)
        errors += minimum(elastic.max_nodes, epath.child("maxNodes"), 1)
        errors += minimum(elastic.max_restarts, epath.child("maxRestarts"), 0)
        low, high = elastic.min_nodes, elastic.max_nodes
        if low is not None and high is not None and high < low:
            errors.append(
                fe.invalid(
                    str(epath.child("maxNodes")),
                    high,
                    f"must be greater than or equal to minNodes ({low})",
                )
            )
    if torch.env_injection is not None:
        errors += _env_injection_errors(torch.env_injection.targets, tpath.child("envInjection"))
    return errors


def _is_torch_num_proc(value: int | str) -> bool:
    """The v2.1 CEL rule: ``self > 0 || self in ['auto', 'cpu', 'gpu']``."""
    return value > 0 if isinstance(value, int) else value in NUM_PROC_WORDS


def _env_injection_errors(targets: list[Any] | None, path: Path) -> list[FieldError]:
    if targets is None:
        return []
    tpath = path.child("targets")
    errors: list[FieldError] = []
    if len(targets) > ENV_INJECTION_TARGETS_MAX:
        errors.append(too_many(tpath, ENV_INJECTION_TARGETS_MAX))
    errors += duplicate_names(targets, tpath, key="jobName")
    for i, target in enumerate(targets):
        ipath = tpath.index(i)
        if not target.job_name:
            errors.append(fe.required(str(ipath.child("jobName"))))
        errors += max_length(target.job_name, ipath.child("jobName"), SUBDOMAIN_MAX)
        names = target.container_names
        npath = ipath.child("containerNames")
        if not names:
            errors.append(fe.required(str(npath)))
            continue
        if len(names) > ENV_INJECTION_CONTAINERS_MAX:
            errors.append(too_many(npath, ENV_INJECTION_CONTAINERS_MAX))
        seen: set[str] = set()
        for j, name in enumerate(names):  # a set (listType=set) of container names
            errors += max_length(name, npath.index(j), CONTAINER_NAME_MAX)
            if name in seen:
                errors.append(fe.duplicate(str(npath.index(j)), name))
            seen.add(name)
        if NODE in names:
            errors.append(fe.invalid(str(npath), names, ENV_INJECTION_NODE_MESSAGE))
    return errors


def _pod_group_policy_errors(spec: TrainingRuntimeSpec) -> list[FieldError]:
    policy = spec.pod_group_policy
    if policy is None:
        return []
    errors: list[FieldError] = []
    path = Path("spec").child("podGroupPolicy")
    if policy.coscheduling is not None and policy.volcano is not None:
        errors.append(fe.forbidden(str(path), ONE_POD_GROUP_POLICY_MESSAGE))
    if policy.coscheduling is not None:
        errors += minimum(
            policy.coscheduling.schedule_timeout_seconds,
            path.child("coscheduling", "scheduleTimeoutSeconds"),
            0,
        )
    return errors


def _template_errors(runtime: Runtime, spec: TrainingRuntimeSpec) -> list[FieldError]:
    """The JobSet template: shape, ancestor conventions, and what the ML policy relies on."""
    items = jobset_spec(runtime).get("replicatedJobs")
    if items is None or items == []:
        return [fe.required(str(TEMPLATE_JOBS_PATH), NO_REPLICATED_JOBS_MESSAGE)]
    if not isinstance(items, list):
        return [fe.invalid(str(TEMPLATE_JOBS_PATH), "object", "must be a list of replicated jobs")]
    errors: list[FieldError] = []
    for i, item in enumerate(items):
        errors += _replicated_job_shape_errors(item, TEMPLATE_JOBS_PATH.index(i))
    errors += duplicate_names([i for i in items if isinstance(i, dict)], TEMPLATE_JOBS_PATH)
    jobs = replicated_jobs(runtime)
    errors += _ancestor_errors(jobs)
    if spec.ml_policy is not None:
        errors += _ml_policy_template_errors(spec.ml_policy, jobs)
    return errors


def _replicated_job_shape_errors(item: Any, path: Path) -> list[FieldError]:
    if not isinstance(item, dict):
        return [fe.invalid(str(path), "object", "must be an object (a replicated job)")]
    errors: list[FieldError] = []
    name = item.get("name")
    if name is None or name == "":
        errors.append(fe.required(str(path.child("name"))))
    elif not isinstance(name, str):
        errors.append(fe.invalid(str(path.child("name")), name, "must be a string"))
    replicas = item.get("replicas")
    if replicas is not None and (isinstance(replicas, bool) or not isinstance(replicas, int)):
        errors.append(fe.invalid(str(path.child("replicas")), replicas, "must be an integer"))
    elif replicas is not None:
        errors += minimum(replicas, path.child("replicas"), 0)
    template = item.get("template")
    if template is None:
        return errors
    if not isinstance(template, dict):
        return [*errors, fe.invalid(str(path.child("template")), "object", "must be an object")]
    tpath = path.child("template")
    metadata = template.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        errors.append(fe.invalid(str(tpath.child("metadata")), "object", "must be an object"))
    labels = accessors.dig(template, "metadata", "labels")
    if labels is not None and not isinstance(labels, dict):
        errors.append(fe.invalid(str(tpath.child("metadata", "labels")), "object", "must be a map"))
    job_spec = template.get("spec")
    if job_spec is None:
        return errors
    if not isinstance(job_spec, dict):
        return [*errors, fe.invalid(str(tpath.child("spec")), "object", "must be an object")]
    parallelism = job_spec.get("parallelism")
    if parallelism is not None and (
        isinstance(parallelism, bool) or not isinstance(parallelism, int)
    ):
        errors.append(
            fe.invalid(str(tpath.child("spec", "parallelism")), parallelism, "must be an integer")
        )
    return errors + _podtemplate.check_template(
        job_spec.get("template"), tpath.child("spec", "template")
    )


def _ancestor_errors(jobs: list[ReplicatedJob]) -> list[FieldError]:
    """Upstream's webhook rules for ancestor jobs, plus kubetrain's checks on the label."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for job in jobs:
        job_labels = job.path.child("template", "metadata", "labels")
        ancestor, where = job.ancestor, job_labels.key(ANCESTOR_LABEL)
        if job.misplaced_ancestor is not None:
            ancestor = job.misplaced_ancestor
            where = job.path.child(*POD_SPEC_PATH[:-1], "metadata", "labels").key(ANCESTOR_LABEL)
            detail = MISPLACED_ANCESTOR_MESSAGE.format(path=job_labels)
            errors.append(fe.invalid(str(where), ancestor, detail))
        if ancestor is None:
            continue
        if ancestor not in ANCESTORS:
            errors.append(fe.not_supported(str(where), ancestor, ANCESTORS))
            continue
        if ancestor in seen:
            errors.append(fe.duplicate(str(where), ancestor))
        seen.add(ancestor)
        errors += _ancestor_job_errors(job, ancestor)
    return errors


def _ancestor_job_errors(job: ReplicatedJob, ancestor: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if isinstance(job.replicas, int) and not isinstance(job.replicas, bool) and job.replicas != 1:
        errors.append(fe.invalid(str(job.path.child("replicas")), job.replicas, REPLICAS_MESSAGE))
    required = NODE if ancestor == TRAINER_ANCESTOR else ancestor
    if job.container(required) is None:
        names = [c.get("name") for c in job.containers]
        errors.append(
            fe.invalid(
                str(job.path.child(*POD_SPEC_PATH, "containers")),
                names,
                ANCESTOR_CONTAINER_MESSAGE.format(ancestor=ancestor),
            )
        )
    return errors


def _ml_policy_template_errors(policy: MLPolicy, jobs: list[ReplicatedJob]) -> list[FieldError]:
    errors: list[FieldError] = []
    has_trainer = any(TRAINER_ANCESTOR in (j.ancestor, j.misplaced_ancestor) for j in jobs)
    if not has_trainer:
        errors.append(fe.required(str(TEMPLATE_JOBS_PATH), NO_TRAINER_ANCESTOR_MESSAGE))
    mpi = policy.mpi
    launcher_as_node = mpi is not None and bool(mpi.run_launcher_as_node)
    if launcher_as_node and (policy.num_nodes or 1) >= 2 and lacks_launcher_or_node(jobs):
        errors.append(
            fe.invalid(
                str(Path("spec").child("mlPolicy", "numNodes")),
                policy.num_nodes,
                MPI_LAUNCHER_AS_NODE_MESSAGE,
            )
        )
    return errors
