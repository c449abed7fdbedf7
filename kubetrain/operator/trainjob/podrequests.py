"""What one pod of a pod template requests, and sums of such requests, as Kubernetes counts them.

Gang-scheduling PodGroups carry ``minResources``: the sum over a TrainJob's pods of what each
requests. A pod's request is Kubernetes' ``PodRequests``: the sum over its containers, or the
largest init container's where that is more, plus the pod overhead. A container that sets a
limit but no request for a resource requests its limit (the API server defaults it so).

Quantities are summed exactly (``Fraction``) and written back in Kubernetes' canonical forms
(``4``, ``500m``, ``32Gi``). Pure; a malformed quantity counts as zero (admission reports it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubetrain import api

Requests = dict[str, Fraction]

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _amounts(values: Any) -> Requests:
    result: Requests = {}
    if not isinstance(values, Mapping):
        return result
    for name, value in values.items():
        try:
            result[str(name)] = api.parse_quantity(value)
        except ValueError:
            continue
    return result


def container_requests(container: Mapping[str, Any]) -> Requests:
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    requests = _amounts(resources.get("requests"))
    for name, limit in _amounts(resources.get("limits")).items():
        requests.setdefault(name, limit)
    return requests


def add(total: Requests, more: Mapping[str, Fraction], times: int = 1) -> None:
    """``total += more × times``, in place."""
    for name, amount in more.items():
        total[name] = total.get(name, Fraction(0)) + amount * times


def pod_requests(pod_spec: Mapping[str, Any]) -> Requests:
    """Kubernetes' ``PodRequests`` of a pod spec (containers, init containers, overhead)."""
    total: Requests = {}
    for container in _objects(pod_spec.get("containers")):
        add(total, container_requests(container))
    for container in _objects(pod_spec.get("initContainers")):
        for name, amount in container_requests(container).items():
            if amount > total.get(name, Fraction(0)):
                total[name] = amount
    add(total, _amounts(pod_spec.get("overhead")))
    return total


def _objects(items: Any) -> Iterable[Mapping[str, Any]]:
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def format_quantity(amount: Fraction) -> str:
    """A canonical Kubernetes quantity string for an exact amount."""
    if amount.denominator == 1:
        whole = amount.numerator
        if whole >= 2**10:
            for suffix, scale in _BINARY:
                if whole % scale == 0:
                    return f"{whole // scale}{suffix}"
        return str(whole)
    milli = amount * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    nano = amount * 10**9
    return f"{-(-nano.numerator // nano.denominator)}n"  # Kubernetes rounds up


def as_resource_list(requests: Mapping[str, Fraction]) -> dict[str, str]:
    return {name: format_quantity(requests[name]) for name in sorted(requests)}
