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
    return _human(int(seconds * 1_000_000_000))


def _human(ns: int) -> str:
    seconds = int(ns / 1_000_000_000)  # Go truncates toward zero
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = ns // 60_000_000_000
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = ns // 3_600_000_000_000
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


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
    return _human((delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000)


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
