"""Timestamps as Kubernetes writes them (``metav1.Time``: RFC 3339, UTC, whole seconds).

Pure: converts values; the current time always comes from the caller's clock.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$"
)


def format_time(moment: datetime) -> str:
    """``2024-05-01T12:00:00Z``; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """An aware datetime from an RFC 3339 string; None for anything else."""
    if not isinstance(text, str):
        return None
    match = _RFC3339.match(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    fraction = match[7] or ""
    micro = int((fraction + "000000")[:6]) if fraction else 0
    zone = match[8]
    if zone in ("Z", "z"):
        tz = timezone.utc
    else:
        sign = 1 if zone[0] == "+" else -1
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError:
        return None
