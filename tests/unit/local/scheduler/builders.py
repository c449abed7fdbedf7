"""Pods, nodes and PodGroups as plain dicts, the way the API server stores them, for the
scheduler's pure modules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

T0 = 1_800_000_000.0  # a fixed "now", seconds since the epoch
T0_TEXT = "2027-01-15T08:00:00Z"  # T0 as the API server writes it


def resources(
    cpu: str | None = None, memory: str | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    out = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    out.update(extra or {})
    return out


def container(
    name: str = "main",
    *,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    ports: Sequence[Mapping[str, Any]] = (),
    sidecar: bool = False,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "example/train:1", "resources": {}}
    if requests is not None:
        c["resources"]["requests"] = dict(requests)
    if limits is not None:
        c["resources"]["limits"] = dict(limits)
    if ports:
        c["ports"] = [dict(p) for p in ports]
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def pod(
    name: str,
    namespace: str = "ns",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    containers: Sequence[Mapping[str, Any]] | None = None,
    init: Sequence[Mapping[str, Any]] = (),
    overhead: Mapping[str, str] | None = None,
    node: str | None = None,
    phase: str = "Pending",
    priority: int = 0,
    created: str = T0_TEXT,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    host_network: bool = False,
    deadline: int | None = None,
    runtime: float | None = None,
    started: str | None = None,
    scheduler: str = "default-scheduler",
    uid: str | None = None,
) -> dict[str, Any]:
    """A stored Pod; ``cpu``/``memory`` are one container's requests."""
    if containers is None:
        containers = [container(requests=resources(cpu, memory))]
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "resourceVersion": "1",
        "creationTimestamp": created,
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
    }
    if runtime is not None:
        meta["annotations"]["kubetrain.io/expected-runtime-seconds"] = str(runtime)
    spec: dict[str, Any] = {
        "containers": [dict(c) for c in containers],
        "schedulerName": scheduler,
        "priority": priority,
    }
    if init:
        spec["initContainers"] = [dict(c) for c in init]
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if node is not None:
        spec["nodeName"] = node
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": dict(affinity)}
    if host_network:
        spec["hostNetwork"] = True
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    status: dict[str, Any] = {"phase": phase}
    if started is not None:
        status["startTime"] = started
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def node(
    name: str = "n1",
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    extra: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def podgroup(
    name: str,
    namespace: str = "ns",
    *,
    min_member: int = 1,
    min_resources: Mapping[str, str] | None = None,
    timeout: int | None = None,
    volcano: bool = False,
    priority_class: str | None = None,
    created: str = T0_TEXT,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    group = "scheduling.volcano.sh/v1beta1" if volcano else "scheduling.x-k8s.io/v1alpha1"
    return {
        "apiVersion": group,
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pg-{namespace}-{name}",
            "creationTimestamp": created,
            "resourceVersion": "1",
        },
        "spec": spec,
        "status": dict(status or {}),
    }


def member(group: str, *, volcano: bool = False) -> dict[str, Any]:
    """The label (scheduler-plugins) or annotation (Volcano) that puts a pod in ``group``."""
    if volcano:
        return {"annotations": {"scheduling.k8s.io/group-name": group}}
    return {"labels": {"scheduling.x-k8s.io/pod-group": group}}
