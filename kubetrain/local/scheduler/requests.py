"""A pod's effective resource requests (and limits), counted as kube-scheduler counts them.

Kubernetes' ``PodRequests`` (component-helpers ``resource/helpers.go``), per resource:

- the app containers run together, so their requests add up, and so do those of the
  restartable init containers (sidecars, ``restartPolicy: Always``), which keep running;
- each ordinary init container runs alone, beside the sidecars started before it;
- the pod needs the larger of the two: ``max(sum(app) + sum(sidecars), max(init_i +
  sidecars before i))``, plus ``spec.overhead`` (RuntimeClass overhead);
- pod-level ``spec.resources`` (PodLevelResources), where set, stands for the containers'
  total of that resource.

A container without a request for a resource but with a limit requests its limit: the API
server's defaulting writes that into stored pods, and doing it here too keeps the count right
for pods that never went through an API server (the benchmark's).

Owns: these sums. Must not: judge whether a pod fits anywhere (see
:mod:`~kubetrain.local.scheduler.fit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.local.scheduler import amounts

Amounts = amounts.Amounts


def container_requests(container: Any) -> Amounts:
    """One container's requests, its limit standing in where a request is absent."""
    if not isinstance(container, Mapping):
        return {}
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    return {**amounts.parse(resources.get("limits")), **amounts.parse(resources.get("requests"))}


def container_limits(container: Any) -> Amounts:
    if not isinstance(container, Mapping):
        return {}
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    return amounts.parse(resources.get("limits"))


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _aggregate(spec: Mapping[str, Any], per_container: Any) -> Amounts:
    running = amounts.total(
        per_container(c) for c in spec.get("containers") or [] if isinstance(c, Mapping)
    )
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for c in spec.get("initContainers") or []:
        if not isinstance(c, Mapping):
            continue
        own = per_container(c)
        if _is_sidecar(c):
            running = amounts.add(running, own)
            sidecars = amounts.add(sidecars, own)
            init_peak = amounts.maximum(init_peak, sidecars)
        else:
            init_peak = amounts.maximum(init_peak, amounts.add(own, sidecars))
    return amounts.maximum(running, init_peak)


def pod_requests(pod: Mapping[str, Any]) -> Amounts:
    """What the pod needs of a node, per resource (kube's ``PodRequests``)."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return {}
    needed = _aggregate(spec, container_requests)
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping):
        needed.update(
            {
                **amounts.parse(pod_level.get("limits")),
                **amounts.parse(pod_level.get("requests")),
            }
        )
    return amounts.add(needed, amounts.parse(spec.get("overhead")))


def pod_limits(pod: Mapping[str, Any]) -> Amounts:
    """The pod's limits, aggregated the same way (kube's ``PodLimits``), for ``limits.*``
    quotas."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return {}
    limited = _aggregate(spec, container_limits)
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping):
        limited.update(amounts.parse(pod_level.get("limits")))
    return amounts.add(limited, amounts.parse(spec.get("overhead")))
