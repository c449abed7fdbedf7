"""CPython's garbage collector, tuned for a process that keeps many long-lived objects.

The API server's store and a controller's caches hold tens of thousands of long-lived dicts,
while every request allocates many short-lived ones. With the default thresholds (700, 10, 10)
a collection runs every few hundred allocations and a full pass every few seconds walks all
of the long-lived ones: a quarter-second stall of every watch once 10,000 Pods exist, and
about a tenth of the operator's CPU under load. A higher generation-0 threshold makes passes
rarer; :func:`gc.freeze` takes what start-up built out of every later pass.

Owns: the thresholds and their undoing. Must not: decide when a process is "started" (its
caller freezes when it knows).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Final

# generation 0 at 50,000 allocations instead of 700
THRESHOLDS: Final = (50_000, 20, 100)


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """The tuned thresholds for the block; undone after it (and anything frozen thawed), for
    callers that run a component inside a longer process (tests)."""
    before = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
