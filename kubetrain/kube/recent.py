"""The Events an event recorder wrote lately, so that the same event again bumps the count of
the Event already written instead of adding another (client-go's EventCorrelator keeps an LRU
of ``maxLruCacheEntries``, 4096, for this).

An entry is keyed by a 16-byte digest of the event's identity (the source, the involved
object's kind, namespace, name and uid, the type, the reason and the message), not by the
identity itself. The identity is several hundred bytes of strings that nothing else keeps once
the object is gone, and a busy control plane holds all 4096 entries for as long as it runs:
about 5 MiB per recorder as tuples, under 1 MiB as digests. Two identities that share a
128-bit BLAKE2b digest do not happen in practice.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

CAPACITY: Final = 4096  # client-go's maxLruCacheEntries


@dataclass(slots=True)
class Written:
    """An Event written for an identity: its name and namespace, its count, when last seen."""

    name: str
    namespace: str
    count: int
    seen_at: float


def digest(identity: Iterable[str]) -> bytes:
    """16 bytes standing for ``identity``; each part is length-prefixed, so no two different
    sequences of strings read as the same bytes."""
    hashed = hashlib.blake2b(digest_size=16)
    for part in identity:
        data = part.encode("utf-8", "surrogatepass")
        hashed.update(len(data).to_bytes(8, "little"))
        hashed.update(data)
    return hashed.digest()


class RecentEvents:
    """At most ``capacity`` entries; the one used longest ago goes first."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._written: collections.OrderedDict[bytes, Written] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._written)

    def get(self, identity: Iterable[str]) -> Written | None:
        return self._written.get(digest(identity))

    def remember(self, identity: Iterable[str], written: Written) -> None:
        """Keep ``written`` for ``identity``, as the entry used most recently."""
        key = digest(identity)
        self._written[key] = written
        self._written.move_to_end(key)
        while len(self._written) > self.capacity:
            self._written.popitem(last=False)
