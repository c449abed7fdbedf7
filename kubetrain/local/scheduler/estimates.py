"""How long a pod is expected to run, and so when a running pod is expected to end: what
backfill needs to reserve resources for the units that wait, and to tell which units may
start before them.

A pod's runtime bound is the smaller of:

- ``spec.activeDeadlineSeconds``: a hard limit, enforced by the node, counted from
  ``status.startTime``;
- the annotation ``kubetrain.io/expected-runtime-seconds``: the submitter's estimate (Slurm's
  time limit), which is not enforced.

A pod being deleted ends by its ``deletionTimestamp`` at the latest (the API server sets it to
the time its grace period runs out), whatever its estimate. A pod with no bound at all has no
estimate: it is taken as running forever. A running pod whose
estimate has passed and that still runs has overrun it, and is taken as running forever too:
its end is unknown from then on. Both make backfill conservative: see
:mod:`~kubetrain.local.scheduler.policy`.

Owns: reading these fields. Must not: read the clock (``now`` is passed in).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubetrain.local.scheduler import timestamps

RUNTIME_ANNOTATION: Final = "kubetrain.io/expected-runtime-seconds"


def _positive(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and value > 0 and value == value and value != float("inf"):
        return float(value)
    return None


def expected_runtime(pod: Mapping[str, Any]) -> float | None:
    """Seconds the pod is expected to run at most, or None when nothing says."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    meta = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), Mapping) else {}
    bounds = [
        b
        for b in (
            _positive(spec.get("activeDeadlineSeconds")),
            _positive(annotations.get(RUNTIME_ANNOTATION)),
        )
        if b is not None
    ]
    return min(bounds) if bounds else None


def gang_runtime(pods: Iterable[Mapping[str, Any]]) -> float | None:
    """A gang runs until its slowest pod ends: the largest estimate, or None if any pod has
    none."""
    longest = 0.0
    for pod in pods:
        runtime = expected_runtime(pod)
        if runtime is None:
            return None
        longest = max(longest, runtime)
    return longest


def started_at(pod: Mapping[str, Any]) -> float | None:
    """When the pod started: ``status.startTime``, else when it was bound (the PodScheduled
    condition's transition), else None."""
    status = pod.get("status") if isinstance(pod.get("status"), Mapping) else {}
    started = timestamps.parse(status.get("startTime"))
    if started is not None:
        return started
    for condition in status.get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "True"
        ):
            return timestamps.parse(condition.get("lastTransitionTime"))
    return None


def expected_end(pod: Mapping[str, Any], now: float) -> float | None:
    """When a bound pod is expected to end, or None: no estimate, or already overrun."""
    meta = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
    ends = []
    deleted = timestamps.parse(meta.get("deletionTimestamp"))
    if deleted is not None:
        ends.append(deleted)
    runtime = expected_runtime(pod)
    if runtime is not None:
        start = started_at(pod)
        ends.append((start if start is not None else now) + runtime)
    end = min(ends, default=None)
    return end if end is not None and end > now else None
