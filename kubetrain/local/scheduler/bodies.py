"""The objects the scheduler writes besides Events and PodGroup status: the Binding of a pod
to a node, the ``PodScheduled=False`` condition of a pod that waits and the
``DisruptionTarget`` condition of one being evicted, as kube-scheduler writes them; and which
scheduler profile reports a pod's events (its ``spec.schedulerName``, ``default-scheduler``
for most pods).

Owns: building those bodies, and reading back the message a pod already shows (the scheduler
writes a condition and an event only when that message changes, so a restart or a repeated
cycle sends nothing new). Must not: send anything; build Events (:mod:`kubetrain.kube.record`
does, for every component).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubetrain.kube.record import clip
from kubetrain.local.scheduler import messages, timestamps

DEFAULT_COMPONENT: Final = "default-scheduler"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def component_of(pod: Mapping[str, Any]) -> str:
    name = _mapping(pod.get("spec")).get("schedulerName")
    return name if isinstance(name, str) and name else DEFAULT_COMPONENT


def scheduled_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in _mapping(pod.get("status")).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled":
            return condition
    return None


def shown_message(pod: Mapping[str, Any]) -> str | None:
    """The Unschedulable message the pod shows now, if it shows one."""
    condition = scheduled_condition(pod)
    if (
        condition is None
        or condition.get("status") != "False"
        or condition.get("reason") != messages.CONDITION_UNSCHEDULABLE
    ):
        return None
    message = condition.get("message")
    return message if isinstance(message, str) else ""


def unschedulable_patch(pod: Mapping[str, Any], message: str, now: float) -> dict[str, Any]:
    """A strategic merge patch for ``pods/status`` that sets PodScheduled=False, reason
    Unschedulable (conditions merge by type). The transition time moves only when the
    condition's status does. The pod's uid makes it a precondition: a pod deleted and
    created again under the same name is not touched."""
    before = scheduled_condition(pod)
    since = timestamps.format_seconds(now)
    if before is not None and before.get("status") == "False" and before.get("lastTransitionTime"):
        since = before["lastTransitionTime"]
    meta = _mapping(pod.get("metadata"))
    return {
        "metadata": {"uid": meta.get("uid")},
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": messages.CONDITION_UNSCHEDULABLE,
                    "message": clip(message),
                    "lastProbeTime": None,
                    "lastTransitionTime": since,
                }
            ]
        },
    }


def disruption_patch(pod: Mapping[str, Any], message: str, now: float) -> dict[str, Any]:
    """A strategic merge patch for ``pods/status`` that adds kube-scheduler's
    ``DisruptionTarget=True`` condition (reason ``PreemptionByScheduler``) before the pod is
    deleted, with the pod's uid as precondition."""
    meta = _mapping(pod.get("metadata"))
    return {
        "metadata": {"uid": meta.get("uid")},
        "status": {
            "conditions": [
                {
                    "type": messages.DISRUPTION_TARGET,
                    "status": "True",
                    "reason": messages.PREEMPTION_BY_SCHEDULER,
                    "message": clip(message),
                    "lastProbeTime": None,
                    "lastTransitionTime": timestamps.format_seconds(now),
                }
            ]
        },
    }


def binding(pod: Mapping[str, Any], node: str) -> dict[str, Any]:
    """A v1 Binding for ``pods/<name>/binding``; the uid makes it a precondition."""
    meta = _mapping(pod.get("metadata"))
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
        },
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
