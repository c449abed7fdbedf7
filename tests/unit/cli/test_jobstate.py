"""A job's state in one word, its times, replica counts and progress (kubetrain.cli.jobstate)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from kubetrain.cli import jobstate
from tests import builders

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


def cond(kind: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2024-05-01T11:59:00Z",
    }


def pytorch(*conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "p", "namespace": "ns", "creationTimestamp": "2024-05-01T11:50:00Z"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 2, "template": {}},
                "Master": {"template": {}},
            }
        },
        "status": {"conditions": list(conditions), **status},
    }


def trainjob(*conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return builders.trainjob(
        namespace="ns",
        num_nodes=3,
        metadata={"creationTimestamp": "2024-05-01T11:50:00Z"},
        status={"conditions": list(conditions), **status},
    )


V1 = [
    pytest.param([], "Pending", id="a v1 job without conditions is Pending"),
    pytest.param([cond("Created")], "Created", id="Created alone"),
    pytest.param([cond("Created"), cond("Running")], "Running", id="Running after Created"),
    pytest.param(
        [cond("Created"), cond("Running", "False"), cond("Restarting")],
        "Restarting",
        id="Restarting while Running is False",
    ),
    pytest.param(
        [cond("Created"), cond("Running", "False"), cond("Succeeded")],
        "Succeeded",
        id="Succeeded wins over Created",
    ),
    pytest.param(
        [cond("Created"), cond("Suspended"), cond("Running", "False")],
        "Suspended",
        id="Suspended",
    ),
    pytest.param(
        [cond("Created"), cond("Running"), cond("Failed")],
        "Failed",
        id="Failed wins over everything, even a Running left True",
    ),
]


@pytest.mark.parametrize(("conditions", "state"), V1)
def test_v1_state(conditions: list[dict[str, Any]], state: str) -> None:
    assert jobstate.of(pytorch(*conditions)).phase == state


def test_the_deciding_condition_gives_reason_and_message() -> None:
    state = jobstate.of(pytorch(cond("Failed", reason="PyTorchJobFailed", message="boom")))
    assert (state.reason, state.message, state.failed, state.finished) == (
        "PyTorchJobFailed",
        "boom",
        True,
        True,
    )


TRAINJOB = [
    pytest.param(trainjob(), None, "Created", id="a fresh TrainJob is Created"),
    pytest.param(
        trainjob(jobsStatus=[{"name": "node", "active": 3}]),
        None,
        "Running",
        id="active replicated jobs make it Running",
    ),
    pytest.param(
        trainjob(),
        [{"status": {"phase": "Running"}}],
        "Running",
        id="a running pod makes it Running",
    ),
    pytest.param(
        trainjob(), [{"status": {"phase": "Pending"}}], "Created", id="pending pods do not"
    ),
    pytest.param(
        trainjob(jobsStatus=[{"name": "node", "active": 3}]),
        [{"status": {"phase": "Pending"}}] * 3,
        "Created",
        id="with its pods given, active pods that are all Pending do not",
    ),
    pytest.param(
        trainjob(jobsStatus=[{"name": "node", "active": 0, "succeeded": 3}]),
        [{"status": {"phase": "Succeeded"}}] * 3,
        "Running",
        id="pods that ended before the Complete condition keep it Running",
    ),
    pytest.param(
        trainjob(cond("Running", "False", reason="Pending")),
        [{"status": {"phase": "Succeeded"}}, {"status": {"phase": "Running"}}],
        "Running",
        id="a Running condition that went back to Pending while pods end does not make it Created",
    ),
    pytest.param(
        trainjob(jobsStatus=[{"name": "node", "succeeded": 3}]),
        None,
        "Running",
        id="succeeded replicated jobs without pods keep it Running",
    ),
    pytest.param(
        trainjob(jobsStatus=[{"name": "node", "succeeded": 3}]),
        [],
        "Running",
        id="and so they do once its pods are gone",
    ),
    pytest.param(
        trainjob(cond("Running", reason="TrainingStarted")),
        [],
        "Running",
        id="kubetrain's Running condition says Running",
    ),
    pytest.param(
        trainjob(cond("Running", "False", reason="Restarting")),
        [{"status": {"phase": "Pending"}}],
        "Restarting",
        id="and its reason tells a restart",
    ),
    pytest.param(trainjob(cond("Complete")), None, "Complete", id="Complete keeps its word"),
    pytest.param(
        trainjob(cond("Running", "False", reason="Completed"), cond("Complete")),
        [{"status": {"phase": "Succeeded"}}],
        "Complete",
        id="Complete wins over everything",
    ),
    pytest.param(trainjob(cond("Suspended")), None, "Suspended", id="Suspended"),
    pytest.param(trainjob(cond("Suspended", "False"), cond("Failed")), None, "Failed", id="Failed"),
]


@pytest.mark.parametrize(("job", "pods", "state"), TRAINJOB)
def test_trainjob_state(job: dict[str, Any], pods: list[dict[str, Any]] | None, state: str) -> None:
    assert jobstate.of(job, pods).phase == state


def test_succeeded_and_complete_are_one_state_for_filters() -> None:
    complete = jobstate.of(trainjob(cond("Complete")))
    assert complete.succeeded
    assert jobstate.matches(complete, "Succeeded")
    assert jobstate.matches(jobstate.of(pytorch(cond("Succeeded"))), "complete")
    assert not jobstate.matches(complete, "Failed")


def test_created_is_reached_by_every_later_state() -> None:
    assert jobstate.reached(jobstate.of(pytorch(cond("Created"), cond("Succeeded"))), "Created")
    assert not jobstate.reached(jobstate.of(pytorch()), "Created")
    assert not jobstate.reached(jobstate.of(pytorch(cond("Succeeded"))), "Running")


def test_an_unknown_state_names_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match="accepted: Pending, Created, Running"):
        jobstate.canonical("done")


def test_duration_runs_from_start_to_completion_or_now() -> None:
    running = pytorch(cond("Running"), startTime="2024-05-01T11:55:00Z")
    assert jobstate.duration(running, NOW) == 300
    done = pytorch(
        cond("Succeeded"),
        startTime="2024-05-01T11:55:00Z",
        completionTime="2024-05-01T11:56:30Z",
    )
    assert jobstate.duration(done, NOW) == 90
    assert jobstate.duration(pytorch(), NOW) is None
    assert jobstate.age(pytorch(), NOW) == 600


def test_a_trainjob_runs_from_creation_to_its_final_condition() -> None:
    assert jobstate.duration(trainjob(cond("Complete")), NOW) == 540


def test_replica_counts_come_from_the_controllers_status() -> None:
    job = pytorch(replicaStatuses={"Master": {"active": 1}, "Worker": {"active": 1, "failed": 1}})
    assert jobstate.replica_counts(job) == (2, 3)
    assert jobstate.replica_specs(job) == [("Master", 1), ("Worker", 2)]
    assert jobstate.replica_counts(trainjob(jobsStatus=[{"name": "node", "active": 2}])) == (2, 3)


def test_a_trainjob_without_num_nodes_has_an_unknown_total() -> None:
    job = trainjob()
    job["spec"]["trainer"] = {}
    assert jobstate.replica_counts(job) == (0, None)


def test_progress_is_what_a_trainjob_reports() -> None:
    assert jobstate.progress(trainjob()) is None
    job = trainjob(trainerStatus={"progressPercentage": 42, "estimatedRemainingSeconds": 300})
    assert jobstate.progress(job) == "42% ETA 5m"
    assert jobstate.progress(trainjob(trainerStatus={"progressPercentage": 7})) == "7%"


REFUSAL = "PyTorchJob failed validation because spec.pytorchReplicaSpecs[Master].replicas: ..."


def test_a_refused_job_is_failed_with_the_operators_words_and_no_end() -> None:
    job = pytorch(cond("Failed", reason="PyTorchJobFailedValidation", message=REFUSAL))
    state = jobstate.of(job)
    assert (state.phase, state.reason, state.message) == (
        "Failed",
        "PyTorchJobFailedValidation",
        REFUSAL,
    )
    assert (state.refused, state.finished) == (True, True)
    assert jobstate.finished(job) is None
    assert jobstate.duration(job, NOW) is None
    assert not jobstate.reached(state, "Created"), "the operator did not accept it"
    assert jobstate.reached(state, "Failed")


def test_a_refused_trainjob_is_failed_too() -> None:
    job = trainjob(cond("Failed", reason="TrainJobFailedValidation", message="TrainJob ..."))
    assert jobstate.of(job).refused
    real = trainjob(cond("Failed", reason="DeadlineExceeded", message="TrainJob exceeded ..."))
    assert not jobstate.of(real).refused
    assert jobstate.finished(real) is not None
