"""Times and durations as users type them and as the command line shows them.

``parse`` reads Go durations (``90s``, ``5m``, ``1h30m``; ``d`` for days too; a bare number
is seconds), as kubectl's ``--since`` and ``--timeout`` do. ``human`` is kubectl's AGE column
(``HumanDuration``), ``elapsed`` a steadier clock for a live view, ``timestamp`` reads the
RFC 3339 times of API objects. Pure: the current time is always passed in.
"""

from __future__ import annotations

import re
from datetime import datetime

from kubetrain import timefmt
from kubetrain.cli.errors import UserError

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)")


def parse(text: str) -> float:
    """Seconds in a duration such as ``10m`` or ``1h30m``; :class:`UserError` if malformed."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if seconds < 0:
            raise UserError(f"duration {text!r} is negative")
        return seconds
    position, total = 0, 0.0
    for match in _PART.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not value or position != len(value):
        raise UserError(f"duration {text!r} is not understood; write e.g. 30s, 5m, 1h30m")
    return total


def human(seconds: float) -> str:
    """kubectl's ``HumanDuration``: ``45s``, ``3m20s``, ``25m``, ``5h10m``, ``3d4h``, ``2y``."""
    return timefmt.human_duration(int(seconds * 1_000_000_000))


def elapsed(seconds: float) -> str:
    """A running clock that keeps its width within a unit: ``7s``, ``1m05s``, ``2h03m09s``."""
    s = max(0, int(seconds))
    hours, rest = divmod(s, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def timestamp(value: object) -> datetime | None:
    """An API time (``2024-05-01T10:00:00Z``, with or without fractions), or None."""
    return timefmt.parse(value)


def since(value: object, now: datetime) -> float | None:
    """Seconds from an API time to ``now``, or None when there is no such time."""
    when = timestamp(value)
    return None if when is None else (now - when).total_seconds()
