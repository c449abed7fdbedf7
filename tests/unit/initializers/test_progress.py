"""Progress as log lines: how they read, and how often they come."""

from __future__ import annotations

import logging

import pytest

from kubetrain.initializers import progress


@pytest.mark.parametrize(
    ("count", "text"),
    [
        pytest.param(0, "0 B", id="nothing"),
        pytest.param(999, "999 B", id="bytes below a kilobyte"),
        pytest.param(12_500_000, "12.5 MB", id="megabytes, powers of 1000"),
        pytest.param(3 * 10**15, "3000.0 TB", id="terabytes are the largest unit"),
    ],
)
def test_sizes_read_as_du_si_prints_them(count: int, text: str) -> None:
    assert progress.size(count) == text


def test_lines_come_at_most_once_an_interval_and_when_the_last_file_is_done(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    bar = progress.Progress("model initializer", 2, 3_000_000, interval=2.0, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="kubetrain.initializers")

    bar.start()
    bar.advance(1_000_000)  # at once: no line
    now[0] = 2.5
    bar.advance(500_000)  # an interval later: a line
    bar.advance(500_000)  # right after: none
    bar.file_done("a", 2_000_000)  # not the last file, within the interval: none
    now[0] = 3.0
    bar.advance(1_000_000)
    bar.file_done("b", 1_000_000)  # the last: a line, whatever the time
    now[0] = 4.0
    bar.finish()

    assert caplog.messages == [
        "model initializer: 2 files to fetch, 3.0 MB",
        "model initializer: 0 of 2 files, 1.5 MB of 3.0 MB (50%)",
        "model initializer: 2 of 2 files, 3.0 MB of 3.0 MB (100%)",
        "model initializer: fetched 2 files, 3.0 MB in 4.0s",
    ]


def test_an_unknown_total_shows_the_bytes_so_far() -> None:
    bar = progress.Progress("dataset initializer", 3, None)
    bar.advance(2048)
    assert bar.line() == "dataset initializer: 0 of 3 files, 2.0 kB"
