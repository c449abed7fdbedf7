"""The event recorder: core/v1 Events on the objects a component acts on, as client-go's
record.EventRecorder and its Broadcaster write them (what ``kubectl describe`` shows). The
operator's controllers, the local scheduler and the node agent all record through it.

An event is named ``<object>.<hex timestamp>`` in the object's namespace (``default`` for a
cluster-scoped one), with ``involvedObject`` taken from the object, ``source.component`` and
``reportingComponent`` the controller's name, and ``count`` 1. The same event again (same
object, type, reason and message) within ten minutes is not a new object: the existing one
gets ``count + 1`` and a new ``lastTimestamp`` (client-go's EventCorrelator); if it was
deleted meanwhile, a new one is created. An event may name a container (``fieldPath``, as
the kubelet's do), an ``action`` and a ``related`` object (as kube-scheduler's do). Messages
are cut to 1024 characters. Timestamps are taken when the event is recorded, not when it is
written.

Recording an event must neither fail nor slow a reconcile, so it is a queue entry: a
:class:`Recorder` (one per controller) hands events to the :class:`Broadcaster` of its
manager, whose writer task writes them in the background, as client-go's broadcaster does:

- the queue is bounded (:data:`QUEUE_SIZE`); when it is full an event is dropped,
  counted in ``kubetrain_events_dropped_total{reason="full"}`` where the process counts
  drops (the operator does), and a warning is logged at most
  every :data:`DROP_WARNING_INTERVAL` seconds. Recording never waits for room.
- :data:`WRITERS` writer(s); every event of one object goes to the same writer, so the events
  of an object are written in the order they were recorded, and the count of a repeated
  event is bumped by one writer only. The aggregation (create, or patch the count) is decided
  by that writer when the event's turn comes.
- a write that fails for a reason that passes (no answer, 429, 5xx) is tried again after a
  growing pause, up to :attr:`Retry.tries` times (reason ``failed`` when all fail); one the
  server refuses (any other 4xx) is dropped with a warning (reason ``rejected``).
- while the controllers are busy (a ``busy`` callable says so: keys queued or being
  reconciled), an event waits, for at most :data:`YIELD_LIMIT` seconds after it was recorded:
  under load the API server's time goes to the pods, Services and status the reconciles
  write, and the events follow a moment later, as an API server's priority and fairness
  would order them. Of the 4,500 events a burst of 500 PyTorchJobs records, about 500 were
  written during the burst before, and 30 now (bench/operator.py).
- when the writer is stopped, what is queued is still written, for at most
  :data:`DRAIN_TIMEOUT` seconds; the rest is dropped (reason ``stopped``).

Without a running writer (a recorder used on its own, a test, a reconciler driven by hand),
:meth:`Recorder.event` writes before it returns: the caller drains the queue itself.
:meth:`Recorder.flush` waits until everything queued so far is written either way.

Owns: building events, the queue, the writers, the cache of recent events for aggregation,
the retries of one write. Must not: block or fail a reconcile, or decide which events a
controller emits (reasons and messages are the reconcilers' constants).
Not done: client-go's spam filter (25 events per object, then one per 5 minutes) and its
"combined from similar events" aggregation of events that differ only in message.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import itertools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from kubetrain import _aio, kube, timefmt
from kubetrain.kube import instruments, recent

log = logging.getLogger(__name__)

EVENTS: Final = kube.Resource("", "v1", "events", kind="Event")
MAX_MESSAGE: Final = 1024  # characters
WINDOW: Final = 600.0  # seconds within which the same event is counted, not repeated
# Events waiting to be written. client-go keeps 1000 (and as many again in its sink's
# channel); a burst of 500 PyTorchJobs records 4500 events faster than one writer can write
# them next to the pods being created, so the queue holds ten times that (under 1 KB each).
QUEUE_SIZE: Final = 10_000
# Events written at a time. One, as client-go: more writers compete with the reconciles'
# own writes at the API server and slow them (bench/README.md); one object's events always
# go to the same writer, so its events keep their order with any number.
WRITERS: Final = 1
DRAIN_TIMEOUT: Final = 2.0  # seconds a stopping writer keeps writing what is queued
YIELD_LIMIT: Final = 5.0  # seconds an event may wait for busy controllers
YIELD_POLL: Final = 0.05  # seconds between looks at whether they still are
DROP_WARNING_INTERVAL: Final = 10.0  # seconds between warnings about a full queue
NORMAL: Final = "Normal"
WARNING: Final = "Warning"

# kubetrain_events_dropped_total's reasons
FULL: Final = "full"
REJECTED: Final = "rejected"
FAILED: Final = "failed"
STOPPED: Final = "stopped"

EventType = Literal["Normal", "Warning"]

_Identity = tuple[str, ...]
_TRANSIENT: Final = (kube.Unavailable, kube.TooManyRequests, kube.ServerError)


@dataclass(frozen=True)
class Retry:
    """How a write that failed for a passing reason is tried again: ``tries`` in all, the
    pause doubling from ``initial`` up to ``cap`` seconds (longer where a 429 asks for it,
    within the cap)."""

    tries: int = 6
    initial: float = 0.2
    cap: float = 5.0

    def pause(self, failures: int, error: kube.ApiError) -> float:
        """Seconds to wait after the ``failures``-th failed try."""
        pause = min(self.cap, self.initial * 2 ** (failures - 1))
        asked = error.retry_after
        return min(self.cap, max(pause, asked)) if asked is not None else pause


@dataclass(frozen=True)
class _Pending:
    """One recorded event waiting for its write; all of it fixed when it was recorded."""

    identity: _Identity
    ref: Mapping[str, str]
    type: str
    reason: str
    message: str
    component: str
    host: str
    at: float  # the recorder's clock
    now: str  # metav1.Time
    name: str  # the name it gets if it is created
    instance: str  # reportingInstance
    event_time: str | None  # metav1.MicroTime, for recorders that write eventTime
    action: str
    related: Mapping[str, str] | None

    @property
    def lane(self) -> tuple[str, ...]:
        return tuple(self.ref.get(k, "") for k in ("namespace", "name", "uid"))

    def describe(self) -> str:
        return f"{self.reason} on {self.ref.get('kind')} {self.ref.get('name')}"


@dataclass
class _Lane:
    items: collections.deque[_Pending] = field(default_factory=collections.deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    cut: bool = False  # a write of the first item was cancelled: it may have landed


def involved_object(
    obj: Mapping[str, Any], assumed: tuple[str, str] = ("", ""), field_path: str = ""
) -> dict[str, str]:
    """The ObjectReference an event about ``obj`` carries; ``assumed`` is the apiVersion and
    kind of an object that comes without them (an item of a list), ``field_path`` the part
    of it the event is about (``spec.containers{name}``)."""
    meta = obj.get("metadata") or {}
    ref = {
        "kind": obj.get("kind") or assumed[1],
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": obj.get("apiVersion") or assumed[0],
        "resourceVersion": meta.get("resourceVersion"),
        "fieldPath": field_path,
    }
    return {k: v for k, v in ref.items() if isinstance(v, str) and v}


def clip(message: str) -> str:
    """At most :data:`MAX_MESSAGE` characters."""
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def timestamp(moment: datetime.datetime) -> str:
    """A metav1.Time: RFC 3339 in UTC, whole seconds."""
    return timefmt.seconds(moment)


def micro_timestamp(moment: datetime.datetime) -> str:
    """A metav1.MicroTime (an Event's ``eventTime``): RFC 3339 in UTC, microseconds."""
    return timefmt.micro(moment)


def build(
    ref: Mapping[str, str],
    type: str,
    reason: str,
    message: str,
    *,
    name: str,
    component: str,
    host: str,
    now: str,
    instance: str | None = None,
    event_time: str | None = None,
    action: str = "",
    related: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A new core/v1 Event (count 1); ``instance`` (the reportingInstance) is ``host``
    unless given."""
    source = {"component": component, **({"host": host} if host else {})}
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ref.get("namespace") or "default"},
        "involvedObject": dict(ref),
        "reason": reason,
        "message": message,
        "source": source,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": type,
        "reportingComponent": component,
        "reportingInstance": host if instance is None else instance,
    }
    if event_time is not None:
        body["eventTime"] = event_time
    if action:
        body["action"] = action
    if related is not None:
        body["related"] = dict(related)
    return body


class Broadcaster:
    """The queue and the writers of a manager's events (see the module docstring); its
    recorders put events in, :meth:`run` writes them."""

    def __init__(
        self,
        client: kube.Client,
        *,
        queue_size: int = QUEUE_SIZE,
        writers: int = WRITERS,
        retry: Retry = Retry(),
        drain_timeout: float = DRAIN_TIMEOUT,
        dropped: instruments.Family | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        busy: Callable[[], bool] | None = None,
        yield_limit: float = YIELD_LIMIT,
    ) -> None:
        if queue_size < 1 or writers < 1 or retry.tries < 1:
            raise ValueError("queue_size, writers and retry.tries must be 1 or more")
        self.client = client
        self.queue_size = queue_size
        self.retry = retry
        self.drain_timeout = drain_timeout
        self.dropped = dropped if dropped is not None else instruments.UNCOUNTED
        for reason in (FULL, REJECTED, FAILED, STOPPED):  # exposed as 0 before any drop
            self.dropped.labels(reason)
        self._clock = clock
        self._sleep = sleep
        self._busy = busy
        self.yield_limit = yield_limit
        self._lanes = [_Lane() for _ in range(writers)]
        self._queued = 0  # waiting or being written
        self._idle = asyncio.Event()
        self._idle.set()
        self._running = False
        self._direct = asyncio.Lock()
        self._recent = recent.RecentEvents()
        self._sequence = itertools.count()
        self._full_drops = 0
        self._warned_at = -math.inf

    @property
    def running(self) -> bool:
        """Whether :meth:`run` writes the queue now."""
        return self._running

    @property
    def queued(self) -> int:
        """Events not written yet (waiting, or being written)."""
        return self._queued

    def name_for(self, object_name: str, moment: datetime.datetime) -> str:
        """A new event's name: unique even for events recorded in the same microsecond."""
        nanos = int(moment.timestamp() * 1_000_000) * 1000 + next(self._sequence) % 1000
        return f"{object_name}.{nanos:x}"

    def submit(self, item: _Pending) -> bool:
        """Queue ``item``; False (and counted) when the queue is full. Never waits."""
        if self._queued >= self.queue_size:
            self._drop_full(item)
            return False
        lane = self._lanes[hash(item.lane) % len(self._lanes)]
        lane.items.append(item)
        lane.ready.set()
        self._queued += 1
        self._idle.clear()
        return True

    async def flush(self) -> None:
        """Return once every event queued so far is written or dropped. Without a running
        writer, the caller writes them itself, one at a time."""
        if self._running:
            await self._idle.wait()
            return
        async with self._direct:
            for lane in self._lanes:
                await self._work(lane, until_empty=True)

    async def run(self) -> None:
        """Write queued events until cancelled; then drain the queue for at most
        ``drain_timeout`` seconds."""
        if self._running:
            raise RuntimeError("the event writer runs already")
        self._running = True
        # asyncio's events belong to the loop that first waits on them: new ones for this run
        self._idle = asyncio.Event()
        if not self._queued:
            self._idle.set()
        for lane in self._lanes:
            lane.ready = asyncio.Event()
            if lane.items:
                lane.ready.set()
        try:
            async with _aio.TaskGroup() as group:
                for number, lane in enumerate(self._lanes):
                    group.create_task(self._work(lane), name=f"event-writer-{number}")
        except asyncio.CancelledError:
            await self._drain()
            raise
        finally:
            self._running = False

    async def _drain(self) -> None:
        if not self._queued:
            return
        try:
            async with _aio.timeout(self.drain_timeout), _aio.TaskGroup() as group:
                for number, lane in enumerate(self._lanes):
                    work = self._work(lane, until_empty=True)
                    group.create_task(work, name=f"event-drain-{number}")
        except TimeoutError:
            left = self._queued
            for lane in self._lanes:
                lane.items.clear()
                lane.cut = False
            self._done(left)
            self.dropped.labels(STOPPED).inc(left)
            log.warning("%d events not written: the writer stopped", left)

    async def _work(self, lane: _Lane, *, until_empty: bool = False) -> None:
        while True:
            if not lane.items:
                if until_empty:
                    return
                lane.ready.clear()
                await lane.ready.wait()
                continue
            # The event stays first in its lane until written: a write cut by a stop is done
            # again by the drain (a create that landed answers 409, a patch sets the same
            # count).
            if not until_empty:
                await self._yield(lane.items[0])
            tried, lane.cut = lane.cut, True
            await self._write(lane.items[0], tried=tried)
            lane.cut = False
            lane.items.popleft()
            self._done(1)

    async def _yield(self, item: _Pending) -> None:
        """Wait while the controllers are busy, until ``yield_limit`` seconds after ``item``
        was recorded (``item.at`` is the recorder's clock: a manager's recorders and its
        broadcaster share ``time.monotonic``)."""
        if self._busy is None:
            return
        while self._busy() and self._clock() - item.at < self.yield_limit:
            await self._sleep(YIELD_POLL)

    def _done(self, count: int) -> None:
        self._queued -= count
        if self._queued == 0:
            self._idle.set()

    def _drop_full(self, item: _Pending) -> None:
        self.dropped.labels(FULL).inc()
        self._full_drops += 1
        now = self._clock()
        if now - self._warned_at >= DROP_WARNING_INTERVAL:
            log.warning(
                "event queue full (%d events); %d events dropped since the last warning, "
                "the latest %s",
                self._queued,
                self._full_drops,
                item.describe(),
            )
            self._warned_at = now
            self._full_drops = 0

    async def _write(self, item: _Pending, *, tried: bool) -> None:
        """Write one event, with retries; never raises but for cancellation. ``tried``: an
        earlier write of it was cut short."""
        failures = 0
        while True:
            try:
                await self._record(item, retried=tried or failures > 0)
                return
            except _TRANSIENT as exc:
                failures += 1
                if failures >= self.retry.tries:
                    self.dropped.labels(FAILED).inc()
                    log.warning(
                        "event %s not recorded after %d tries: %s", item.describe(), failures, exc
                    )
                    return
                pause = self.retry.pause(failures, exc)
                log.warning(
                    "event %s not recorded yet (%s); trying again in %.1fs",
                    item.describe(),
                    exc,
                    pause,
                )
                await self._sleep(pause)
            except kube.ApiError as exc:
                self.dropped.labels(REJECTED).inc()
                log.warning("event %s not recorded: %s", item.describe(), exc)
                return

    async def _record(self, item: _Pending, *, retried: bool) -> None:
        written = self._recent.get(item.identity)
        if written is not None and item.at - written.seen_at <= WINDOW:
            patch = {"count": written.count + 1, "lastTimestamp": item.now, "message": item.message}
            try:
                await self.client.patch(EVENTS, written.name, patch, namespace=written.namespace)
            except kube.NotFound:
                log.debug(
                    "event %s/%s is gone; creating a new one", written.namespace, written.name
                )
            else:
                written.count += 1
                written.seen_at = item.at
                self._recent.remember(item.identity, written)
                return
        body = build(
            item.ref,
            item.type,
            item.reason,
            item.message,
            name=item.name,
            component=item.component,
            host=item.host,
            now=item.now,
            instance=item.instance,
            event_time=item.event_time,
            action=item.action,
            related=item.related,
        )
        namespace = body["metadata"]["namespace"]
        try:
            await self.client.create(EVENTS, body, namespace=namespace)
        except kube.AlreadyExists:
            if not retried:  # another event took the name: not this one's to count on
                raise
            # a try that got no answer had created it
        self._recent.remember(item.identity, recent.Written(item.name, namespace, 1, item.at))


class Recorder:
    """Records events as ``component`` (see the module docstring) through ``broadcaster``,
    the manager's; without one, through a broadcaster of its own that nothing runs, so that
    :meth:`event` writes before it returns.

    ``host`` is ``source.host`` and, unless ``instance`` says otherwise, the
    ``reportingInstance``; ``assumed`` the apiVersion and kind of objects that come without
    them; ``event_time``: also write ``eventTime``, as the events.k8s.io recorders do."""

    def __init__(
        self,
        client: kube.Client,
        component: str,
        host: str = "",
        *,
        broadcaster: Broadcaster | None = None,
        instance: str | None = None,
        assumed: tuple[str, str] = ("", ""),
        event_time: bool = False,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(
            datetime.timezone.utc
        ),
    ) -> None:
        self.client = client
        self.component = component
        self.host = host
        self.instance = host if instance is None else instance
        self.assumed = assumed
        self.event_time = event_time
        self.broadcaster = broadcaster or Broadcaster(client, clock=clock)
        self._clock = clock
        self._wall = wall

    def emit(
        self,
        obj: Mapping[str, Any],
        type: Literal["Normal", "Warning"],
        reason: str,
        message: str,
        *,
        field_path: str = "",
        action: str = "",
        related: Mapping[str, Any] | None = None,
    ) -> bool:
        """Queue an event on ``obj`` (on its ``field_path``, if given; ``related`` a second
        object it concerns); never waits and never raises. False when it was not queued (a
        bad object or type is logged, a full queue counted)."""
        ref = involved_object(obj, self.assumed, field_path)
        if "name" not in ref:
            log.warning("event %s not recorded: the object has no name", reason)
            return False
        if type not in (NORMAL, WARNING):
            log.warning("event %s on %s not recorded: type %r", reason, ref["name"], type)
            return False
        message = clip(message)
        identity = (
            self.component,
            self.host,
            *(
                ref.get(k, "")
                for k in ("kind", "apiVersion", "namespace", "name", "uid", "fieldPath")
            ),
            action,
            type,
            reason,
            message,
        )
        moment = self._wall()
        item = _Pending(
            identity=identity,
            ref=ref,
            type=type,
            reason=reason,
            message=message,
            component=self.component,
            host=self.host,
            at=self._clock(),
            now=timestamp(moment),
            name=self.broadcaster.name_for(ref["name"], moment),
            instance=self.instance,
            event_time=micro_timestamp(moment) if self.event_time else None,
            action=action,
            related=involved_object(related, self.assumed) if related is not None else None,
        )
        return self.broadcaster.submit(item)

    async def event(
        self,
        obj: Mapping[str, Any],
        type: Literal["Normal", "Warning"],
        reason: str,
        message: str,
        **details: Any,
    ) -> None:
        """Record an event on ``obj`` (``details``: :meth:`emit`'s keywords): queued for the
        running writer, else written (with whatever else is queued) before this returns.
        Never raises but for cancellation."""
        if self.emit(obj, type, reason, message, **details) and not self.broadcaster.running:
            await self.broadcaster.flush()

    async def flush(self) -> None:
        """Wait until every event queued so far is written (see :meth:`Broadcaster.flush`)."""
        await self.broadcaster.flush()
