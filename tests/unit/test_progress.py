"""``kubetrain.report``: the trainerStatus it writes, the ETA it projects, and the sender that
writes at most once per interval, keeps only the latest report, flushes on close, and never
lets a failed write reach the training loop. No sockets: the sender is a recorder."""

from __future__ import annotations

import datetime
import importlib
import threading
import warnings
from typing import Any

import pytest

from kubetrain import progress

NOW = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
TARGET = progress.Target("ns", "job")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """A sender that records what it is given and lets the test release each write."""

    def __init__(self, *, fail: bool = False) -> None:
        self.sent: list[dict[str, Any]] = []
        self.fail = fail
        self.closed = False
        self.written = threading.Semaphore(0)

    def __call__(self, target: progress.Target, status: dict[str, Any]) -> None:
        assert target == TARGET
        self.sent.append(status)
        self.written.release()
        if self.fail:
            raise PermissionError("trainjobs.trainer.kubeflow.org is forbidden")

    def close(self) -> None:
        self.closed = True

    def wait(self) -> None:
        assert self.written.acquire(timeout=5), "a write was expected"


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        pytest.param([(0, 10)], None, id="one sample: no rate yet"),
        pytest.param([(0, 10), (10, 20)], 80, id="10% in 10 s: 80 s for the last 80%"),
        pytest.param([(0, 10), (10, 20), (20, 60)], 16, id="the rate since the first sample"),
        pytest.param([(0, 10), (10, 10)], None, id="no progress: no estimate"),
        pytest.param([(0, 10), (5, 100)], 0, id="done: nothing left"),
        pytest.param([(0, 50), (10, 60), (20, 5)], None, id="progress went back: start over"),
    ],
)
def test_the_estimate_projects_progress_over_time(
    samples: list[tuple[float, float]], expected: int | None
) -> None:
    estimator = progress.Estimator()
    result = None
    for when, done in samples:
        result = estimator.estimate(when, done)
    assert result == expected


def test_the_status_has_every_field_in_the_crd_s_shape() -> None:
    status = progress.trainer_status(42.9, 12.2, {"loss": 0.123456789, "step": 7}, NOW)
    assert status == {
        "progressPercentage": 42,
        "estimatedRemainingSeconds": 13,
        "metrics": [{"name": "loss", "value": "0.123457"}, {"name": "step", "value": "7"}],
        "lastUpdatedTime": "2030-01-02T03:04:05Z",
    }
    cleared = progress.trainer_status(None, None, None, NOW)
    assert cleared == {
        "progressPercentage": None,
        "estimatedRemainingSeconds": None,
        "metrics": None,
        "lastUpdatedTime": "2030-01-02T03:04:05Z",
    }, "a merge patch with nulls: each report replaces the last"
    assert progress.trainer_status(250, -3, None, NOW)["progressPercentage"] == 100
    assert progress.trainer_status(-1, -3, None, NOW)["estimatedRemainingSeconds"] == 0
    many = {f"m{i}": i for i in range(300)}
    assert len(progress.trainer_status(1, None, many, NOW)["metrics"]) == 256


def test_reports_are_throttled_and_the_latest_one_wins() -> None:
    clock, sender = Clock(), Recorder()
    reporter = progress.Reporter(TARGET, sender, interval=60.0, clock=clock, wall_clock=lambda: NOW)
    reporter.report(progress=10, metrics={"loss": 2})
    sender.wait()
    clock.now += 10
    reporter.report(progress=20)
    reporter.report(metrics={"loss": 1})  # replaces the one not yet sent; progress carries
    assert len(sender.sent) == 1, "the interval has not passed"
    reporter.close()
    assert sender.closed
    assert [s["progressPercentage"] for s in sender.sent] == [10, 20]
    assert sender.sent[-1]["estimatedRemainingSeconds"] == 80, "10% in 10 s"
    assert sender.sent[-1]["metrics"] == [{"name": "loss", "value": "1"}]


def test_an_explicit_eta_wins_over_the_projection() -> None:
    clock, sender = Clock(), Recorder()
    reporter = progress.Reporter(TARGET, sender, interval=0.0, clock=clock, wall_clock=lambda: NOW)
    reporter.report(progress=10)
    sender.wait()
    clock.now += 10
    reporter.report(progress=20, eta_seconds=5)
    sender.wait()
    reporter.close()
    assert [s["estimatedRemainingSeconds"] for s in sender.sent] == [None, 5]


def test_a_failed_write_never_reaches_the_caller() -> None:
    sender = Recorder(fail=True)
    reporter = progress.Reporter(TARGET, sender, interval=0.0, wall_clock=lambda: NOW)
    reporter.report(progress=1)
    sender.wait()
    reporter.report(progress=2)
    sender.wait()
    reporter.close()
    assert [s["progressPercentage"] for s in sender.sent] == [1, 2], "it keeps trying"


def test_outside_a_trainjob_report_warns_once_and_does_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(progress.NAME_ENV, raising=False)
    fresh = importlib.reload(progress)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fresh.report(progress=5)
        fresh.report(progress=6)
    assert [str(w.message) for w in caught] == [
        "kubetrain.report: not running in a TrainJob (KUBETRAIN_TRAINJOB_NAME is not set); "
        "progress is not reported"
    ]
    assert fresh._reporter is None


def test_targets_come_from_the_environment() -> None:
    assert progress.target_from({}) is None
    assert progress.target_from({"KUBETRAIN_TRAINJOB_NAME": "a"}) == progress.Target("default", "a")
    env = {"KUBETRAIN_TRAINJOB_NAME": "a", "KUBETRAIN_TRAINJOB_NAMESPACE": "team"}
    assert progress.target_from(env) == progress.Target("team", "a")
