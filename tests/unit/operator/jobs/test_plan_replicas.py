"""Planning the pods and services of a running job, and the status they give it (reference 2.1,
3.1, 3.3, 3.4; upstream's tfjob pod_test / status_test and the per-framework "create
resources" scenarios)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.operator.jobs import backoff, plan
from tests.builders import jaxjob, pytorchjob, tfjob, values, xgboostjob
from tests.unit.operator.jobs.world import T0, World, at

LABELS = "training.kubeflow.org/"


def pytorch(**run_policy: Any) -> World:
    builder = pytorchjob("ns", "a").master().workers(2)
    if run_policy:
        builder = builder.run_policy(**run_policy)
    return World(builder.doc())


def created_names(decided: plan.Plan) -> list[str]:
    names = []
    for create in decided.creates:
        step: plan.Create | None = create
        while step is not None:
            names.append(f"{step.resource.plural}/{step.name}")
            step = step.then
    return names


def deleted(decided: plan.Plan) -> list[str]:
    return [f"{d.resource.plural}/{d.name}" for d in decided.deletes]


def env_of(pod: dict[str, Any], container: str = "pytorch") -> dict[str, Any]:
    for c in pod["spec"]["containers"]:
        if c["name"] == container:
            return values(c.get("env", []))
    raise AssertionError(f"no container {container}")


# -- creating ------------------------------------------------------------------------------------


def test_a_master_and_two_workers_get_three_services_each_followed_by_its_pod() -> None:
    decided = pytorch().plan()
    assert created_names(decided) == [
        "services/a-master-0", "pods/a-master-0",
        "services/a-worker-0", "pods/a-worker-0",
        "services/a-worker-1", "pods/a-worker-1",
    ]  # fmt: skip


def test_pods_carry_the_operator_labels_the_template_and_the_controller_reference() -> None:
    doc = (
        pytorchjob("ns", "a")
        .master(labels={"team": "ml"}, annotations={"note": "kept"})
        .workers(1)
        .doc()
    )
    world = World(doc)
    world.step()
    pod = world.pods["a-master-0"]
    assert pod["metadata"]["namespace"] == "ns"
    assert pod["metadata"]["labels"] == {
        "team": "ml",
        f"{LABELS}operator-name": "pytorchjob-controller",
        f"{LABELS}job-name": "a",
        f"{LABELS}replica-type": "master",
        f"{LABELS}replica-index": "0",
        f"{LABELS}job-role": "master",
    }
    assert pod["metadata"]["annotations"] == {"note": "kept"}
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": "a",
            "uid": "job-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["spec"]["restartPolicy"] == "OnFailure"


def test_services_are_headless_select_their_pod_and_are_owned_by_the_job() -> None:
    world = pytorch()
    world.step()
    service = world.services["a-worker-1"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"][f"{LABELS}replica-index"] == "1"
    assert service["spec"]["ports"] == [{"name": "pytorchjob-port", "port": 23456}]
    assert service["metadata"]["ownerReferences"][0]["uid"] == "job-uid"


def test_each_pytorch_pod_gets_its_rank_and_the_masters_address() -> None:
    world = pytorch()
    world.step()
    ranks = {name: env_of(pod)["RANK"] for name, pod in world.pods.items()}
    assert ranks == {"a-master-0": "0", "a-worker-0": "1", "a-worker-1": "2"}
    env = env_of(world.pods["a-worker-1"])
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"]) == (
        "a-master-0",
        "23456",
        "3",
    )
    assert env["PET_NNODES"] == "3"


def test_the_first_pass_marks_the_job_created_and_starts_its_clock() -> None:
    decided = pytorch().plan()
    assert decided.status is not None
    assert decided.status_changed
    (created,) = decided.status["conditions"]
    assert (created["type"], created["reason"], created["message"]) == (
        "Created",
        "PyTorchJobCreated",
        "PyTorchJob a is created.",
    )
    assert (
        decided.status["startTime"] == decided.status["lastReconcileTime"] == "2024-05-01T12:00:00Z"
    )
    assert decided.metrics == ("created",)
    assert [(e.type, e.reason) for e in decided.events] == [("Normal", "PyTorchJobCreated")]


def test_nothing_is_created_twice_and_an_unchanged_status_is_not_rewritten() -> None:
    world = pytorch()
    world.step()
    again = world.plan(at(30))
    assert (again.creates, again.deletes, again.status_changed, again.events) == ((), (), False, ())


def test_replica_statuses_count_running_succeeded_and_failed_pods_and_carry_the_selector() -> None:
    world = pytorch()
    world.step()
    world.run("a-master-0", "a-worker-0")
    decided = world.step(at(5))
    assert decided.status is not None
    worker = decided.status["replicaStatuses"]["Worker"]
    assert worker["active"] == 1
    assert worker["selector"] == (
        "training.kubeflow.org/job-name=a,training.kubeflow.org/operator-name="
        "pytorchjob-controller,training.kubeflow.org/replica-type=worker"
    )
    assert worker["labelSelector"] == {
        "matchLabels": {
            f"{LABELS}operator-name": "pytorchjob-controller",
            f"{LABELS}job-name": "a",
            f"{LABELS}replica-type": "worker",
        }
    }


def test_a_framework_without_a_scale_subresource_reports_no_selector() -> None:
    world = World(xgboostjob("ns", "x").master().workers(1).doc())
    decided = world.step()
    assert decided.status is not None
    assert decided.status["replicaStatuses"] == {"Master": {}, "Worker": {}}


def test_running_pods_make_the_job_running_with_upstreams_message() -> None:
    world = pytorch()
    world.step()
    world.run()
    decided = world.step(at(5))
    running = world.condition("Running")
    assert running is not None
    assert (running["reason"], running["message"]) == (
        "PyTorchJobRunning",
        "PyTorchJob a is running.",
    )
    assert [(e.type, e.reason) for e in decided.events] == [("Normal", "PyTorchJobRunning")]


def test_a_template_restart_policy_is_overwritten_with_a_warning() -> None:
    doc = pytorchjob("ns", "a").workers(1).doc()
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Always"
    world = World(doc)
    decided = world.step()
    assert world.pods["a-worker-0"]["spec"]["restartPolicy"] == "OnFailure"
    assert ("Warning", "SetPodTemplateRestartPolicy") in [
        (e.type, e.reason) for e in decided.events
    ]


# -- scaling -------------------------------------------------------------------------------------


def test_scaling_down_deletes_the_surplus_pod_and_its_service() -> None:
    world = pytorch()
    world.step()
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 1
    decided = world.plan(at(5))
    assert deleted(decided) == ["pods/a-worker-1", "services/a-worker-1"]
    assert decided.creates == ()


def test_scaling_up_creates_only_the_missing_index() -> None:
    world = pytorch()
    world.step()
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    assert created_names(world.plan(at(5))) == ["services/a-worker-2", "pods/a-worker-2"]


def test_pods_of_a_replica_type_no_longer_in_the_spec_are_deleted() -> None:
    world = World(tfjob("ns", "t").workers(1).replica("PS", 1).doc())
    world.step()
    del world.job["spec"]["tfReplicaSpecs"]["PS"]
    assert deleted(world.plan(at(5))) == ["pods/t-ps-0", "services/t-ps-0"]


def test_a_pod_being_deleted_is_not_replaced_until_it_is_gone() -> None:
    world = pytorch()
    world.step()
    world.pods["a-worker-0"]["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:01Z"
    decided = world.plan(at(5))
    assert "pods/a-worker-0" not in created_names(decided)
    assert "pods/a-worker-0" not in deleted(decided)


# -- failures ------------------------------------------------------------------------------------


def exit_code_job(limit: int | None = None) -> World:
    builder = pytorchjob("ns", "a").master().workers(2, restart_policy="ExitCode")
    if limit is not None:
        builder = builder.run_policy(backoffLimit=limit)
    world = World(builder.doc())
    world.step()
    world.run()
    world.step(at(1))
    return world


def test_a_retryable_exit_code_deletes_the_pod_and_marks_the_job_restarting() -> None:
    world = exit_code_job()
    world.exit("a-worker-1", 137)
    decided = world.step(at(2))
    assert deleted(decided) == ["pods/a-worker-1"]
    assert decided.deletes[0].restart
    restarting = world.condition("Restarting")
    assert restarting is not None
    # the pod loop's wording goes to the event; the status rules' to the condition
    assert (restarting["reason"], restarting["message"]) == (
        "PyTorchJobRestarting",
        "PyTorchJob a is restarting because 1 Worker replica(s) failed.",
    )
    assert world.condition("Running") is None
    # the restart's event goes with the pod's deletion, not with the condition
    assert decided.events == ()
    assert decided.deletes[0].announce == plan.Event(
        "Warning", "PyTorchJobRestarting", "job a is restarting because Worker replica(s) failed."
    )
    assert backoff.recorded(world.services["a-worker-1"]) == 1


def test_the_restarted_replica_is_recreated_and_the_job_runs_again() -> None:
    world = exit_code_job()
    world.exit("a-worker-1", 137)
    world.step(at(2))
    assert created_names(world.step(at(3))) == ["pods/a-worker-1"]
    world.run("a-worker-1")
    world.step(at(4))
    running = world.condition("Running")
    assert running is not None
    assert running["status"] == "True"
    assert world.condition("Restarting") is None


def test_a_permanent_exit_code_fails_the_job_with_upstreams_reason_and_keeps_the_pods() -> None:
    world = exit_code_job()
    world.exit("a-worker-0", 1)
    decided = world.step(at(2))
    failed = world.condition("Failed")
    assert failed is not None
    assert (failed["reason"], failed["message"]) == (
        "PyTorchJobFailed",
        'job "a" is failing because "Worker" replica(s) failed.',
    )
    assert world.status["completionTime"] == "2024-05-01T12:00:02Z"
    assert decided.deletes == ()  # cleanPodPolicy None
    assert decided.metrics == ("failed",)
    assert ("Warning", "PyTorchJobFailed") in [(e.type, e.reason) for e in decided.events]


def test_a_failed_pod_seen_again_before_its_deletion_is_counted_once() -> None:
    world = exit_code_job()
    world.exit("a-worker-1", 137)
    failed_pod = dict(world.pods["a-worker-1"])
    world.step(at(2))
    world.objects[("pods", "a-worker-1")] = failed_pod  # the cache still shows the pod
    again = world.plan(at(3))
    assert [(d.before, d.announce) for d in again.deletes] == [(None, None)]


BACKOFF = [
    pytest.param(1, [137], False, id="limit 1: the first retryable failure is retried"),
    pytest.param(1, [137, 137], True, id="limit 1: the second one fails the job"),
    pytest.param(0, [137], True, id="limit 0: no retry at all"),
    pytest.param(None, [137] * 5, False, id="no limit: retried every time"),
]


@pytest.mark.parametrize(("limit", "codes", "fails"), BACKOFF)
def test_backoff_limit_counts_exit_code_recreations(
    limit: int | None, codes: list[int], fails: bool
) -> None:
    world = exit_code_job(limit)
    for step, code in enumerate(codes):
        world.exit("a-worker-0", code)
        world.step(at(10 * step + 2))
        if world.condition("Failed"):
            break
        world.step(at(10 * step + 3))
        world.run("a-worker-0")
    failed = world.condition("Failed")
    assert (failed is not None) is fails
    if fails:
        assert failed is not None
        assert (
            failed["message"]
            == "Job a has failed because it has reached the specified backoff limit"
        )


@pytest.mark.parametrize(
    ("restarts", "fails"),
    [
        pytest.param(1, False, id="OnFailure, limit 1: one in-place restart is allowed"),
        pytest.param(2, True, id="OnFailure, limit 1: a second in-place restart fails the job"),
    ],
)
def test_backoff_limit_counts_in_place_restarts(restarts: int, fails: bool) -> None:
    world = pytorch(backoffLimit=1, cleanPodPolicy="Running")
    world.step()
    world.run()
    world.restarted("a-worker-0", restarts)
    decided = world.step(at(5))
    assert (world.condition("Failed") is not None) is fails
    if fails:
        assert sorted(deleted(decided)) == sorted(
            f"{kind}/a-{rt}"
            for kind in ("pods", "services")
            for rt in ("master-0", "worker-0", "worker-1")
        )


def test_a_retryable_failure_under_never_is_left_to_the_status_rules() -> None:
    world = World(jaxjob("ns", "j").workers(2).doc())
    world.step()
    world.run()
    world.exit("j-worker-1", 137)
    decided = world.step(at(2))
    failed = world.condition("Failed")
    assert failed is not None
    assert failed["message"] == "JAXJob j is failed because 1 Worker replica(s) failed."
    assert decided.deletes == ()


# -- the deadline --------------------------------------------------------------------------------


def test_before_the_deadline_the_job_is_looked_at_again_when_it_comes() -> None:
    world = pytorch(activeDeadlineSeconds=60)
    decided = world.step()
    assert decided.requeue_after == 60.0
    assert world.step(at(45)).requeue_after == 15.0
    assert world.condition("Failed") is None


def test_past_the_deadline_the_job_fails_and_running_pods_go_by_clean_pod_policy() -> None:
    world = pytorch(activeDeadlineSeconds=60, cleanPodPolicy="Running")
    world.step()
    world.run()
    decided = world.step(at(60))
    failed = world.condition("Failed")
    assert failed is not None
    assert (failed["reason"], failed["message"]) == (
        "PyTorchJobFailed",
        "Job a has failed because it was active longer than specified deadline",
    )
    assert len(decided.deletes) == 6
    assert decided.requeue_after is None


# -- success -------------------------------------------------------------------------------------


def test_when_the_master_succeeds_the_job_succeeds_with_upstreams_message() -> None:
    world = pytorch()
    world.step()
    world.run()
    world.step(at(1))
    world.exit("a-master-0", 0)
    decided = world.step(at(2))
    succeeded = world.condition("Succeeded")
    assert succeeded is not None
    assert (succeeded["reason"], succeeded["message"]) == (
        "PyTorchJobSucceeded",
        "PyTorchJob a is successfully completed.",
    )
    running = world.condition("Running")
    assert running is not None
    assert running["status"] == "False"
    assert world.status["completionTime"] == "2024-05-01T12:00:02Z"
    assert world.status["replicaStatuses"]["Master"].get("succeeded") == 1
    assert world.status["replicaStatuses"]["Worker"].get("succeeded") == 2  # active moved over
    assert "active" not in world.status["replicaStatuses"]["Worker"]
    assert decided.metrics == ("successful",)


def tf_world(success_policy: str = "", chief: bool = False) -> World:
    builder = tfjob("ns", "t").workers(4)
    if chief:
        builder = builder.replica("Chief", 1)
    if success_policy:
        builder = builder.spec(successPolicy=success_policy)
    world = World(builder.doc())
    world.step()
    world.run()
    return world


def test_tf_chief_success_ends_the_job_while_workers_run() -> None:
    world = tf_world(chief=True)
    world.exit("t-chief-0", 0)
    world.step(at(2))
    succeeded = world.condition("Succeeded")
    assert succeeded is not None
    assert succeeded["message"] == "TFJob ns/t successfully completed."


def test_tf_worker_0_success_ends_a_job_without_chief() -> None:
    world = tf_world()
    world.exit("t-worker-0", 0)
    world.step(at(2))
    assert world.condition("Succeeded") is not None


def test_tf_all_workers_policy_waits_for_every_worker() -> None:
    world = tf_world("AllWorkers")
    world.exit("t-worker-0", 0)
    world.step(at(2))
    assert world.condition("Succeeded") is None
    for i in (1, 2, 3):
        world.exit(f"t-worker-{i}", 0)
    world.step(at(3))
    assert world.condition("Succeeded") is not None


def test_tf_config_is_set_for_a_distributed_job() -> None:
    world = tf_world(chief=True)
    env = env_of(world.pods["t-worker-1"], "tensorflow")
    assert '"task":{"type":"worker","index":1}' in env["TF_CONFIG"]


# -- events and the status write -----------------------------------------------------------------


def test_only_the_net_condition_change_of_a_pass_is_reported() -> None:
    world = World(pytorchjob("ns", "a").master().workers(2).doc())
    world.step()
    world.run()
    world.pods["a-worker-1"]["status"] = {"phase": "Failed"}
    del world.objects[("services", "a-worker-1")]
    decided = world.step(at(2))
    # the master runs (Running), a worker failed without its Service yet (Restarting)
    assert [e.reason for e in decided.events] == ["PyTorchJobRestarting"]


def test_last_reconcile_time_moves_only_with_another_change() -> None:
    world = pytorch()
    world.step()
    assert world.plan(at(30)).status_changed is False
    world.run("a-master-0")
    decided = world.step(at(31))
    assert decided.status is not None
    assert decided.status["lastReconcileTime"] == "2024-05-01T12:00:31Z"
    assert decided.status["startTime"] == "2024-05-01T12:00:00Z"


def test_pods_are_created_in_the_namespace_of_the_job() -> None:
    world = pytorch()
    world.step(T0)
    assert {p["metadata"]["namespace"] for p in world.pods.values()} == {"ns"}
