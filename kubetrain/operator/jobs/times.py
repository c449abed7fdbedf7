"""Timestamps as Kubernetes writes them (``metav1.Time``: RFC 3339, UTC, whole seconds).

Pure: converts values; the current time always comes from the caller's clock.
"""

from __future__ import annotations

from datetime import datetime

from kubetrain import timefmt


def format_time(moment: datetime) -> str:
    """``2024-05-01T12:00:00Z``; a naive datetime is taken as UTC."""
    return timefmt.seconds(moment)


def parse_time(text: object) -> datetime | None:
    """An aware datetime from an RFC 3339 string; None for anything else."""
    return timefmt.parse(text)
