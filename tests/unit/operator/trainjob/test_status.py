"""The TrainJob status rules: Suspended/Resumed, the active deadline clock, kubetrain's Running
condition, and a finished job's verdict that nothing clears (reference §4.7)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubetrain.operator.trainjob import conditions, observation, phases, status

NOW = datetime.datetime(2030, 1, 1, 0, 1, 0, tzinfo=datetime.timezone.utc)


def test_suspend_then_resume() -> None:
    conds: list[dict[str, Any]] = []
    status.set_suspended(conds, False, "t0")
    assert conds == [], "never suspended: no condition"
    status.set_suspended(conds, True, "t1")
    assert conds == [
        {
            "type": "Suspended",
            "status": "True",
            "reason": "Suspended",
            "message": "TrainJob is suspended",
            "lastTransitionTime": "t1",
        }
    ]
    status.set_suspended(conds, True, "t2")
    assert conds[0]["lastTransitionTime"] == "t1", "no transition, no new time"
    status.set_suspended(conds, False, "t3")
    assert conds[0] | {} == {
        "type": "Suspended",
        "status": "False",
        "reason": "Resumed",
        "message": "TrainJob is resumed",
        "lastTransitionTime": "t3",
    }


def _job(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"creationTimestamp": "2030-01-01T00:00:00Z"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "conds", "remaining"),
    [
        pytest.param({}, [], None, id="no deadline"),
        pytest.param({"activeDeadlineSeconds": 90}, [], 30.0, id="counted from creation"),
        pytest.param({"activeDeadlineSeconds": 30}, [], -30.0, id="passed"),
        pytest.param(
            {"activeDeadlineSeconds": 30, "suspend": True}, [], None, id="no timer while suspended"
        ),
        pytest.param(
            {"activeDeadlineSeconds": 30},
            [
                {
                    "type": "Suspended",
                    "status": "False",
                    "lastTransitionTime": "2030-01-01T00:00:50Z",
                }
            ],
            20.0,
            id="reset by the last resume",
        ),
        pytest.param(
            {"activeDeadlineSeconds": 30},
            [{"type": "Complete", "status": "True"}],
            None,
            id="finished jobs have no deadline",
        ),
    ],
)
def test_deadline_remaining(
    spec: dict[str, Any], conds: list[dict[str, Any]], remaining: float | None
) -> None:
    assert status.deadline_remaining(_job(**spec), conds, NOW) == remaining


def _seen(started: str | None = None, restarts: int = 0) -> observation.Observation:
    return observation.Observation(
        restarts=restarts,
        restarts_towards_max=restarts,
        jobs=(),
        statuses=(),
        training_started_at=started,
    )


def test_running_starts_at_the_training_start_and_stops_with_the_verdict() -> None:
    conds: list[dict[str, Any]] = []
    status.set_running(conds, _seen(), False, "t0")
    assert conds == [], "not started: no condition yet"
    status.set_running(conds, _seen("t-start"), False, "t1")
    assert conds == [
        {
            "type": "Running",
            "status": "True",
            "reason": "TrainingStarted",
            "message": "all trainer pods are running",
            "lastTransitionTime": "t-start",
        }
    ]
    status.set_running(conds, _seen(None, restarts=1), False, "t2")
    assert (conds[0]["status"], conds[0]["reason"]) == ("False", "Restarting")
    status.set_running(conds, _seen("t-again", restarts=1), False, "t3")
    assert (conds[0]["status"], conds[0]["lastTransitionTime"]) == ("True", "t-again")
    conds.append({"type": "Complete", "status": "True"})
    status.set_running(conds, _seen("t-again"), False, "t4")
    assert (conds[0]["status"], conds[0]["reason"]) == ("False", "Completed")
    assert conds[-1]["type"] == "Complete", "the printed State stays the verdict"


def test_a_verdict_is_never_overwritten_by_a_later_one() -> None:
    conds: list[dict[str, Any]] = []
    status.set_failed(conds, "DeadlineExceeded", "TrainJob exceeded its active deadline", "t0")
    complete = phases.StatusUpdate(
        conditions=({"type": "Complete", "status": "True", "reason": "R", "message": "M"},),
        jobs_status=(),
    )
    status.apply_update(conds, complete, "t1")
    assert conditions.find(conds, "Complete") is None
    assert status.finished(conds)


def test_only_the_controller_s_fields_count_as_changes() -> None:
    old = {"conditions": [], "trainerStatus": {"progressPercentage": 5}}
    new = status.merged(old, [], [])
    assert new["trainerStatus"] == {"progressPercentage": 5}, "another writer's field is kept"
    assert status.changed(old, new), "jobsStatus appeared"
    assert not status.changed(new, status.merged(new, [], []))


# -- a refused TrainJob (Failed, reason TrainJobFailedValidation) ------------------------------


def test_a_refusal_is_failed_but_no_end_and_its_message_follows_the_errors() -> None:
    conds: list[dict[str, Any]] = []
    assert status.refuse(conds, "spec.trainer.numNodes: bad", "t1")
    assert conds == [
        {
            "type": "Failed",
            "status": "True",
            "reason": "TrainJobFailedValidation",
            "message": "TrainJob failed validation because spec.trainer.numNodes: bad",
            "lastTransitionTime": "t1",
        }
    ]
    assert not status.finished(conds)
    assert status.refusal(conds) is conds[0]
    assert not status.refuse(conds, "spec.trainer.numNodes: bad", "t2"), "same words: no write"
    assert status.refuse(conds, "spec.trainer.image: bad", "t3")
    assert (conds[0]["message"], conds[0]["lastTransitionTime"]) == (
        "TrainJob failed validation because spec.trainer.image: bad",
        "t1",
    )


def test_accepting_removes_the_refusal_only() -> None:
    conds: list[dict[str, Any]] = []
    status.set_suspended(conds, True, "t0")
    status.refuse(conds, "x: bad", "t1")
    assert [c["type"] for c in conds] == ["Suspended", "Failed"]
    assert status.accept(conds)
    assert [c["type"] for c in conds] == ["Suspended"]
    assert not status.accept(conds)


def test_a_finished_job_keeps_its_verdict_and_is_not_refused() -> None:
    conds: list[dict[str, Any]] = []
    status.set_failed(conds, "DeadlineExceeded", "TrainJob exceeded its active deadline", "t0")
    assert not status.refuse(conds, "x: bad", "t1")
    assert status.refusal(conds) is None
    assert not status.accept(conds)
    assert status.finished(conds)


def test_a_refusal_message_is_cut_to_what_a_condition_holds() -> None:
    conds: list[dict[str, Any]] = []
    status.refuse(conds, "x" * 40000, "t1")
    message = conds[0]["message"]
    assert len(message) == 32768
    assert message.endswith(" ...")
