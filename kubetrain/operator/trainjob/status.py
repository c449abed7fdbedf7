"""The TrainJob status the controller writes, computed from the old one and what it observed.

In upstream's order (``trainjob_controller.go``):

1. an unsupported ``runtimeRef`` → ``Failed`` (``TrainingRuntimeNotSupported``);
2. ``Suspended``: True while ``spec.suspend``; False (``Resumed``) once it was True and no longer
   is (its transition time restarts the active-deadline clock);
3. the status plugin's ``Complete`` / ``Failed`` (JobSet's reasons) and ``jobsStatus``;
4. the active deadline: ``Failed`` (``DeadlineExceeded``) once ``activeDeadlineSeconds`` passed
   since creation or the last resume, unless suspended or finished;

then kubetrain's ``Running`` condition (True from the time every trainer pod runs; False with
``Suspended``, ``Completed``, ``Failed``, ``Restarting`` or ``Pending`` once it was True).

Unlike upstream v2.1, a ``Failed`` or ``Complete`` condition is never cleared: a finished
TrainJob stays finished. The one exception is a refusal (:func:`refuse`): a job that fails
admission or that its plugins refuse gets ``Failed`` with reason ``TrainJobFailedValidation``,
so that ``kubectl get``, ``kubectl wait`` and the SDKs see a job that will not run as written;
it ends nothing (no deadline, no pods deleted), its message follows the spec, and it is removed
once the spec is valid (:func:`accept`), not kept as ``False``, since a ``Failed`` condition
reads as a failure to whoever looks for its presence. Pure: times are passed in as RFC 3339
strings or datetimes.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping
from typing import Any

from kubetrain import timefmt
from kubetrain.operator.trainjob import conditions as conds
from kubetrain.operator.trainjob import messages, observation, phases


def timestamp(when: datetime.datetime) -> str:
    """RFC 3339 in UTC, to the second, as Kubernetes writes ``metav1.Time``."""
    return timefmt.seconds(when)


def parse_time(text: Any) -> datetime.datetime | None:
    return timefmt.parse(text)


def conditions_of(old_status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A copy of the status' conditions, to edit."""
    return conds.copied(old_status.get("conditions"))


def finished(conditions: list[Mapping[str, Any]]) -> bool:
    """Complete, or Failed for another reason than a refusal."""
    if conds.is_true(conditions, messages.COMPLETE):
        return True
    return conds.is_true(conditions, messages.FAILED) and refusal(conditions) is None


def refusal(conditions: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The True ``Failed`` condition that says the job is refused as written."""
    found = conds.find(conditions, messages.FAILED)
    if found is None or found.get("status") != "True":
        return None
    return found if found.get("reason") == messages.FAILED_VALIDATION_REASON else None


def refuse(conditions: list[dict[str, Any]], errors: str, now: str) -> bool:
    """Say that the job is refused because of ``errors``; True when the conditions changed.
    A finished job keeps its verdict; the other conditions stay as last observed."""
    if finished(conditions):
        return False
    message = messages.FAILED_VALIDATION_MESSAGE.format(errors=errors)
    limit = messages.CONDITION_MESSAGE_LIMIT
    if len(message) > limit:
        message = message[: limit - 4] + " ..."
    current = refusal(conditions)
    if current is not None and current.get("message") == message:
        return False
    conds.set_condition(
        conditions, messages.FAILED, "True", messages.FAILED_VALIDATION_REASON, message, now
    )
    return True


def accept(conditions: list[dict[str, Any]]) -> bool:
    """Remove a refusal, the spec being valid now; True when there was one."""
    if refusal(conditions) is None:
        return False
    conditions[:] = [c for c in conditions if c.get("type") != messages.FAILED]
    return True


def set_suspended(conditions: list[dict[str, Any]], suspend: bool, now: str) -> None:
    if suspend:
        conds.set_condition(
            conditions,
            messages.SUSPENDED,
            "True",
            messages.SUSPENDED_REASON,
            messages.SUSPENDED_MESSAGE,
            now,
        )
    elif conds.is_true(conditions, messages.SUSPENDED):
        conds.set_condition(
            conditions,
            messages.SUSPENDED,
            "False",
            messages.RESUMED_REASON,
            messages.RESUMED_MESSAGE,
            now,
        )


def deadline_remaining(
    trainjob: Mapping[str, Any], conditions: list[Mapping[str, Any]], now: datetime.datetime
) -> float | None:
    """Seconds left before ``activeDeadlineSeconds`` (≤ 0: passed); None when it does not
    apply (not set, suspended, finished, or no start time)."""
    spec = trainjob.get("spec") or {}
    limit = spec.get("activeDeadlineSeconds")
    if not isinstance(limit, int) or limit <= 0 or spec.get("suspend") is True:
        return None
    if finished(conditions):
        return None
    start = parse_time((trainjob.get("metadata") or {}).get("creationTimestamp"))
    suspended = conds.find(conditions, messages.SUSPENDED)
    if suspended is not None and suspended.get("status") == "False":
        start = parse_time(suspended.get("lastTransitionTime")) or start
    if start is None:
        return None
    return (start + datetime.timedelta(seconds=limit) - now).total_seconds()


def set_failed(conditions: list[dict[str, Any]], reason: str, message: str, now: str) -> None:
    conds.set_condition(conditions, messages.FAILED, "True", reason, message, now)


def apply_update(conditions: list[dict[str, Any]], update: phases.StatusUpdate, now: str) -> None:
    """The status plugin's conditions; a finished job keeps the verdict it has."""
    if finished(conditions):
        return
    for condition in update.conditions:
        conds.set_condition(
            conditions,
            str(condition["type"]),
            str(condition["status"]),
            str(condition.get("reason", "")),
            str(condition.get("message", "")),
            now,
        )


def set_running(
    conditions: list[dict[str, Any]],
    observation: observation.Observation | None,
    suspend: bool,
    now: str,
) -> None:
    """kubetrain's ``Running`` condition (see the module docstring)."""
    present = conds.find(conditions, messages.RUNNING) is not None
    if conds.is_true(conditions, messages.COMPLETE):
        stopped = messages.STOPPED_COMPLETE_REASON
    elif conds.is_true(conditions, messages.FAILED):
        stopped = messages.STOPPED_FAILED_REASON
    elif suspend:
        stopped = messages.STOPPED_SUSPENDED_REASON
    elif observation is not None and observation.training_started_at is not None:
        conds.set_condition(
            conditions,
            messages.RUNNING,
            "True",
            messages.RUNNING_REASON,
            messages.RUNNING_MESSAGE,
            now,
            transition_time=observation.training_started_at or now,
        )
        return
    elif observation is not None and (observation.restart is not None or observation.restarts):
        attempt = observation.restart.restarts if observation.restart else observation.restarts
        if present:
            conds.set_condition(
                conditions,
                messages.RUNNING,
                "False",
                messages.RESTARTING_REASON,
                messages.RESTARTING_MESSAGE.format(attempt=attempt),
                now,
            )
        return
    else:
        if present:
            conds.set_condition(
                conditions,
                messages.RUNNING,
                "False",
                messages.NOT_STARTED_REASON,
                messages.NOT_STARTED_MESSAGE,
                now,
            )
        return
    if present:
        conds.set_condition(
            conditions, messages.RUNNING, "False", stopped, messages.STOPPED_MESSAGE, now
        )


def changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether the fields the controller owns differ (``trainerStatus`` is someone else's)."""
    return any(old.get(k) != new.get(k) for k in ("conditions", "jobsStatus"))


def merged(old: Mapping[str, Any], conditions: list[dict[str, Any]], jobs: Any) -> dict[str, Any]:
    new = copy.deepcopy(dict(old))
    new["conditions"] = conditions
    if jobs is not None:
        new["jobsStatus"] = list(jobs)
    return new
