"""The objects the scheduler writes besides bindings and PodGroup status: core/v1 Events
(FailedScheduling, Scheduled, Preempted, and the gang's Unschedulable on its PodGroup), the
``PodScheduled=False`` condition of a pod that waits and the ``DisruptionTarget`` condition
of one being evicted, as kube-scheduler writes them.

An Event names its reporter as kube-scheduler's do: the scheduler profile, which is the pod's
``spec.schedulerName`` (``default-scheduler`` for most pods), in both ``source.component``
and ``reportingComponent``. Messages are cut to 1024 characters, the API's limit.

Owns: building those bodies, and reading back the message a pod already shows (the scheduler
writes a condition and an event only when that message changes, so a restart or a repeated
cycle sends nothing new). Must not: send anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubetrain.local.scheduler import messages, timestamps

MAX_MESSAGE: Final = 1024
DEFAULT_COMPONENT: Final = "default-scheduler"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def clip(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def event(
    involved: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    type: str,
    action: str,
    component: str,
    now: float,
    host: str = "",
    related: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A core/v1 Event about ``involved`` (any object with apiVersion, kind and metadata);
    ``host`` names the machine the scheduler runs on, for ``reportingInstance``; ``related``
    is a second object it concerns (a preemptor, for its victims' events)."""
    meta = _mapping(involved.get("metadata"))
    name = str(meta.get("name") or "")
    stamp = timestamps.format_seconds(now)
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{name}.{int(now * 1e9):x}",
            "namespace": str(meta.get("namespace") or "default"),
        },
        "involvedObject": {
            "apiVersion": involved.get("apiVersion") or "v1",
            "kind": involved.get("kind") or "Pod",
            "name": name,
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": reason,
        "message": clip(message),
        "type": type,
        "action": action,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": f"{component}-{host}" if host else component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "eventTime": timestamps.format_micro(now),
        "count": 1,
    }
    if related is not None:
        other = _mapping(related.get("metadata"))
        body["related"] = {
            "apiVersion": related.get("apiVersion") or "v1",
            "kind": related.get("kind") or "Pod",
            "name": other.get("name"),
            "namespace": other.get("namespace"),
            "uid": other.get("uid"),
        }
    return body


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
