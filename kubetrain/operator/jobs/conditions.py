"""``status.conditions`` of a v1 job: upstream's rules for changing them (reference 3.2).

- Once a ``Failed`` condition is True, no condition is ever changed again.
- Setting a condition with the same status and reason as the one there is a no-op.
- A condition whose status does not change keeps its ``lastTransitionTime``.
- The set condition moves to the end of the list, so ``conditions[-1]`` is the latest (the
  ``State`` printer column reads it).
- ``Running`` and ``Restarting`` exclude each other; setting ``Succeeded`` or ``Failed`` turns
  a ``Running`` condition False.

A job the operator refuses (it fails admission: created while no webhook ran) gets a
``Failed`` condition of its own: reason ``<Kind>FailedValidation``, the admission's words as its
message (:func:`refuse`). ``Failed`` because it is the one condition type (the CRD's enum allows
no other) that tells ``kubectl get``, ``kubectl wait``, the SDKs and Kueue that the job will not
run as written; but, unlike upstream's, this one is not final: it is the only condition that
changes while it is True (its message follows the spec), it stops nothing (no cleanup, no
``completionTime``, no TTL), and once the spec is fixed it is removed (:func:`accept`), never
kept as ``False``: a ``Failed`` condition, True or False, reads as a failure to whoever looks
for its presence, and the job then proceeds as if it had just been created.

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
    """Succeeded or Failed: the job will not run again. A refusal is no end (see
    :func:`refusal`)."""
    if is_true(status, reasons.SUCCEEDED):
        return True
    return is_true(status, reasons.FAILED) and refusal(status) is None


def refusal(status: Status) -> dict[str, Any] | None:
    """The True ``Failed`` condition that says the operator refuses the job as written."""
    condition = find(status, reasons.FAILED)
    if condition is None or condition.get("status") != "True":
        return None
    reason = condition.get("reason")
    if not isinstance(reason, str) or not reason.endswith(reasons.FAILED_VALIDATION):
        return None
    return condition


def refuse(status: Status, reason: str, message: str, now: str) -> bool:
    """Say that the job is refused, and why; True when the conditions changed. Only this
    condition moves: the job's others stay as last observed (its pods, if any, are left as
    they are). A finished job keeps its verdict."""
    if is_finished(status):
        return False
    current = refusal(status)
    if current is not None and (current.get("reason"), current.get("message")) == (
        reason,
        message,
    ):
        return False
    transition = now if current is None else current.get("lastTransitionTime") or now
    kept = [
        c
        for c in status.get("conditions") or []
        if isinstance(c, dict) and c.get("type") != reasons.FAILED
    ]
    kept.append(_condition(reasons.FAILED, "True", reason, message, now, transition))
    status["conditions"] = kept
    return True


def accept(status: Status) -> bool:
    """Remove a refusal, the spec being valid now; True when there was one."""
    if refusal(status) is None:
        return False
    status["conditions"] = [
        c
        for c in status.get("conditions") or []
        if not (isinstance(c, dict) and c.get("type") == reasons.FAILED)
    ]
    return True


def set_condition(
    status: Status, type_: str, value: str, reason: str, message: str, now: str
) -> bool:
    """Set one condition by upstream's rules; True when the conditions changed."""
    if is_true(status, reasons.FAILED) and refusal(status) is None:
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
    kept.append(_condition(type_, value, reason, message, now, transition))
    status["conditions"] = kept
    return True


def _condition(
    type_: str, value: str, reason: str, message: str, now: str, transition: str
) -> dict[str, Any]:
    """One JobCondition as upstream writes it, its fields in upstream's order."""
    return {
        "type": type_,
        "status": value,
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
    }


def _excludes(type_: str, other: Any) -> bool:
    return (type_, other) in (
        (reasons.RUNNING, reasons.RESTARTING),
        (reasons.RESTARTING, reasons.RUNNING),
    )
