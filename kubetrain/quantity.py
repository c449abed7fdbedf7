"""Kubernetes resource quantities ("500m", "2", "16Gi", 4) as exact numbers, and CPU/GPU counts.

A quantity is parsed into a :class:`~fractions.Fraction`, never a float, so "0.1" plus "0.2"
is exactly "0.3" and "1Ei" keeps every digit. The counts follow upstream's rules, because the
torch, MPI and XGBoost env contracts depend on them: Kubernetes' ``Quantity.Value()`` rounds up
to a whole number ("500m" is 1 CPU, "2.5" is 3), and a GPU is any resource whose name contains
"gpu".

This module only reads values; whether a manifest's quantities are well formed is reported by
the pod-template checks with field paths. Here a malformed quantity counts as absent.

Pure, and imports nothing of kubetrain, so every layer may use it: ``kubetrain.api``
re-exports it, and the scheduler's amounts (which ``kubetrain get`` uses to explain a wait)
read quantities without loading the job models.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

# Kubernetes' grammar: <sign><digits>[.<digits>] then a binary or decimal SI suffix, or an
# exponent with an integer power of ten.
_PATTERN = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?\d+))?$"
)
_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def parse_quantity(value: Any) -> Fraction:
    """The exact amount a quantity stands for; ``ValueError`` if it is not one.

    YAML numbers (``4``, ``0.5``) are accepted like their string forms; booleans are not.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a quantity: {value!r}")
        return Fraction(Decimal(repr(value)))
    match = _PATTERN.match(value.strip())
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    try:
        number = Fraction(Decimal(match["number"]))
    except InvalidOperation as exc:  # unreachable for the pattern above; kept for safety
        raise ValueError(f"not a quantity: {value!r}") from exc
    if match["suffix"]:
        return number * _SUFFIXES[match["suffix"]]
    if match["exponent"]:
        return number * Fraction(10) ** int(match["exponent"])
    return number


def whole_value(value: Any) -> int:
    """Kubernetes' ``Quantity.Value()``: the amount rounded up to a whole number."""
    return math.ceil(parse_quantity(value))


def _amount(amounts: Any, name: str) -> int | None:
    """The rounded-up amount of one resource in a requests/limits map, if readable."""
    if not isinstance(amounts, Mapping) or name not in amounts:
        return None
    try:
        return whole_value(amounts[name])
    except ValueError:
        return None


def cpu_count(resources: Any) -> int:
    """Whole CPUs per node: the request if set and non-zero, else the limit, else 0.

    ``resources`` is a container's ``{requests, limits}``; any other shape counts as none.
    """
    if not isinstance(resources, Mapping):
        return 0
    requested = _amount(resources.get("requests"), "cpu")
    if requested:
        return requested
    return _amount(resources.get("limits"), "cpu") or 0


def _first_gpu(amounts: Any) -> int:
    if not isinstance(amounts, Mapping):
        return 0
    for name in amounts:
        if isinstance(name, str) and "gpu" in name.lower():
            return _amount(amounts, name) or 0
    return 0


def gpu_count(resources: Any) -> int:
    """GPUs per node: the first resource named like "*gpu*" in requests, else in limits."""
    if not isinstance(resources, Mapping):
        return 0
    return _first_gpu(resources.get("requests")) or _first_gpu(resources.get("limits"))
