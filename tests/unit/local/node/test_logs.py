"""Reading CRI-format logs as kubectl logs asks: tail, since, timestamps, limit_bytes, partial
lines, both files of a rotated log, and follow that ends once the container has stopped."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from kubetrain.local.node import logs, shim

T0 = "2026-11-21T07:33:0{}.000000000Z"


def record(second: int, text: str, stream: str = "stdout", tag: str = "F") -> str:
    return f"{T0.format(second)} {stream} {tag} {text}\n"


def collect(
    paths: list[str],
    *,
    follow: bool = False,
    timestamps: bool = False,
    tail_lines: int | None = None,
    since: datetime | None = None,
    limit_bytes: int | None = None,
    running: Callable[[], bool] = lambda: False,
) -> bytes:
    async def main() -> bytes:
        out = b""
        async for chunk in logs.read(
            paths,
            follow=follow,
            timestamps=timestamps,
            tail_lines=tail_lines,
            since=since,
            limit_bytes=limit_bytes,
            running=running,
        ):
            out += chunk
        return out

    return asyncio.run(main(), debug=True)


@pytest.fixture
def log(tmp_path: Path) -> str:
    path = tmp_path / "log"
    path.write_text(
        record(1, "one")
        + record(2, "err", "stderr")
        + record(3, "long ", tag="P")
        + record(3, "line")
        + record(4, "")
        + record(5, "last")
    )
    return str(path)


@pytest.mark.parametrize(
    ("sentence", "options", "expected"),
    [
        (
            "everything, both streams in order, a P record joined to its line",
            {},
            b"one\nerr\nlong line\n\nlast\n",
        ),
        ("the last two records", {"tail_lines": 2}, b"\nlast\n"),
        ("tail 0 gives nothing", {"tail_lines": 0}, b""),
        (
            "a tail longer than the log gives all",
            {"tail_lines": 100},
            b"one\nerr\nlong line\n\nlast\n",
        ),
        (
            "since drops older records",
            {"since": datetime(2026, 11, 21, 7, 33, 4, tzinfo=timezone.utc)},
            b"\nlast\n",
        ),
        ("limit_bytes cuts the text", {"limit_bytes": 6}, b"one\ner"),
        (
            "timestamps prefix each line once, pieces included",
            {"timestamps": True, "tail_lines": 4},
            f"{T0.format(3)} long line\n{T0.format(4)} \n{T0.format(5)} last\n".encode(),
        ),
    ],
)
def test_reading_options(log: str, sentence: str, options: dict, expected: bytes) -> None:
    assert collect([log], **options) == expected, sentence


def test_a_rotated_log_is_read_from_both_files_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "log"
    Path(str(path) + ".1").write_text(record(1, "old-1") + record(2, "old-2"))
    path.write_text(record(3, "new-1"))
    assert collect([str(path)]) == b"old-1\nold-2\nnew-1\n"
    assert collect([str(path)], tail_lines=2) == b"old-2\nnew-1\n"
    assert collect(logs.paths_for(str(path)), tail_lines=1) == b"new-1\n"
    assert collect([str(tmp_path / "missing")]) == b""


def test_follow_yields_new_lines_and_ends_once_stopped_and_drained(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_text(record(1, "first"))
    running = True
    seen: list[bytes] = []
    grew = asyncio.Condition()

    def append(line: str) -> None:
        with open(path, "a") as f:
            f.write(line)

    async def seen_at_least(count: int) -> None:
        async with grew:
            await grew.wait_for(lambda: len(seen) >= count)

    async def writer() -> None:
        # each line is written once the follower has passed on the one before: whatever the
        # machine's speed, a line that comes while following arrives on its own
        nonlocal running
        await seen_at_least(1)
        await asyncio.to_thread(append, record(2, "second"))
        await seen_at_least(2)
        # A rotation, as the shim does it, then the last line and the end of the container.
        os.replace(path, str(path) + ".1")
        await asyncio.to_thread(append, record(3, "third"))
        running = False

    async def main() -> None:
        task = asyncio.create_task(writer())
        async for chunk in logs.read(
            [str(path)],
            follow=True,
            timestamps=False,
            tail_lines=None,
            since=None,
            limit_bytes=None,
            running=lambda: running,
        ):
            seen.append(chunk)
            async with grew:
                grew.notify_all()
        await task

    asyncio.run(asyncio.wait_for(main(), 10), debug=True)
    assert b"".join(seen) == b"first\nsecond\nthird\n"
    assert len(seen) == 3  # each line as it came, not all at the end


def test_follow_with_a_limit_ends_at_the_limit_while_still_running(log: str) -> None:
    assert collect([log], follow=True, limit_bytes=3, running=lambda: True) == b"one"


def test_the_shims_writer_caps_the_log_by_rotating_the_older_half(tmp_path: Path) -> None:
    path = str(tmp_path / "log")
    writer = shim.LogWriter(path, max_bytes=4096)
    for i in range(500):
        writer.feed("stdout", f"line {i}\n".encode())
    current, rotated = os.path.getsize(path), os.path.getsize(path + ".1")
    assert current <= 2048
    assert rotated <= 2048
    text = collect([path])
    lines = text.decode().splitlines()
    assert lines[-1] == "line 499"
    assert lines == [f"line {i}" for i in range(500 - len(lines), 500)]  # contiguous, newest kept


def test_the_shims_writer_splits_long_lines_into_partial_records(tmp_path: Path) -> None:
    path = str(tmp_path / "log")
    writer = shim.LogWriter(path, max_bytes=10 * 1024 * 1024)
    long = b"x" * (shim.PARTIAL_MAX * 2 + 10)
    writer.feed("stdout", long[:100])
    writer.feed("stdout", long[100:] + b"\nno newline at the end")
    writer.feed("stdout", b"", final=True)
    tags = [line.split(b" ", 3)[2] for line in Path(path).read_bytes().splitlines()]
    assert tags == [b"P", b"P", b"F", b"F"]
    assert collect([path]) == long + b"\nno newline at the end\n"
