"""Durations typed by users and shown in columns (kubetrain.cli.durations)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from kubetrain.cli import durations
from kubetrain.cli.errors import UserError

PARSED = [
    ("90s", 90.0),
    ("5m", 300.0),
    ("1h30m", 5400.0),
    ("1.5h", 5400.0),
    ("250ms", 0.25),
    ("2d", 172800.0),
    ("45", 45.0),
]


@pytest.mark.parametrize(("text", "seconds"), PARSED, ids=[f"{t} is {s}s" for t, s in PARSED])
def test_go_durations(text: str, seconds: float) -> None:
    assert durations.parse(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "m5", "5m3", "-3"])
def test_a_malformed_duration_says_how_to_write_one(text: str) -> None:
    with pytest.raises(UserError):
        durations.parse(text)


HUMAN = [
    (-5, "<invalid>"),
    (-1, "0s"),
    (45, "45s"),
    (119, "119s"),
    (200, "3m20s"),
    (300, "5m"),
    (25 * 60, "25m"),
    (5 * 3600 + 600, "5h10m"),
    (20 * 3600, "20h"),
    (3 * 86400 + 4 * 3600, "3d4h"),
    (30 * 86400, "30d"),
    (3 * 365 * 86400, "3y"),
]


@pytest.mark.parametrize(
    ("seconds", "text"), HUMAN, ids=[f"{s}s shows as {t} as in kubectl" for s, t in HUMAN]
)
def test_human_is_kubectls_age(seconds: int, text: str) -> None:
    assert durations.human(seconds) == text


def test_elapsed_is_a_steady_clock() -> None:
    assert [durations.elapsed(s) for s in (7, 65, 7389)] == ["7s", "1m05s", "2h03m09s"]


def test_api_timestamps_with_any_fraction() -> None:
    expected = datetime(2024, 5, 1, 10, 0, 0, 123400, tzinfo=timezone.utc)
    assert durations.timestamp("2024-05-01T10:00:00.1234Z") == expected
    assert durations.timestamp("2024-05-01T10:00:00Z") == expected.replace(microsecond=0)
    assert durations.timestamp("yesterday") is None
    assert durations.timestamp(None) is None
