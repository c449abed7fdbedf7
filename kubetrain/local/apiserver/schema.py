"""Structural schemas of CustomResourceDefinitions, applied to custom resources the way
kube-apiserver (apiextensions-apiserver, Kubernetes 1.32) applies them.

A request body for a custom resource goes through, in this order::

    removed = prune(obj, schema)            # unknown fields; paths for fieldValidation
    apply_defaults(obj, schema)             # non-nullable nulls dropped, then ``default:``
    causes = schemavalidation.validate(obj, schema, old)  # StatusCause dicts for a 422

``prune`` and ``apply_defaults`` also run when an object is read back from storage, as
kube-apiserver does, so a default added to a CRD later shows up on old objects.

This module owns pruning (with the pruning of every kind's ``metadata``,
:func:`prune_metadata`) and defaulting, and the schema lookups they share with validation.
Validation, with kube's fidelity notes, is :mod:`schemavalidation`'s; the checks made on a CRD
itself are :mod:`crdvalidation`'s. The ``metadata`` of embedded resources is kept as sent. It
returns data: it does no I/O, keeps no state, and never raises for bad input.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]
Cause = dict[str, str]

_TYPE_META = ("apiVersion", "kind", "metadata")


# --- JSON values -------------------------------------------------------------------------


def items_schema(schema: Schema | None) -> Schema | None:
    items = schema.get("items") if schema else None
    return items if isinstance(items, dict) else None


def additional_properties(schema: Schema | None) -> tuple[bool, Schema | None]:
    """Whether ``additionalProperties`` is set, and its schema (None for ``true``)."""
    if not schema or "additionalProperties" not in schema:
        return False, None
    extra = schema["additionalProperties"]
    if isinstance(extra, dict):
        return True, extra
    return extra is not False, None


def field_schema(schema: Schema | None, key: str) -> Schema | None:
    """The schema a map key's value follows: its property, else additionalProperties."""
    if not schema:
        return None
    prop = schema.get("properties", {}).get(key)
    if prop is not None:
        return prop
    return additional_properties(schema)[1]


# --- pruning -----------------------------------------------------------------------------


def prune(obj: dict[str, Any], schema: Schema | None) -> list[str]:
    """Remove the fields ``schema`` does not specify, as kube-apiserver does on decoding.

    Returns the removed paths, sorted, in kube's notation (``spec.foo``,
    ``spec.items[0].bar``), which the server reports for ``fieldValidation=Strict``
    (400 ``strict decoding error: unknown field "spec.foo"``) or ``Warn`` (a warning header
    ``unknown field "spec.foo"``). ``apiVersion``, ``kind`` and ``metadata`` at the root are
    never pruned here (kube coerces root metadata separately; see :func:`prune_metadata`);
    nor are they inside an ``x-kubernetes-embedded-resource``. Under
    ``x-kubernetes-preserve-unknown-fields: true`` unknown fields stay, while known ones are
    still pruned inside. Follows ``apiextensions-apiserver/.../schema/pruning/algorithm.go``.
    """
    if schema is None:
        return []
    removed: list[str] = []
    _prune(obj, {**schema, "x-kubernetes-embedded-resource": True}, "", removed)
    removed.sort()
    return removed


def _prune(
    value: Any, schema: Schema | None, path: str, removed: list[str], keep_unknown: bool = False
) -> None:
    """Prune ``value`` in place. ``keep_unknown``: under ``x-kubernetes-preserve-unknown-fields``
    (and in its lists), down to the next field the schema knows, unknown fields stay."""
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields") is True:
        keep_unknown = True
    if schema is None and keep_unknown:
        return
    if isinstance(value, dict):
        if schema is None:
            for key in list(value):
                removed.append(_path_key(path, key))
                del value[key]
            return
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        props = schema.get("properties", {})
        has_extra, extra = additional_properties(schema)
        for key in list(value):
            if embedded and key in _TYPE_META:
                continue
            if key in props:
                _prune(value[key], props[key], _path_key(path, key), removed)
            elif has_extra:
                _prune(value[key], extra, _path_key(path, key), removed)
            elif not keep_unknown:
                if key not in _TYPE_META or path:
                    removed.append(_path_key(path, key))
                del value[key]
    elif isinstance(value, list):
        items = items_schema(schema)
        for i, item in enumerate(value):
            _prune(item, items, f"{path}[{i}]", removed, keep_unknown)


def _path_key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_OBJECT_META = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_OWNER_REFERENCE = frozenset(
    {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}
)


def prune_metadata(obj: dict[str, Any]) -> list[str]:
    """Remove unknown fields of the root ``metadata`` (ObjectMeta and its owner
    references), returning their paths (``metadata.foo``) as :func:`prune` does.

    kube-apiserver decodes metadata into its typed ObjectMeta, which drops what it does not
    know and reports it for fieldValidation; this applies to every kind, built-in or custom.
    """
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return []
    removed = []
    for key in list(metadata):
        if key not in _OBJECT_META:
            removed.append(f"metadata.{key}")
            del metadata[key]
    owners = metadata.get("ownerReferences")
    if isinstance(owners, list):
        for i, owner in enumerate(owners):
            if isinstance(owner, dict):
                for key in list(owner):
                    if key not in _OWNER_REFERENCE:
                        removed.append(f"metadata.ownerReferences[{i}].{key}")
                        del owner[key]
    removed.sort()
    return removed


# --- defaulting --------------------------------------------------------------------------


def apply_defaults(obj: dict[str, Any], schema: Schema | None) -> None:
    """Apply ``default:`` values in place, as kube-apiserver does after pruning.

    First, nulls in object fields whose schema is neither nullable nor defaulted are
    dropped (``PruneNonNullableNullsWithoutDefaults``). Then every property with a default
    that is absent, or null while not nullable, gets a deep copy of the default, wherever
    its parent object exists: in nested objects, in array items and in additionalProperties
    values; a null array item or map value takes the items/values default. A default is
    itself defaulted further down. Follows ``.../schema/defaulting/algorithm.go``.
    """
    if schema is None:
        return
    _drop_nulls(obj, schema)
    _default(obj, schema)


def _non_nullable(schema: Schema | None) -> bool:
    return schema is not None and not schema.get("nullable", False)


def _drop_nulls(value: Any, schema: Schema | None) -> None:
    if isinstance(value, dict):
        for key in list(value):
            child = field_schema(schema, key)
            if value[key] is None and _non_nullable(child) and (child or {}).get("default") is None:
                del value[key]
            else:
                _drop_nulls(value[key], child)
    elif isinstance(value, list):
        items = items_schema(schema)
        for item in value:
            _drop_nulls(item, items)


def _default(value: Any, schema: Schema | None) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key, prop in props.items():
            if prop.get("default") is None:
                continue
            if key not in value or (value[key] is None and _non_nullable(prop)):
                value[key] = copy.deepcopy(prop["default"])
        _, extra = additional_properties(schema)
        for key in list(value):
            if key in props:
                _default(value[key], props[key])
            elif extra is not None:
                if value[key] is None and _non_nullable(extra):
                    value[key] = copy.deepcopy(extra.get("default"))
                _default(value[key], extra)
    elif isinstance(value, list):
        items = items_schema(schema)
        for i in range(len(value)):
            if value[i] is None and items is not None and _non_nullable(items):
                value[i] = copy.deepcopy(items.get("default"))
            _default(value[i], items)
