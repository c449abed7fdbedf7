"""Where kubetrain's kinds hold Kubernetes objects they do not model (pod templates, env vars,
resources, volumes, affinity, metrics, a JobSet spec), and which Kubernetes type each one is.

One table, :data:`FIELDS`, keyed by model and field, is read twice: by the CRD generator
(:mod:`_crds`), which puts the type's structural schema (:mod:`_k8sschemas`) there, and by
admission (:func:`_parse.unknown_template_fields`), which looks for unknown field names in the
object against that same schema (:func:`places`). So what a cluster's API server prunes or
refuses with the CRD, and what kubetrain reports itself, cannot disagree.

A model keeps such an object as ``KubeObject`` (``dict[str, Any]``) or ``Any``; the field's
annotation says whether it is one object, a list or a map of them, and the table names the
type of that innermost object, as an OpenAPI node (``ref(<definition>)``, or a node built of
refs: a ResourceList is a map of quantities). Pure.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Union

from pydantic import BaseModel

from kubetrain.api import _trainer, _v1
from kubetrain.api._k8sschemas import QUANTITY, Schema, ref

_CORE = "io.k8s.api.core.v1."
POD_TEMPLATE = _CORE + "PodTemplateSpec"
ENV_VAR = _CORE + "EnvVar"
RESOURCES = _CORE + "ResourceRequirements"
METRIC = "io.k8s.api.autoscaling.v2.MetricSpec"
LABEL_SELECTOR = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
JOBSET_SPEC = "io.x-k8s.jobset.v1alpha2.JobSetSpec"
RESOURCE_LIST: Schema = {"type": "object", "additionalProperties": ref(QUANTITY)}

FIELDS: dict[tuple[type[BaseModel], str], Schema] = {
    # kubeflow.org/v1
    (_v1.ReplicaSpec, "template"): ref(POD_TEMPLATE),
    (_v1.SchedulingPolicy, "min_resources"): RESOURCE_LIST,
    (_v1.ElasticPolicy, "metrics"): ref(METRIC),
    (_v1.PaddleElasticPolicy, "metrics"): ref(METRIC),
    (_v1.ReplicaStatus, "label_selector"): ref(LABEL_SELECTOR),
    # trainer.kubeflow.org: TrainJob
    (_trainer.InitializerSource, "env"): ref(ENV_VAR),
    (_trainer.Trainer, "env"): ref(ENV_VAR),
    (_trainer.Trainer, "resources_per_node"): ref(RESOURCES),
    (_trainer.ContainerOverride, "env"): ref(ENV_VAR),
    (_trainer.ContainerOverride, "volume_mounts"): ref(_CORE + "VolumeMount"),
    (_trainer.ContainerOverride, "security_context"): ref(_CORE + "SecurityContext"),
    (_trainer.PodSpecOverride, "affinity"): ref(_CORE + "Affinity"),
    (_trainer.PodSpecOverride, "tolerations"): ref(_CORE + "Toleration"),
    (_trainer.PodSpecOverride, "volumes"): ref(_CORE + "Volume"),
    (_trainer.PodSpecOverride, "scheduling_gates"): ref(_CORE + "PodSchedulingGate"),
    (_trainer.PodSpecOverride, "image_pull_secrets"): ref(_CORE + "LocalObjectReference"),
    (_trainer.PodSpecOverride, "security_context"): ref(_CORE + "PodSecurityContext"),
    # runtimes
    (_trainer.TorchElasticPolicy, "metrics"): ref(METRIC),
    (_trainer.JobSetTemplate, "spec"): ref(JOBSET_SPEC),
}

# A step of a path to a Kubernetes object: a wire name, "[]" (each item of a list) or "{}"
# (each value of a map).
Steps = tuple[str, ...]


def wire_name(model: type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    return field.serialization_alias or field.alias or name


def is_kube_object(tp: Any) -> bool:
    """A type kubetrain keeps as written: ``Any`` or ``dict[str, Any]`` (``KubeObject``)."""
    return tp is Any or (typing.get_origin(tp) is dict and typing.get_args(tp)[1] is Any)


def places(model: type[BaseModel]) -> list[tuple[Steps, Schema]]:
    """Every place below ``model`` where a Kubernetes object of :data:`FIELDS` sits: its steps
    from ``model`` and the OpenAPI node of its type, in field order."""
    return list(_places(model, (), frozenset()))


def _places(
    model: type[BaseModel], steps: Steps, visiting: frozenset[type[BaseModel]]
) -> Iterator[tuple[Steps, Schema]]:
    if model in visiting:
        return
    for name, field in model.model_fields.items():
        here = (*steps, wire_name(model, name))
        node = FIELDS.get((model, name))
        yield from _annotation(field.annotation, here, node, visiting | {model})


def _annotation(
    tp: Any, steps: Steps, node: Schema | None, visiting: frozenset[type[BaseModel]]
) -> Iterator[tuple[Steps, Schema]]:
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    origin = typing.get_origin(tp)
    if is_kube_object(tp):
        if node is not None:
            yield steps, node
    elif origin in (Union, types.UnionType):
        for member in typing.get_args(tp):
            if member is not type(None):
                yield from _annotation(member, steps, node, visiting)
    elif origin is list:
        yield from _annotation(typing.get_args(tp)[0], (*steps, "[]"), node, visiting)
    elif origin is dict:
        yield from _annotation(typing.get_args(tp)[1], (*steps, "{}"), node, visiting)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        yield from _places(tp, steps, visiting)
