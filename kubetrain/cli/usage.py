"""CPU, memory and GPUs that pods and jobs ask for, added up exactly and printed briefly.

A pod's request is Kubernetes' effective request: per resource, the larger of the sum over its
containers and the largest init container; a container that sets only a limit requests that
much. A GPU is any resource whose name contains ``gpu`` (``nvidia.com/gpu``, ``amd.com/gpu``).
Quantities are exact fractions (:func:`kubetrain.api.parse_quantity`).

Owns: that arithmetic and the formatting of amounts. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubetrain import api
from kubetrain.cli import jobkinds, jobstate

ZERO = Fraction(0)


@dataclass(frozen=True)
class Amounts:
    """CPU in cores, memory in bytes, GPUs in devices."""

    cpu: Fraction = ZERO
    memory: Fraction = ZERO
    gpu: Fraction = ZERO

    def __add__(self, other: Amounts) -> Amounts:
        return Amounts(self.cpu + other.cpu, self.memory + other.memory, self.gpu + other.gpu)

    def times(self, count: int) -> Amounts:
        return Amounts(self.cpu * count, self.memory * count, self.gpu * count)

    def most(self, other: Amounts) -> Amounts:
        return Amounts(
            max(self.cpu, other.cpu), max(self.memory, other.memory), max(self.gpu, other.gpu)
        )


def container_requests(container: Mapping[str, Any]) -> Amounts:
    resources = container.get("resources")
    return resources_requests(resources if isinstance(resources, Mapping) else {})


def resources_requests(resources: Mapping[str, Any]) -> Amounts:
    """What a ResourceRequirements asks for: requests, each defaulting to its limit."""
    limits = resources.get("limits") if isinstance(resources.get("limits"), Mapping) else {}
    requests = resources.get("requests") if isinstance(resources.get("requests"), Mapping) else {}
    merged = {**limits, **requests}
    return Amounts(
        cpu=_quantity(merged.get("cpu")),
        memory=_quantity(merged.get("memory")),
        gpu=sum((_quantity(v) for k, v in merged.items() if "gpu" in str(k)), ZERO),
    )


def pod_spec_requests(spec: Mapping[str, Any]) -> Amounts:
    """The effective request of a pod spec."""
    total = Amounts()
    for container in _list(spec.get("containers")):
        total = total + container_requests(container)
    for container in _list(spec.get("initContainers")):
        total = total.most(container_requests(container))
    return total


def pod_requests(pod: Mapping[str, Any]) -> Amounts:
    spec = pod.get("spec")
    return pod_spec_requests(spec if isinstance(spec, Mapping) else {})


def job_requests(job: Mapping[str, Any]) -> Amounts:
    """What a job's spec asks for in all: each replica's template times its replicas (a
    TrainJob: ``resourcesPerNode`` times ``numNodes``, when it sets them)."""
    kind = jobkinds.of(job)
    spec = job.get("spec") if isinstance(job.get("spec"), Mapping) else {}
    total = Amounts()
    if not kind.v1:
        trainer = spec.get("trainer") if isinstance(spec.get("trainer"), Mapping) else {}
        per_node = trainer.get("resourcesPerNode")
        nodes = trainer.get("numNodes") if isinstance(trainer.get("numNodes"), int) else 1
        if isinstance(per_node, Mapping):
            total = resources_requests(per_node).times(nodes)
        return total
    specs = spec.get(kind.replica_field or "")
    for rtype, count in jobstate.replica_specs(job):
        replica = specs.get(rtype) if isinstance(specs, Mapping) else None
        template = replica.get("template") if isinstance(replica, Mapping) else None
        pod_spec = template.get("spec") if isinstance(template, Mapping) else None
        if isinstance(pod_spec, Mapping):
            total = total + pod_spec_requests(pod_spec).times(count or 0)
    return total


def node_allocatable(node: Mapping[str, Any]) -> Amounts:
    """What a node offers pods: ``status.allocatable``, else ``status.capacity``."""
    status = node.get("status") if isinstance(node.get("status"), Mapping) else {}
    offered = status.get("allocatable") or status.get("capacity") or {}
    return resources_requests({"requests": offered}) if isinstance(offered, Mapping) else Amounts()


def cpu(value: Fraction) -> str:
    """``2``, ``1500m``, ``0``: whole cores when exact, else millicores rounded up."""
    if value.denominator == 1:
        return str(value.numerator)
    milli = -((-value * 1000) // 1)
    return f"{milli}m"


def memory(value: Fraction) -> str:
    """``16Gi``, ``512Mi``, ``1.5Gi``, ``1000``: the largest binary unit with at most one
    decimal."""
    for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= size:
            amount = value / size
            if amount.denominator == 1:
                return f"{amount.numerator}{suffix}"
            return f"{float(amount):.1f}{suffix}"
    return str(int(value))


def gpu(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _quantity(value: Any) -> Fraction:
    if value is None:
        return ZERO
    try:
        return api.parse_quantity(value)
    except (ValueError, TypeError):
        return ZERO


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value or [] if isinstance(v, Mapping)] if isinstance(value, list) else []
