"""From a plain dict (decoded YAML or JSON) to a typed object, or field errors saying why not.

Pydantic's errors are translated into Kubernetes-style :class:`FieldError` s with wire
(camelCase) paths, e.g. ``spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: "2":
must be an integer``, and an unknown field names the fields that are accepted there.

The Kubernetes objects a kind keeps as written (pod templates, env vars, resources, volumes)
are not modelled; :func:`unknown_template_fields` finds the unknown field names inside them,
where each kind holds them. It is apart from :func:`parse`, so a stored object written before
a field was known can still be read (a runtime looked up by a TrainJob); admission calls both.
"""

from __future__ import annotations

import difflib
import functools
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Union

from pydantic import BaseModel, ValidationError

from kubetrain.api import _fielderrors as fe
from kubetrain.api import _k8sschemas, _kubeobjects, _podtemplate, _trainer, _v1
from kubetrain.api._fielderrors import ErrorType, FieldError, Path
from kubetrain.api._model import Model

Resource = _v1.JobKind | _trainer.TrainerKind

# (group, kind) → model; every version of a group maps to the same model.
KINDS: dict[tuple[str, str], type[Model]] = {
    **{(_v1.GROUP, k.KIND): k for k in _v1.V1_KINDS},
    **{(_trainer.GROUP, k.KIND): k for k in _trainer.TRAINER_KINDS},
}
VERSIONS: dict[str, tuple[str, ...]] = {
    _v1.GROUP: (_v1.VERSION,),
    _trainer.GROUP: _trainer.VERSIONS,
}


def subject(raw: Any) -> str:
    """``<Kind>/<name>`` for messages, with placeholders for what is missing."""
    if not isinstance(raw, Mapping):
        return "<object>"
    kind = raw.get("kind") if isinstance(raw.get("kind"), str) and raw.get("kind") else "<no kind>"
    meta = raw.get("metadata")
    name = None
    if isinstance(meta, Mapping):
        name = meta.get("name") or meta.get("generateName")
    return f"{kind}/{name if isinstance(name, str) and name else '<no name>'}"


def model_for(raw: Any) -> tuple[type[Model] | None, list[FieldError]]:
    """Which model an object's apiVersion and kind select, or why none does."""
    if not isinstance(raw, Mapping):
        detail = f"must be an object with apiVersion and kind (got {_kind_of_value(raw)})"
        return None, [FieldError(ErrorType.INVALID, "", detail)]
    api_version, kind = raw.get("apiVersion"), raw.get("kind")
    errors = []
    if not isinstance(api_version, str) or not api_version:
        errors.append(
            fe.required("apiVersion", "e.g. kubeflow.org/v1 or trainer.kubeflow.org/v1alpha1")
        )
    if not isinstance(kind, str) or not kind:
        errors.append(fe.required("kind", "e.g. PyTorchJob or TrainJob"))
    if errors:
        return None, errors
    group, _, version = api_version.rpartition("/")
    model = KINDS.get((group, kind))
    if model is None:
        return None, [_unknown_kind(api_version, kind)]
    if version not in VERSIONS[group]:
        return None, [
            fe.not_supported("apiVersion", api_version, [f"{group}/{v}" for v in VERSIONS[group]])
        ]
    return model, []


def _unknown_kind(api_version: str, kind: str) -> FieldError:
    known = [k for (_, k) in KINDS]
    close = difflib.get_close_matches(kind, known, n=1, cutoff=0.6)
    by_lower = {k.lower(): k for k in known}
    hint = close[0] if close else by_lower.get(kind.lower())
    detail = f'no kind "{kind}" is known in {api_version}; kubetrain knows ' + ", ".join(known)
    if hint:
        detail = f'no kind "{kind}" is known in {api_version}; did you mean "{hint}"?'
    return FieldError(ErrorType.NOT_SUPPORTED, "kind", detail)


def _kind_of_value(value: Any) -> str:
    return type(value).__name__ if value is not None else "null"


def parse(raw: Any) -> tuple[Resource | None, list[FieldError]]:
    """The typed object, or every shape error (types, enums, unknown fields) with its path."""
    model, errors = model_for(raw)
    if model is None:
        return None, errors
    try:
        return model.model_validate(dict(raw)), []  # type: ignore[return-value]
    except ValidationError as exc:
        return None, translate(exc, model)


def unknown_template_fields(raw: Any) -> list[FieldError]:
    """Unknown field names inside the Kubernetes objects ``raw`` keeps as written (its pod
    templates, and for TrainJobs the env, resources and override parts), each with its full
    path and the nearest known name: every place :mod:`_kubeobjects` names, checked against
    the schema the kind's CRD carries there, so kube-apiserver's strict decoding refuses the
    same fields. Nothing for an object no kind selects."""
    model, _ = model_for(raw)
    if model is None:
        return []
    errors: list[FieldError] = []
    for steps, schema in _schemas_of(model):
        for value, path in _values_at(raw, steps, Path()):
            errors += _podtemplate.unknown_fields(value, schema, path)
    return errors


@functools.cache  # ten kinds; the schemas are read, never changed
def _schemas_of(model: type[Model]) -> tuple[tuple[_kubeobjects.Steps, Mapping[str, Any]], ...]:
    return tuple(
        (steps, _k8sschemas.structural(node)) for steps, node in _kubeobjects.places(model)
    )


def _values_at(value: Any, steps: tuple[str, ...], path: Path) -> Iterator[tuple[Any, Path]]:
    """The values at ``steps`` below ``value`` (``[]``: each list item, ``{}``: each map
    value), with their paths; parts of another shape lead nowhere."""
    if not steps:
        yield value, path
        return
    step, rest = steps[0], steps[1:]
    if step == "[]":
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _values_at(item, rest, path.index(i))
    elif step == "{}":
        if isinstance(value, Mapping):
            for key, item in value.items():
                yield from _values_at(item, rest, path.key(str(key)))
    elif isinstance(value, Mapping) and step in value:
        yield from _values_at(value[step], rest, path.child(step))


def translate(exc: ValidationError, model: type[BaseModel]) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    union_paths: dict[str, list[dict[str, Any]]] = {}
    for err in exc.errors(include_url=False):
        path, tagged = wire_path(model, err["loc"])
        if err["type"] == "extra_forbidden":
            err = {**err, "_accepted": accepted_fields(model, err["loc"][:-1])}
        if tagged:  # one member of an int-or-string union failed; report the union once
            union_paths.setdefault(path, []).append(err)
            continue
        error = _to_field_error(path, err)
        key = (error.path, str(error))
        if key not in seen:
            seen.add(key)
            errors.append(error)
    for path, errs in union_paths.items():
        value = errs[0].get("input")
        errors.append(fe.invalid(path, value, "must be an integer or a string"))
    return errors


def _to_field_error(path: str, err: Mapping[str, Any]) -> FieldError:
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind == "missing":
        return fe.required(path)
    if kind == "extra_forbidden":
        return _unknown_field(path, err)
    if kind == "literal_error":
        expected = [
            v.strip().strip("'")
            for v in str(ctx.get("expected", "")).replace(" or ", ",").split(",")
        ]
        return fe.not_supported(path, value, [v for v in expected if v or v == ""])
    simple = {
        "int_type": "must be an integer",
        "int_parsing": "must be an integer",
        "string_type": "must be a string",
        "bool_type": "must be a boolean (true or false)",
        "dict_type": "must be an object",
        "model_type": "must be an object",
        "model_attributes_type": "must be an object",
        "list_type": "must be a list",
        "float_type": "must be a number",
    }
    if kind == "string_type" and isinstance(value, int | float) and not isinstance(value, bool):
        return fe.invalid(path, value, f'must be a string (quote it: "{value}")')
    if kind in simple:
        return fe.invalid(path, value, simple[kind])
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {
            "greater_than_equal": "greater than or equal to",
            "greater_than": "greater than",
            "less_than_equal": "less than or equal to",
            "less_than": "less than",
        }[kind]
        bound = next(iter(ctx.values()), "")
        return fe.invalid(path, value, f"must be {words} {bound}")
    return fe.invalid(path, value, str(err.get("msg", "is not valid")))


def _unknown_field(path: str, err: Mapping[str, Any]) -> FieldError:
    return _podtemplate.unknown_field(path, err.get("_accepted") or [])


def wire_path(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[str, bool]:
    """Turn a pydantic location into a Kubernetes field path; say if it ran into a union tag."""
    path = Path()
    current: Any = model
    for part in loc:
        current = _strip(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = _field_by_alias(current, str(part))
            path = path.child(str(part))
            current = field.annotation if field is not None else Any
        elif typing.get_origin(current) is dict:
            path = path.key(str(part))
            current = typing.get_args(current)[1] if typing.get_args(current) else Any
        elif typing.get_origin(current) is list:
            path = path.index(int(part)) if isinstance(part, int) else path.child(str(part))
            current = typing.get_args(current)[0] if typing.get_args(current) else Any
        elif _is_union(current):
            return str(path), True
        elif isinstance(part, int):
            path = path.index(part)
        else:
            path = path.key(str(part))
    return str(path), False


def _strip(annotation: Any) -> Any:
    """Drop Annotated and Optional wrappers so the real container type shows."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (Union, types.UnionType)


def _field_by_alias(model: type[BaseModel], alias: str) -> Any:
    for name, field in model.model_fields.items():
        if alias in (field.alias, name):
            return field
    return None


def accepted_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The wire names accepted at ``loc`` (the parent of an unknown field)."""
    current: Any = model
    for part in loc:
        current = _strip(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = _field_by_alias(current, str(part))
            current = field.annotation if field is not None else None
        elif typing.get_origin(current) in (dict, list):
            args = typing.get_args(current)
            current = args[-1] if args else None
        else:
            return []
    current = _strip(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return []
