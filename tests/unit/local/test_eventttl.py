"""Event expiry, as kube-apiserver's --event-ttl: an Event lives an hour after it last
happened, judged by its latest time field."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from kubetrain.local import eventttl

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("event", "expired"),
    [
        ({"lastTimestamp": "2026-01-01T10:59:59Z"}, True),
        ({"lastTimestamp": "2026-01-01T11:00:01Z"}, False),
        (
            {"firstTimestamp": "2026-01-01T09:00:00Z", "lastTimestamp": "2026-01-01T11:30:00Z"},
            False,
        ),
        ({"eventTime": "2026-01-01T10:00:00.000000Z"}, True),
        ({"metadata": {"creationTimestamp": "2026-01-01T08:00:00Z"}}, True),
        ({"lastTimestamp": "not a time"}, False),
        ({}, False),
    ],
    ids=[
        "last seen over an hour ago",
        "last seen within the hour",
        "an old first time does not count when it happened again since",
        "events.k8s.io events by their eventTime",
        "an event with only its creation time",
        "an unreadable time keeps the event",
        "no time at all keeps the event",
    ],
)
def test_an_event_expires_an_hour_after_it_last_happened(event: dict, expired: bool) -> None:
    assert eventttl.expired(event, NOW, 3600.0) is expired
