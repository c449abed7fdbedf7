"""Validation of TrainJob, and the entry points for all three ``trainer.kubeflow.org`` kinds.

Covers what upstream checks in the CRD schema (OpenAPI bounds and CEL rules), the validating
webhook, and the JobSet plugin's checks of a TrainJob against its runtime's template
(initializers, patch and override targets). Each runtime plugin's own checks (Torch, MPI,
XGBoost, Flux, Volcano) live with that plugin in ``kubetrain.frameworks.trainjob`` and are run
through :mod:`._trainer_plugins`, after these. Every problem is returned at once, as a
:class:`FieldError`, with upstream's message word for word where upstream has one. Paths are
sometimes more precise than upstream's (an unknown patch target is reported at its own
``name`` rather than at the whole list) so a user can find the line to fix. Runtimes are
validated by ``_runtime_validation``; this module dispatches to it.

Runtime-dependent TrainJob checks run only when a runtime lookup is given; without one (an
offline check of a single file) they are skipped, since nothing can be said about the runtime.

Deliberately not checked: torchtune recipes and configs (``tune run`` commands) and the
"JobSet still active" guard on patches, which need the cluster. Pure; never raises for
malformed input.

kubetrain's additions, each because upstream would accept the TrainJob and then silently
ignore part of it:

- ``trainer`` fields set against a runtime with no trainer-ancestor job holding a ``node``
  container are rejected;
- with a v2.1 torch ``elasticPolicy``, ``trainer.numNodes`` may change while the job runs (a
  resize; upstream declared elastic training but never implemented it); every other trainer
  field stays immutable. Without a runtime lookup the change is refused, as upstream refuses
  it. (The torch plugin bounds the new count by minNodes..maxNodes.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from kubetrain.api import _fielderrors as fe
from kubetrain.api import _podtemplate, _trainer_plugins
from kubetrain.api import _runtime_validation as rv
from kubetrain.api._fielderrors import ErrorType, FieldError, Path
from kubetrain.api._runtime_validation import ReplicatedJob, Runtime
from kubetrain.api._trainer import (
    ANCESTOR_LABEL,
    DATASET_INITIALIZER,
    GROUP,
    MANAGED_BY_VALUES,
    MODEL_INITIALIZER,
    NODE,
    SUPPORT_LABEL,
    TRAINER_ANCESTOR,
    ClusterTrainingRuntime,
    ContainerOverride,
    InitializerSource,
    PodSpecOverride,
    PodTemplateOverride,
    RuntimePatch,
    RuntimeRef,
    Trainer,
    TrainerKind,
    TrainingRuntime,
    TrainJob,
)
from kubetrain.api._trainer_defaults import set_defaults

RuntimeLookup = Callable[[str, "str | None", str], "Runtime | None"]
PriorityClassLookup = _trainer_plugins.PriorityClassLookup

# --- upstream messages (CRD CEL rules, webhooks, plugins) -----------------------------------

NAME_FORMAT_MESSAGE = "metadata.name must match RFC 1035 DNS label format"
NAME_LENGTH_MESSAGE = "metadata.name must be no more than 63 characters"
IMMUTABLE_MESSAGE = "field is immutable"
MANAGED_BY_MESSAGE = (
    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
)
STORAGE_URI_MESSAGE = "storageUri may be empty, or it must be a valid URI (scheme://...)"
NUM_PROC_MIN_MESSAGE = "numProcPerNode must be greater than or equal to 1"
NUM_PROC_TORCH_MESSAGE = "must have an int value or [auto cpu gpu]"
RUNTIME_MISSING_MESSAGE = (
    '{resource}.trainer.kubeflow.org "{name}" not found: specified {kind} must be created '
    "before the TrainJob is created"
)
UNSUPPORTED_RUNTIME_MESSAGE = "unsupported runtime: {gk}"
INITIALIZER_JOB_MESSAGE = "must have {job} job when trainJob is configured with input {config}"
INITIALIZER_CONTAINER_MESSAGE = "must have container with name - {job} in the {job} job"
INITIALIZER_MOUNT_MESSAGE = (
    "must have volumeMount with name - initializer in container {job} of the {job} job"
)
PATCH_JOB_MESSAGE = "must not have replicated job that doesn't exist in the runtime job template"
OVERRIDE_JOB_MESSAGE = "must not have targetJob that doesn't exist in the runtime job template"
MISSING_CONTAINER_MESSAGE = "must not have container that doesn't exist in the runtime job {job}"
MISSING_INIT_CONTAINER_MESSAGE = (
    "must not have initContainer that doesn't exist in the runtime job {job}"
)
RESERVED_CONTAINER_ENV_MESSAGE = (
    "must not have envs for the dataset-initializer, model-initializer, node containers"
)
PATCHES_SUSPENDED_MESSAGE = (
    "RuntimePatches can only be modified when the TrainJob is suspended before or after the update"
)
OVERRIDES_SUSPENDED_MESSAGE = (
    "PodTemplateOverrides can only be modified when the TrainJob is suspended"
)
DEPRECATION_POLICY_URL = (
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)
DEPRECATED_RUNTIME_WARNING = (
    '{kind} "{name}" is deprecated and will be removed in a future release of Kubeflow '
    "Trainer. See runtime deprecation policy: " + DEPRECATION_POLICY_URL
)
DOMAIN_PREFIXED_MESSAGE = 'must be a domain-prefixed path (such as "acme.io/foo")'
HTTP_PATH_FORMAT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
# --- kubetrain's own messages ---------------------------------------------------------------

TRAINER_IGNORED_MESSAGE = (
    'the runtime "{runtime}" has no replicated job labelled '
    f"{ANCESTOR_LABEL}: {TRAINER_ANCESTOR} with a container named {NODE}, "
    "so these trainer settings would be ignored"
)
# --- limits and names -----------------------------------------------------------------------

NAME_MAX = 63
REF_FIELD_MAX = 253
IMAGE_MAX = 500
STORAGE_URI_MAX = 2048
ARG_MAX = 1048576
RUNTIME_PATCHES_MAX = 16
PATCH_JOBS_MAX = 100
PATCH_CONTAINERS_MAX = 64
# The other bounds the CRD puts on a PodSpecPatch (kube-apiserver enforces them by schema).
VOLUME_MOUNTS_MAX = 128
SCHEDULING_GATES_MAX = 16
IMAGE_PULL_SECRETS_MAX = 64
RUNTIME_KINDS: tuple[str, ...] = (ClusterTrainingRuntime.KIND, TrainingRuntime.KIND)
# Containers whose env only the Trainer and Initializer APIs may set.
API_ENV_CONTAINERS: tuple[str, ...] = (DATASET_INITIALIZER, MODEL_INITIALIZER, NODE)
INITIALIZER_VOLUME = "initializer"
DEFAULT_NAMESPACE = "default"
DEPRECATED = "deprecated"

# PodSpecPatch fields that CEL keeps immutable once a patch for a job carries them.
IMMUTABLE_POD_PATCH_FIELDS: tuple[str, ...] = (
    "serviceAccountName",
    "volumes",
    "initContainers",
    "containers",
    "imagePullSecrets",
    "securityContext",
    "terminationGracePeriodSeconds",
)

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_HTTP_PATH = re.compile(rf"^{HTTP_PATH_FORMAT}$")
_STORAGE_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$", re.DOTALL)


# --- entry points ---------------------------------------------------------------------------


def validate(
    obj: TrainerKind,
    old: TrainerKind | None = None,
    *,
    find_runtime: RuntimeLookup | None = None,
    find_priority_class: PriorityClassLookup | None = None,
) -> list[FieldError]:
    """Every problem with a defaulted ``obj`` (and with the change from ``old``, on update)."""
    if isinstance(obj, TrainJob):
        before = old if isinstance(old, TrainJob) else None
        return _validate_trainjob(obj, before, find_runtime, find_priority_class)
    if isinstance(obj, TrainingRuntime | ClusterTrainingRuntime):
        return rv.validate_runtime(obj)
    return []


def warnings(obj: TrainerKind, *, find_runtime: RuntimeLookup | None = None) -> list[str]:
    """Accepted, but worth telling the user: a deprecated runtime, or a reference to one."""
    if isinstance(obj, TrainingRuntime | ClusterTrainingRuntime):
        if _is_deprecated(obj):
            return [DEPRECATED_RUNTIME_WARNING.format(kind=obj.KIND, name=obj.name)]
        return []
    if isinstance(obj, TrainJob) and find_runtime is not None and _supported_runtime_ref(obj):
        runtime, _ = _resolve_runtime(obj, find_runtime)
        if runtime is not None and _is_deprecated(runtime):
            text = DEPRECATED_RUNTIME_WARNING.format(kind=runtime.KIND, name=runtime.name)
            return ["Referenced " + text]
    return []


def _is_deprecated(runtime: Runtime) -> bool:
    return (runtime.metadata.labels or {}).get(SUPPORT_LABEL) == DEPRECATED


def domain_prefixed_path_errors(value: str, path: Path) -> list[FieldError]:
    """Kubernetes' ``IsDomainPrefixedPath`` (``acme.io/foo``), with its messages."""
    if not value:
        return [fe.required(str(path))]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [fe.invalid(str(path), value, DOMAIN_PREFIXED_MESSAGE)]
    errors = [fe.invalid(str(path), host, p) for p in rv.dns1123_subdomain_problems(host)]
    if not _HTTP_PATH.match(rest):
        detail = f"Invalid path (regex used for validation is '{HTTP_PATH_FORMAT}')"
        errors.append(fe.invalid(str(path), rest, detail))
    return errors


# --- TrainJob -------------------------------------------------------------------------------


def _validate_trainjob(
    job: TrainJob,
    old: TrainJob | None,
    find_runtime: RuntimeLookup | None,
    find_priority_class: PriorityClassLookup | None = None,
) -> list[FieldError]:
    errors = _trainjob_name_errors(job)
    spec = job.spec
    if spec is None:
        return [*errors, fe.required("spec.runtimeRef")]
    if spec.runtime_ref is None:
        errors.append(fe.required("spec.runtimeRef"))
    else:
        errors += _runtime_ref_errors(spec.runtime_ref)
    errors += _spec_errors(job)
    runtime = None
    if find_runtime is not None and _supported_runtime_ref(job):
        runtime, lookup_errors = _resolve_runtime(job, find_runtime)
        errors += lookup_errors
        if runtime is not None:
            errors += _runtime_dependent_errors(job, runtime, find_priority_class)
    if old is not None and old.spec is not None:
        errors += _update_errors(job, old, runtime)
    return errors


def _trainjob_name_errors(job: TrainJob) -> list[FieldError]:
    """The two CEL rules on ``metadata.name`` (RFC 1035 label, at most 63 characters)."""
    name = job.metadata.name
    if not name:
        if job.metadata.generate_name:
            return []
        return [fe.required("metadata.name", "name or generateName is required")]
    errors = []
    if not _DNS1035.match(name):
        errors.append(fe.invalid("metadata.name", name, NAME_FORMAT_MESSAGE))
    if len(name) > NAME_MAX:
        errors.append(fe.invalid("metadata.name", name, NAME_LENGTH_MESSAGE))
    return errors


def _runtime_ref_errors(ref: RuntimeRef) -> list[FieldError]:
    path = Path("spec").child("runtimeRef")
    errors: list[FieldError] = []
    if not ref.name:
        errors.append(fe.required(str(path.child("name"))))
    for key, value in (("name", ref.name), ("apiGroup", ref.api_group), ("kind", ref.kind)):
        errors += rv.max_length(value, path.child(key), REF_FIELD_MAX)
    if not _is_supported(ref):
        supported = ", ".join(f"{k}.{GROUP}" for k in RUNTIME_KINDS)
        gk = f"{ref.kind or ''}.{ref.api_group or ''}"
        detail = UNSUPPORTED_RUNTIME_MESSAGE.format(gk=gk) + f"; accepted: {supported}"
        errors.append(FieldError(ErrorType.NOT_SUPPORTED, str(path), detail))
    return errors


def _is_supported(ref: RuntimeRef) -> bool:
    """Whether a registered runtime plugin handles the reference (upstream's registry key)."""
    return ref.api_group == GROUP and ref.kind in RUNTIME_KINDS


def _supported_runtime_ref(job: TrainJob) -> bool:
    ref = job.spec.runtime_ref if job.spec else None
    return ref is not None and _is_supported(ref)


def _spec_errors(job: TrainJob) -> list[FieldError]:
    spec = job.spec
    assert spec is not None
    path = Path("spec")
    errors: list[FieldError] = []
    if spec.managed_by is not None:
        if spec.managed_by not in MANAGED_BY_VALUES:
            errors.append(
                fe.invalid(str(path.child("managedBy")), spec.managed_by, MANAGED_BY_MESSAGE)
            )
        errors += rv.max_length(spec.managed_by, path.child("managedBy"), REF_FIELD_MAX)
    errors += rv.minimum(spec.active_deadline_seconds, path.child("activeDeadlineSeconds"), 1)
    if spec.trainer is not None:
        errors += _trainer_errors(spec.trainer, path.child("trainer"))
    if spec.initializer is not None:
        for key in ("dataset", "model"):
            source = getattr(spec.initializer, key)
            if source is not None:
                errors += _initializer_errors(source, path.child("initializer", key))
    if spec.pod_template_overrides is not None:
        errors += _overrides_errors(spec.pod_template_overrides, path.child("podTemplateOverrides"))
    if spec.runtime_patches is not None:
        errors += _patches_errors(spec.runtime_patches, path.child("runtimePatches"))
    return errors


def _trainer_errors(trainer: Trainer, path: Path) -> list[FieldError]:
    errors = rv.max_length(trainer.image, path.child("image"), IMAGE_MAX)
    for key, items in (("command", trainer.command), ("args", trainer.args)):
        if items is None:
            continue
        if len(items) > rv.LIST_MAX:
            errors.append(rv.too_many(path.child(key), rv.LIST_MAX))
        for i, item in enumerate(items):
            errors += rv.max_length(item, path.child(key).index(i), ARG_MAX)
    errors += rv.env_errors(trainer.env, path.child("env"))
    errors += rv.minimum(trainer.num_nodes, path.child("numNodes"), 0)
    nproc, npath = trainer.num_proc_per_node, path.child("numProcPerNode")
    if isinstance(nproc, int) and nproc < 1:
        errors.append(fe.invalid(str(npath), nproc, NUM_PROC_MIN_MESSAGE))
    elif isinstance(nproc, str) and nproc not in rv.NUM_PROC_WORDS:
        errors.append(fe.invalid(str(npath), nproc, NUM_PROC_TORCH_MESSAGE))
    errors += _podtemplate.check_resources(
        trainer.resources_per_node, path.child("resourcesPerNode")
    )
    return errors


def _initializer_errors(source: InitializerSource, path: Path) -> list[FieldError]:
    uri, upath = source.storage_uri, path.child("storageUri")
    errors: list[FieldError] = []
    if uri is not None:
        if uri != "" and not _STORAGE_URI.match(uri):
            errors.append(fe.invalid(str(upath), uri, STORAGE_URI_MESSAGE))
        errors += rv.max_length(uri, upath, STORAGE_URI_MAX)
    errors += rv.env_errors(source.env, path.child("env"))
    return errors


def _overrides_errors(overrides: list[PodTemplateOverride], path: Path) -> list[FieldError]:
    """v2.1 ``podTemplateOverrides``: shape only; targets are checked against the runtime."""
    errors: list[FieldError] = []
    for i, override in enumerate(overrides):
        opath = path.index(i)
        if not override.target_jobs:
            errors.append(fe.required(str(opath.child("targetJobs"))))
        for j, target in enumerate(override.target_jobs or ()):
            if not target.name:
                errors.append(fe.required(str(opath.child("targetJobs").index(j).child("name"))))
        if override.spec is not None:
            errors += _pod_spec_patch_errors(override.spec, opath.child("spec"))
    return errors


def _patches_errors(patches: list[RuntimePatch], path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    if len(patches) > RUNTIME_PATCHES_MAX:
        errors.append(rv.too_many(path, RUNTIME_PATCHES_MAX))
    errors += rv.duplicate_names(patches, path, key="manager")
    for i, patch in enumerate(patches):
        ppath = path.index(i)
        errors += domain_prefixed_path_errors(patch.manager or "", ppath.child("manager"))
        errors += rv.max_length(patch.manager, ppath.child("manager"), REF_FIELD_MAX)
        jobs = _patch_jobs(patch)
        jpath = ppath.child("trainingRuntimeSpec", "template", "spec", "replicatedJobs")
        if len(jobs) > PATCH_JOBS_MAX:
            errors.append(rv.too_many(jpath, PATCH_JOBS_MAX))
        errors += rv.duplicate_names(jobs, jpath)
        for j, rjob in enumerate(jobs):
            if not rjob.name:
                errors.append(fe.required(str(jpath.index(j).child("name"))))
            errors += rv.max_length(rjob.name, jpath.index(j).child("name"), REF_FIELD_MAX)
            pod_spec = _patch_pod_spec(rjob)
            if pod_spec is not None:
                errors += _pod_spec_patch_errors(pod_spec, jpath.index(j).child(*rv.POD_SPEC_PATH))
    return errors


def _patch_jobs(patch: RuntimePatch) -> list[Any]:
    spec = patch.training_runtime_spec
    if spec is None or spec.template is None or spec.template.spec is None:
        return []
    return spec.template.spec.replicated_jobs or []


def _patch_pod_spec(rjob: Any) -> PodSpecOverride | None:
    template = rjob.template
    if template is None or template.spec is None or template.spec.template is None:
        return None
    return template.spec.template.spec


def _pod_spec_patch_errors(spec: PodSpecOverride, path: Path) -> list[FieldError]:
    errors = rv.minimum(
        spec.termination_grace_period_seconds, path.child("terminationGracePeriodSeconds"), 0
    )
    errors += rv.max_length(
        spec.service_account_name, path.child("serviceAccountName"), REF_FIELD_MAX
    )
    for key, items, limit in (
        ("tolerations", spec.tolerations, rv.LIST_MAX),
        ("schedulingGates", spec.scheduling_gates, SCHEDULING_GATES_MAX),
        ("imagePullSecrets", spec.image_pull_secrets, IMAGE_PULL_SECRETS_MAX),
    ):
        if items is not None and len(items) > limit:
            errors.append(rv.too_many(path.child(key), limit))
    errors += rv.duplicate_names(spec.scheduling_gates or (), path.child("schedulingGates"))
    errors += rv.duplicate_names(spec.volumes or (), path.child("volumes"))
    for key, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
    ):
        containers = containers or []
        cpath = path.child(key)
        if len(containers) > PATCH_CONTAINERS_MAX:
            errors.append(rv.too_many(cpath, PATCH_CONTAINERS_MAX))
        errors += rv.duplicate_names(containers, cpath)
        for i, container in enumerate(containers):
            if not container.name:
                errors.append(fe.required(str(cpath.index(i).child("name"))))
            errors += rv.max_length(container.name, cpath.index(i).child("name"), REF_FIELD_MAX)
            errors += rv.env_errors(container.env, cpath.index(i).child("env"))
            mounts, mpath = container.volume_mounts, cpath.index(i).child("volumeMounts")
            if mounts is not None and len(mounts) > VOLUME_MOUNTS_MAX:
                errors.append(rv.too_many(mpath, VOLUME_MOUNTS_MAX))
            errors += rv.duplicate_names(mounts or (), mpath)
    if spec.volumes is not None and len(spec.volumes) > rv.LIST_MAX:
        errors.append(rv.too_many(path.child("volumes"), rv.LIST_MAX))
    return errors


# --- TrainJob updates -----------------------------------------------------------------------


def _update_errors(job: TrainJob, old: TrainJob, runtime: Runtime | None) -> list[FieldError]:
    """CEL ``self == oldSelf`` rules (checked when both sides are set) and the patch guards.

    kubetrain's exception: on an elastic torch runtime, ``trainer.numNodes`` may change (the
    job is resized within minNodes..maxNodes, which the runtime checks bound); the rest of the
    trainer stays as it was. Without the runtime nothing can be said, so nothing changes.
    """
    new_spec, old_spec = job.spec, old.spec
    assert new_spec is not None
    assert old_spec is not None
    path = Path("spec")
    errors: list[FieldError] = []
    resizable = runtime is not None and _is_elastic(runtime)
    for key in ("runtime_ref", "managed_by", "initializer", "trainer", "active_deadline_seconds"):
        new_value, old_value = getattr(new_spec, key), getattr(old_spec, key)
        if new_value is None or old_value is None or _wire(new_value) == _wire(old_value):
            continue
        if (
            key == "trainer"
            and resizable
            and _without_num_nodes(new_value) == (_without_num_nodes(old_value))
        ):
            continue
        shown = "object" if hasattr(new_value, "to_dict") else new_value
        errors.append(fe.immutable(str(path.child(_camel(key))), shown))
    patches_changed = _patches_wire(new_spec.runtime_patches) != _patches_wire(
        old_spec.runtime_patches
    )
    if patches_changed and not new_spec.suspend and not old_spec.suspend:
        errors.append(fe.forbidden(str(path.child("runtimePatches")), PATCHES_SUSPENDED_MESSAGE))
    errors += _patch_field_immutability(job, old)
    overrides = new_spec.pod_template_overrides
    if _wire(overrides) != _wire(old_spec.pod_template_overrides) and not new_spec.suspend:
        errors.append(
            fe.forbidden(str(path.child("podTemplateOverrides")), OVERRIDES_SUSPENDED_MESSAGE)
        )
    return errors


def _is_elastic(runtime: Runtime) -> bool:
    policy = runtime.spec.ml_policy if runtime.spec is not None else None
    return (
        policy is not None and policy.torch is not None and policy.torch.elastic_policy is not None
    )


def _without_num_nodes(trainer: Trainer) -> dict[str, Any]:
    wire = trainer.to_dict()
    wire.pop("numNodes", None)
    return wire


def _wire(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value.to_dict() if hasattr(value, "to_dict") else value


def _patches_wire(patches: list[RuntimePatch] | None) -> list[dict[str, Any]]:
    """Patches as compared for the suspend guard: ``time`` is the server's, not a change."""
    result = []
    for patch in patches or ():
        wire = patch.to_dict()
        wire.pop("time", None)
        result.append(wire)
    return result


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _patch_field_immutability(job: TrainJob, old: TrainJob) -> list[FieldError]:
    """Immutable PodSpecPatch fields, matched by patch manager and replicated job name."""
    old_specs: dict[tuple[str, str], dict[str, Any]] = {}
    for patch in (old.spec.runtime_patches if old.spec else None) or ():
        for rjob in _patch_jobs(patch):
            pod_spec = _patch_pod_spec(rjob)
            if pod_spec is not None and patch.manager and rjob.name:
                old_specs[(patch.manager, rjob.name)] = pod_spec.to_dict()
    errors: list[FieldError] = []
    root = Path("spec").child("runtimePatches")
    for i, patch in enumerate((job.spec.runtime_patches if job.spec else None) or ()):
        jpath = root.index(i).child("trainingRuntimeSpec", "template", "spec", "replicatedJobs")
        for j, rjob in enumerate(_patch_jobs(patch)):
            pod_spec = _patch_pod_spec(rjob)
            previous = old_specs.get((patch.manager or "", rjob.name or ""))
            if pod_spec is None or previous is None:
                continue
            current = pod_spec.to_dict()
            for key in IMMUTABLE_POD_PATCH_FIELDS:
                if key in current and key in previous and current[key] != previous[key]:
                    shown = "object" if isinstance(current[key], list | dict) else current[key]
                    errors.append(
                        fe.immutable(str(jpath.index(j).child(*rv.POD_SPEC_PATH, key)), shown)
                    )
    return errors


# --- TrainJob checks that need the runtime --------------------------------------------------


def _resolve_runtime(
    job: TrainJob, find_runtime: RuntimeLookup
) -> tuple[Runtime | None, list[FieldError]]:
    """The referenced runtime, defaulted, or the error upstream gives when it does not exist."""
    ref = job.spec.runtime_ref if job.spec else None
    if ref is None or ref.kind is None or not ref.name:
        return None, []
    cluster = ref.kind == ClusterTrainingRuntime.KIND
    namespace = None if cluster else (job.metadata.namespace or DEFAULT_NAMESPACE)
    runtime = find_runtime(ref.kind, namespace, ref.name)
    if runtime is not None:
        return set_defaults(runtime), []
    detail = RUNTIME_MISSING_MESSAGE.format(
        resource=ref.kind.lower() + "s",
        name=ref.name,
        kind="clusterTrainingRuntime" if cluster else "trainingRuntime",
    )
    path = "spec.RuntimeRef" if cluster else "spec.runtimeRef"  # upstream's paths, as written
    return None, [fe.invalid(path, ref.to_dict(), detail)]


def _runtime_dependent_errors(
    job: TrainJob, runtime: Runtime, find_priority_class: PriorityClassLookup | None = None
) -> list[FieldError]:
    jobs = rv.replicated_jobs(runtime)
    errors = _initializer_runtime_errors(job, jobs)
    errors += _patch_target_errors(job, jobs)
    errors += _override_target_errors(job, jobs)
    errors += _trainer_target_errors(job, runtime, jobs)
    errors += _trainer_plugins.run(job, runtime, find_priority_class)
    return errors


def _initializer_runtime_errors(job: TrainJob, jobs: list[ReplicatedJob]) -> list[FieldError]:
    """The JobSet plugin: an initializer needs its job, container and ``initializer`` mount."""
    spec = job.spec
    if spec is None or spec.initializer is None or spec.runtime_ref is None:
        return []
    initializer, ref = spec.initializer, spec.runtime_ref.to_dict()
    errors: list[FieldError] = []
    for source, name, config in (
        (initializer.dataset, DATASET_INITIALIZER, "datasetConfig"),
        (initializer.model, MODEL_INITIALIZER, "modelConfig"),
    ):
        if source is None:
            continue
        detail = _initializer_problem(jobs, name, config)
        if detail:
            errors.append(fe.invalid("spec.runtimeRef", ref, detail))
    return errors


def _initializer_problem(jobs: list[ReplicatedJob], name: str, config: str) -> str | None:
    rjob = rv.job_by_name(jobs, name)
    if rjob is None:
        return INITIALIZER_JOB_MESSAGE.format(job=name, config=config)
    if name not in rjob.container_names():
        return INITIALIZER_CONTAINER_MESSAGE.format(job=name)
    container = rjob.container(name)
    mounts = container.get("volumeMounts") if container else None
    if not any(isinstance(m, dict) and m.get("name") == INITIALIZER_VOLUME for m in mounts or ()):
        return INITIALIZER_MOUNT_MESSAGE.format(job=name)
    return None


def _container_target_errors(
    containers: Iterable[ContainerOverride],
    known: set[str],
    job_name: str,
    path: Path,
    message: str,
    check_env: bool,
) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, container in enumerate(containers):
        cpath = path.index(i)
        if container.name not in known:
            errors.append(
                fe.invalid(str(cpath.child("name")), container.name, message.format(job=job_name))
            )
        elif check_env and container.env and container.name in API_ENV_CONTAINERS:
            errors.append(
                fe.invalid(
                    str(cpath.child("env")),
                    rv.env_names(container.env),
                    RESERVED_CONTAINER_ENV_MESSAGE,
                )
            )
    return errors


def _pod_spec_target_errors(
    spec: PodSpecOverride | None, known: set[str], job_name: str, path: Path
) -> list[FieldError]:
    if spec is None:
        return []
    errors = _container_target_errors(
        spec.init_containers or (),
        known,
        job_name,
        path.child("initContainers"),
        MISSING_INIT_CONTAINER_MESSAGE,
        check_env=False,
    )
    errors += _container_target_errors(
        spec.containers or (),
        known,
        job_name,
        path.child("containers"),
        MISSING_CONTAINER_MESSAGE,
        check_env=True,
    )
    return errors


def _patch_target_errors(job: TrainJob, jobs: list[ReplicatedJob]) -> list[FieldError]:
    errors: list[FieldError] = []
    root = Path("spec").child("runtimePatches")
    for i, patch in enumerate((job.spec.runtime_patches if job.spec else None) or ()):
        jpath = root.index(i).child("trainingRuntimeSpec", "template", "spec", "replicatedJobs")
        for j, rjob in enumerate(_patch_jobs(patch)):
            target = rv.job_by_name(jobs, rjob.name or "")
            if target is None:
                errors.append(
                    fe.invalid(str(jpath.index(j).child("name")), rjob.name, PATCH_JOB_MESSAGE)
                )
                continue
            errors += _pod_spec_target_errors(
                _patch_pod_spec(rjob),
                target.container_names(),
                rjob.name,
                jpath.index(j).child(*rv.POD_SPEC_PATH),
            )
    return errors


def _override_target_errors(job: TrainJob, jobs: list[ReplicatedJob]) -> list[FieldError]:
    errors: list[FieldError] = []
    root = Path("spec").child("podTemplateOverrides")
    for i, override in enumerate((job.spec.pod_template_overrides if job.spec else None) or ()):
        for j, target_ref in enumerate(override.target_jobs or ()):
            tpath = root.index(i).child("targetJobs").index(j).child("name")
            target = rv.job_by_name(jobs, target_ref.name or "")
            if target is None:
                errors.append(fe.invalid(str(tpath), target_ref.name, OVERRIDE_JOB_MESSAGE))
                continue
            errors += _pod_spec_target_errors(
                override.spec,
                target.container_names(),
                target.name or "",
                root.index(i).child("spec"),
            )
    return errors


def _trainer_target_errors(
    job: TrainJob, runtime: Runtime, jobs: list[ReplicatedJob]
) -> list[FieldError]:
    """kubetrain: trainer settings need a trainer-ancestor job with a ``node`` container."""
    trainer = job.spec.trainer if job.spec else None
    if trainer is None or not trainer.to_dict():
        return []
    target = rv.job_by_ancestor(jobs, TRAINER_ANCESTOR)
    if target is not None and target.container(NODE) is not None:
        return []
    return [fe.forbidden("spec.trainer", TRAINER_IGNORED_MESSAGE.format(runtime=runtime.name))]
