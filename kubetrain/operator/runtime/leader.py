"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection
semantics, so several operator replicas run with exactly one reconciling.

The Lease's spec is the record: ``holderIdentity``, ``leaseDurationSeconds``,
``acquireTime``, ``renewTime`` and ``leaseTransitions``. A candidate:

- reads the Lease (creating it, with itself as holder, if there is none);
- notes *when it saw* the record change, by its own monotonic clock: another holder's lease
  counts as expired ``leaseDurationSeconds`` after that, so clock skew between machines
  never matters (the record's timestamps are for people);
- takes an empty or expired lease, or renews its own, by writing the record with the read
  resourceVersion (compare-and-swap: of two candidates, one wins and the other gets 409);
  taking it from someone else bumps ``leaseTransitions`` and sets ``acquireTime``.

The leader renews every ``retry_period``; when no renewal succeeds within ``renew_deadline``
it has lost the lease and must stop (the manager stops its controllers). A leader that stops
cleanly releases the lease (empty holder, duration 1 s), so a standby takes over at its next
try instead of waiting out the lease, even when the stop cut short a claim or a renewal that
landed unseen (:meth:`Elector.release`).
Defaults are client-go's: 15 s, 10 s, 2 s.

Owns: the decisions (pure functions, tested as a table) and :class:`Elector`, which acts on
them. Must not: start or stop controllers (the manager does), or trust another machine's
clock.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import _aio, kube, timefmt

log = logging.getLogger(__name__)

LEASES: Final = kube.Resource("coordination.k8s.io", "v1", "leases", kind="Lease")
JITTER: Final = 1.2  # client-go's JitterFactor: waits between tries are 1 to 2.2 retry periods
RELEASE_TIMEOUT: Final = 5.0  # seconds a release on stop may take


@dataclass(frozen=True)
class Timing:
    lease_duration: float = 15.0  # how long a standby waits after the last renewal it saw
    renew_deadline: float = 10.0  # how long the leader keeps trying to renew before giving up
    retry_period: float = 2.0  # between tries, to acquire or to renew

    def __post_init__(self) -> None:
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            raise ValueError("lease duration, renew deadline and retry period must be positive")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("the lease duration must be longer than the renew deadline")
        if self.renew_deadline <= JITTER * self.retry_period:
            raise ValueError(f"the renew deadline must exceed {JITTER} × the retry period")

    @property
    def lease_seconds(self) -> int:
        """``leaseDurationSeconds`` (whole seconds, as the API has it)."""
        return max(1, math.ceil(self.lease_duration))


@dataclass(frozen=True)
class Record:
    """A Lease's spec, as the election reads and writes it."""

    holder: str = ""
    lease_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def of(cls, lease: Mapping[str, Any]) -> Record:
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        seconds = spec.get("leaseDurationSeconds")
        transitions = spec.get("leaseTransitions")
        acquired, renewed = spec.get("acquireTime"), spec.get("renewTime")
        return cls(
            holder=holder if isinstance(holder, str) else "",
            lease_seconds=seconds if isinstance(seconds, int) else 0,
            acquire_time=acquired if isinstance(acquired, str) else None,
            renew_time=renewed if isinstance(renewed, str) else None,
            transitions=transitions if isinstance(transitions, int) else 0,
        )

    def spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


def microtime(moment: datetime.datetime) -> str:
    """A metav1.MicroTime: RFC 3339 in UTC with microseconds."""
    return timefmt.micro(moment)


def held_by_another(record: Record, identity: str, observed_at: float, now: float) -> bool:
    """Whether someone else holds a lease that has not expired: a holder is named, it is not
    us, and less than its duration has passed since we saw the record change."""
    if not record.holder or record.holder == identity:
        return False
    return observed_at + record.lease_seconds > now


def claim(current: Record | None, identity: str, lease_seconds: int, now: str) -> Record:
    """The record that acquires or renews the lease for ``identity``: a renewal keeps
    ``acquireTime`` and the transition count; taking over sets ``acquireTime`` and counts a
    transition; a new Lease starts at 0 transitions."""
    if current is None:
        return Record(identity, lease_seconds, now, now, 0)
    if current.holder == identity:
        return Record(identity, lease_seconds, current.acquire_time, now, current.transitions)
    return Record(identity, lease_seconds, now, now, current.transitions + 1)


def released(current: Record, now: str) -> Record:
    """The record a leader writes when it stops: no holder, so the next candidate takes the
    lease at once (client-go's ReleaseOnCancel)."""
    return Record("", 1, now, now, current.transitions)


class Elector:
    """Acquires, holds and releases one Lease for ``identity``."""

    def __init__(
        self,
        client: kube.Client,
        *,
        name: str,
        namespace: str,
        identity: str,
        timing: Timing | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(
            datetime.timezone.utc
        ),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not identity:
            raise ValueError("a leader election candidate needs an identity")
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.timing = timing or Timing()
        self._monotonic = monotonic
        self._wall = wall
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._observed: Record | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None  # as last read or written

    @property
    def is_leader(self) -> bool:
        """Whether the last record this candidate saw or wrote names it."""
        return self._observed is not None and self._observed.holder == self.identity

    @property
    def observed(self) -> Record | None:
        return self._observed

    def __str__(self) -> str:
        return f"lease {self.namespace}/{self.name}"

    async def try_acquire_or_renew(self) -> bool:
        """One try: True if this candidate holds the lease now."""
        now = self._monotonic()
        stamp = microtime(self._wall())
        try:
            lease = await self.client.get(LEASES, self.name, namespace=self.namespace)
        except kube.NotFound:
            return await self._create(claim(None, self.identity, self.timing.lease_seconds, stamp))
        except kube.ApiError as exc:
            log.warning("%s: cannot read it: %s", self, exc)
            return False
        self._lease = lease
        record = Record.of(lease)
        if record != self._observed:
            self._observed, self._observed_at = record, now
        if held_by_another(record, self.identity, self._observed_at, now):
            return False
        wanted = claim(record, self.identity, self.timing.lease_seconds, stamp)
        return await self._write(wanted)

    async def acquire(self) -> None:
        """Try every 1 to 2.2 retry periods until this candidate holds the lease."""
        log.info("%s: %s is trying to become the leader", self, self.identity)
        holder = None
        while True:
            if await self._bounded_try(self.timing.renew_deadline):
                log.info("%s: %s is the leader now", self, self.identity)
                return
            if self._observed is not None and self._observed.holder != holder:
                holder = self._observed.holder
                log.info("%s: held by %s", self, holder or "nobody")
            period = self.timing.retry_period
            await self._sleep(period + self._rng.random() * JITTER * period)

    async def hold(self) -> None:
        """Renew every retry period while leading; return once no renewal has succeeded
        within the renew deadline (leadership is lost: stop acting at once)."""
        while True:
            try:
                async with _aio.timeout(self.timing.renew_deadline):
                    while not await self.try_acquire_or_renew():
                        await self._sleep(self.timing.retry_period)
            except TimeoutError:
                log.error(
                    "%s: %s could not renew it within %ss; leadership lost",
                    self,
                    self.identity,
                    self.timing.renew_deadline,
                )
                return
            await self._sleep(self.timing.retry_period)

    async def release(self) -> bool:
        """Give the lease up, if this candidate holds it; True when done (or not held).

        A write the stop cut short may have landed unseen: a claim (the lease is this
        candidate's though it never heard so) or a renewal (the lease is at a newer version).
        So when the lease does not look like its own, or the release meets a newer version,
        it is read again, and released if its holder is this candidate."""
        try:
            async with _aio.timeout(RELEASE_TIMEOUT):
                if not self.is_leader and not await self._still_held():
                    return True
                assert self._observed is not None
                done = await self._write(released(self._observed, microtime(self._wall())))
                if not done and await self._still_held():
                    done = await self._write(released(self._observed, microtime(self._wall())))
        except TimeoutError:
            done = False
        if done:
            log.info("%s: released by %s", self, self.identity)
        else:
            log.warning("%s: %s could not release it; it expires by itself", self, self.identity)
        return done

    async def _still_held(self) -> bool:
        """Read the lease again; whether this candidate is its holder."""
        try:
            lease = await self.client.get(LEASES, self.name, namespace=self.namespace)
        except kube.ApiError:
            return False
        self._lease = lease
        self._observed, self._observed_at = Record.of(lease), self._monotonic()
        return self._observed.holder == self.identity

    async def _bounded_try(self, limit: float) -> bool:
        try:
            async with _aio.timeout(limit):
                return await self.try_acquire_or_renew()
        except TimeoutError:
            log.warning("%s: no answer within %ss", self, limit)
            return False

    async def _create(self, record: Record) -> bool:
        body = {
            "apiVersion": LEASES.api_version,
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.spec(),
        }
        try:
            self._lease = await self.client.create(LEASES, body, namespace=self.namespace)
        except kube.AlreadyExists:
            return False  # another candidate created it first; read it next time
        except kube.ApiError as exc:
            log.warning("%s: cannot create it: %s", self, exc)
            return False
        self._observed, self._observed_at = record, self._monotonic()
        return True

    async def _write(self, record: Record) -> bool:
        assert self._lease is not None
        body = {**self._lease, "spec": {**(self._lease.get("spec") or {}), **record.spec()}}
        try:
            self._lease = await self.client.replace(LEASES, body, namespace=self.namespace)
        except kube.Conflict:
            log.debug("%s: changed since read; not written", self)
            return False
        except kube.ApiError as exc:
            log.warning("%s: cannot write it: %s", self, exc)
            return False
        self._observed, self._observed_at = record, self._monotonic()
        return True
