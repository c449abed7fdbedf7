"""Causes of a 422 (``metav1.StatusCause``) in the words of kube's ``field.Error``:
``Invalid value: "x": detail``, ``Required value``, ``Forbidden: ...``, ``Unsupported value``,
``Duplicate value``, ``Too many``, each with its reason and field path.

The structural-schema checks of custom resources (:mod:`schema`) and of CRDs
(:mod:`crdvalidation`) build their causes here, so both word them alike. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from kubetrain import gofmt

Cause = dict[str, str]


def cause(reason: str, message: str, field: str) -> Cause:
    return {"reason": reason, "message": message, "field": field}


def invalid(field: str, value: Any, detail: str) -> Cause:
    return cause("FieldValueInvalid", f"Invalid value: {gofmt.go_value(value)}: {detail}", field)


def required(field: str, detail: str = "") -> Cause:
    return cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), field)


def forbidden(field: str, detail: str) -> Cause:
    return cause("FieldValueForbidden", f"Forbidden: {detail}", field)


def not_supported(field: str, value: Any, supported: list[str]) -> Cause:
    message = f"Unsupported value: {gofmt.go_value(value)}"
    if supported:
        message += ": supported values: " + ", ".join(gofmt.go_quote(s) for s in supported)
    return cause("FieldValueNotSupported", message, field)


def duplicate(field: str, value: Any) -> Cause:
    return cause("FieldValueDuplicate", f"Duplicate value: {gofmt.go_value(value)}", field)


def too_many(field: str, actual: int, limit: int) -> Cause:
    return cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", field)


def field_key(path: str, key: str) -> str:
    return f"{path}[{key}]"


def field_child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
