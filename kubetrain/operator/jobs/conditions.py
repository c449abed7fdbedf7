"""``status.conditions`` of a v1 job: upstream's rules for changing them (reference 3.2).

- Once a ``Failed`` condition is True, no condition is ever changed again.
- Setting a condition with the same status and reason as the one there is a no-op.
- A condition whose status does not change keeps its ``lastTransitionTime``.
- The set condition moves to the end of the list, so ``conditions[-1]`` is the latest (the
  ``State`` printer column reads it).
- ``Running`` and ``Restarting`` exclude each other; setting ``Succeeded`` or ``Failed`` turns
  a ``Running`` condition False.

Two differences, on purpose: when ``Running`` is turned False that way, its
``lastTransitionTime`` moves to now (upstream leaves the old one, which misdates the change);
and ``Succeeded`` or ``Failed`` turns a ``Restarting`` condition False too. Upstream leaves it
True, so a job whose replacement pod ran and ended between two reconciles (never seen
Running) shows Restarting forever next to Succeeded; upstream's own end-to-end check wants
Restarting not True on a finished job.

Works on the wire form (a status dict) in place; pure: the time comes in as an argument.
"""

from __future__ import annotations

from typing import Any

from kubetrain.operator.jobs import reasons

Status = dict[str, Any]


def find(status: Status, type_: str) -> dict[str, Any] | None:
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == type_:
            return condition
    return None


def is_true(status: Status, type_: str) -> bool:
    condition = find(status, type_)
    return condition is not None and condition.get("status") == "True"


def is_finished(status: Status) -> bool:
    """Succeeded or Failed: the job will not run again."""
    return is_true(status, reasons.SUCCEEDED) or is_true(status, reasons.FAILED)


def set_condition(
    status: Status, type_: str, value: str, reason: str, message: str, now: str
) -> bool:
    """Set one condition by upstream's rules; True when the conditions changed."""
    if is_true(status, reasons.FAILED):
        return False
    current = find(status, type_)
    if current is not None and current.get("status") == value and current.get("reason") == reason:
        return False
    transition = now
    if current is not None and current.get("status") == value:
        transition = current.get("lastTransitionTime") or now
    kept = []
    for condition in status.get("conditions") or []:
        if not isinstance(condition, dict):
            continue
        other = condition.get("type")
        if other == type_ or _excludes(type_, other):
            continue
        ends = type_ in (reasons.SUCCEEDED, reasons.FAILED)
        stopped = other in (reasons.RUNNING, reasons.RESTARTING)
        if ends and stopped and condition.get("status") != "False":
            condition = {
                **condition,
                "status": "False",
                "lastUpdateTime": now,
                "lastTransitionTime": now,
            }
        kept.append(condition)
    kept.append(
        {
            "type": type_,
            "status": value,
            "reason": reason,
            "message": message,
            "lastUpdateTime": now,
            "lastTransitionTime": transition,
        }
    )
    status["conditions"] = kept
    return True


def _excludes(type_: str, other: Any) -> bool:
    return (type_, other) in (
        (reasons.RUNNING, reasons.RESTARTING),
        (reasons.RESTARTING, reasons.RUNNING),
    )
