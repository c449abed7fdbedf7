"""Kubernetes times as text: written to the second or the microsecond, and read back from
kube-apiserver's, Go's (nanoseconds) or a hand-written offset."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from kubetrain import timefmt

UTC = timezone.utc
MOMENT = datetime(2024, 5, 1, 12, 0, 3, 123456, tzinfo=UTC)


def test_a_moment_is_written_as_time_and_as_micro_time_in_utc() -> None:
    assert timefmt.seconds(MOMENT) == "2024-05-01T12:00:03Z"
    assert timefmt.micro(MOMENT) == "2024-05-01T12:00:03.123456Z"
    east = MOMENT.astimezone(timezone(timedelta(hours=2)))
    assert timefmt.seconds(east) == "2024-05-01T12:00:03Z", "written in UTC whatever its zone"
    naive = MOMENT.replace(tzinfo=None)
    assert timefmt.seconds(naive) == "2024-05-01T12:00:03Z", "a naive moment is UTC already"
    assert timefmt.seconds(timefmt.from_epoch(MOMENT.timestamp())) == "2024-05-01T12:00:03Z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2024-05-01T12:00:03Z", MOMENT.replace(microsecond=0), id="metav1.Time"),
        pytest.param("2024-05-01T12:00:03.123456Z", MOMENT, id="MicroTime"),
        pytest.param("2024-05-01T12:00:03.123456789Z", MOMENT, id="Go's nanoseconds are cut"),
        pytest.param("2024-05-01T12:00:03.1z", MOMENT.replace(microsecond=100000), id="short z"),
        pytest.param(
            "2024-05-01T14:00:03+02:00", MOMENT.replace(microsecond=0), id="an offset, to UTC"
        ),
        pytest.param(" 2024-05-01T12:00:03 ", MOMENT.replace(microsecond=0), id="no offset: UTC"),
        pytest.param("2024-05-01", None, id="a date alone is no time"),
        pytest.param("2024-13-01T12:00:03Z", None, id="no 13th month"),
        pytest.param("", None, id="empty"),
        pytest.param(5, None, id="not text"),
    ],
)
def test_parse(text: object, expected: datetime | None) -> None:
    found = timefmt.parse(text)
    assert found == expected
    if found is not None:
        assert found.tzinfo == UTC


def test_strictly_a_time_needs_its_t_and_an_offset_as_go_s_rfc3339_layout_does() -> None:
    assert timefmt.parse("2024-05-01T12:00:03", strict=True) is None
    assert timefmt.parse("2024-05-01 12:00:03Z", strict=True) is None
    assert timefmt.parse("2024-05-01 12:00:03Z") is not None
    assert timefmt.parse("2024-05-01t12:00:03z", strict=True) is not None
