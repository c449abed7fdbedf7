"""What every Table has: column definitions, the NAME and AGE columns, and ages as kube
prints them (``duration.HumanDuration`` of the time since a timestamp).

The built-in printers (:mod:`printers`) and the tables of custom resources and of kinds
without a printer (:mod:`tables`) build their columns and age cells here. Pure: the caller
passes ``now``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from kubetrain import timefmt

Row = tuple[list[Any], list[dict[str, str]]]  # a row's cells and its conditions

_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def human_duration(seconds: float) -> str:
    """kube's ``duration.HumanDuration``: ``0s``, ``45s``, ``5m30s``, ``3h``, ``2d4h``, ``2y``.

    About two significant figures; up to a second in the future still reads ``0s``,
    further is ``<invalid>``.
    """
    return timefmt.human_duration(int(seconds * 1_000_000_000))


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (``metav1.Time``, ``MicroTime``); None when absent."""
    return timefmt.parse(value)


def _utc(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` if unset."""
    then = value if isinstance(value, datetime) else parse_time(value)
    if then is None:
        return "<unknown>"
    delta = _utc(now) - then
    ns = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return timefmt.human_duration(ns)


def column(
    name: str, type_: str = "string", description: str = "", *, fmt: str = "", priority: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "type": type_,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


NAME = column("Name", "string", _NAME_DOC, fmt="name")
AGE = column("Age", "string", AGE_DOC)
