"""CustomResourceDefinitions (``apiextensions.k8s.io/v1``) for every kind kubetrain serves.

The schemas are built from the API models by walking their fields, so a field added to a
model is served (and not pruned) without anyone editing a schema by hand. What a CRD says
that a Python type cannot (names, scope, versions, subresources, printer columns, the CEL
rules, CRD defaults and size bounds upstream declares with kubebuilder markers) lives in the
tables below, each keyed by a model class and field, and each copied from upstream:
Training Operator v1.9.4 (MXJob: v1.8.1) and Trainer master (v2.1 for the fields master
dropped).

The schemas are structural, as Kubernetes requires: every node has a type and there are no
``$ref`` s. Pydantic's own JSON schema is not used because its ``$defs``/``anyOf`` form is not
structural. The Kubernetes objects kubetrain keeps as written (pod templates, env vars,
resource requirements, volumes, a JobSet spec) get the full schema of their Kubernetes type,
made from Kubernetes' own OpenAPI (:mod:`_k8sschemas`) at the places :mod:`_kubeobjects`
names, so a cluster prunes and refuses unknown fields there as kubetrain's admission does.

This module returns plain dicts. It must not read or write files, import YAML or change
the models; ``kubetrain crds`` does the writing.
"""

from __future__ import annotations

import copy
import types
import typing
from typing import Annotated, Any, Literal, Union

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from kubetrain.api import _k8sschemas, _kubeobjects, _trainer, _v1

Schema = dict[str, Any]

CRD_API_VERSION = "apiextensions.k8s.io/v1"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

# --- CEL rules (rule and message as upstream writes them) ----------------------------------


def _rule(rule: str, message: str) -> dict[str, str]:
    return {"rule": rule, "message": message}


_IMMUTABLE = _rule("self == oldSelf", "field is immutable")
_QUEUE_IMMUTABLE = _rule("self == oldSelf", "spec.runPolicy.schedulingPolicy.queue is immutable")
_NAME_RFC1035 = _rule(
    "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
    "metadata.name must match RFC 1035 DNS label format",
)
_NAME_SIZE = _rule(
    "size(self.metadata.name) <= 63", "metadata.name must be no more than 63 characters"
)
_MANAGED_BY_VALUES = _rule(
    "self in [" + ", ".join(f"'{v}'" for v in _trainer.MANAGED_BY_VALUES) + "]",
    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue "
    "if set",
)
_STORAGE_URI = _rule(
    "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
    "storageUri may be empty, or it must be a valid URI (scheme://...)",
)
# Master types trainer.numProcPerNode as int32; kubetrain keeps v2.1's int-or-string, so the
# master rule applies to the int case and the torch plugin judges the strings.
_TRAINER_PROCS = _rule(
    "type(self) == string || self >= 1", "numProcPerNode must be greater than or equal to 1"
)
# v2.1's rule, written per case so that a string outside the list fails with this message
# rather than with a CEL evaluation error.
_TORCH_PROCS = _rule(
    "type(self) == string ? self in ['auto', 'cpu', 'gpu'] : self > 0",
    "NumProcPerNode must be equal to auto, cpu, gpu, or int value",
)
_MPI_PROCS = _rule("self >= 1", "NumProcPerNode in mpiPolicy must be >= 1")
_FLUX_PROCS = _rule("self >= 1", "NumProcPerNode in fluxPolicy must be >= 1")
_ONE_POLICY = _rule(
    "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
    ".filter(x, x).size() <= 1",
    "Only one of the policy can be configured",
)
_ELASTIC_NUM_NODES = _rule(
    "!(has(self.numNodes) && (has(self.torch) && has(self.torch.elasticPolicy)))",
    "numNodes should not be set if torch.elasticPolicy is configured",
)
_NO_NODE_CONTAINER = _rule(
    "!self.exists(c, c == 'node')",
    "containerNames must not include the main node container because PET_* envs are always "
    "injected into it",
)


def _unchanged_except(model: type[BaseModel], free: str) -> str:
    """CEL: every field of ``model`` but ``free`` is as it was, including whether it is set."""
    checks = []
    for name, field in model.model_fields.items():
        wire = field.serialization_alias or field.alias or name
        if wire != free:
            checks.append(
                f"has(self.{wire}) == has(oldSelf.{wire}) && "
                f"(!has(self.{wire}) || self.{wire} == oldSelf.{wire})"
            )
    return " && ".join(checks)


# Upstream keeps the whole trainer immutable. kubetrain lets an elastic torch TrainJob be
# resized, so numNodes is left out here; whether the runtime is elastic is more than CEL can
# see, and kubetrain's admission decides it (a cluster without that admission lets it change).
_TRAINER_IMMUTABLE = _rule(_unchanged_except(_trainer.Trainer, "numNodes"), "field is immutable")
_LAST_UPDATED = _rule(
    "has(self.lastUpdatedTime)", "lastUpdatedTime is required when trainerStatus is present"
)


def _map_list(*keys: str) -> Schema:
    """A list merged by key under server-side apply; the key fields must be required."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


# --- what a CRD says that the models do not -------------------------------------------------

# Extra schema keywords for one field, keyed by (model, Python field name). Nested dicts
# (``items``) merge into the generated node; rule lists are appended to.
_FIELD_EXTRAS: dict[tuple[type[BaseModel], str], Schema] = {
    # kubeflow.org/v1
    (_v1.SchedulingPolicy, "queue"): {"x-kubernetes-validations": [_QUEUE_IMMUTABLE]},
    (_v1.RunPolicy, "suspend"): {"default": False},
    # TrainJob spec
    (_trainer.TrainJobSpec, "runtime_ref"): {"x-kubernetes-validations": [_IMMUTABLE]},
    (_trainer.TrainJobSpec, "initializer"): {"x-kubernetes-validations": [_IMMUTABLE]},
    (_trainer.TrainJobSpec, "trainer"): {"x-kubernetes-validations": [_TRAINER_IMMUTABLE]},
    (_trainer.TrainJobSpec, "runtime_patches"): {"maxItems": 16, **_map_list("manager")},
    (_trainer.TrainJobSpec, "suspend"): {"default": False},
    (_trainer.TrainJobSpec, "active_deadline_seconds"): {
        "minimum": 1,
        "x-kubernetes-validations": [_IMMUTABLE],
    },
    (_trainer.TrainJobSpec, "managed_by"): {
        "default": _trainer.TRAINJOB_CONTROLLER,
        "maxLength": 253,
        "x-kubernetes-validations": [_MANAGED_BY_VALUES, _IMMUTABLE],
    },
    (_trainer.RuntimeRef, "name"): {"minLength": 1, "maxLength": 253},
    (_trainer.RuntimeRef, "api_group"): {"default": _trainer.GROUP, "maxLength": 253},
    (_trainer.RuntimeRef, "kind"): {"default": "ClusterTrainingRuntime", "maxLength": 253},
    (_trainer.InitializerSource, "storage_uri"): {
        "maxLength": 2048,
        "x-kubernetes-validations": [_STORAGE_URI],
    },
    (_trainer.InitializerSource, "env"): {"maxItems": 128, **_map_list("name")},
    (_trainer.Trainer, "image"): {"maxLength": 500},
    (_trainer.Trainer, "command"): {"maxItems": 128, "items": {"maxLength": 1048576}},
    (_trainer.Trainer, "args"): {"maxItems": 128, "items": {"maxLength": 1048576}},
    (_trainer.Trainer, "env"): {"maxItems": 128, **_map_list("name")},
    (_trainer.Trainer, "num_nodes"): {"minimum": 0},
    (_trainer.Trainer, "num_proc_per_node"): {"x-kubernetes-validations": [_TRAINER_PROCS]},
    (_trainer.TargetJob, "name"): {"minLength": 1},
    (_trainer.ContainerOverride, "name"): {"minLength": 1, "maxLength": 253},
    (_trainer.ContainerOverride, "env"): {"maxItems": 128, **_map_list("name")},
    (_trainer.ContainerOverride, "volume_mounts"): {"maxItems": 128, **_map_list("name")},
    # Shared by v2.1's podTemplateOverrides (an atomic list) and master's runtimePatches, so
    # master's immutability rules are left out: a rule on oldSelf inside an atomic list makes
    # the whole CRD invalid. Bounds are safe in both places.
    (_trainer.PodSpecOverride, "service_account_name"): {"maxLength": 253},
    (_trainer.PodSpecOverride, "tolerations"): {"maxItems": 128},
    (_trainer.PodSpecOverride, "volumes"): {"maxItems": 128, **_map_list("name")},
    (_trainer.PodSpecOverride, "init_containers"): {"maxItems": 64, **_map_list("name")},
    (_trainer.PodSpecOverride, "containers"): {"maxItems": 64, **_map_list("name")},
    (_trainer.PodSpecOverride, "scheduling_gates"): {"maxItems": 16, **_map_list("name")},
    (_trainer.PodSpecOverride, "image_pull_secrets"): {"maxItems": 64},
    (_trainer.PodSpecOverride, "termination_grace_period_seconds"): {"minimum": 0},
    (_trainer.JobSetSpecPatch, "replicated_jobs"): {"maxItems": 100, **_map_list("name")},
    (_trainer.ReplicatedJobPatch, "name"): {"minLength": 1, "maxLength": 253},
    (_trainer.RuntimePatch, "manager"): {
        "minLength": 1,
        "maxLength": 253,
        "x-kubernetes-validations": [_IMMUTABLE],
    },
    # TrainJob status
    (_trainer.TrainJobStatus, "conditions"): {"maxItems": 8, **_map_list("type")},
    (_trainer.TrainJobStatus, "jobs_status"): {"maxItems": 100},
    (_trainer.Condition, "type"): {
        "maxLength": 316,
        "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    },
    (_trainer.Condition, "reason"): {
        "minLength": 1,
        "maxLength": 1024,
        "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
    },
    (_trainer.Condition, "message"): {"maxLength": 32768},
    (_trainer.Condition, "observed_generation"): {"minimum": 0},
    (_trainer.ReplicatedJobStatus, "name"): {"minLength": 1, "maxLength": 253},
    (_trainer.ReplicatedJobStatus, "ready"): {"minimum": 0},
    (_trainer.ReplicatedJobStatus, "succeeded"): {"minimum": 0},
    (_trainer.ReplicatedJobStatus, "failed"): {"minimum": 0},
    (_trainer.ReplicatedJobStatus, "active"): {"minimum": 0},
    (_trainer.ReplicatedJobStatus, "suspended"): {"minimum": 0},
    (_trainer.TrainerStatus, "progress_percentage"): {"minimum": 0, "maximum": 100},
    (_trainer.TrainerStatus, "estimated_remaining_seconds"): {"minimum": 0},
    (_trainer.TrainerStatus, "metrics"): {"maxItems": 256},
    (_trainer.Metric, "name"): {"minLength": 1, "maxLength": 64},
    (_trainer.Metric, "value"): {"minLength": 1, "maxLength": 64},
    # runtimes
    (_trainer.TorchPolicy, "num_proc_per_node"): {
        "default": "auto",
        "x-kubernetes-validations": [_TORCH_PROCS],
    },
    (_trainer.EnvInjection, "targets"): {"maxItems": 16, **_map_list("jobName")},
    (_trainer.EnvInjectionTarget, "job_name"): {"minLength": 1, "maxLength": 253},
    (_trainer.EnvInjectionTarget, "container_names"): {
        "minItems": 1,
        "maxItems": 8,
        "items": {"maxLength": 63},
        "x-kubernetes-list-type": "set",
        "x-kubernetes-validations": [_NO_NODE_CONTAINER],
    },
    (_trainer.MPIPolicy, "num_proc_per_node"): {
        "default": 1,
        "x-kubernetes-validations": [_MPI_PROCS],
    },
    (_trainer.MPIPolicy, "mpi_implementation"): {"default": "OpenMPI"},
    (_trainer.MPIPolicy, "ssh_auth_mount_path"): {"default": "/root/.ssh", "maxLength": 4096},
    (_trainer.MPIPolicy, "run_launcher_as_node"): {"default": False},
    (_trainer.FluxPolicy, "num_proc_per_node"): {
        "default": 1,
        "x-kubernetes-validations": [_FLUX_PROCS],
    },
    (_trainer.CoschedulingPolicy, "schedule_timeout_seconds"): {"default": 60},
    (_trainer.NetworkTopology, "mode"): {"default": "hard"},
    (_trainer.NetworkTopology, "highest_tier_allowed"): {"default": 1},
}

# Extra schema keywords for every node of a model's type (kubebuilder markers on the type).
_MODEL_EXTRAS: dict[type[BaseModel], Schema] = {
    _trainer.TrainJob: {"x-kubernetes-validations": [_NAME_RFC1035, _NAME_SIZE]},
    _trainer.TrainingRuntimeSpec: {"minProperties": 1},
    _trainer.JobSetTemplate: {"minProperties": 1},
    _trainer.MLPolicy: {"x-kubernetes-validations": [_ELASTIC_NUM_NODES, _ONE_POLICY]},
    # kubetrain: the jax and xgboost policies have no fields, and kube-apiserver 1.28 cannot
    # evaluate _ONE_POLICY's has() on an object schema with no properties ("invalid object
    # type, expected either Properties or AdditionalProperties"): it refused the built-in
    # jax-distributed and xgboost-distributed runtimes. Unpruned but held empty, they evaluate.
    _trainer.EmptyPolicy: {"x-kubernetes-preserve-unknown-fields": True, "maxProperties": 0},
    _trainer.TrainerStatus: {"x-kubernetes-validations": [_LAST_UPDATED]},
}

# Fields the CRD requires although the model lets them be absent, so that admission can name
# every missing field at once; upstream's CRDs reject the object before admission sees it.
_REQUIRED: dict[type[BaseModel], tuple[str, ...]] = {
    _v1.MXJobSpec: ("job_mode",),  # v1.8.1; each v1 spec's replica map is added per kind
    _trainer.TrainJobSpec: ("runtime_ref",),
    _trainer.RuntimeRef: ("name",),
    _trainer.PodTemplateOverride: ("target_jobs",),
    _trainer.TargetJob: ("name",),
    _trainer.ContainerOverride: ("name",),
    _trainer.ReplicatedJobPatch: ("name",),
    _trainer.RuntimePatch: ("manager",),
    _trainer.EnvInjectionTarget: ("job_name", "container_names"),
}

# Printer columns upstream declares; MPIJob's CRD lists Age before State.
_STATE_COLUMN = {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"}
_AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_AGE_FIRST = frozenset({_v1.MPIJob.KIND})
# kubetrain: what a training process reports (``kubetrain.report``) shows in ``kubectl get``;
# upstream's TrainJob CRD prints State and Age only.
_PROGRESS_COLUMNS = [
    {
        "name": "Progress %",
        "type": "integer",
        "jsonPath": ".status.trainerStatus.progressPercentage",
    },
    {
        "name": "ETA",
        "type": "integer",
        "description": "estimated seconds of training left",
        "jsonPath": ".status.trainerStatus.estimatedRemainingSeconds",
    },
]


# --- public ---------------------------------------------------------------------------------


def crds() -> list[dict[str, Any]]:
    """Every CRD: the seven ``kubeflow.org/v1`` kinds, then TrainJob and the two runtimes.

    The order is stable so that generated files and the kustomization list do not churn.
    Each call returns fresh dicts, which the caller may change.
    """
    return [_v1_crd(kind) for kind in _v1.V1_KINDS] + [
        _trainer_crd(kind) for kind in _trainer.TRAINER_KINDS
    ]


def crd_filename(crd: dict[str, Any]) -> str:
    """Upstream's file name for a CRD, e.g. ``kubeflow.org_pytorchjobs.yaml``."""
    spec = crd["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


# --- CRDs ---------------------------------------------------------------------------------


def _v1_crd(kind: type[_v1.JobKind]) -> dict[str, Any]:
    first, second = (
        (_AGE_COLUMN, _STATE_COLUMN) if kind.KIND in _AGE_FIRST else (_STATE_COLUMN, _AGE_COLUMN)
    )
    subresources: Schema = {"status": {}}
    if kind.SCALE_REPLICA is not None:
        rtype = kind.SCALE_REPLICA
        subresources["scale"] = {
            "specReplicasPath": f".spec.{kind.REPLICA_FIELD}.{rtype}.replicas",
            "statusReplicasPath": f".status.replicaStatuses.{rtype}.active",
            "labelSelectorPath": f".status.replicaStatuses.{rtype}.selector",
        }
    version = _version(
        _v1.VERSION,
        storage=True,
        schema=_root_schema(kind, required={"spec": (kind.REPLICA_FIELD,)}),
        columns=[first, second],
        subresources=subresources,
    )
    return crd(kind.KIND, kind.PLURAL, _v1.GROUP, namespaced=True, versions=[version])


def _trainer_crd(kind: type[_trainer.TrainerKind]) -> dict[str, Any]:
    is_job = issubclass(kind, _trainer.TrainJob)
    storage, *others = _trainer.VERSIONS
    first = _version(
        storage,
        storage=True,
        schema=_root_schema(kind),
        columns=[_STATE_COLUMN, *_PROGRESS_COLUMNS, _AGE_COLUMN] if is_job else [_AGE_COLUMN],
        subresources={"status": {}} if is_job else None,
    )
    versions = [first]
    for name in others:  # served with the same schema; the API server only rewrites apiVersion
        versions.append({**copy.deepcopy(first), "name": name, "storage": False})
    return crd(kind.KIND, kind.PLURAL, _trainer.GROUP, kind.NAMESPACED, versions)


def crd(
    kind: str,
    plural: str,
    group: str,
    namespaced: bool,
    versions: list[Schema],
    *,
    short_names: list[str] | None = None,
) -> dict[str, Any]:
    """A CustomResourceDefinition of ``versions``, named as Kubernetes derives a CRD's names
    from its kind and plural: every CRD kubetrain serves or ships is written through it."""
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = short_names
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": versions,
        },
    }


def _version(
    name: str,
    *,
    storage: bool,
    schema: Schema,
    columns: list[Schema],
    subresources: Schema | None,
) -> Schema:
    version: Schema = {
        "name": name,
        "served": True,
        "storage": storage,
        "additionalPrinterColumns": copy.deepcopy(columns),
        "schema": {"openAPIV3Schema": schema},
    }
    if subresources is not None:
        version["subresources"] = subresources
    return version


def _root_schema(
    kind: type[BaseModel], required: dict[str, tuple[str, ...]] | None = None
) -> Schema:
    """The object's schema: apiVersion and kind as plain strings, metadata left to the server.

    ``required`` adds wire names that a top-level field's object requires (a v1 job's
    replica-spec map), since those differ per kind while the spec models are not shared.
    """
    properties: Schema = {}
    for name, field in kind.model_fields.items():
        wire = _wire_name(name, field)
        if wire in ("apiVersion", "kind"):
            properties[wire] = {"type": "string"}
        elif wire == "metadata":
            properties[wire] = {"type": "object"}
        else:
            properties[wire] = _field_schema(kind, name, field)
            extra = (required or {}).get(wire)
            if extra:
                node = properties[wire]
                node["required"] = _ordered_required(node, [*node.get("required", []), *extra])
    schema: Schema = {"type": "object", "properties": properties}
    _merge(schema, _MODEL_EXTRAS.get(kind, {}))
    return schema


def _ordered_required(node: Schema, names: list[str]) -> list[str]:
    """Required names in property order, each once."""
    order = list(node.get("properties", {}))
    return sorted(set(names), key=lambda n: order.index(n) if n in order else len(order))


# --- models to schemas --------------------------------------------------------------------


def _wire_name(name: str, field: FieldInfo) -> str:
    return field.serialization_alias or field.alias or name


def _model_schema(model: type[BaseModel]) -> Schema:
    properties: Schema = {}
    required: list[str] = []
    must = set(_REQUIRED.get(model, ()))
    for name, field in model.model_fields.items():
        wire = _wire_name(name, field)
        properties[wire] = _field_schema(model, name, field)
        if field.is_required() or name in must:
            required.append(wire)
    schema: Schema = {"type": "object"}
    if properties:
        schema["properties"] = properties
    if required:
        schema["required"] = required
    if model.model_config.get("extra") == "allow":
        schema["x-kubernetes-preserve-unknown-fields"] = True
    _merge(schema, _MODEL_EXTRAS.get(model, {}))
    return schema


def _field_schema(model: type[BaseModel], name: str, field: FieldInfo) -> Schema:
    # Pydantic moves a field's own Annotated metadata (bounds, strictness) off the annotation.
    annotation: Any = field.annotation
    if field.metadata:
        annotation = Annotated[(annotation, *field.metadata)]  # type: ignore[valid-type]
    kube = _kubeobjects.FIELDS.get((model, name))
    schema = _type_schema(annotation, f"{model.__name__}.{name}", kube)
    _merge(schema, _FIELD_EXTRAS.get((model, name), {}))
    return schema


def _type_schema(tp: Any, where: str, kube: Schema | None = None) -> Schema:
    """The schema of one annotation; ``where`` names the field in errors. ``kube`` is the
    Kubernetes type of the object the annotation keeps as written (``KubeObject`` or ``Any``),
    if :mod:`_kubeobjects` names one."""
    tp, bounds = _unwrap(tp, where)
    origin = typing.get_origin(tp)
    if kube is not None and _kubeobjects.is_kube_object(tp):
        return _k8sschemas.structural(kube)
    if tp is Any:
        return {"x-kubernetes-preserve-unknown-fields": True}
    if origin in (Union, types.UnionType):
        return _union_schema(tp, where, kube)
    if origin is Literal:
        values = list(typing.get_args(tp))
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"{where}: only string Literals become enums, got {values!r}")
        return {"type": "string", "enum": values}
    if origin is list:
        (item,) = typing.get_args(tp)
        schema = {"type": "array", "items": _type_schema(item, f"{where}[]", kube)}
        return _with_sizes(schema, bounds, "Items")
    if origin is dict:
        key, value = typing.get_args(tp)
        if key is not str:
            raise TypeError(f"{where}: map keys must be strings, got {key!r}")
        if value is Any:  # a Kubernetes object kubetrain does not model
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        extra = _type_schema(value, f"{where}{{}}", kube)
        return {"type": "object", "additionalProperties": extra}
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _model_schema(tp)
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return _integer_schema(bounds)
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return _with_sizes({"type": "string"}, bounds, "Length")
    raise TypeError(f"{where}: no CRD schema for {tp!r}; teach kubetrain.api._crds this type")


def _union_schema(tp: Any, where: str, kube: Schema | None) -> Schema:
    members = [m for m in typing.get_args(tp) if m is not type(None)]
    if len(members) == 1:
        return _type_schema(members[0], where, kube)
    bases = {_unwrap(m, where)[0] for m in members}
    if bases == {int, str}:
        return {"x-kubernetes-int-or-string": True}
    raise TypeError(f"{where}: a union of {members!r} has no structural schema")


def _unwrap(tp: Any, where: str) -> tuple[Any, dict[str, int]]:
    """The type under any ``Annotated`` layers, and the bounds those layers set."""
    bounds: dict[str, int] = {}
    while typing.get_origin(tp) is Annotated:
        base, *metadata = typing.get_args(tp)
        for item in metadata:
            _collect_bounds(item, bounds, where)
        tp = base
    return tp, bounds


def _collect_bounds(item: Any, bounds: dict[str, int], where: str) -> None:
    if isinstance(item, FieldInfo):
        for inner in item.metadata:
            _collect_bounds(inner, bounds, where)
    elif isinstance(item, annotated_types.Ge):
        bounds["min"] = int(item.ge)  # type: ignore[call-overload]
    elif isinstance(item, annotated_types.Gt):
        bounds["min"] = int(item.gt) + 1  # type: ignore[call-overload]
    elif isinstance(item, annotated_types.Le):
        bounds["max"] = int(item.le)  # type: ignore[call-overload]
    elif isinstance(item, annotated_types.Lt):
        bounds["max"] = int(item.lt) - 1  # type: ignore[call-overload]
    elif isinstance(item, annotated_types.MinLen):
        bounds["min_len"] = item.min_length
    elif isinstance(item, annotated_types.MaxLen):
        bounds["max_len"] = item.max_length
    elif type(item).__name__ == "Strict":
        pass  # strictness is how pydantic parses; the schema's type already says it
    else:
        raise TypeError(f"{where}: no CRD schema for the constraint {item!r}")


def _integer_schema(bounds: dict[str, int]) -> Schema:
    """An integer with Kubernetes' format; min/max only where tighter than the format."""
    low, high = bounds.get("min"), bounds.get("max")
    if low is None and high is None:
        return {"type": "integer"}
    fits32 = (low is None or low >= _INT32[0]) and (high is None or high <= _INT32[1])
    fmt, (fmt_low, fmt_high) = ("int32", _INT32) if fits32 else ("int64", _INT64)
    schema: Schema = {"type": "integer", "format": fmt}
    if low is not None and low > fmt_low:
        schema["minimum"] = low
    if high is not None and high < fmt_high:
        schema["maximum"] = high
    return schema


def _with_sizes(schema: Schema, bounds: dict[str, int], noun: str) -> Schema:
    if "min_len" in bounds:
        schema[f"min{noun}"] = bounds["min_len"]
    if "max_len" in bounds:
        schema[f"max{noun}"] = bounds["max_len"]
    return schema


def _merge(schema: Schema, extra: Schema) -> None:
    """Add ``extra`` to ``schema``: nested nodes merge, rule lists append, the rest replace."""
    for key, value in extra.items():
        current = schema.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge(current, value)
        elif key == "x-kubernetes-validations" and isinstance(current, list):
            schema[key] = current + copy.deepcopy(value)
        else:
            schema[key] = copy.deepcopy(value)
