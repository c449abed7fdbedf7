"""A job's life around its pods: suspend and resume, cleanup after it finished, the TTL, jobs
another controller manages, and jobs no webhook checked (reference 1.1, 3.1, 3.4; upstream's
"suspend semantics", "clean Pods/Services according to clean policy", "TTL Seconds After
Finished" and "managed by external controller" scenarios)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import frameworks
from kubetrain.operator.jobs import plan
from tests.builders import pytorchjob, tfjob
from tests.unit.operator.jobs.world import World, at


def deleted(decided: plan.Plan) -> list[str]:
    return sorted(f"{d.resource.plural}/{d.name}" for d in decided.deletes)


def running_job(**run_policy: Any) -> World:
    world = World(pytorchjob("ns", "a").master().workers(1).run_policy(**run_policy).doc())
    world.step()
    world.run()
    world.step(at(1))
    return world


# -- suspend and resume --------------------------------------------------------------------------


def test_a_job_created_suspended_gets_no_pods_and_a_suspended_condition() -> None:
    world = World(pytorchjob("ns", "a").master().workers(1).run_policy(suspend=True).doc())
    decided = world.step()
    assert decided.creates == ()
    suspended = world.condition("Suspended")
    assert suspended is not None
    assert (suspended["status"], suspended["reason"], suspended["message"]) == (
        "True",
        "PyTorchJobSuspended",
        "PyTorchJob a is suspended.",
    )
    assert "startTime" not in world.status
    assert [e.reason for e in decided.events] == ["PyTorchJobCreated", "PyTorchJobSuspended"]


def test_suspending_deletes_every_pod_and_service_and_stops_running() -> None:
    world = running_job()
    world.edit(runPolicy={"suspend": True})
    decided = world.step(at(2))
    assert deleted(decided) == [
        "pods/a-master-0", "pods/a-worker-0", "services/a-master-0", "services/a-worker-0",
    ]  # fmt: skip
    running = world.condition("Running")
    assert running is not None
    assert (running["status"], running["reason"]) == ("False", "PyTorchJobSuspended")
    assert world.status["replicaStatuses"]["Worker"].get("active") is None
    assert world.plan(at(3)).events == ()  # the Suspended event once, not on every pass


def test_resuming_recreates_the_pods_and_starts_the_clock_over() -> None:
    world = running_job()
    world.edit(runPolicy={"suspend": True})
    world.step(at(2))
    world.edit(runPolicy={"suspend": False})
    decided = world.step(at(100))
    assert len(decided.creates) == 2
    suspended = world.condition("Suspended")
    assert suspended is not None
    assert (suspended["status"], suspended["reason"], suspended["message"]) == (
        "False",
        "PyTorchJobResumed",
        "PyTorchJob a is resumed.",
    )
    assert world.status["startTime"] == "2024-05-01T12:01:40Z"
    assert ("Normal", "PyTorchJobResumed") in [(e.type, e.reason) for e in decided.events]


def test_the_deadline_does_not_run_while_suspended_and_starts_over_on_resume() -> None:
    world = running_job(activeDeadlineSeconds=60)
    world.edit(runPolicy={"suspend": True})
    assert world.step(at(2)).requeue_after is None
    world.edit(runPolicy={"suspend": False})
    assert world.step(at(500)).requeue_after == 60.0
    assert world.condition("Failed") is None


# -- after the finish ----------------------------------------------------------------------------

CLEAN = [
    pytest.param("None", [], id="None keeps every pod and service"),
    pytest.param("Running", ["pods/a-worker-0", "services/a-worker-0"],
                 id="Running deletes the pods still running and their services"),
    pytest.param("All", ["pods/a-master-0", "pods/a-worker-0", "services/a-master-0",
                         "services/a-worker-0"], id="All deletes every pod and service"),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "gone"), CLEAN)
def test_clean_pod_policy_after_success(policy: str, gone: list[str]) -> None:
    world = running_job(cleanPodPolicy=policy)
    world.exit("a-master-0", 0)
    decided = world.step(at(2))
    assert world.condition("Succeeded") is not None
    assert deleted(decided) == gone


def test_a_pending_pod_is_cleaned_up_like_a_running_one() -> None:
    world = running_job(cleanPodPolicy="Running")
    world.pods["a-worker-0"]["status"] = {"phase": "Pending"}
    world.exit("a-master-0", 0)
    assert "pods/a-worker-0" in deleted(world.step(at(2)))


def test_a_finished_job_is_left_as_it_is_on_later_passes() -> None:
    world = running_job()
    world.exit("a-master-0", 0)
    world.step(at(2))
    world.exit("a-worker-0", 1)
    later = world.plan(at(3))
    assert (later.creates, later.deletes, later.status_changed, later.events) == ((), (), False, ())


TTL = [
    pytest.param(None, 10_000, False, None, id="no TTL: never removed"),
    pytest.param(180, 100, False, 80.0, id="TTL 180s: looked at again when it runs out"),
    pytest.param(180, 180, True, None, id="TTL 180s: removed once it ran out"),
    pytest.param(0, 0, True, None, id="TTL 0: removed at once"),
]


@pytest.mark.parametrize(("ttl", "after", "removed", "requeue"), TTL)
def test_ttl_seconds_after_finished(
    ttl: int | None, after: int, removed: bool, requeue: float | None
) -> None:
    policy = {} if ttl is None else {"ttlSecondsAfterFinished": ttl}
    world = running_job(**policy)
    world.exit("a-master-0", 0)
    world.step(at(10))
    decided = world.plan(at(10 + after))
    assert decided.delete_job is removed
    assert decided.requeue_after == requeue


def test_a_finished_job_without_completion_time_is_dated_now_not_an_error() -> None:
    world = running_job(ttlSecondsAfterFinished=60)
    world.exit("a-master-0", 0)
    world.step(at(10))
    del world.job["status"]["completionTime"]
    decided = world.plan(at(20))
    assert decided.status is not None
    assert decided.status["completionTime"] == "2024-05-01T12:00:20Z"
    assert decided.requeue_after == 60.0


def test_a_suspended_finished_job_is_never_removed_by_its_ttl() -> None:
    world = running_job(ttlSecondsAfterFinished=0)
    world.exit("a-master-0", 0)
    world.step(at(10))
    world.edit(runPolicy={"suspend": True})
    assert world.plan(at(1000)).delete_job is False


# -- left alone ----------------------------------------------------------------------------------


def test_a_job_managed_by_another_controller_is_left_alone() -> None:
    doc = tfjob("ns", "t").workers(1).run_policy(managedBy="kueue.x-k8s.io/multikueue").doc()
    decided = World(doc).plan()
    assert decided.skip == "managed by kueue.x-k8s.io/multikueue"
    assert (decided.status, decided.creates, decided.events) == (None, (), ())


def test_the_built_in_controllers_managed_by_value_means_kubetrain() -> None:
    doc = tfjob("ns", "t").workers(1).run_policy(managedBy="kubeflow.org/training-operator").doc()
    assert World(doc).plan().skip is None


def test_a_job_being_deleted_is_left_to_the_garbage_collector() -> None:
    doc = pytorchjob("ns", "a").workers(1).doc()
    doc["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    decided = World(doc).plan()
    assert decided.skip == "being deleted"
    assert decided.creates == ()


def test_a_job_no_webhook_checked_gets_its_refusal_a_warning_and_nothing_else() -> None:
    doc = pytorchjob("ns", "a").master(2).workers(1).doc()  # a Master must be exactly 1
    decided = World(doc).plan()
    assert decided.invalid is not None
    assert (decided.creates, decided.deletes, decided.status_changed) == ((), (), True)
    (event,) = decided.events
    assert (event.type, event.reason) == ("Warning", "PyTorchJobFailedValidation")
    assert event.message.startswith("PyTorchJob failed validation because spec.pytorchReplicaSpecs")
    assert "must be 1" in event.message
    assert decided.status is not None
    (refusal,) = decided.status["conditions"]
    assert (refusal["type"], refusal["reason"], refusal["message"]) == (
        "Failed",
        event.reason,
        event.message,
    )


def test_a_job_whose_pods_cannot_be_built_is_treated_like_an_invalid_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_port(*args: Any, **kwargs: Any) -> Any:
        raise frameworks.ContractError("PyTorchJob ns/a: spec...: failed to find the port")

    monkeypatch.setattr(frameworks, "pod_contract", no_port)
    decided = World(pytorchjob("ns", "a").workers(1).doc()).plan()
    assert decided.invalid == (
        "PyTorchJob failed validation because PyTorchJob ns/a: spec...: failed to find the port"
    )
    assert decided.creates == ()


# -- an elastic PyTorchJob's autoscaler ----------------------------------------------------------

CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}


def elastic(**policy: Any) -> World:
    doc = pytorchjob("ns", "a").workers(2).spec(elasticPolicy=policy).doc()
    return World(doc)


def test_an_elastic_job_with_metrics_gets_an_autoscaler_owned_by_it() -> None:
    world = elastic(minReplicas=1, maxReplicas=4, metrics=[CPU])
    world.step()
    autoscaler = world.objects[("horizontalpodautoscalers", "a")]
    assert autoscaler["spec"] == {
        "scaleTargetRef": {"kind": "PyTorchJob", "name": "a", "apiVersion": "kubeflow.org/v1"},
        "minReplicas": 1,
        "maxReplicas": 4,
        "metrics": [CPU],
    }
    assert autoscaler["metadata"]["ownerReferences"][0]["uid"] == "job-uid"


def test_no_metrics_no_autoscaler() -> None:
    world = elastic(minReplicas=1, maxReplicas=4)
    world.step()
    assert ("horizontalpodautoscalers", "a") not in world.objects


def test_a_changed_bound_is_patched_into_the_autoscaler() -> None:
    world = elastic(minReplicas=1, maxReplicas=4, metrics=[CPU])
    world.step()
    world.job["spec"]["elasticPolicy"]["maxReplicas"] = 6
    (patch,) = world.plan(at(1)).patches
    assert (patch.name, patch.patch) == ("a", {"spec": {"maxReplicas": 6}})


def test_the_autoscaler_is_deleted_while_suspended() -> None:
    world = elastic(minReplicas=1, maxReplicas=4, metrics=[CPU])
    world.step()
    world.edit(runPolicy={"suspend": True})
    assert "horizontalpodautoscalers/a" in deleted(world.step(at(1)))
    assert ("horizontalpodautoscalers", "a") not in world.objects
