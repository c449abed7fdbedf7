"""Whether a pod fits a node, and if not why, in kube-scheduler's words.

The filters, in the order of kube-scheduler's default profile, each stopping the node's check
at its first failure as the framework does:

1. NodeUnschedulable: ``spec.unschedulable`` unless the pod tolerates
   ``node.kubernetes.io/unschedulable:NoSchedule``;
2. TaintToleration: every ``NoSchedule`` / ``NoExecute`` taint must be tolerated (the first
   one that is not is named); ``PreferNoSchedule`` never filters;
3. NodeAffinity: ``spec.nodeSelector`` and the required node affinity (terms ORed, their
   expressions ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt; ``metadata.name`` fields);
4. NodePorts: host ports in use (a ``hostNetwork`` pod's container ports are host ports; an
   unspecified or ``0.0.0.0`` host IP clashes with every address);
5. NodeResourcesFit: the pod count against ``allocatable.pods``, then every requested resource
   against allocatable minus what the node's pods request (cpu, memory, ephemeral-storage,
   then extended resources such as ``nvidia.com/gpu`` by name). A node that lists no amount
   of a resource has none of it, as in kube.

:func:`fit_error` aggregates per-node reasons into kube's FitError message ("0/3 nodes are
available: 1 Insufficient cpu, 2 node(s) had untolerated taint {gpu: true}.").

Owns: :class:`PodInfo` and :class:`NodeInfo` (what the filters need, computed once) and the
filters. Must not: choose among nodes that fit, order pods, or know about gangs (see
:mod:`~kubetrain.local.scheduler.policy`).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubetrain.local.scheduler import amounts, messages, requests

Amounts = amounts.Amounts
Port = tuple[str, str, int]  # (protocol, host IP, port)

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
FILTERED_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
WILDCARD_IP = "0.0.0.0"
_FIRST = ("cpu", "memory", "ephemeral-storage")  # NodeResourcesFit checks these first
_ZERO = Fraction(0)


def _ordered(request: Mapping[str, Fraction]) -> Amounts:
    head = {name: request[name] for name in _FIRST if name in request}
    rest = {name: request[name] for name in sorted(request) if name not in head}
    return {**head, **rest}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _ports(spec: Mapping[str, Any]) -> tuple[Port, ...]:
    host_network = spec.get("hostNetwork") is True
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    containers += [
        c
        for c in spec.get("initContainers") or []
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"
    ]
    found: list[Port] = []
    for c in containers:
        for port in c.get("ports") or []:
            if not isinstance(port, Mapping):
                continue
            number = port.get("hostPort")
            if not number and host_network:
                number = port.get("containerPort")
            if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
                continue
            protocol = str(port.get("protocol") or "TCP")
            found.append((protocol, str(port.get("hostIP") or WILDCARD_IP), number))
    return tuple(found)


@dataclass(frozen=True, eq=False)
class PodInfo:
    """What the filters need of one pod."""

    namespace: str
    name: str
    uid: str = ""
    request: Amounts = field(default_factory=dict)
    ports: tuple[Port, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[Mapping[str, Any], ...] | None = None  # None: no required affinity
    tolerations: tuple[Mapping[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodInfo:
        meta = _mapping(pod.get("metadata"))
        spec = _mapping(pod.get("spec"))
        affinity = _mapping(_mapping(spec.get("affinity")).get("nodeAffinity"))
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        terms = None
        if isinstance(required, Mapping):
            terms = tuple(
                t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, Mapping)
            )
        selector = spec.get("nodeSelector")
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            request=_ordered(requests.pod_requests(pod)),
            ports=_ports(spec),
            node_selector=dict(selector) if isinstance(selector, Mapping) else {},
            required_terms=terms,
            tolerations=tuple(t for t in spec.get("tolerations") or [] if isinstance(t, Mapping)),
        )


class NodeInfo:
    """A node and what the pods on it use, updated as pods are (tentatively) placed."""

    def __init__(
        self,
        name: str,
        *,
        allocatable: Mapping[str, Fraction],
        allowed_pods: int,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, Any]] = (),
        unschedulable: bool = False,
    ) -> None:
        self.name = name
        self.labels = dict(labels or {})
        self.taints = tuple(taints)
        self.unschedulable = unschedulable
        self.allocatable = dict(allocatable)
        self.allowed_pods = allowed_pods
        self.requested: Amounts = {}
        self.pod_count = 0
        self.ports: collections.Counter[Port] = collections.Counter()

    @classmethod
    def of(cls, node: Mapping[str, Any], pods: Iterable[PodInfo] = ()) -> NodeInfo:
        meta = _mapping(node.get("metadata"))
        spec = _mapping(node.get("spec"))
        allocatable = amounts.parse(_mapping(node.get("status")).get("allocatable"))
        pods_allowed = allocatable.pop("pods", Fraction(0))
        labels = meta.get("labels")
        info = cls(
            str(meta.get("name") or ""),
            allocatable=allocatable,
            allowed_pods=math.ceil(pods_allowed),
            labels={str(k): str(v) for k, v in labels.items()}
            if isinstance(labels, Mapping)
            else {},
            taints=[t for t in spec.get("taints") or [] if isinstance(t, Mapping)],
            unschedulable=spec.get("unschedulable") is True,
        )
        for pod in pods:
            info.add(pod)
        return info

    def add(self, pod: PodInfo) -> None:
        # In place: placing pods tentatively is the policy's inner loop. ``requested`` is
        # this node's own dict (clone copies it).
        requested = self.requested
        for name, value in pod.request.items():
            requested[name] = requested.get(name, _ZERO) + value
        self.pod_count += 1
        if pod.ports:
            self.ports.update(pod.ports)

    def remove(self, pod: PodInfo) -> None:
        requested = self.requested
        for name, value in pod.request.items():
            requested[name] = requested.get(name, _ZERO) - value
        self.pod_count -= 1
        if pod.ports:
            self.ports.subtract(pod.ports)
            self.ports = +self.ports  # drop ports no pod uses any more

    def clone(self) -> NodeInfo:
        copy = self.emptied()
        copy.requested = dict(self.requested)
        copy.pod_count = self.pod_count
        copy.ports = collections.Counter(self.ports)
        return copy

    def emptied(self) -> NodeInfo:
        """The same node with no pods on it."""
        return NodeInfo(
            self.name,
            allocatable=self.allocatable,
            allowed_pods=self.allowed_pods,
            labels=self.labels,
            taints=self.taints,
            unschedulable=self.unschedulable,
        )

    def free(self) -> Amounts:
        return amounts.subtract(self.allocatable, self.requested)

    @classmethod
    def peak(cls, pictures: Sequence[NodeInfo]) -> NodeInfo:
        """One node seen at several moments (``pictures``, at least one), as a node that uses,
        in every resource, in pod count and in host ports, the most any moment uses. A pod
        that fits beside the peak fits beside every moment, so one placement holds for a
        whole stretch of time."""
        first = pictures[0]
        out = first.clone()
        for other in pictures[1:]:
            out.requested = amounts.maximum(out.requested, other.requested)
            out.pod_count = max(out.pod_count, other.pod_count)
            out.ports |= other.ports
        return out

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, requested={self.requested}, pods={self.pod_count})"


# --- the filters ------------------------------------------------------------------------------


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def _tolerated(pod: PodInfo, taint: Mapping[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in pod.tolerations)


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = expression.get("key")
    operator = expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    present = key in labels
    value = labels.get(str(key)) if present else None
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(str(value)), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _term_matches(term: Mapping[str, Any], node: NodeInfo) -> bool:
    expressions = [e for e in term.get("matchExpressions") or [] if isinstance(e, Mapping)]
    fields = [f for f in term.get("matchFields") or [] if isinstance(f, Mapping)]
    if not expressions and not fields:
        return False  # an empty term selects no node
    if not all(_expression_matches(e, node.labels) for e in expressions):
        return False
    names = {"metadata.name": node.name}
    return all(f.get("key") in names and _expression_matches(f, names) for f in fields)


def matches_affinity(pod: PodInfo, node: NodeInfo) -> bool:
    """``spec.nodeSelector`` and the required node affinity both hold."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if pod.required_terms is None:
        return True
    return any(_term_matches(term, node) for term in pod.required_terms)


def _port_conflict(pod: PodInfo, node: NodeInfo) -> bool:
    if not pod.ports or not node.ports:
        return False
    for protocol, ip, number in pod.ports:
        for used_protocol, used_ip, used_number in node.ports:
            if used_protocol != protocol or used_number != number:
                continue
            if WILDCARD_IP in (ip, used_ip) or ip == used_ip:
                return True
    return False


def static_reasons(pod: PodInfo, node: NodeInfo) -> list[str]:
    """The filters that do not depend on the node's pods (1-3): why ``pod`` could never run
    on ``node`` as it is, however empty."""
    if node.unschedulable and not _tolerated(
        pod, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    ):
        return [messages.NODE_UNSCHEDULABLE]
    for taint in node.taints:
        if taint.get("effect") in FILTERED_EFFECTS and not _tolerated(pod, taint):
            return [messages.untolerated_taint(taint.get("key") or "", taint.get("value") or "")]
    if not matches_affinity(pod, node):
        return [messages.NODE_AFFINITY]
    return []


def resource_reasons(pod: PodInfo, node: NodeInfo) -> list[str]:
    """NodeResourcesFit: the pod count, then each resource that is short."""
    found = []
    if node.pod_count + 1 > node.allowed_pods:
        found.append(messages.TOO_MANY_PODS)
    allocatable, requested = node.allocatable, node.requested
    for name, value in pod.request.items():  # amounts.short on node.free(), without the copy
        if value > 0 and value > allocatable.get(name, _ZERO) - requested.get(name, _ZERO):
            found.append(messages.insufficient(name))
    return found


def reasons(pod: PodInfo, node: NodeInfo) -> list[str]:
    """Why ``pod`` does not fit ``node`` now (empty: it fits), from the first filter that
    fails."""
    found = static_reasons(pod, node)
    if found:
        return found
    if _port_conflict(pod, node):
        return [messages.NODE_PORTS]
    return resource_reasons(pod, node)


def fit_error(node_count: int, node_reasons: Iterable[Sequence[str]]) -> str:
    """kube-scheduler's FitError message for a pod no node took; ``node_reasons`` holds each
    node's reasons. With no nodes at all, kube's ErrNoNodesAvailable."""
    if node_count == 0:
        return messages.NO_NODES
    histogram: collections.Counter[str] = collections.Counter()
    for found in node_reasons:
        histogram.update(found)
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    message = messages.NO_NODE_AVAILABLE.format(count=node_count)
    if parts:
        message += f" {', '.join(parts)}."
    return message
