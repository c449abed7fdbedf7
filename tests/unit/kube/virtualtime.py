"""An asyncio event loop on a virtual clock, for timing tests that must neither sleep for real
nor depend on how busy the machine is: whenever nothing is ready to run, the clock jumps to
the next timer instead of waiting for it. A watch held open for 300 s, or a watchdog that
fires after 330 s, then takes microseconds, and every instant the test sees is exact.

Only for code that does no real I/O while the clock is virtual (an in-memory stand-in for the
server): a socket's readiness would not move the clock, and time spent on one would not show.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _Selector(selectors.DefaultSelector):
    """Polls without blocking; where the loop would have waited for a timer, moves the clock
    to it instead. A wait without a timer (a thread waking the loop at the end of a run) is a
    real one."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            return super().select(None)
        self.now += timeout
        return []


class Loop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` is the virtual clock, starting at 0."""

    def __init__(self) -> None:
        self._virtual = _Selector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to the end on a fresh virtual-time loop, with asyncio debug on."""
    loop = Loop()
    loop.set_debug(True)
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
