"""A job the operator refuses: one that admission would reject but that reached the operator
anyway (created on a cluster before kubetrain's webhook existed, or with it disabled). It gets
a ``Failed`` condition in the admission's words, nothing else happens to it, and fixing the
spec lets it proceed as if it had just been created."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import api
from kubetrain.operator.jobs import conditions, plan
from tests.builders import job, pytorchjob
from tests.unit.operator.jobs.world import World, at


def admission_words(doc: dict[str, Any]) -> list[str]:
    """What ``kubetrain validate`` prints for ``doc``, less the ``<Kind>/<name>: `` prefix."""
    verdict = api.review(doc)
    assert not verdict.ok
    prefix = f"{verdict.subject}: "
    return [line.removeprefix(prefix) for line in verdict.messages()]


def summary(world: World) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in world.status.get("conditions") or []]


def two_masters() -> World:
    return World(pytorchjob("ns", "a").master(2).workers(1).doc())


def fix(world: World) -> None:
    world.job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 1


# Per kind, a job that admission rejects, and the problem it has.
INVALID = [
    pytest.param(job("TFJob", "a", "ns").replica("Chief").replica("Master").doc(),
                 id="TFJob with a Chief and a Master"),
    pytest.param(pytorchjob("ns", "a").master(2).doc(), id="PyTorchJob with two Masters"),
    pytest.param(job("MPIJob", "a", "ns").replica("Launcher", 2).replica("Worker").doc(),
                 id="MPIJob with two Launchers"),
    pytest.param(job("XGBoostJob", "a", "ns").replica("Worker").doc(),
                 id="XGBoostJob without a Master"),
    pytest.param(job("PaddleJob", "a", "ns").replica("Worker", containers=[]).doc(),
                 id="PaddleJob without containers"),
    pytest.param(job("JAXJob", "a", "ns").replica("Master").doc(), id="JAXJob with a Master"),
    pytest.param(job("MXJob", "a", "ns").replica("Scheduler", 2).replica("Worker").doc(),
                 id="MXJob with two Schedulers"),
]  # fmt: skip


@pytest.mark.parametrize("doc", INVALID)
def test_every_kind_is_refused_in_the_words_kubetrain_validate_prints(
    doc: dict[str, Any],
) -> None:
    world = World(doc)
    decided = world.step()
    kind = doc["kind"]
    message = f"{kind} failed validation because {'; '.join(admission_words(doc))}"
    assert summary(world) == [("Failed", "True", f"{kind}FailedValidation")]
    refusal = world.condition("Failed")
    assert refusal is not None
    assert refusal["message"] == message
    assert refusal["lastTransitionTime"] == refusal["lastUpdateTime"] == "2024-05-01T12:00:00Z"
    assert [(e.type, e.reason, e.message) for e in decided.events] == [
        ("Warning", f"{kind}FailedValidation", message)
    ]
    assert (decided.creates, decided.deletes, decided.ensure, decided.metrics) == ((), (), (), ())
    assert decided.invalid == message
    assert world.status["lastReconcileTime"] == "2024-05-01T12:00:00Z"


def test_the_message_lists_every_problem_as_admission_does() -> None:
    doc = pytorchjob("ns", "a").master(2).workers(1).doc()
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = ""
    world = World(doc)
    world.step()
    refusal = world.condition("Failed")
    assert refusal is not None
    assert refusal["message"] == (
        "PyTorchJob failed validation because "
        "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image: "
        "Required value: must be required; "
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"
    )


def test_a_refused_job_seen_again_writes_nothing_and_says_nothing() -> None:
    world = two_masters()
    world.step()
    again = world.step(at(30))
    assert (again.status_changed, again.events, again.invalid is not None) == ((False, (), True))
    assert world.status["lastReconcileTime"] == "2024-05-01T12:00:00Z"


def test_a_new_problem_replaces_the_message_and_keeps_the_time_it_was_first_refused() -> None:
    world = two_masters()
    world.step()
    world.job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 3
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = []
    decided = world.step(at(10))
    refusal = world.condition("Failed")
    assert refusal is not None
    assert refusal["message"] == (
        "PyTorchJob failed validation because "
        "spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: "
        "must be specified; "
        "spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: "
        "must have at least one container with name pytorch; "
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"
    )
    assert refusal["lastTransitionTime"] == "2024-05-01T12:00:00Z"
    assert refusal["lastUpdateTime"] == "2024-05-01T12:00:10Z"
    assert [e.message for e in decided.events] == [refusal["message"]]


def test_fixing_the_spec_removes_the_refusal_and_the_job_starts_as_if_new() -> None:
    world = two_masters()
    world.step()
    fix(world)
    decided = world.step(at(60))
    assert summary(world) == [("Created", "True", "PyTorchJobCreated")]
    assert sorted(world.pods) == ["a-master-0", "a-worker-0"]
    assert world.status["startTime"] == "2024-05-01T12:01:00Z"
    assert [e.reason for e in decided.events] == ["PyTorchJobCreated"]
    assert decided.metrics == (plan.CREATED_METRIC,)
    world.run()
    world.step(at(61))
    assert summary(world)[-1] == ("Running", "True", "PyTorchJobRunning")


def test_a_running_job_edited_into_an_invalid_one_keeps_its_pods_until_it_is_fixed() -> None:
    world = World(pytorchjob("ns", "a").master().workers(1).doc())
    world.step()
    world.run()
    world.step(at(1))
    pods = {name: pod["metadata"]["uid"] for name, pod in world.pods.items()}
    world.job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    decided = world.step(at(2))
    assert summary(world) == [
        ("Created", "True", "PyTorchJobCreated"),
        ("Running", "True", "PyTorchJobRunning"),
        ("Failed", "True", "PyTorchJobFailedValidation"),
    ]
    assert (decided.creates, decided.deletes) == ((), ())
    assert "completionTime" not in world.status
    fix(world)
    decided = world.step(at(3))
    assert summary(world) == [
        ("Created", "True", "PyTorchJobCreated"),
        ("Running", "True", "PyTorchJobRunning"),
    ]
    assert (decided.creates, decided.deletes, decided.events) == ((), (), ())
    assert {name: pod["metadata"]["uid"] for name, pod in world.pods.items()} == pods


def test_a_finished_job_edited_into_an_invalid_one_keeps_its_verdict() -> None:
    world = World(pytorchjob("ns", "a").master().workers(1).doc())
    world.step()
    world.exit("a-master-0", 0)
    world.exit("a-worker-0", 0)
    world.step(at(1))
    before = dict(world.status)
    world.job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    decided = world.step(at(2))
    assert decided.status_changed is False
    assert world.status == before
    assert [e.reason for e in decided.events] == ["PyTorchJobFailedValidation"]


def test_a_refusal_is_no_end_no_ttl_deletes_the_job_and_no_deadline_fails_it() -> None:
    world = World(
        pytorchjob("ns", "a")
        .master(2)
        .workers(1)
        .run_policy(ttlSecondsAfterFinished=0, activeDeadlineSeconds=1)
        .doc()
    )
    world.step()
    decided = world.step(at(3600))
    assert (decided.delete_job, decided.requeue_after, world.deleted) == (False, None, False)
    assert "completionTime" not in world.status
    assert not conditions.is_finished(world.status)


def test_a_suspended_job_that_is_invalid_is_refused_and_its_suspension_kept() -> None:
    world = World(pytorchjob("ns", "a").master().workers(1).run_policy(suspend=True).doc())
    world.step()
    world.job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    world.step(at(1))
    assert summary(world) == [
        ("Created", "True", "PyTorchJobCreated"),
        ("Suspended", "True", "PyTorchJobSuspended"),
        ("Failed", "True", "PyTorchJobFailedValidation"),
    ]


def test_a_managed_by_value_admission_refuses_names_no_controller_so_the_job_is_refused() -> None:
    world = World(pytorchjob("ns", "a").master().workers(1).run_policy(managedBy="nobody").doc())
    decided = world.step()
    assert decided.skip is None
    refusal = world.condition("Failed")
    assert refusal is not None
    assert refusal["message"] == (
        'PyTorchJob failed validation because spec.runPolicy.managedBy: Unsupported value: "nobody"'
        ': supported values: "kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"'
    )


def test_a_job_multikueue_manages_is_left_alone_even_when_invalid() -> None:
    doc = pytorchjob("ns", "a").master(2).run_policy(managedBy="kueue.x-k8s.io/multikueue").doc()
    decided = World(doc).plan()
    assert (decided.skip, decided.invalid, decided.status) == (
        "managed by kueue.x-k8s.io/multikueue",
        None,
        None,
    )
