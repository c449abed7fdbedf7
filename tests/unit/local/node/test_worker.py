"""The worker's pure rules: the kubelet's crash back-off rebuilt from a container's attempts,
the back-off between tries to create a container its spec cannot make, and Go's duration
format in the CrashLoopBackOff message."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from kubetrain.local.node import runtime, worker

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def attempts(*runs: float, running: bool = False) -> list[runtime.ContainerState]:
    """Attempts that ran for ``runs`` seconds each, one after another."""
    out = []
    start = T0
    for i, seconds in enumerate(runs):
        end = start + timedelta(seconds=seconds)
        out.append(
            runtime.ContainerState(runtime.ContainerId("u", "c", i), 1, start, end, 1, "Error")
        )
        start = end
    if running:
        out.append(
            runtime.ContainerState(runtime.ContainerId("u", "c", len(runs)), 1, start, None, None)
        )
    return out


BACKOFF = {
    "the first restart is at once": ((1,), 0.0),
    "the second waits the initial back-off": ((1, 1), 10.0),
    "then it doubles": ((1, 1, 1), 20.0),
    "up to the maximum": ((1,) * 12, 300.0),
    "a long run starts the count afresh": ((1, 1, 1, 700, 1), 0.0),
    "and the crashes after it count again": ((1, 1, 1, 700, 1, 1), 10.0),
    "a long last run restarts at once": ((1, 1, 700), 0.0),
}


@pytest.mark.parametrize(("runs", "delay"), BACKOFF.values(), ids=BACKOFF.keys())
def test_crash_back_off(runs: tuple[float, ...], delay: float) -> None:
    assert worker.backoff_delay(attempts(*runs), 10.0, 300.0, 600.0) == delay


DURATIONS = {
    "milliseconds": (0.2, "200ms"),
    "seconds": (10, "10s"),
    "fractional seconds": (1.5, "1.5s"),
    "minutes": (80, "1m20s"),
    "whole minutes": (300, "5m0s"),
    "hours": (3725, "1h2m5s"),
    "zero": (0, "0s"),
}


@pytest.mark.parametrize(("seconds", "text"), DURATIONS.values(), ids=DURATIONS.keys())
def test_go_duration(seconds: float, text: str) -> None:
    assert worker.go_duration(seconds) == text


CREATE_BACKOFF = {
    "the first failure waits the initial back-off": (1, 10.0),
    "the second doubles it": (2, 20.0),
    "the fifth is 16 times it": (5, 160.0),
    "never more than the maximum": (9, 300.0),
}


@pytest.mark.parametrize(("failures", "delay"), CREATE_BACKOFF.values(), ids=CREATE_BACKOFF.keys())
def test_create_back_off(failures: int, delay: float) -> None:
    assert worker.create_backoff(failures, 10.0, 300.0) == delay
