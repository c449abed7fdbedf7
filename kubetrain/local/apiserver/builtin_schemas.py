"""Structural schemas of the built-in kinds, so their unknown fields are found and dropped the
way kube-apiserver's typed decoder drops them (and reported for ``fieldValidation``).

The schemas are derived from the models of the official Kubernetes Python client
(``kubernetes.client.models``: ``openapi_types`` names each field's type, ``attribute_map``
its JSON name), which are generated from kube's own OpenAPI. They describe shape only: the
types say where objects, lists and maps are, and fields typed ``object`` there (int-or-string,
raw extensions) keep whatever they hold. A type that refers back to itself is cut off there
with a schema that keeps unknown fields. CustomResourceDefinitions are left out: their
schemas are themselves schemas, and :mod:`schema` checks them.

Pure apart from importing the client's model classes; results are cached per kind.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from kubernetes.client import models

Schema = dict[str, Any]

_PRIMITIVES: dict[str, Schema] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "bytes": {"type": "string"},
    "datetime": {"type": "string"},
    "date": {"type": "string"},
    "object": {"x-kubernetes-preserve-unknown-fields": True},
}
_OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_LIST = re.compile(r"^List\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$")
_SKIPPED = {("apiextensions.k8s.io", "CustomResourceDefinition")}
_MODEL_NAMES = {
    ("", "v1", "Event"): "CoreV1Event",
    ("events.k8s.io", "v1", "Event"): "EventsV1Event",
}


def model_name(group: str, version: str, kind: str) -> str:
    """The client's class name for a kind: ``V1Pod``, ``V2HorizontalPodAutoscaler``."""
    return _MODEL_NAMES.get((group, version, kind)) or version[:1].upper() + version[1:] + kind


@functools.cache
def schema_for(group: str, version: str, kind: str) -> Schema | None:
    """The structural schema of a built-in kind, or None when there is none to use."""
    if (group, kind) in _SKIPPED:
        return None
    model = getattr(models, model_name(group, version, kind), None)
    if model is None or not hasattr(model, "openapi_types"):
        return None
    return _model(model.__name__, frozenset())


def _type(name: str, building: frozenset[str]) -> Schema:
    name = name.strip()
    if name in _PRIMITIVES:
        return dict(_PRIMITIVES[name])
    match = _LIST.match(name)
    if match:
        return {"type": "array", "items": _type(match.group(1), building)}
    match = _DICT.match(name)
    if match:
        return {"type": "object", "additionalProperties": _type(match.group(1), building)}
    return _model(name, building)


def _model(name: str, building: frozenset[str]) -> Schema:
    if name in building:
        return dict(_OPEN)
    model = getattr(models, name, None)
    types = getattr(model, "openapi_types", None)
    names = getattr(model, "attribute_map", None)
    if not isinstance(types, dict) or not isinstance(names, dict):
        return dict(_OPEN)
    inner = building | {name}
    properties = {
        names.get(attribute, attribute): _type(type_name, inner)
        for attribute, type_name in types.items()
    }
    return {"type": "object", "properties": properties}
