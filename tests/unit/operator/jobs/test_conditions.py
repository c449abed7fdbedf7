"""Condition mechanics of v1 job status (reference 3.2: upstream's setCondition and
filterOutCondition)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.operator.jobs import conditions

T1, T2 = "2024-05-01T12:00:00Z", "2024-05-01T12:05:00Z"


def cond(type_: str, status: str = "True", reason: str = "", at: str = T1) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason or f"PyTorchJob{type_}",
        "message": f"{type_} message",
        "lastUpdateTime": at,
        "lastTransitionTime": at,
    }


def summary(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["status"]) for c in status.get("conditions", [])]


CASES = [
    pytest.param([], ("Running", "True"), [("Running", "True")], True,
                 id="a first condition is appended"),
    pytest.param([cond("Created"), cond("Running")], ("Restarting", "True"),
                 [("Created", "True"), ("Restarting", "True")], True,
                 id="Restarting replaces Running"),
    pytest.param([cond("Created"), cond("Restarting")], ("Running", "True"),
                 [("Created", "True"), ("Running", "True")], True,
                 id="Running replaces Restarting"),
    pytest.param([cond("Running")], ("Succeeded", "True"),
                 [("Running", "False"), ("Succeeded", "True")], True,
                 id="Succeeded turns Running False"),
    pytest.param([cond("Running")], ("Failed", "True"),
                 [("Running", "False"), ("Failed", "True")], True,
                 id="Failed turns Running False"),
    pytest.param([cond("Created"), cond("Restarting")], ("Succeeded", "True"),
                 [("Created", "True"), ("Restarting", "False"), ("Succeeded", "True")], True,
                 id="Succeeded turns Restarting False (upstream leaves it True)"),
    pytest.param([cond("Restarting")], ("Failed", "True"),
                 [("Restarting", "False"), ("Failed", "True")], True,
                 id="Failed turns Restarting False (upstream leaves it True)"),
    pytest.param([cond("Running"), cond("Failed")], ("Running", "True"),
                 [("Running", "True"), ("Failed", "True")], False,
                 id="nothing changes once Failed is True"),
    pytest.param([cond("Failed")], ("Succeeded", "True"), [("Failed", "True")], False,
                 id="a failed job never succeeds"),
    pytest.param([cond("Running"), cond("Created")], ("Running", "True"),
                 [("Running", "True"), ("Created", "True")], False,
                 id="the same status and reason is a no-op, order kept"),
    pytest.param([cond("Suspended"), cond("Created")], ("Suspended", "False"),
                 [("Created", "True"), ("Suspended", "False")], True,
                 id="a changed condition moves to the end"),
]  # fmt: skip


@pytest.mark.parametrize(("before", "change", "after", "changed"), CASES)
def test_set_condition(
    before: list[dict[str, Any]],
    change: tuple[str, str],
    after: list[tuple[str, str]],
    changed: bool,
) -> None:
    status: dict[str, Any] = {"conditions": before}
    type_, value = change
    assert conditions.set_condition(status, type_, value, f"PyTorchJob{type_}", "m", T2) is changed
    assert summary(status) == after


def test_a_new_reason_with_the_same_status_keeps_the_transition_time() -> None:
    status: dict[str, Any] = {"conditions": [cond("Suspended", "True", "TFJobSuspended")]}
    conditions.set_condition(status, "Suspended", "True", "OtherReason", "m", T2)
    (suspended,) = status["conditions"]
    assert (suspended["lastTransitionTime"], suspended["lastUpdateTime"]) == (T1, T2)


def test_running_turned_false_by_success_is_dated_now() -> None:
    status: dict[str, Any] = {"conditions": [cond("Running")]}
    conditions.set_condition(status, "Succeeded", "True", "XSucceeded", "m", T2)
    assert status["conditions"][0]["lastTransitionTime"] == T2


def test_finished_means_succeeded_or_failed_true() -> None:
    assert conditions.is_finished({"conditions": [cond("Succeeded")]})
    assert conditions.is_finished({"conditions": [cond("Failed")]})
    assert not conditions.is_finished({"conditions": [cond("Succeeded", "False")]})
    assert not conditions.is_finished({})


# -- a refused job (a Failed condition of reason <Kind>FailedValidation) -----------------------

REFUSED = "PyTorchJobFailedValidation"


def test_a_refusal_is_failed_but_no_end() -> None:
    status: dict[str, Any] = {"conditions": [cond("Failed", reason=REFUSED)]}
    assert conditions.refusal(status) is status["conditions"][0]
    assert not conditions.is_finished(status)
    assert conditions.refusal({"conditions": [cond("Failed")]}) is None
    assert conditions.refusal({"conditions": [cond("Failed", "False", REFUSED)]}) is None


def test_refusing_appends_failed_and_leaves_the_other_conditions_as_they_were() -> None:
    status: dict[str, Any] = {"conditions": [cond("Created"), cond("Running")]}
    assert conditions.refuse(status, REFUSED, "why", T2)
    assert summary(status) == [("Created", "True"), ("Running", "True"), ("Failed", "True")]
    refusal = status["conditions"][-1]
    assert (refusal["reason"], refusal["message"], refusal["lastTransitionTime"]) == (
        REFUSED,
        "why",
        T2,
    )


def test_refusing_again_for_the_same_words_changes_nothing_for_others_the_message() -> None:
    status: dict[str, Any] = {"conditions": [cond("Failed", reason=REFUSED)]}
    status["conditions"][0]["message"] = "why"
    assert not conditions.refuse(status, REFUSED, "why", T2)
    assert conditions.refuse(status, REFUSED, "why not", T2)
    (refusal,) = status["conditions"]
    assert (refusal["message"], refusal["lastTransitionTime"], refusal["lastUpdateTime"]) == (
        "why not",
        T1,
        T2,
    )


def test_a_finished_job_is_not_refused() -> None:
    for final in (cond("Succeeded"), cond("Failed")):
        status: dict[str, Any] = {"conditions": [final]}
        assert not conditions.refuse(status, REFUSED, "why", T2)
        assert status["conditions"] == [final]


def test_accepting_removes_only_a_refusal() -> None:
    status: dict[str, Any] = {"conditions": [cond("Created"), cond("Failed", reason=REFUSED)]}
    assert conditions.accept(status)
    assert summary(status) == [("Created", "True")]
    assert not conditions.accept(status)
    failed: dict[str, Any] = {"conditions": [cond("Failed")]}
    assert not conditions.accept(failed)
    assert summary(failed) == [("Failed", "True")]


def test_a_real_failure_replaces_a_refusal_and_is_final() -> None:
    status: dict[str, Any] = {"conditions": [cond("Failed", reason=REFUSED)]}
    assert conditions.set_condition(status, "Failed", "True", "PyTorchJobFailed", "m", T2)
    assert conditions.is_finished(status)
    assert not conditions.set_condition(status, "Running", "True", "PyTorchJobRunning", "m", T2)
