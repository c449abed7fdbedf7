"""The small records the job controllers keep: retries for backoffLimit (on Services), and
Kubernetes timestamps."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubetrain.operator.jobs import backoff, times
from tests.builders import pytorchjob


def service(annotations: dict[str, str] | None = None, name: str = "a-worker-0") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "annotations": annotations or {}}}


def pod(uid: str, restarts: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": "a-worker-0", "uid": uid},
        "status": {"containerStatuses": [{"name": "pytorch", "restartCount": restarts}]},
    }


# -- retries -------------------------------------------------------------------------------------

RECORD = [
    pytest.param({}, pod("u1"), "1", id="a first recreation counts one"),
    pytest.param({backoff.RESTARTS_ANNOTATION: "2"}, pod("u3"), "3", id="later ones add one"),
    pytest.param({}, pod("u1", restarts=2), "3",
                 id="a recreated pod's in-place restarts are kept in the count"),
    pytest.param({backoff.RESTARTS_ANNOTATION: "junk"}, pod("u1"), "1",
                 id="an unreadable count starts over"),
]  # fmt: skip


@pytest.mark.parametrize(("annotations", "failed", "total"), RECORD)
def test_record(annotations: dict[str, str], failed: dict[str, Any], total: str) -> None:
    patch = backoff.record(service(annotations), failed)
    assert patch == {
        "metadata": {
            "annotations": {
                backoff.RESTARTS_ANNOTATION: total,
                backoff.RESTARTED_POD_ANNOTATION: failed["metadata"]["uid"],
            }
        }
    }


def test_a_pod_is_counted_once_by_its_uid() -> None:
    recorded = service({backoff.RESTARTED_POD_ANNOTATION: "u1"})
    assert backoff.counted(recorded, pod("u1"))
    assert not backoff.counted(recorded, pod("u2"))
    assert not backoff.counted(None, pod("u1"))


def test_retries_add_records_and_in_place_restarts_of_counted_policies_only() -> None:
    job = pytorchjob().master(restart_policy="Never").workers(2, restart_policy="OnFailure")
    pods = {"Master": [pod("m", restarts=5)], "Worker": [pod("w0", 1), pod("w1", 2)]}
    services = [service({backoff.RESTARTS_ANNOTATION: "4"}), service()]
    assert backoff.retries(job.build(), pods, services) == 7


@pytest.mark.parametrize(
    ("limit", "so_far", "new", "exceeded"),
    [(None, 100, 1, False), (0, 0, 1, True), (0, 0, 0, False), (2, 2, 0, False), (2, 2, 1, True)],
    ids=[
        "no limit is never exceeded",
        "limit 0: a first retry is one too many",
        "limit 0: no failure, nothing exceeded",
        "limit 2: two retries are allowed",
        "limit 2: a third is not",
    ],
)
def test_exceeded(limit: int | None, so_far: int, new: int, exceeded: bool) -> None:
    assert backoff.exceeded(limit, so_far, new) is exceeded


# -- timestamps ----------------------------------------------------------------------------------

UTC = timezone.utc
PARSE = [
    pytest.param("2024-05-01T12:00:00Z", datetime(2024, 5, 1, 12, tzinfo=UTC), id="Z"),
    pytest.param("2024-05-01T12:00:00.250000Z", datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC),
                 id="fractions of a second"),
    pytest.param("2024-05-01T14:00:00+02:00",
                 datetime(2024, 5, 1, 14, tzinfo=timezone(timedelta(hours=2))), id="an offset"),
    pytest.param("yesterday", None, id="not a timestamp"),
    pytest.param(None, None, id="nothing"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "moment"), PARSE)
def test_parse_time(text: Any, moment: datetime | None) -> None:
    assert times.parse_time(text) == moment


def test_format_time_writes_utc_in_whole_seconds() -> None:
    moment = datetime(2024, 5, 1, 14, 0, 0, 999999, tzinfo=timezone(timedelta(hours=2)))
    assert times.format_time(moment) == "2024-05-01T12:00:00Z"
    assert times.format_time(datetime(2024, 5, 1, 12)) == "2024-05-01T12:00:00Z"
