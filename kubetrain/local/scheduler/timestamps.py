"""Times as the API server writes them (RFC 3339 in UTC: ``2026-01-01T00:00:00Z``, with
microseconds in ``eventTime``) and as the scheduler computes with them (seconds since the
epoch, a float).

Owns: the two conversions. Must not: read the clock; callers pass ``now`` in.
"""

from __future__ import annotations

from typing import Any

from kubetrain import timefmt


def parse(value: Any) -> float | None:
    """Seconds since the epoch, or None if ``value`` is not an RFC 3339 time."""
    moment = timefmt.parse(value)
    return moment.timestamp() if moment is not None else None


def format_seconds(seconds: float) -> str:
    """``metav1.Time``: whole seconds."""
    return timefmt.seconds(timefmt.from_epoch(seconds))


def format_micro(seconds: float) -> str:
    """``metav1.MicroTime``, as in an Event's ``eventTime``."""
    return timefmt.micro(timefmt.from_epoch(seconds))
