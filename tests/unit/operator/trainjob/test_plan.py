"""The TrainJob plan alone: status, pods to create and delete, and events, with no client.

Each scenario plays passes the way the reconciler would: the pods one pass creates are the pods
the next one observes, with the phases a node would report.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

from kubetrain.operator.trainjob import messages, plan, workload
from tests.unit.api.trainers import runtime, trainjob
from tests.unit.operator.trainjob.building import UID, build

CREATED = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _raw(**spec: Any) -> dict[str, Any]:
    doc = trainjob("job").trainer(numNodes=2).spec(**spec).build()
    doc["metadata"] |= {"uid": UID, "creationTimestamp": "2026-01-01T00:00:00Z"}
    doc["spec"]["runtimeRef"] |= {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    return doc


def _pass(
    raw: dict[str, Any], pods: list[dict[str, Any]], seconds: float = 10
) -> tuple[plan.Plan, dict[str, Any]]:
    """One pass at ``seconds`` after creation; also returns the raw job as it was given."""
    before = copy.deepcopy(raw)
    built = build({k: v for k, v in raw.items() if k != "status"}, runtime("torch").build())
    now = CREATED + datetime.timedelta(seconds=seconds)
    result = plan.plan(raw, built, plan.Observed(pods=pods), now)
    return result, before


def _with_phase(pods: list[dict[str, Any]], phase: str) -> list[dict[str, Any]]:
    return [{**pod, "status": {"phase": phase}} for pod in copy.deepcopy(pods)]


def _condition(result: plan.Plan, type_: str) -> dict[str, Any] | None:
    return next((c for c in result.status.get("conditions", ()) if c["type"] == type_), None)


def test_a_new_job_gets_its_pods_then_a_verdict_that_ends_it() -> None:
    raw = _raw(activeDeadlineSeconds=600)
    first, before = _pass(raw, [])
    assert raw == before  # the plan changes nothing it is given
    assert not first.finished
    names = [workload.name_of(p) for p in first.create]
    assert names == ["job-node-0-0", "job-node-0-1"]
    assert first.delete == ()
    assert first.restart is None
    assert first.events == ()
    assert first.extras == ()
    assert first.claims == ()
    assert first.requeue_after == 590.0  # wake up when the deadline passes
    assert _condition(first, messages.FAILED) is None

    running, _ = _pass(raw, _with_phase(list(first.create), "Running"), 20)
    assert running.create == ()
    assert running.delete == ()
    assert not running.finished

    done, _ = _pass(raw, _with_phase(list(first.create), "Succeeded"), 30)
    assert done.finished
    assert done.verdict is not None
    assert done.verdict.startswith("Complete")
    assert done.delete == ()  # finished pods stay for their logs
    assert done.create == ()
    assert done.extras == ()
    complete = _condition(done, messages.COMPLETE)
    assert complete is not None
    assert complete["status"] == "True"

    again, _ = _pass({**raw, "status": done.status}, _with_phase(list(first.create), "Succeeded"))
    assert again.finished
    assert again.verdict is None


def test_a_passed_deadline_fails_the_job_and_deletes_every_pod() -> None:
    raw = _raw(activeDeadlineSeconds=60)
    first, _ = _pass(raw, [])
    pods = _with_phase(list(first.create), "Running")
    pods[0]["status"]["phase"] = "Succeeded"
    late, _ = _pass(raw, pods, 61)
    failed = _condition(late, messages.FAILED)
    assert failed is not None
    assert failed["reason"] == messages.DEADLINE_EXCEEDED_REASON
    assert late.finished
    assert late.verdict == f"Failed ({messages.DEADLINE_EXCEEDED_REASON})"
    assert [workload.name_of(p) for p in late.delete] == ["job-node-0-0", "job-node-0-1"]
    assert late.requeue_after is None


def test_a_suspended_job_deletes_its_active_pods_and_creates_none() -> None:
    first, _ = _pass(_raw(), [])
    pods = _with_phase(list(first.create), "Running")
    suspended, _ = _pass(_raw(suspend=True), pods)
    assert suspended.suspend
    assert not suspended.finished
    assert suspended.create == ()
    assert sorted(workload.name_of(p) for p in suspended.delete) == ["job-node-0-0", "job-node-0-1"]
    condition = _condition(suspended, messages.SUSPENDED)
    assert condition is not None
    assert condition["status"] == "True"


def test_a_refusal_is_lifted_once_the_job_passes_every_check() -> None:
    refused = {"type": messages.FAILED, "status": "True"}
    refused |= {"reason": messages.FAILED_VALIDATION_REASON, "message": "bad"}
    raw = {**_raw(), "status": {"conditions": [refused]}}
    result, _ = _pass(raw, [])
    assert _condition(result, messages.FAILED) is None
    assert not result.finished
    assert len(result.create) == 2


def test_a_runtime_ref_no_plugin_handles_fails_the_job_in_upstreams_words() -> None:
    raw = _raw()
    assert plan.unsupported_runtime(raw, CREATED) is None
    raw["spec"]["runtimeRef"] |= {"apiGroup": "example.com", "kind": "Runtime"}
    new = plan.unsupported_runtime(raw, CREATED)
    assert new is not None
    (failed,) = new["conditions"]
    assert failed["reason"] == messages.RUNTIME_NOT_SUPPORTED_REASON
    assert failed["message"] == "unsupported runtime: Runtime.example.com"
    assert "status" not in raw
