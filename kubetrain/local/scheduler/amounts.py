"""Resource lists (``{"cpu": "500m", "memory": "1Gi"}``) as exact numbers, and the arithmetic
the scheduler does on them.

Quantities become :class:`~fractions.Fraction` values, so "100m" three times is exactly
"300m" and a node's free memory never drifts by rounding. A malformed quantity counts as
absent: admission reports it with a field path; the scheduler only reads.

Owns: parsing, adding, subtracting, what is short, and writing amounts back in Kubernetes'
notation for messages. Must not: know which resources a pod or node has (see
:mod:`~kubetrain.local.scheduler.requests` and :mod:`~kubetrain.local.scheduler.fit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubetrain import quantity

Amounts = dict[str, Fraction]

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def parse(resources: Any) -> Amounts:
    """A resource list as amounts; entries that are not quantities are left out."""
    if not isinstance(resources, Mapping):
        return {}
    out: Amounts = {}
    for name, value in resources.items():
        if not isinstance(name, str):
            continue
        try:
            out[name] = quantity.parse_quantity(value)
        except ValueError:
            continue
    return out


def add(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> Amounts:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, Fraction(0)) + value
    return out


def subtract(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> Amounts:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, Fraction(0)) - value
    return out


def total(items: Iterable[Mapping[str, Fraction]]) -> Amounts:
    out: Amounts = {}
    for item in items:
        for name, value in item.items():
            out[name] = out.get(name, Fraction(0)) + value
    return out


def maximum(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> Amounts:
    """Per resource, the larger of the two."""
    out = dict(a)
    for name, value in b.items():
        if value > out.get(name, Fraction(0)):
            out[name] = value
    return out


def short(need: Mapping[str, Fraction], free: Mapping[str, Fraction]) -> list[str]:
    """The resources of ``need`` (those asked for, above zero) that ``free`` cannot cover, in
    ``need``'s order; a resource ``free`` does not list has none."""
    return [
        name for name, value in need.items() if value > 0 and value > free.get(name, Fraction(0))
    ]


def format_quantity(value: Fraction, name: str = "") -> str:
    """Kubernetes' notation: whole numbers plain, thousandths as ``m``, memory-like amounts
    in binary suffixes where exact (``1Gi``)."""
    base = name.rpartition(".")[2] if name.startswith(("requests.", "limits.")) else name
    if value.denominator == 1:
        whole = int(value)
        if base in ("memory", "ephemeral-storage") or base.startswith("hugepages-"):
            for suffix, size in _BINARY:
                if whole and whole % size == 0:
                    return f"{whole // size}{suffix}"
        return str(whole)
    milli = value * 1000
    if milli.denominator == 1:
        return f"{int(milli)}m"
    return str(float(value))


def format_amounts(amounts: Mapping[str, Fraction]) -> str:
    """``cpu=4,memory=1Gi`` (kube's quota messages use this form), names sorted."""
    return ",".join(f"{name}={format_quantity(amounts[name], name)}" for name in sorted(amounts))
