"""Field errors: what is wrong with an object, where, and what would be accepted.

The wording follows Kubernetes' ``field.ErrorList`` (``<path>: <Type>: <value>: <detail>``)
because upstream's webhook messages are written that way and users search for them. A
validator never stops at the first problem: it returns every :class:`FieldError` it finds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from kubetrain import gofmt


class ErrorType(str, Enum):
    """Kubernetes' error types; the value is the word Kubernetes prints."""

    REQUIRED = "Required value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    DUPLICATE = "Duplicate value"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    UNKNOWN_FIELD = "Unknown field"


_OMIT = object()


@dataclass(frozen=True)
class FieldError:
    """One problem at one field path, e.g. ``spec.pytorchReplicaSpecs[Master].replicas``."""

    type: ErrorType
    path: str
    detail: str = ""
    value: Any = _OMIT

    def __str__(self) -> str:
        parts = [self.path or "<root>", self.type.value]
        if self.value is not _OMIT and self.type in _SHOWS_VALUE:
            parts.append(render_value(self.value))
        if self.detail:
            parts.append(self.detail)
        return ": ".join(parts)


_SHOWS_VALUE = {ErrorType.INVALID, ErrorType.NOT_SUPPORTED, ErrorType.DUPLICATE}


def render_value(value: Any) -> str:
    """A bad value as the Trainer's webhook prints it: a scalar as ``field.Error`` does
    (:func:`kubetrain.gofmt.go_value`); a list or a struct in a Go-like form that keeps the
    field order (Go's ``%#v`` of a typed struct would show pointer addresses)."""
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {render_value(v)}" for k, v in value.items()) + "}"
    return gofmt.go_value(value)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, path, detail, value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, detail)


def not_supported(path: str, value: Any, supported: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, path, detail, value)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, "", value)


def too_long(path: str, limit: int) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, path, f"may not be more than {limit} bytes")


def immutable(path: str, value: Any) -> FieldError:
    return FieldError(ErrorType.INVALID, path, "field is immutable", value)


class Path:
    """Builds field paths the way Kubernetes prints them: ``a.b[Key].c[0]``."""

    __slots__ = ("_text",)

    def __init__(self, text: str = "") -> None:
        self._text = text

    def child(self, *names: str) -> Path:
        text = self._text
        for name in names:
            text = f"{text}.{name}" if text else name
        return Path(text)

    def key(self, key: str) -> Path:
        return Path(f"{self._text}[{key}]")

    def index(self, index: int) -> Path:
        return Path(f"{self._text}[{index}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"


def format_errors(subject: str, errors: Iterable[FieldError]) -> list[str]:
    """Lines of the form ``<Kind>/<name>: <field path>: <message>`` for the command line."""
    return [f"{subject}: {error}" for error in errors]
