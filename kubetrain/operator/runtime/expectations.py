"""Expectations: what a reconciler has just created or deleted and the cache has not shown yet.

The informer's cache trails the API server. A reconciler that creates pod ``a-worker-0`` and
runs again before the cache has seen it would count one pod short and create it again (a 409
at best, a duplicate with a generated name at worst). So before acting it asks
:meth:`Expectations.satisfied`; after each create or delete call it records the name, and the
informer's handlers tick names off as the events arrive. After ``ttl`` seconds an unmet
expectation is given up (an event may have been missed; the cache is trusted again), as
Kubernetes' ControllerExpectations / UIDTrackingExpectations and the Training Operator's
``controller.v1/expectation`` do. Keys are the reconciler's own (upstream:
``<ns>/<job>/<rtype>/pods``).

Owns: the pending names per key and their age. Must not: do I/O or decide what to create.
Lives only in memory: after a restart nothing is pending and the first list is the truth.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

log = logging.getLogger(__name__)

TTL: Final = 300.0  # seconds, kube's ExpectationsTimeout


@dataclass
class _Pending:
    creations: set[str] = field(default_factory=set)
    deletions: set[str] = field(default_factory=set)
    since: float = 0.0

    def empty(self) -> bool:
        return not self.creations and not self.deletions


class Expectations:
    """Pending creations and deletions per key (see the module docstring)."""

    def __init__(self, ttl: float = TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._pending: dict[str, _Pending] = {}

    def expect_creations(self, key: str, names: Iterable[str]) -> None:
        """``names`` are about to be created for ``key``; call before the create calls."""
        self._expect(key, names, deletions=False)

    def expect_deletions(self, key: str, names: Iterable[str]) -> None:
        """``names`` are about to be deleted for ``key``; call before the delete calls."""
        self._expect(key, names, deletions=True)

    def creation_observed(self, key: str, name: str) -> None:
        """The cache has seen ``name`` appear (an ADDED event)."""
        if (pending := self._pending.get(key)) is not None:
            pending.creations.discard(name)
            self._drop_if_met(key, pending)

    def deletion_observed(self, key: str, name: str) -> None:
        """The cache has seen ``name`` go (a DELETED event)."""
        if (pending := self._pending.get(key)) is not None:
            pending.deletions.discard(name)
            self._drop_if_met(key, pending)

    def lower(self, key: str, name: str) -> None:
        """A create or delete call for ``name`` failed: no event will come, stop expecting."""
        if (pending := self._pending.get(key)) is not None:
            pending.creations.discard(name)
            pending.deletions.discard(name)
            self._drop_if_met(key, pending)

    def satisfied(self, key: str) -> bool:
        """Whether the cache can be trusted for ``key``: nothing pending, or pending for longer
        than ``ttl`` (then the expectation is dropped and a warning logged)."""
        pending = self._pending.get(key)
        if pending is None or pending.empty():
            return True
        if self._clock() - pending.since > self.ttl:
            log.warning(
                "expectations of %s expired after %.0fs: %d creations and %d deletions unseen",
                key,
                self.ttl,
                len(pending.creations),
                len(pending.deletions),
            )
            del self._pending[key]
            return True
        return False

    def pending(self, key: str) -> tuple[frozenset[str], frozenset[str]]:
        """(creations, deletions) still expected for ``key``, for logs and tests."""
        pending = self._pending.get(key)
        if pending is None:
            return frozenset(), frozenset()
        return frozenset(pending.creations), frozenset(pending.deletions)

    def forget(self, key: str) -> None:
        """Drop everything expected for ``key`` (its owner is gone)."""
        self._pending.pop(key, None)

    def _expect(self, key: str, names: Iterable[str], *, deletions: bool) -> None:
        added = set(names)
        if not added:
            return
        pending = self._pending.setdefault(key, _Pending())
        (pending.deletions if deletions else pending.creations).update(added)
        pending.since = self._clock()

    def _drop_if_met(self, key: str, pending: _Pending) -> None:
        if pending.empty():
            del self._pending[key]
