"""``metav1.Condition`` lists as apimachinery's ``meta`` helpers keep them.

Setting a condition that exists updates its status, reason, message and observedGeneration,
and moves ``lastTransitionTime`` only when the status changes; a new condition is appended
(so ``.status.conditions[-1:]``, the TrainJob's printed State, is the latest kind of news).
Pure: the time is passed in.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any


def find(conditions: Iterable[Mapping[str, Any]], type: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type), None)


def is_true(conditions: Iterable[Mapping[str, Any]], type: str) -> bool:
    found = find(conditions, type)
    return found is not None and found.get("status") == "True"


def set_condition(
    conditions: list[dict[str, Any]],
    type: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    *,
    transition_time: str | None = None,
) -> None:
    """Set ``type`` in place; ``transition_time`` (default ``now``) is used on a transition."""
    for condition in conditions:
        if condition.get("type") != type:
            continue
        if condition.get("status") != status:
            condition["status"] = status
            condition["lastTransitionTime"] = transition_time or now
        condition["reason"] = reason
        condition["message"] = message
        return
    conditions.append(
        {
            "type": type,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": transition_time or now,
        }
    )


def copied(conditions: Any) -> list[dict[str, Any]]:
    if not isinstance(conditions, list):
        return []
    return [copy.deepcopy(c) for c in conditions if isinstance(c, dict)]
