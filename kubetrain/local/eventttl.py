"""Events expire: the local control plane deletes Events older than an hour, as kube-apiserver
does with ``--event-ttl`` (1h by default; etcd leases there, a sweep here).

Without it, every pod start, restart and job leaves Events that a long-lived ``kubetrain up``
keeps for ever: the store and the API server's memory grow with the history of every job.

An ordinary API client, like the other controllers: it lists Events a page at a time, judges
each by its latest time (``lastTimestamp``, else ``eventTime``, else ``firstTimestamp``, else
its creation), and deletes the expired ones of a page before it asks for the next, with uid and
resourceVersion preconditions, so an Event updated (count+1) since the list is kept. A page at
a time because a busy control plane holds tens of thousands of Events (nine per short job): a
sweep that held them all at once would take tens of MiB every minute, in the daemon that
also serves them. Must not: delete anything but Events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from kubetrain import kube, timefmt

log = logging.getLogger(__name__)

EVENTS = kube.Resource("", "v1", "events", kind="Event")
TIME_FIELDS = ("lastTimestamp", "eventTime", "firstTimestamp")


@dataclass(frozen=True)
class Settings:
    ttl: float = 3600.0  # seconds an Event lives after its last occurrence
    every: float = 60.0  # seconds between sweeps
    page: int = 500  # Events listed at a time


def last_seen(event: Mapping[str, Any]) -> datetime | None:
    """When the Event last happened, as far as it says."""
    candidates = [event.get(name) for name in TIME_FIELDS]
    candidates.append((event.get("metadata") or {}).get("creationTimestamp"))
    for value in candidates:
        when = timefmt.parse(value)
        if when is not None:
            return when
    return None


def expired(event: Mapping[str, Any], now: datetime, ttl: float) -> bool:
    when = last_seen(event)
    return when is not None and now - when > timedelta(seconds=ttl)


async def sweep(
    client: kube.Client,
    settings: Settings,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> int:
    """Delete every expired Event once, a page at a time; returns how many were deleted.

    If the list's continue token expires midway (410: the sweep outlived the API server's
    history), the sweep ends there and the next one starts over."""
    deleted = 0
    moment = now()
    token: str | None = None
    while True:
        try:
            page = await client.list(EVENTS, limit=max(1, settings.page), continue_token=token)
        except kube.Gone:
            log.info("event expiry: the list expired midway; the next sweep goes on")
            return deleted
        for event in page.get("items") or []:
            if expired(event, moment, settings.ttl) and await _delete(client, event):
                deleted += 1
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return deleted


async def _delete(client: kube.Client, event: Mapping[str, Any]) -> bool:
    meta = event.get("metadata") or {}
    try:
        await client.delete(
            EVENTS,
            meta["name"],
            namespace=meta.get("namespace"),
            preconditions={
                k: v
                for k, v in (
                    ("uid", meta.get("uid")),
                    ("resourceVersion", meta.get("resourceVersion")),
                )
                if isinstance(v, str)
            },
        )
    except (kube.NotFound, kube.Conflict):
        return False  # gone already, or recreated/updated since the list
    return True


async def run(client: kube.Client, settings: Settings | None = None) -> None:
    """Sweep every ``settings.every`` seconds until cancelled; a failed sweep is retried at the
    next one."""
    settings = settings or Settings()
    log.info("event expiry starting: events live %.0fs after they last happen", settings.ttl)
    while True:
        try:
            count = await sweep(client, settings)
        except kube.ApiError as exc:
            log.warning("event expiry: %s; trying again in %.0fs", exc, settings.every)
        else:
            if count:
                log.info("event expiry: deleted %d expired event(s)", count)
        await asyncio.sleep(settings.every)
