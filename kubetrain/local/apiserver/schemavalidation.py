"""Validation of an object against a structural schema, as kube-apiserver validates custom
resources (apiextensions-apiserver's ``validation``, over ``kube-openapi``'s validator), and
the shape checks of built-in objects (:func:`shape_causes`).

At about 800 lines it is one concept, kept whole: a value checked against its schema, the
built-in shape checks being a shorter walk that shares its type errors and schema steps.

``validate(obj, schema, old)`` returns the StatusCause dicts of a 422 in kube's words, every
one at once; on update, errors in parts unchanged from ``old`` are dropped (ratcheting), and
the ``self == oldSelf`` transition rule is checked. Pure: no I/O, no state; bad input is
reported, never raised.

Fidelity notes, each from the upstream source named:

* Messages and reasons are kube's (``kube-openapi/pkg/validation`` errors turned into
  ``field.Error`` by ``apiextensions-apiserver/pkg/apiserver/validation``): a wrong type reads
  ``Invalid value: "string": spec.replicas in body must be of type integer: "string"``
  (the value shown is the JSON type that was sent, not the value). Bad values print as Go
  prints them (:func:`kubetrain.gofmt.go_value`).
* ``format: int32``/``int64`` bounds are *not* checked: kube strips formats it does not
  validate (``StripUnsupportedFormatsPostProcess``), and ``int32`` is one of them, so a
  custom resource may hold ``2**40`` in an ``int32`` field on a real cluster too. String
  formats kube does check (``date-time``, ``uuid``, ``ipv4``, ``cidr``, ...) are checked.
* Updates ratchet (``CRDValidationRatcheting``, on by default since 1.30): an error in a part
  of the object that is unchanged from ``old`` is dropped.
* ``x-kubernetes-validations`` (CEL) rules are not evaluated, except the transition rule
  ``self == oldSelf`` (immutability), which is checked on update where kube would correlate
  the old value. kubetrain's admission (``kubetrain.api.review``) enforces the same rules for
  kubetrain's kinds with the same messages. As kube does, when an object has a type,
  required, enum, too-long or too-many error and the schema has rules, one more cause says
  that rules were not checked.
* ``anyOf``/``allOf``/``oneOf``/``not`` are not evaluated (kubetrain's CRDs use none).
"""

from __future__ import annotations

import base64
import ipaddress
import math
import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from kubetrain import gofmt
from kubetrain.local.apiserver import fielderrors
from kubetrain.local.apiserver import schema as structural

Schema = dict[str, Any]
Cause = dict[str, str]

_INT64 = (-(2**63), 2**63 - 1)
_IMMUTABLE_RULE = re.compile(r"^\s*self\s*==\s*oldSelf\s*$")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if _INT64[0] <= value <= _INT64[1] else "number"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_json_integer(value: float) -> bool:
    """``swag.IsFloat64AJSONInteger``: integral and within ±2**53."""
    return math.isfinite(value) and abs(value) <= 2**53 and value == math.floor(value)


def _same(a: Any, b: Any) -> bool:
    """Go's ``reflect.DeepEqual`` on decoded JSON: ``1`` and ``1.0`` and ``true`` differ."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, float) and isinstance(b, float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    return bool(a == b)


def shape_causes(obj: dict[str, Any], schema: Schema | None) -> list[Cause]:
    """Where a built-in object has a scalar or an array where its kind has an object, or any
    other mix of objects, arrays and scalars: what kube-apiserver's typed decoder refuses.

    Only that much of the types is checked, because it is what the built-in schemas
    (:mod:`builtin_schemas`) tell reliably: their scalars are typed as the Python client
    types them (a Quantity is a string there, though kube also takes a number for it). And
    it is what every reader of a stored object relies on, walking its objects and lists;
    a Pod whose ``status`` is a list would break each of them. ``metadata`` is checked by
    the registry and :func:`strategies.validate_metadata`, in kube's words.
    """
    errors: list[_Error] = []
    for key, value in obj.items():
        if key != "metadata":
            _shape(value, structural.field_schema(schema, key), key, errors)
    return [_to_cause(e, "") for e in errors]


def _shape(value: Any, schema: Schema | None, name: str, errors: list[_Error]) -> None:
    kind = schema.get("type") if schema else None
    if value is None or not isinstance(kind, str):
        return
    actual = _json_type(value)
    if kind in ("object", "array"):
        if actual != kind:
            errors.append(_type_error(name, kind, actual))
        elif isinstance(value, dict):
            for key, item in value.items():
                _shape(
                    item,
                    structural.field_schema(schema, key),
                    fielderrors.field_child(name, str(key)),
                    errors,
                )
        else:
            items = structural.items_schema(schema)
            for i, item in enumerate(value):
                _shape(item, items, f"{name}[{i}]", errors)
    elif actual in ("object", "array"):
        errors.append(_type_error(name, kind, actual))


# Formats kube validates (``apiextensions-apiserver/pkg/apiserver/validation/formats.go``),
# named without dashes; any other format is ignored.
_UUID = {
    "uuid": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    "uuid3": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
    "uuid4": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    "uuid5": r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
}
# strfmt's IsDateTime: a full date, "t", then a time with a zone (lower-cased first).
_DATE_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})t(\d{2}):(\d{2}):(\d{2})(.\d+)?(z|[+-]\d{2}:\d{2})$")
_HOSTNAME = re.compile(
    r"^(?=.{1,255}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)
_DURATION = re.compile(
    r"^(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$"
    r"|^\d+\s*(?:ns|us|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?"
    r"|minutes?|hours?|days?|weeks?)$"
)
_MAC = re.compile(
    r"^(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^(?:[0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$"
    r"|^(?:[0-9A-Fa-f]{2}[:-]){19}[0-9A-Fa-f]{2}$|^(?:[0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$"
)


def _valid_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _valid_date_time(text: str) -> bool:
    match = _DATE_TIME.match(text.lower())
    if not match or not _valid_date(match.group(1)):
        return False
    return match.group(2) <= "23" and match.group(3) <= "59" and match.group(4) <= "59"


def _valid_ip(text: str, version: int) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return ("." in text) if version == 4 else (":" in text)


def _valid_cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _valid_byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


_FORMATS: dict[str, Any] = {
    "bsonobjectid": re.compile(r"^[0-9a-fA-F]{24}$").match,
    "uri": lambda s: bool(re.match(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|/)\S*$", s)),
    "email": lambda s: bool(re.fullmatch(r"[^@\s<>]+@[^@\s<>]+", s)),
    "hostname": _HOSTNAME.match,
    "ipv4": lambda s: _valid_ip(s, 4),
    "ipv6": lambda s: _valid_ip(s, 6),
    "cidr": _valid_cidr,
    "mac": _MAC.match,
    **{name: re.compile(rx).match for name, rx in _UUID.items()},
    "isbn": lambda s: bool(re.fullmatch(r"(?:\d[- ]?){9}[\dXx]|(?:\d[- ]?){12}\d", s)),
    "isbn10": lambda s: bool(re.fullmatch(r"(?:\d[- ]?){9}[\dXx]", s)),
    "isbn13": lambda s: bool(re.fullmatch(r"(?:\d[- ]?){12}\d", s)),
    "creditcard": lambda s: bool(re.fullmatch(r"(?:\D*\d){13,19}\D*", s)),
    "ssn": re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$").match,
    "hexcolor": re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$").match,
    "rgbcolor": re.compile(r"^rgb\(\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*\)$").match,
    "byte": _valid_byte,
    "password": lambda s: True,
    "date": _valid_date,
    "duration": _DURATION.match,
    "datetime": _valid_date_time,
}


def _format_of(schema: Schema) -> str:
    """The schema's format if kube validates it, else ``""``."""
    name = schema.get("format")
    if isinstance(name, str) and name.replace("-", "") in _FORMATS:
        return name
    return ""


@dataclass
class _Error:
    """A ``kube-openapi`` validation error before it becomes a ``field.Error``."""

    code: str  # type, required, enum, too_long, max_items, max_props, or invalid
    name: str  # kube-openapi's path: "spec.replicas", ".spec" for required at the root
    value: Any = None
    message: str = ""
    limit: int = -1
    values: tuple[Any, ...] = ()


def _in_body(name: str, text: str) -> str:
    return f"{name} in body {text}"


def _type_error(name: str, type_name: str, actual: str) -> _Error:
    return _Error(
        "type",
        name,
        actual,
        _in_body(name, f"must be of type {type_name}: " + gofmt.go_quote(actual)),
    )


def _schema_types(schema: Schema) -> list[str]:
    if schema.get("x-kubernetes-int-or-string") is True:
        return ["integer", "string"]
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) and kind else []


def _check_type(value: Any, schema: Schema, name: str) -> list[_Error]:
    """kube-openapi's type validator."""
    types = _schema_types(schema)
    fmt = _format_of(schema)
    if not types and not fmt:
        return []
    if value is None:
        if types and not schema.get("nullable", False):
            return [_type_error(name, ",".join(types), "null")]
        return []
    actual = _json_type(value)
    float_int = actual == "number" and "integer" in types and _is_json_integer(float(value))
    int_float = actual == "integer" and "number" in types
    if fmt and actual not in ("string", "array") and types:
        data_format = {"integer": "int64", "number": "float64"}.get(actual, "")
        if not (actual in types or float_int or int_float or data_format == fmt):
            return [_type_error(name, fmt, data_format)]
    if fmt and actual in ("string", "array") and not {"number", "integer"} & set(types):
        return []
    if types and not (actual in types or float_int or int_float):
        return [_type_error(name, ",".join(types), actual)]
    return []


def _check_string(value: str, schema: Schema, name: str) -> list[_Error]:
    length = len(value)
    if "maxLength" in schema and length > schema["maxLength"]:
        limit = int(schema["maxLength"])
        message = _in_body(name, f"should be at most {limit} chars long")
        return [_Error("too_long", name, value, message, limit)]
    if "minLength" in schema and length < schema["minLength"]:
        limit = int(schema["minLength"])
        return [
            _Error("invalid", name, value, _in_body(name, f"should be at least {limit} chars long"))
        ]
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            matched = re.search(pattern, value) is not None
        except re.error as err:
            shown = f"{pattern}, but pattern is invalid: {err}"
            return [_Error("invalid", name, value, _in_body(name, f"should match '{shown}'"))]
        if not matched:
            return [_Error("invalid", name, value, _in_body(name, f"should match '{pattern}'"))]
    return []


def _check_format(value: str, schema: Schema, name: str) -> list[_Error]:
    fmt = _format_of(schema)
    if fmt and not _FORMATS[fmt.replace("-", "")](value):
        return [
            _Error(
                "type",
                name,
                value,
                _in_body(name, f"must be of type {fmt}: " + gofmt.go_quote(value)),
            )
        ]
    return []


def _bound(limit: float, value: int | float) -> str:
    """A bound as kube prints it: an int64 against integer data, else a Go float."""
    return str(int(limit)) if isinstance(value, int) else gofmt.go_float(float(limit))


def _check_multiple(value: int | float, factor: int | float, name: str) -> list[_Error]:
    """``MultipleOfNativeType``: integer data against the factor truncated to an int64."""
    if isinstance(value, int):
        factor = int(factor)
    if factor <= 0:
        detail = f"factor MultipleOf declared for {name} must be positive: {gofmt.go_value(factor)}"
        return [_Error("invalid", name, factor, detail)]
    if isinstance(value, int):
        failed = value % int(factor) != 0
    else:
        failed = not _is_json_integer(value * (1 / factor) if factor < 1 else value / factor)
    if failed:
        shown = str(factor) if isinstance(factor, int) else gofmt.go_float(float(factor))
        return [_Error("invalid", name, value, _in_body(name, f"should be a multiple of {shown}"))]
    return []


def _check_number(value: int | float, schema: Schema, name: str) -> list[_Error]:
    errors: list[_Error] = []
    factor = schema.get("multipleOf")
    if _is_number(factor):
        errors.extend(_check_multiple(value, factor, name))
    for key, exclusive_key, below in (
        ("minimum", "exclusiveMinimum", True),
        ("maximum", "exclusiveMaximum", False),
    ):
        limit = schema.get(key)
        if not _is_number(limit):
            continue
        exclusive = schema.get(exclusive_key) is True
        bound: int | float = int(limit) if isinstance(value, int) else float(limit)
        if below:
            failed = value <= bound if exclusive else value < bound
            words = "greater than" if exclusive else "greater than or equal to"
        else:
            failed = value >= bound if exclusive else value > bound
            words = "less than" if exclusive else "less than or equal to"
        if failed:
            errors.append(
                _Error(
                    "invalid",
                    name,
                    value,
                    _in_body(name, f"should be {words} {_bound(limit, value)}"),
                )
            )
    return errors


def _unique(items: list[Any]) -> bool:
    seen: list[Any] = []
    for item in items:
        if any(_same(item, other) for other in seen):
            return False
        seen.append(item)
    return True


class _Validator:
    """One walk of kube-openapi's schema validator, with kube's ratcheting on update."""

    def __init__(self) -> None:
        self.errors: list[_Error] = []

    def node(self, value: Any, schema: Schema, name: str, old: Any, correlated: bool) -> None:
        mark = len(self.errors)
        self._node(value, schema, name, old, correlated)
        if correlated and len(self.errors) > mark and _unchanged(value, old, schema):
            del self.errors[mark:]  # ratcheted: this part is as it was before the update

    def _child_old(self, old: Any, correlated: bool, key: str, root: bool) -> tuple[Any, bool]:
        if not correlated or not isinstance(old, dict) or key not in old:
            return None, False
        if root and key in ("apiVersion", "kind"):
            return None, False
        return old[key], True

    def _node(self, value: Any, schema: Schema, name: str, old: Any, correlated: bool) -> None:
        add = self.errors.extend
        add(_check_type(value, schema, name))
        if value is None:
            self._enum(value, schema, name)
            return
        if isinstance(value, str):
            add(_check_string(value, schema, name))
            add(_check_format(value, schema, name))
        if _is_number(value):
            add(_check_number(value, schema, name))
        if isinstance(value, list):
            self._array(value, schema, name, old, correlated)
        self._enum(value, schema, name)
        if isinstance(value, dict):
            self._object(value, schema, name, old, correlated)

    def _enum(self, value: Any, schema: Schema, name: str) -> None:
        allowed = schema.get("enum")
        if not isinstance(allowed, list) or not allowed:
            return
        for option in allowed:
            if value is not None and (
                _same(value, option)
                or (_is_number(value) and _is_number(option) and value == option)
            ):
                return
        message = _in_body(name, "should be one of " + gofmt.go_v(allowed))
        self.errors.append(_Error("enum", name, value, message, values=tuple(allowed)))

    def _array(
        self, value: list[Any], schema: Schema, name: str, old: Any, correlated: bool
    ) -> None:
        items = structural.items_schema(schema)
        if items is not None:
            keyed = _map_list_index(schema, old) if correlated and isinstance(old, list) else None
            for i, item in enumerate(value):
                prior, linked = _correlate_item(keyed, schema, item)
                self.node(item, items, f"{name}[{i}]", prior, linked)
        size = len(value)
        if "minItems" in schema and size < schema["minItems"]:
            limit = int(schema["minItems"])
            self.errors.append(
                _Error("invalid", name, size, _in_body(name, f"should have at least {limit} items"))
            )
        if "maxItems" in schema and size > schema["maxItems"]:
            limit = int(schema["maxItems"])
            message = _in_body(name, f"should have at most {limit} items")
            self.errors.append(_Error("max_items", name, size, message, limit))
        if schema.get("uniqueItems") is True and not _unique(value):
            self.errors.append(
                _Error("invalid", name, None, _in_body(name, "shouldn't contain duplicates"))
            )

    def _object(
        self, value: dict[str, Any], schema: Schema, name: str, old: Any, correlated: bool
    ) -> None:
        size = len(value)
        if "minProperties" in schema and size < schema["minProperties"]:
            limit = int(schema["minProperties"])
            self.errors.append(
                _Error(
                    "invalid",
                    name,
                    size,
                    _in_body(name, f"should have at least {limit} properties"),
                )
            )
        if "maxProperties" in schema and size > schema["maxProperties"]:
            limit = int(schema["maxProperties"])
            message = _in_body(name, f"should have at most {limit} properties")
            self.errors.append(_Error("max_props", name, size, message, limit))
        props: dict[str, Schema] = schema.get("properties", {})
        _, extra = structural.additional_properties(schema)
        root = name == ""
        if extra is not None:
            for key, item in value.items():
                if key not in props:
                    prior, linked = self._child_old(old, correlated, key, root)
                    self.node(item, extra, f"{name}.{key}", prior, linked)
        for key, prop in props.items():
            if key in value:
                prior, linked = self._child_old(old, correlated, key, root)
                self.node(value[key], prop, f"{name}.{key}" if name else key, prior, linked)
        for key in schema.get("required", []):
            if key not in value:
                self.errors.append(_Error("required", f"{name}.{key}"))


def _unchanged(new: Any, old: Any, schema: Schema | None) -> bool:
    """kube's ``CorrelatedObject.CachedDeepEqual``: deep equality through the schema.

    As upstream, a map key the schema does not describe (inside a preserve-unknown-fields
    object, say) cannot be correlated, so such a map never counts as unchanged, and a
    map-list item whose key is new makes its list changed.
    """
    if new is None or old is None:
        return new is None and old is None
    if isinstance(new, list) and isinstance(old, list):
        if len(new) != len(old):
            return False
        index = _map_list_index(schema, old) if schema is not None else None
        if index is None:
            return _same(new, old)
        items = structural.items_schema(schema)
        for item in new:
            prior, linked = _correlate_item(index, schema, item)  # type: ignore[arg-type]
            if not linked or items is None or not _unchanged(item, prior, items):
                return False
        return True
    if isinstance(new, dict) and isinstance(old, dict):
        if len(new) != len(old):
            return False
        for key, value in new.items():
            child = structural.field_schema(schema, key)
            if key not in old or child is None or not _unchanged(value, old[key], child):
                return False
        return True
    if isinstance(new, dict | list) or isinstance(old, dict | list):
        return False
    return _same(new, old)


def _map_list_index(schema: Schema, old: list[Any]) -> dict[str, Any] | None:
    """Old items of a ``x-kubernetes-list-type: map`` list by key; None if not correlatable."""
    if schema.get("x-kubernetes-list-type") != "map":
        return None
    keys = schema.get("x-kubernetes-list-map-keys") or []
    index: dict[str, Any] = {}
    for item in old:
        if isinstance(item, dict):
            index.setdefault(_map_key(item, keys), item)
    return index


def _map_key(item: dict[str, Any], keys: list[str]) -> str:
    return gofmt.go_json([item.get(k) for k in keys])


def _correlate_item(index: dict[str, Any] | None, schema: Schema, item: Any) -> tuple[Any, bool]:
    if index is None or not isinstance(item, dict):
        return None, False
    key = _map_key(item, schema.get("x-kubernetes-list-map-keys") or [])
    if key in index:
        return index[key], True
    return None, False


def _to_cause(error: _Error, prefix: str) -> Cause:
    """``kubeOpenAPIResultToFieldErrors``: a kube-openapi error as a StatusCause."""
    name = error.name[1:] if error.name.startswith(".") else error.name
    if error.name and error.name != ".":
        field = f"{prefix}.{name}" if prefix else name
    else:
        field = prefix or "<nil>"
    if error.code == "required":
        return fielderrors.required(field)
    if error.code == "enum":
        values = [v if isinstance(v, str) else gofmt.go_json(v) for v in error.values]
        return fielderrors.not_supported(field, error.value, values)
    if error.code == "too_long":
        detail = (
            # field.TooLong as kube-apiserver 1.28 words it
            f"may not be longer than {error.limit}" if error.limit >= 0 else "value is too long"
        )
        return fielderrors.cause("FieldValueTooLong", f"Too long: {detail}", field)
    if error.code in ("max_items", "max_props"):
        return fielderrors.too_many(field, int(error.value), error.limit)
    value = "" if error.value is None else error.value
    if error.code == "type":
        return fielderrors.cause(
            "FieldValueTypeInvalid",
            f"Invalid value: {gofmt.go_value(value)}: {error.message}",
            field,
        )
    return fielderrors.invalid(field, value, error.message)


_BLOCKING = {
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
}
_RULES_SKIPPED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def validate(
    obj: dict[str, Any], schema: Schema | None, old: dict[str, Any] | None = None, *, path: str = ""
) -> list[Cause]:
    """Check ``obj`` against a structural schema; return kube ``StatusCause`` dicts.

    Covers types (object, array, string, integer, number, boolean, int-or-string,
    nullable), enum, required, minimum/maximum (exclusive too), multipleOf,
    minLength/maxLength, pattern, the string formats kube checks, minItems/maxItems,
    uniqueItems, min/maxProperties, and the uniqueness of ``x-kubernetes-list-type`` set
    items and map keys. With ``old`` (an update), errors in parts unchanged since ``old``
    are ratcheted away and ``self == oldSelf`` transition rules are enforced; other
    ``x-kubernetes-validations`` (CEL) rules are not evaluated: kubetrain's admission
    enforces them for its kinds. ``path`` prefixes every field, as kube does when it
    validates only ``status`` against its sub-schema on a ``/status`` update.

    Causes come in kube's order: schema errors, list-type errors, transition rules.
    """
    if schema is None:
        return []
    walker = _Validator()
    walker.node(obj, schema, "", old, old is not None)
    causes = [_to_cause(e, path) for e in walker.errors]

    if old is None or not _list_type_causes(old, schema, path):
        causes.extend(_list_type_causes(obj, schema, path))

    if _has_rules(schema):
        if any(c["reason"] in _BLOCKING for c in causes):
            # field.Invalid(nil, nil, ...): Go prints a nil value as the string "null"
            causes.append(fielderrors.invalid("<nil>", "null", _RULES_SKIPPED))
        elif old is not None:
            causes.extend(_transition_causes(obj, old, schema, path))
    return causes


def _list_type_causes(value: Any, schema: Schema, path: str) -> list[Cause]:
    """``ValidateListSetsAndMaps``: duplicate set items and map-list keys."""
    causes: list[Cause] = []
    if isinstance(value, dict):
        props = schema.get("properties", {})
        _, extra = structural.additional_properties(schema)
        if extra is not None:
            for key, item in value.items():
                causes.extend(_list_type_causes(item, extra, fielderrors.field_key(path, key)))
        for key, item in value.items():
            if key in props:
                causes.extend(
                    _list_type_causes(item, props[key], fielderrors.field_child(path, key))
                )
    elif isinstance(value, list):
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set":
            causes.extend(fielderrors.duplicate(f"{path}[{i}]", value[i]) for i in _repeats(value))
        elif kind == "map":
            causes.extend(_map_list_causes(value, schema, path))
        items = structural.items_schema(schema)
        if items is not None:
            for i, item in enumerate(value):
                causes.extend(_list_type_causes(item, items, f"{path}[{i}]"))
    return causes


def _repeats(values: list[Any]) -> list[int]:
    """Indexes of the second appearance of each repeated value (``validateListSet``)."""
    counts: dict[str, int] = {}
    repeats = []
    for i, value in enumerate(values):
        key = (
            gofmt.go_json(value)
            if isinstance(value, dict | list)
            else f"{_json_type(value)}:{gofmt.go_json(value)}"
        )
        counts[key] = counts.get(key, 0) + 1
        if counts[key] == 2:
            repeats.append(i)
    return repeats


def _map_list_causes(value: list[Any], schema: Schema, path: str) -> list[Cause]:
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [
                fielderrors.invalid(
                    f"{path}[{i}]", item, "must be an object for an array of list-type map"
                )
            ]
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if len(value) <= 1:
        return []
    present = []
    for item in value:
        item = item or {}
        present.append({k: item[k] for k in keys if k in item})
    if len(keys) == 1:
        marks = [next(iter(p.values())) if p else _Unspecified() for p in present]
        causes = []
        for i in _repeats_keys(marks):
            causes.append(fielderrors.duplicate(f"{path}[{i}]", present[i]))
        return causes
    return [fielderrors.duplicate(f"{path}[{i}]", present[i]) for i in _repeats(present)]


class _Unspecified:
    """A map-list item without its key: all such items share one key."""


def _repeats_keys(marks: list[Any]) -> list[int]:
    tokens = [
        "\x00unspecified" if isinstance(m, _Unspecified) else f"{_json_type(m)}:{gofmt.go_json(m)}"
        for m in marks
    ]
    counts: dict[str, int] = {}
    repeats = []
    for i, token in enumerate(tokens):
        counts[token] = counts.get(token, 0) + 1
        if counts[token] == 2:
            repeats.append(i)
    return repeats


def _has_rules(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    children = list(schema.get("properties", {}).values())
    children += [schema.get("items"), schema.get("additionalProperties")]
    return any(_has_rules(c) for c in children)


def _transition_causes(new: Any, old: Any, schema: Schema, path: str) -> list[Cause]:
    """``self == oldSelf`` rules, where kube's CEL validator correlates an old value."""
    causes: list[Cause] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        if not isinstance(rule, dict) or not _IMMUTABLE_RULE.match(str(rule.get("rule", ""))):
            continue
        if _cel_equal(new, old, schema):
            continue
        message = (
            str(rule.get("message") or "").strip() or f"failed rule: {str(rule['rule']).strip()}"
        )
        where = path + str(rule.get("fieldPath") or "")
        kind = schema.get("type", "")
        reason = rule.get("reason")
        if reason == "FieldValueForbidden":
            causes.append(fielderrors.forbidden(where, message))
        elif reason == "FieldValueRequired":
            causes.append(fielderrors.required(where, message))
        elif reason == "FieldValueDuplicate":
            causes.append(fielderrors.duplicate(where, kind))
        else:
            causes.append(fielderrors.invalid(where, kind, message))
    if isinstance(new, dict) and isinstance(old, dict):
        if schema.get("x-kubernetes-map-type") == "atomic":
            return causes
        props = schema.get("properties", {})
        _, extra = structural.additional_properties(schema)
        for key, value in new.items():
            if key not in old:
                continue
            if key in props:
                causes.extend(
                    _transition_causes(
                        value, old[key], props[key], fielderrors.field_child(path, key)
                    )
                )
            elif extra is not None:
                causes.extend(
                    _transition_causes(value, old[key], extra, fielderrors.field_key(path, key))
                )
    elif isinstance(new, list) and isinstance(old, list):
        items = structural.items_schema(schema)
        index = _map_list_index(schema, old)
        if items is not None and index is not None:
            for i, item in enumerate(new):
                prior, linked = _correlate_item(index, schema, item)
                if linked:
                    causes.extend(_transition_causes(item, prior, items, f"{path}[{i}]"))
    return causes


def _cel_equal(a: Any, b: Any, schema: Schema | None) -> bool:
    """CEL equality on schema-typed values: sets and map lists ignore order."""
    if isinstance(a, list) and isinstance(b, list) and schema is not None:
        items = structural.items_schema(schema)
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set":
            return len(a) == len(b) and all(any(_cel_equal(x, y, items) for y in b) for x in a)
        if kind == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            left = {_map_key(x, keys): x for x in a if isinstance(x, dict)}
            right = {_map_key(x, keys): x for x in b if isinstance(x, dict)}
            return left.keys() == right.keys() and all(
                _cel_equal(left[k], right[k], items) for k in left
            )
        return len(a) == len(b) and all(_cel_equal(x, y, items) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            _cel_equal(a[k], b[k], structural.field_schema(schema, k)) for k in a
        )
    if _is_number(a) and _is_number(b):
        return a == b
    return _same(a, b)
