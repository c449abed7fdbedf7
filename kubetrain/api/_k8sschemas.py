"""Structural schemas of Kubernetes types (a pod template, env vars, resources, volumes, a
Job template, a JobSet spec), made from Kubernetes' own OpenAPI definitions (:mod:`_k8sopenapi`,
pinned to one Kubernetes version, and JobSet's, :mod:`_jobset`) the way controller-gen makes
upstream's CRD schemas from the Go types:

* every ``$ref`` (also inside ``allOf``) is inlined; the field's own description wins over its
  type's, as in Go;
* ``IntOrString`` is ``x-kubernetes-int-or-string: true``; a ``Quantity`` is that plus the
  pattern of a quantity, so ``cpu: lots`` is refused where ``2``, ``"500m"`` and ``"16Gi"`` pass;
* ``metadata`` inside a template is the part of ObjectMeta a CRD may carry, as controller-gen's
  ``generateEmbeddedObjectMeta`` writes it: name, namespace, labels, annotations, finalizers;
* ``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys`` and ``x-kubernetes-map-type`` stay
  as Kubernetes declares them, and so do ``required`` and the formats a CRD takes (``int32``,
  ``int64``, ``date-time``);
* what a CRD schema cannot hold is dropped: ``x-kubernetes-patch-strategy`` and
  ``-patch-merge-key`` (strategic merge patch keys, which ``apiextensions.k8s.io/v1``'s
  JSONSchemaProps has no field for: kube-apiserver refuses them as unknown fields),
  ``x-kubernetes-unions``, ``x-kubernetes-group-version-kind``, and ``enum`` (controller-gen
  does not carry the ``+enum`` of core types either: a newer cluster's new value stays
  possible);
* a ``default`` that is only Go's zero value (``""``, ``0``, ``{}``) is dropped, as
  controller-gen never writes one; a real one (a port's ``protocol: TCP``) stays;
* descriptions are cut to :data:`DESCRIPTION_LIMIT` characters at the last full stop, as
  controller-gen's ``maxDescLen`` cuts them (Trainer's limit), so that each CRD stays well
  under the size Kubernetes stores.

A key this module does not know is an error, so that a new Kubernetes version cannot slip a
keyword into the CRDs unseen. Pure: the definitions are parsed once, on first use, and every
call returns a fresh copy.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from typing import Any

from kubetrain.api import _jobset, _k8sopenapi

Schema = dict[str, Any]

KUBERNETES = _k8sopenapi.KUBERNETES
DESCRIPTION_LIMIT = 128  # Trainer's controller-gen maxDescLen
REF_PREFIX = "#/components/schemas/"

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# k8s.io/apimachinery's quantity grammar, as controller-gen writes it for a Quantity
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
EMBEDDED_META_FIELDS = ("annotations", "finalizers", "labels", "name", "namespace")

# Keywords copied as they are; those a CRD cannot hold are dropped; any other is an error.
_KEPT = frozenset(
    {
        "type",
        "format",
        "required",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-validations",
    }
)
_DROPPED = frozenset(
    {
        "enum",
        "x-kubernetes-patch-strategy",
        "x-kubernetes-patch-merge-key",
        "x-kubernetes-unions",
        "x-kubernetes-group-version-kind",
    }
)
_FORMATS = frozenset({"int32", "int64", "date-time"})
_ZERO_DEFAULTS: tuple[Any, ...] = ("", 0, {}, [], False)


@functools.cache
def definitions() -> Mapping[str, Any]:
    """Every definition by name: Kubernetes' (parsed once) and JobSet's."""
    return {**json.loads(_k8sopenapi.DEFINITIONS), **_jobset.DEFINITIONS}


def ref(name: str) -> Schema:
    """An OpenAPI node referring to the definition ``name``, for :func:`structural`."""
    return {"$ref": REF_PREFIX + name}


def structural(node: Mapping[str, Any], *, limit: int = DESCRIPTION_LIMIT) -> Schema:
    """The structural schema of an OpenAPI ``node`` whose ``$ref`` s name definitions here
    (``{"$ref": ...}`` for a type, or a node holding refs: a list of env vars, a map of
    quantities). A fresh copy each call."""
    return copy.deepcopy(_structural(_freeze(node), limit))


@functools.cache
def _structural(node: str, limit: int) -> Schema:
    """Cached by the node's JSON text: the same types are embedded many times over."""
    return _convert(json.loads(node), limit, ())


def _freeze(node: Mapping[str, Any]) -> str:
    return json.dumps(node, sort_keys=True)


def _target(node: Mapping[str, Any]) -> str | None:
    """The definition a node refers to, directly or as the one member of ``allOf``."""
    reference = node.get("$ref")
    all_of = node.get("allOf")
    if reference is None and isinstance(all_of, list) and len(all_of) == 1:
        reference = all_of[0].get("$ref")
    if reference is None:
        return None
    if not reference.startswith(REF_PREFIX):
        raise ValueError(f"{reference}: only local references are understood")
    return reference[len(REF_PREFIX) :]


def _convert(node: Mapping[str, Any], limit: int, seen: tuple[str, ...]) -> Schema:
    target = _target(node)
    if target is not None:
        if target in seen:
            raise ValueError(f"{' -> '.join((*seen, target))}: a type that holds itself")
        schema = _definition(target, limit, (*seen, target))
        siblings = {k: v for k, v in node.items() if k not in ("$ref", "allOf")}
        own = _convert(siblings, limit, seen) if siblings else {}
        return _ordered({**schema, **own})  # the field's description over its type's
    schema: Schema = {}
    for key, value in node.items():
        if key == "description":
            text = _description(value, limit)
            if text:
                schema[key] = text
        elif key == "default":
            if not any(value == zero and type(value) is type(zero) for zero in _ZERO_DEFAULTS):
                schema[key] = copy.deepcopy(value)
        elif key == "format":
            if value in _FORMATS:
                schema[key] = value
        elif key == "properties":
            schema[key] = {name: _convert(child, limit, seen) for name, child in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            schema[key] = _convert(value, limit, seen)
        elif key in _KEPT:
            schema[key] = copy.deepcopy(value)
        elif key not in _DROPPED:
            raise ValueError(f"{key}: a keyword kubetrain.api._k8sschemas does not know")
    return _ordered(schema)


def _definition(name: str, limit: int, seen: tuple[str, ...]) -> Schema:
    if name == INT_OR_STRING:
        return {"x-kubernetes-int-or-string": True}
    if name == QUANTITY:
        return {"pattern": QUANTITY_PATTERN, "x-kubernetes-int-or-string": True}
    found = definitions().get(name)
    if found is None:
        raise KeyError(f"{name}: no such definition in Kubernetes {KUBERNETES} or JobSet")
    if name == OBJECT_META:
        return _embedded_meta(found, limit, seen)
    schema = _convert(found, limit, seen)
    schema.setdefault("type", "object")
    return schema


def _embedded_meta(meta: Mapping[str, Any], limit: int, seen: tuple[str, ...]) -> Schema:
    """The metadata a CRD may keep inside an object (controller-gen's embedded ObjectMeta):
    bare types, no descriptions."""
    fields = meta["properties"]
    properties = {name: _convert(fields[name], 0, seen) for name in EMBEDDED_META_FIELDS}
    return {"type": "object", "properties": properties}


def _description(text: str, limit: int) -> str:
    """controller-gen's ``maxDescLen``: at most ``limit`` characters, cut back to the last full
    stop in them (one that ends a sentence, not the dot of a URL, unlike controller-gen); none
    at all for a limit of 0."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    stops = [i for i in range(limit) if text[i] == "." and text[i + 1].isspace()]
    return text[: stops[-1] + 1] if stops else text[:limit]


_ORDER = ("description", "type", "format")


def _ordered(schema: Schema) -> Schema:
    """Description, type and format first, the rest sorted: a stable, readable YAML."""
    head = {k: schema[k] for k in _ORDER if k in schema}
    return {**head, **{k: schema[k] for k in sorted(schema) if k not in head}}
