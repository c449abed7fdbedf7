"""The event recorder: core/v1 Events on the objects a controller acts on, as client-go's
record.EventRecorder writes them (what ``kubectl describe`` shows).

An event is named ``<object>.<hex timestamp>`` in the object's namespace (``default`` for a
cluster-scoped one), with ``involvedObject`` taken from the object, ``source.component`` and
``reportingComponent`` the controller's name, and ``count`` 1. The same event again (same
object, type, reason and message) within ten minutes is not a new object: the existing one
gets ``count + 1`` and a new ``lastTimestamp`` (client-go's EventCorrelator); if it was
deleted meanwhile, a new one is created. Messages are cut to 1024 characters.

Recording an event is a side effect that must never fail a reconcile: :meth:`Recorder.event`
logs a warning instead of raising.

Owns: building events, the cache of recent ones for aggregation. Must not: raise, retry, or
decide which events a controller emits (reasons and messages are the reconcilers' constants).
Not done: client-go's spam filter (25 events per object, then one per 5 minutes) and its
"combined from similar events" aggregation of events that differ only in message.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import itertools
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from kubetrain import kube

log = logging.getLogger(__name__)

EVENTS: Final = kube.Resource("", "v1", "events", kind="Event")
MAX_MESSAGE: Final = 1024  # characters
WINDOW: Final = 600.0  # seconds within which the same event is counted, not repeated
CACHE_SIZE: Final = 4096  # recent events remembered (client-go's maxLruCacheEntries)
NORMAL: Final = "Normal"
WARNING: Final = "Warning"

EventType = Literal["Normal", "Warning"]

_Identity = tuple[str, ...]


@dataclass
class _Recent:
    name: str
    namespace: str
    count: int
    seen_at: float


def involved_object(obj: Mapping[str, Any]) -> dict[str, str]:
    """The ObjectReference an event about ``obj`` carries."""
    meta = obj.get("metadata") or {}
    ref = {
        "kind": obj.get("kind"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": obj.get("apiVersion"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if isinstance(v, str) and v}


def clip(message: str) -> str:
    """At most :data:`MAX_MESSAGE` characters."""
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def timestamp(moment: datetime.datetime) -> str:
    """A metav1.Time: RFC 3339 in UTC, whole seconds."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
) -> dict[str, Any]:
    """A new core/v1 Event (count 1)."""
    source = {"component": component, **({"host": host} if host else {})}
    return {
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
        "reportingInstance": host,
    }


class Recorder:
    """Records events as ``component`` (see the module docstring)."""

    def __init__(
        self,
        client: kube.Client,
        component: str,
        host: str = "",
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(
            datetime.timezone.utc
        ),
    ) -> None:
        self.client = client
        self.component = component
        self.host = host
        self._clock = clock
        self._wall = wall
        self._recent: collections.OrderedDict[_Identity, _Recent] = collections.OrderedDict()
        self._locks: weakref.WeakValueDictionary[_Identity, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._sequence = itertools.count()

    async def event(
        self,
        obj: Mapping[str, Any],
        type: Literal["Normal", "Warning"],
        reason: str,
        message: str,
    ) -> None:
        """Record an event on ``obj``; never raises (a failure is logged as a warning)."""
        ref = involved_object(obj)
        if "name" not in ref:
            log.warning("event %s not recorded: the object has no name", reason)
            return
        if type not in (NORMAL, WARNING):
            log.warning("event %s on %s not recorded: type %r", reason, ref["name"], type)
            return
        message = clip(message)
        identity = (
            self.component,
            self.host,
            *(ref.get(k, "") for k in ("kind", "apiVersion", "namespace", "name", "uid")),
            type,
            reason,
            message,
        )
        lock = self._locks.get(identity)
        if lock is None:
            lock = self._locks[identity] = asyncio.Lock()
        async with lock:
            try:
                await self._record(identity, ref, type, reason, message)
            except kube.ApiError as exc:
                log.warning(
                    "event %s on %s %s not recorded: %s", reason, ref.get("kind"), ref["name"], exc
                )

    async def _record(
        self, identity: _Identity, ref: Mapping[str, str], type: str, reason: str, message: str
    ) -> None:
        moment = self._wall()
        now = timestamp(moment)
        recent = self._recent.get(identity)
        if recent is not None and self._clock() - recent.seen_at <= WINDOW:
            patch = {"count": recent.count + 1, "lastTimestamp": now, "message": message}
            try:
                await self.client.patch(EVENTS, recent.name, patch, namespace=recent.namespace)
            except kube.NotFound:
                log.debug("event %s/%s is gone; creating a new one", recent.namespace, recent.name)
            else:
                recent.count += 1
                recent.seen_at = self._clock()
                self._recent.move_to_end(identity)
                return
        nanos = int(moment.timestamp() * 1_000_000) * 1000 + next(self._sequence) % 1000
        body = build(
            ref,
            type,
            reason,
            message,
            name=f"{ref['name']}.{nanos:x}",
            component=self.component,
            host=self.host,
            now=now,
        )
        namespace = body["metadata"]["namespace"]
        await self.client.create(EVENTS, body, namespace=namespace)
        self._recent[identity] = _Recent(body["metadata"]["name"], namespace, 1, self._clock())
        self._recent.move_to_end(identity)
        while len(self._recent) > CACHE_SIZE:
            self._recent.popitem(last=False)
