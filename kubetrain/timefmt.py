"""Kubernetes times as text: ``metav1.Time`` (RFC 3339 in UTC, whole seconds), ``MicroTime``
(microseconds) and reading either back; and a span of time as kube prints an age
(``HumanDuration``).

Every object kubetrain writes carries times (conditions, events, leases, node heartbeats,
tokens), and every reader compares them, so one module writes and reads them all: the same
text for the same moment, and the same answer for a time written by kube-apiserver, by Go
(up to nanoseconds) or by hand (any offset, ``z``).

Pure: the moment always comes in (no clock here); imports only the standard library, so every
layer may use it.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Final

UTC: Final = timezone.utc
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)?"
)


def _utc(when: datetime) -> datetime:
    """``when`` in UTC; a naive datetime is taken to be in UTC already."""
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def seconds(when: datetime) -> str:
    """A ``metav1.Time``: ``2024-05-01T12:00:00Z``."""
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro(when: datetime) -> str:
    """A ``metav1.MicroTime`` (an Event's ``eventTime``, a Lease's times):
    ``2024-05-01T12:00:00.000000Z``."""
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_epoch(seconds_: float) -> datetime:
    """The moment ``seconds_`` after the epoch, in UTC."""
    return datetime.fromtimestamp(seconds_, UTC)


def parse(text: Any, *, strict: bool = False) -> datetime | None:
    """The moment an RFC 3339 time names, in UTC, to the microsecond (longer fractions are
    cut, as Go's nanoseconds are); a time without an offset is taken to be in UTC, and a blank
    may stand for the ``T``, unless ``strict`` (Go's ``time.RFC3339`` layout, which a query
    parameter is parsed with, wants both). None for anything else."""
    if not isinstance(text, str):
        return None
    match = _RFC3339.fullmatch(text.strip())
    if match is None:
        return None
    if strict and (match[8] is None or text.strip()[10] == " "):
        return None
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    micros = int((match[7] or "0")[:6].ljust(6, "0"))
    zone = match[8]
    tz = UTC
    if zone and zone not in ("Z", "z"):
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        tz = timezone(-offset if zone[0] == "-" else offset)
    try:
        return datetime(year, month, day, hour, minute, second, micros, tzinfo=tz).astimezone(UTC)
    except ValueError:
        return None


def human_duration(ns: int) -> str:
    """kube's ``duration.HumanDuration`` of ``ns`` nanoseconds: ``0s``, ``45s``, ``5m30s``,
    ``3h``, ``2d4h``, ``2y`` (about two significant figures; up to a second in the future
    still reads ``0s``, further is ``<invalid>``). The API server's AGE columns and the
    command line's both print through it."""
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
