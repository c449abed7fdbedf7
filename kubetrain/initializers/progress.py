"""How far a download has come, as plain lines in the initializer's log.

An initializer's log is read with ``kubectl logs``, not on a terminal, so progress is written
as whole lines (``dataset initializer: 3 of 7 files, 12.5 MB of 40.0 MB (31%)``) rather than
a bar redrawn with carriage returns: at most one line per :data:`INTERVAL` seconds while bytes
arrive, and one when the last file is done. Every source reports through a :class:`Progress`
(thread-safe: the S3 and Hugging Face downloads run several files at once), and the Hugging
Face download's own progress bars are turned into the same lines by :class:`LogBar`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final

log = logging.getLogger("kubetrain.initializers")

INTERVAL: Final = 2.0  # seconds between two progress lines while a download runs
_UNITS: Final = ("B", "kB", "MB", "GB", "TB")


def size(count: float) -> str:
    """``count`` bytes for a reader: ``512 B``, ``12.5 MB`` (powers of 1000, as ``du --si``)."""
    value = float(count)
    for unit in _UNITS:
        if abs(value) < 1000 or unit == _UNITS[-1]:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


class Progress:
    """Files and bytes done out of a known total, logged as lines."""

    def __init__(
        self,
        label: str,
        files: int,
        total_bytes: int | None,
        *,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
    ) -> None:
        self.label = label
        self.files = files
        self.total_bytes = total_bytes
        self.interval = interval
        self.clock = clock
        self.logger = logger
        self.files_done = 0
        self.bytes_done = 0
        self._lock = threading.Lock()
        self._last = clock()
        self._began = self._last

    def line(self) -> str:
        """The state as one line: files, bytes and the share of the bytes when known."""
        text = f"{self.label}: {self.files_done} of {self.files} files, {size(self.bytes_done)}"
        if self.total_bytes:
            share = min(100, 100 * self.bytes_done // self.total_bytes)
            text += f" of {size(self.total_bytes)} ({share}%)"
        return text

    def start(self) -> None:
        with self._lock:
            total = f", {size(self.total_bytes)}" if self.total_bytes is not None else ""
            self.logger.info("%s: %d files to fetch%s", self.label, self.files, total)

    def advance(self, count: int) -> None:
        """``count`` more bytes arrived; logs a line when the last one is old enough."""
        with self._lock:
            self.bytes_done += count
            self._maybe_log()

    def file_done(self, name: str, count: int) -> None:
        """One more file is complete (its ``count`` bytes already advanced)."""
        with self._lock:
            self.files_done += 1
            self.logger.debug("%s: %s (%s)", self.label, name, size(count))
            if self.files_done == self.files:
                self._log()
            else:
                self._maybe_log()

    def finish(self) -> None:
        """The closing line: everything, and how long it took."""
        with self._lock:
            took = self.clock() - self._began
            self.logger.info(
                "%s: fetched %d files, %s in %.1fs",
                self.label,
                self.files_done,
                size(self.bytes_done),
                took,
            )

    def _maybe_log(self) -> None:
        if self.clock() - self._last >= self.interval:
            self._log()

    def _log(self) -> None:
        self._last = self.clock()
        self.logger.info("%s", self.line())


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def log_bar(label: str, *, interval: float = INTERVAL) -> type[Any]:
    """A ``tqdm`` class whose bars are logged as lines at most once per ``interval`` seconds
    and when they finish, for ``huggingface_hub.snapshot_download(tqdm_class=...)``: its files
    bar reads ``<label>: 3 of 7 files``, its bytes bar ``<label>: 12.5 MB of 40.0 MB``. The
    library's second bytes bar (``Reconstructing``, for files stored with Xet) counts the same
    bytes again and is not logged. Imports tqdm, which huggingface_hub brings."""
    from tqdm.auto import tqdm

    class LogBar(tqdm):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            kwargs["disable"] = False
            kwargs["mininterval"] = interval
            kwargs["file"] = _Discard()  # tqdm's own writes (newlines on close) go nowhere
            self._logged_at = 0.0
            self._logged: tuple[float, float | None] | None = None
            super().__init__(*args, **kwargs)

        def display(self, msg: str | None = None, pos: int | None = None) -> bool:
            if (self.desc or "").startswith("Reconstruct"):
                return True
            now = time.monotonic()
            state = (self.n, self.total)
            finished = bool(self.total) and self.n >= self.total
            if state == self._logged or (not self.n and not finished):
                return True
            if not finished and now - self._logged_at < interval:
                return True
            self._logged_at, self._logged = now, state
            if self.unit == "B":
                done = f"{size(self.n)} of {size(self.total)}" if self.total else size(self.n)
            else:
                done = f"{self.n:g} of {self.total:g} files" if self.total else f"{self.n:g} files"
            log.info("%s: %s", label, done)
            return True

    return LogBar
