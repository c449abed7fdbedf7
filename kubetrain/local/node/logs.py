"""Reading a container's CRI-format log the way ``kubectl logs`` asks for it.

The shim writes one record per line, ``2026-11-21T07:33:08.123456789Z stdout F text``: the time
the output was read (RFC 3339, nanoseconds, UTC), the stream, ``F`` for a full line or ``P`` for
a piece of one longer than 16 KiB, and the text. Both streams share one file, in the order the
shim read them, and the file is rotated to ``<log>.1`` when it passes half of its cap, so an
attempt's log is at most two files (see :mod:`~kubetrain.local.node.shim`).

:func:`read` gives what kubelet's log reader gives: the text with ``tail_lines``, ``since``,
``timestamps`` (each line prefixed with its time and a space) and ``limit_bytes`` applied,
and with ``follow`` it goes on until the container has stopped and the file is drained. It
keeps its files open from the start, so a rotation while it reads loses nothing, and it
re-opens the log path when a rotation has replaced the file it was following.

Must not: write logs, know about pods or HTTP, or block the event loop (every read of a file
runs in a thread; a follow waits with ``asyncio.sleep``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Final

from kubetrain.local.node import shim

CHUNK: Final = 256 * 1024  # bytes read from a file at a time
FOLLOW_POLL: Final = 0.1  # seconds between looks for new output while following


def paths_for(path: str) -> list[str]:
    """An attempt's log files, oldest first: the rotated one, then the current one."""
    return [path + shim.ROTATED_SUFFIX, path]


@dataclass
class _Source:
    path: str
    fd: int
    offset: int = 0


async def read(
    paths: Sequence[str],
    *,
    follow: bool,
    timestamps: bool,
    tail_lines: int | None,
    since: datetime | None,
    limit_bytes: int | None,
    running: Callable[[], bool],
) -> AsyncIterator[bytes]:
    """The log's text, both streams merged in order; see the module docstring.

    ``paths`` are oldest first; naming only an attempt's current log is enough, its rotated
    predecessor is read too. A file that does not exist is skipped (followed: waited for).
    """
    ordered = _with_rotated(paths)
    live = ordered[-1] if ordered else ""
    sources = await asyncio.to_thread(_open, ordered)
    text = _Formatter(timestamps, since, limit_bytes)
    try:
        if tail_lines is not None:
            await asyncio.to_thread(_seek_tail, sources, tail_lines)
        for source in sources:
            async for chunk in _drain(source, text):
                yield chunk
            if text.done:
                return
        if not follow:
            return
        current = sources[-1] if sources and sources[-1].path == live else None
        while not text.done:
            still_running = running()
            got = False
            if current is not None:
                async for chunk in _drain(current, text):
                    got = True
                    yield chunk
            if got:
                continue
            replaced = await asyncio.to_thread(_replacement, live, current)
            if replaced is not None:
                sources.append(replaced)
                current = replaced
                continue
            if not still_running:
                return
            await asyncio.sleep(FOLLOW_POLL)
    finally:
        for source in sources:
            os.close(source.fd)


async def _drain(source: _Source, text: _Formatter) -> AsyncIterator[bytes]:
    while not text.done:
        data = await asyncio.to_thread(os.pread, source.fd, CHUNK, source.offset)
        if not data:
            return
        source.offset += len(data)
        out = text.feed(data)
        if out:
            yield out


def _with_rotated(paths: Sequence[str]) -> list[str]:
    ordered: list[str] = []
    for path in paths:
        rotated = path + shim.ROTATED_SUFFIX
        if (
            not path.endswith(shim.ROTATED_SUFFIX)
            and rotated not in paths
            and rotated not in ordered
        ):
            ordered.append(rotated)
        if path not in ordered:
            ordered.append(path)
    return ordered


def _open(paths: list[str]) -> list[_Source]:
    sources = []
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            sources.append(_Source(path, os.open(path, os.O_RDONLY)))
    return sources


def _replacement(live: str, current: _Source | None) -> _Source | None:
    """The live path opened anew if it names another file than the one being followed."""
    try:
        fd = os.open(live, os.O_RDONLY)
    except FileNotFoundError:
        return None
    if current is not None and os.fstat(fd).st_ino == os.fstat(current.fd).st_ino:
        os.close(fd)
        return None
    return _Source(live, fd)


def _seek_tail(sources: list[_Source], lines: int) -> None:
    """Set the offsets so that only the last ``lines`` records remain to be read."""
    sizes = [os.fstat(s.fd).st_size for s in sources]
    for source, size in zip(sources, sizes, strict=False):
        source.offset = size
    if lines <= 0:
        return
    terminator_seen = False  # the newline that ends the last record does not start one
    count = 0
    for i in reversed(range(len(sources))):
        end = sizes[i]
        pos = end
        while pos > 0:
            size = min(CHUNK, pos)
            pos -= size
            block = os.pread(sources[i].fd, size, pos)
            j = len(block)
            while (j := block.rfind(b"\n", 0, j)) >= 0:
                if not terminator_seen:
                    terminator_seen = True
                    continue
                count += 1
                if count == lines:
                    sources[i].offset = pos + j + 1
                    return
            sources[i].offset = pos
        sources[i].offset = 0
    for source in sources:
        source.offset = 0


class _Formatter:
    """CRI records in, the text kubectl shows out."""

    def __init__(self, timestamps: bool, since: datetime | None, limit: int | None) -> None:
        self.timestamps = timestamps
        self.since = _stamp(since) if since is not None else None
        self.left = limit
        self.pending = b""
        self.line_start = True
        self.done = limit is not None and limit <= 0

    def feed(self, data: bytes) -> bytes:
        records = (self.pending + data).split(b"\n")
        self.pending = records.pop()
        out: list[bytes] = []
        for record in records:
            parts = record.split(b" ", 3)
            if len(parts) < 3:
                continue  # not a CRI record
            stamp, _stream, tag = parts[:3]
            content = parts[3] if len(parts) == 4 else b""
            if self.since is not None and stamp < self.since:
                continue
            if self.timestamps and self.line_start:
                out.append(stamp + b" ")
            out.append(content)
            self.line_start = tag != b"P"
            if self.line_start:
                out.append(b"\n")
        text = b"".join(out)
        if self.left is not None:
            if len(text) >= self.left:
                text = text[: self.left]
                self.done = True
            self.left -= len(text)
        return text


def _stamp(moment: datetime) -> bytes:
    """A time as the shim writes it (:func:`~kubetrain.local.node.shim.rfc3339`), so that
    records compare as bytes."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    whole = int(moment.replace(microsecond=0).timestamp())
    return shim.rfc3339(whole * 1_000_000_000 + moment.microsecond * 1000).encode()
