"""A controller's work queue, with client-go's promises (k8s.io/client-go/util/workqueue).

- **De-duplicated**: a key added many times before a worker takes it is processed once.
- **One at a time**: a key being processed is never handed to a second worker; added again
  meanwhile, it is queued once more when the first worker calls :meth:`WorkQueue.done`.
- **Delayed**: :meth:`WorkQueue.add_after` holds a key back; a key waiting twice keeps the
  earlier time.
- **Rate-limited retries**: :meth:`WorkQueue.add_rate_limited` delays a failing key by the
  larger of a per-key exponential back-off (5 ms doubling to 1000 s) and an overall token
  bucket (10 per second, burst 100): controller-runtime's default controller rate limiter.
  :meth:`WorkQueue.forget` resets the key's back-off once it succeeds.

Time comes from an injected clock, so the delays are tested without sleeping; the async
:meth:`WorkQueue.get` waits on the event loop for the next key to become ready.

Owns: the keys waiting and in process, and the rate limiters' memory. Must not: know what a
key means or call a reconciler (the controller's worker loop does).
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import time
from collections.abc import Callable, Hashable
from typing import Final, Generic, Protocol, TypeVar

from kubetrain import _aio
from kubetrain.kube import instruments

K = TypeVar("K", bound=Hashable)

Clock = Callable[[], float]

BASE_DELAY: Final = 0.005  # seconds: the first retry of a failing key
MAX_DELAY: Final = 1000.0  # seconds: the longest a failing key waits
BUCKET_QPS: Final = 10.0  # retries per second over all keys, once the burst is spent
BUCKET_BURST: Final = 100


class RateLimiter(Protocol[K]):
    def when(self, key: K) -> float:
        """Seconds the key should wait before its next try (and count this try)."""
        ...

    def forget(self, key: K) -> None:
        """The key succeeded: start over next time."""
        ...

    def retries(self, key: K) -> int:
        """How many times the key has failed in a row."""
        ...


class ItemExponentialFailure(Generic[K]):
    """Per key: ``base * 2**failures``, at most ``maximum`` (client-go's
    ItemExponentialFailureRateLimiter)."""

    def __init__(self, base: float = BASE_DELAY, maximum: float = MAX_DELAY) -> None:
        self.base = base
        self.maximum = maximum
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if failures > 64:  # 2**64 * base is past any maximum; spare the float
            return self.maximum
        return min(self.maximum, self.base * 2**failures)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def retries(self, key: K) -> int:
        return self._failures.get(key, 0)


class TokenBucket(Generic[K]):
    """Over all keys: ``burst`` tries at once, then ``qps`` per second; each try reserves a
    token and waits until it is there (client-go's BucketRateLimiter on golang's
    rate.Limiter)."""

    def __init__(
        self, qps: float = BUCKET_QPS, burst: int = BUCKET_BURST, clock: Clock = time.monotonic
    ) -> None:
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def when(self, key: K) -> float:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
        self._at = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, key: K) -> None:
        pass

    def retries(self, key: K) -> int:
        return 0


class MaxOf(Generic[K]):
    """The longest wait any of the limiters asks for (each one counts the try)."""

    def __init__(self, *limiters: RateLimiter[K]) -> None:
        self.limiters = limiters

    def when(self, key: K) -> float:
        return max([limiter.when(key) for limiter in self.limiters])

    def forget(self, key: K) -> None:
        for limiter in self.limiters:
            limiter.forget(key)

    def retries(self, key: K) -> int:
        return max(limiter.retries(key) for limiter in self.limiters)


def default_rate_limiter(clock: Clock = time.monotonic) -> MaxOf[K]:
    """controller-runtime's default: 5 ms → 1000 s per key, and 10 qps / burst 100 overall."""
    return MaxOf(ItemExponentialFailure(), TokenBucket(clock=clock))


class WorkQueue(Generic[K]):
    """Keys to process (see the module docstring for its promises).

    ``name`` labels its ``workqueue_*`` metrics, if ``metrics`` are given.
    """

    def __init__(
        self,
        name: str,
        *,
        rate_limiter: RateLimiter[K] | None = None,
        clock: Clock = time.monotonic,
        metrics: instruments.QueueMetrics | None = None,
    ) -> None:
        self.name = name
        self._clock = clock
        self._limiter: RateLimiter[K] = rate_limiter or default_rate_limiter(clock)
        self._metrics = metrics
        self._queue: collections.deque[K] = collections.deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiting: list[tuple[float, int, K]] = []  # heap of (ready at, tie-break, key)
        self._ready_at: dict[K, float] = {}
        self._order = itertools.count()
        self._added_at: dict[K, float] = {}
        self._started_at: dict[K, float] = {}
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        """Keys ready to be taken (client-go's Len; waiting and in-process keys excluded)."""
        return len(self._queue)

    @property
    def processing(self) -> frozenset[K]:
        return frozenset(self._processing)

    @property
    def busy(self) -> bool:
        """Whether keys are ready or in a pass (no key held back only by a delay)."""
        return bool(self._queue or self._processing)

    @property
    def waiting(self) -> int:
        """Keys held back by :meth:`add_after` or a retry delay."""
        return len(self._ready_at)

    def add(self, key: K) -> None:
        """Queue ``key`` now, unless it is queued already."""
        if key in self._dirty:
            return
        self._dirty.add(key)
        if self._metrics is not None:
            self._metrics.queue_adds.labels(self.name).inc()
        self._added_at.setdefault(key, self._clock())
        if key in self._processing:
            return  # queued again by done()
        self._queue.append(key)
        self._changed_depth()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` in ``delay`` seconds (at once when not positive); a key already
        waiting keeps whichever time is earlier."""
        if delay <= 0:
            self.add(key)
            return
        ready = self._clock() + delay
        current = self._ready_at.get(key)
        if current is not None and current <= ready:
            return
        self._ready_at[key] = ready
        heapq.heappush(self._waiting, (ready, next(self._order), key))
        self._changed.set()

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after its rate limiter's delay (it failed); returns the delay."""
        if self._metrics is not None:
            self._metrics.queue_retries.labels(self.name).inc()
        delay = self._limiter.when(key)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """``key`` succeeded: its next failure starts the back-off over."""
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """Failures of ``key`` in a row (since the last :meth:`forget`)."""
        return self._limiter.retries(key)

    def get_nowait(self) -> K | None:
        """The next ready key, now marked in process, or None."""
        self._promote()
        if not self._queue:
            return None
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        now = self._clock()
        added = self._added_at.pop(key, now)
        self._started_at[key] = now
        if self._metrics is not None:
            self._metrics.queue_latency.labels(self.name).observe(max(0.0, now - added))
        self._changed_depth()
        return key

    async def get(self) -> K:
        """Wait for the next ready key and mark it in process; call :meth:`done` after."""
        while True:
            key = self.get_nowait()
            if key is not None:
                return key
            self._changed.clear()
            wait = self._waiting[0][0] - self._clock() if self._waiting else None
            try:
                async with _aio.timeout(None if wait is None else max(0.0, wait)):
                    await self._changed.wait()
            except TimeoutError:
                pass  # a held-back key is due

    def done(self, key: K) -> None:
        """Processing ``key`` ended; if it was added meanwhile, it is queued again."""
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if started is not None and self._metrics is not None:
            elapsed = max(0.0, self._clock() - started)
            self._metrics.work_duration.labels(self.name).observe(elapsed)
        if key in self._dirty:
            self._queue.append(key)
            self._changed_depth()

    def _promote(self) -> None:
        now = self._clock()
        while self._waiting and self._waiting[0][0] <= now:
            ready, _, key = heapq.heappop(self._waiting)
            if self._ready_at.get(key) != ready:
                continue  # superseded by an earlier time
            del self._ready_at[key]
            self.add(key)

    def _changed_depth(self) -> None:
        self._changed.set()
        if self._metrics is not None:
            self._metrics.queue_depth.labels(self.name).set(len(self._queue))
