"""Times as the API server writes them (RFC 3339 in UTC: ``2026-01-01T00:00:00Z``, with
microseconds in ``eventTime``) and as the scheduler computes with them (seconds since the
epoch, a float).

Owns: the two conversions. Must not: read the clock; callers pass ``now`` in.
"""

from __future__ import annotations

import datetime
from typing import Any


def parse(value: Any) -> float | None:
    """Seconds since the epoch, or None if ``value`` is not an RFC 3339 time."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def _utc(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)


def format_seconds(seconds: float) -> str:
    """``metav1.Time``: whole seconds."""
    return _utc(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro(seconds: float) -> str:
    """``metav1.MicroTime``, as in an Event's ``eventTime``."""
    return _utc(seconds).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
