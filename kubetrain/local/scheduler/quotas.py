"""Namespace ResourceQuotas at scheduling time, for a whole gang at once (as Kueue admits a
workload: quota for every pod set is reserved together, or none).

The API server already refuses a pod over quota when it is created, counting every live pod
of the namespace, bound or not. The scheduler adds the gang's view: it counts only the pods
that hold a node (bound, not finished) and admits a gang only if all its pods fit the
quota together. That matters when a quota was lowered after pods were created, or when two
gangs each fit alone but not together: the second waits instead of being half-started.

Counted names are those of kube's quota for pods: ``pods`` (``count/pods``),
``requests.<resource>`` (bare ``cpu``, ``memory`` and ``ephemeral-storage`` mean requests),
and ``limits.<resource>``, with requests and limits aggregated as in
:mod:`~kubetrain.local.scheduler.requests` (init containers and overhead included).

Owns: a pod's usage and the check. Must not: write quota status (the API server does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubetrain.local.scheduler import amounts, requests

Amounts = amounts.Amounts
_REQUEST_SHORTHANDS = frozenset({"cpu", "memory", "ephemeral-storage"})


def canonical(name: str) -> str:
    if name in _REQUEST_SHORTHANDS:
        return f"requests.{name}"
    if name == "count/pods":
        return "pods"
    return name


def usage(pod: Mapping[str, Any]) -> Amounts:
    """What one pod counts against a quota."""
    counted: Amounts = {"pods": Fraction(1)}
    for name, value in requests.pod_requests(pod).items():
        counted[f"requests.{name}"] = value
    for name, value in requests.pod_limits(pod).items():
        counted[f"limits.{name}"] = value
    return counted


@dataclass(frozen=True)
class Quota:
    namespace: str
    name: str
    hard: Mapping[str, Fraction]  # canonical names

    @classmethod
    def of(cls, quota: Mapping[str, Any]) -> Quota:
        meta = quota.get("metadata") if isinstance(quota.get("metadata"), Mapping) else {}
        spec = quota.get("spec") if isinstance(quota.get("spec"), Mapping) else {}
        hard = {canonical(k): v for k, v in amounts.parse(spec.get("hard")).items()}
        return cls(str(meta.get("namespace") or ""), str(meta.get("name") or ""), hard)


@dataclass(frozen=True)
class Exceeded:
    """The first quota a gang would exceed, with kube's three figures."""

    quota: str
    requested: Amounts
    used: Amounts
    limited: Amounts


def check(
    quotas: Iterable[Quota], used: Mapping[str, Fraction], wanted: Amounts
) -> Exceeded | None:
    """Whether ``wanted`` fits every quota beside ``used``; the first one it does not."""
    for quota in sorted(quotas, key=lambda q: q.name):
        over = [
            name
            for name, limit in quota.hard.items()
            if name in wanted and used.get(name, Fraction(0)) + wanted[name] > limit
        ]
        if over:
            return Exceeded(
                quota.name,
                {n: wanted[n] for n in over},
                {n: used.get(n, Fraction(0)) for n in over},
                {n: quota.hard[n] for n in over},
            )
    return None
