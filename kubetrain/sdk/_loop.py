"""A private asyncio event loop in a background thread, so that synchronous callers (a
notebook, a script) can use kubetrain's async client.

Each SDK client owns one. Calls submit a coroutine and block until it finishes; an async
iterator is consumed one item per submission, so a streaming result reaches the caller as
each item arrives. Ctrl-C in the caller cancels the coroutine it was waiting for. The loop
must never wait for itself: a call made from its own thread (say, from a callback the loop
runs) raises instead of deadlocking.

Owns: the thread and the loop, and closing both. Must not: know about Kubernetes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Iterator
from typing import Any, Final, TypeVar

from kubetrain import _aio
from kubetrain.sdk._errors import SdkError

log = logging.getLogger(__name__)

T = TypeVar("T")
CLOSE_TIMEOUT: Final = 10.0  # seconds the loop's thread is given to finish on close


class Loop:
    """An event loop running in a daemon thread named ``name``."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._closed = False
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(self._loop)
                for task in pending:
                    task.cancel()
                if pending:
                    self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            finally:
                self._loop.close()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and return its result (or raise its exception). After
        ``timeout`` seconds it is cancelled, and :class:`TimeoutError` raised once it has
        unwound."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise SdkError(
                "a kubetrain client was called from its own event loop (from a callback it "
                "runs); call it from another thread"
            )
        if self._closed:
            coro.close()
            raise SdkError("the client is closed")
        work = coro if timeout is None else _limited(coro, timeout)
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            concurrent.futures.wait([future])
        except BaseException:  # Ctrl-C while waiting: stop the work, then let it through
            future.cancel()
            raise
        return future.result()

    def next(self, items: AsyncIterator[T], timeout: float | None = None) -> T:
        """The next item of an async iterator (StopAsyncIteration at its end)."""
        return self.run(_next(items), timeout)

    def close_iterator(self, items: AsyncIterator[Any]) -> None:
        """Close an async generator on the loop (its ``finally`` blocks run there)."""
        if isinstance(items, AsyncGenerator) and not self._closed:
            with contextlib.suppress(SdkError, RuntimeError):  # (still running after Ctrl-C)
                self.run(_close(items))

    def iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        """The items of an async iterator, each handed over as soon as the loop produced it.
        Leaving the loop early (break, an exception, garbage collection) closes it there."""
        try:
            while True:
                try:
                    item = self.next(items)
                except StopAsyncIteration:
                    return
                yield item
        finally:
            self.close_iterator(items)

    def close(self, last: Coroutine[Any, Any, Any] | None = None) -> None:
        """Run ``last`` (a clean-up), then stop the loop and wait for its thread."""
        if self._closed:
            if last is not None:
                last.close()
            return
        try:
            if last is not None and self._thread.is_alive():
                try:
                    self.run(last, timeout=CLOSE_TIMEOUT)
                except (OSError, RuntimeError, TimeoutError):
                    log.debug("clean-up on close failed", exc_info=True)
        finally:
            self._closed = True
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._loop.stop)
                if threading.current_thread() is not self._thread:
                    self._thread.join(CLOSE_TIMEOUT)


async def _limited(coro: Coroutine[Any, Any, T], timeout: float) -> T:
    try:
        return await asyncio.wait_for(coro, timeout)
    except _aio.TIMEOUT_ERRORS as exc:
        raise TimeoutError(f"no result within {timeout}s") from exc


async def _next(items: AsyncIterator[T]) -> T:
    return await anext(items)


async def _close(items: AsyncGenerator[Any, Any]) -> None:
    await items.aclose()
