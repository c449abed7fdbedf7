"""asyncio's structured-concurrency primitives on every Python kubetrain supports.

kubetrain runs on Python 3.10 and later. ``asyncio.TaskGroup`` and ``asyncio.timeout`` came in
3.11; on 3.10 the same classes come from the ``taskgroup`` backport, which also raises
``TimeoutError`` (the builtin) when a timeout expires, as 3.11 does. Code uses
``_aio.TaskGroup`` and ``_aio.timeout`` instead of asyncio's, and catches
``_aio.TIMEOUT_ERRORS`` where a library's own timeout (aiohttp's, ``asyncio.wait_for``) may
expire: those raise ``asyncio.TimeoutError``, the builtin only from 3.11.

Must not: add behaviour of its own. Once 3.10 is dropped, callers go back to asyncio's names
and this module goes.
"""

from __future__ import annotations

import asyncio
import sys

if sys.version_info >= (3, 11):
    from asyncio import TaskGroup, timeout
else:  # pragma: no cover - exercised by the 3.10 test run
    from taskgroup import TaskGroup, timeout

TIMEOUT_ERRORS: tuple[type[Exception], ...] = (TimeoutError, asyncio.TimeoutError)

__all__ = ["TIMEOUT_ERRORS", "TaskGroup", "timeout"]
