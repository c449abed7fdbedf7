"""The workload: a JobSet realised as pods, JobSet's success, failure and restart policies,
dependsOn and startupPolicy, suspend and resize — ported from JobSet's controller tests as
observable pod plans, with sentence ids."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain.operator.trainjob import observation, workload
from kubetrain.operator.trainjob import plan as trainjob_plan

OWNER = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "name": "job",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def rjob(name: str, *, replicas: int = 1, pods: int = 1, **extra: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "node", "image": "x"}]},
                },
            }
        },
    }
    job.update(extra)
    return job


def jobset(*rjobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "job", "namespace": "ns", "ownerReferences": [OWNER]},
        "spec": {"replicatedJobs": list(rjobs), **spec},
    }


def pods_of(js: dict[str, Any], restarts: int = 0) -> dict[str, dict[str, Any]]:
    seen = observation.observe(js, [], restarts)
    return {workload.name_of(p): p for p in trainjob_plan.next_pods(js, seen, []).create}


def with_phase(
    pod: dict[str, Any], phase: str, *, ready: bool = False, restarts: int = 0, when: str = "t1"
) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    state = {"running": {"startedAt": when}} if phase == "Running" else {}
    if phase in ("Succeeded", "Failed"):
        state = {"terminated": {"startedAt": when, "finishedAt": when}}
    pod["metadata"]["uid"] = "uid-" + workload.name_of(pod)
    pod["status"] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        "containerStatuses": [{"name": "node", "restartCount": restarts, "state": state}],
    }
    return pod


def test_pods_are_named_labelled_and_placed_as_jobset_and_indexed_jobs_do() -> None:
    js = jobset(rjob("launcher"), rjob("node", replicas=2, pods=2))
    pods = pods_of(js)
    assert sorted(pods) == [
        "job-launcher-0-0",
        "job-node-0-0",
        "job-node-0-1",
        "job-node-1-0",
        "job-node-1-1",
    ]
    pod = pods["job-node-1-1"]
    assert pod["spec"]["hostname"] == "job-node-1-1"
    assert pod["spec"]["subdomain"] == "job"
    assert pod["spec"]["restartPolicy"] == "OnFailure", "JobSet's default"
    labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
    assert labels["app"] == "node", "the template's own labels stay"
    expected = {
        "jobset.sigs.k8s.io/jobset-name": "job",
        "jobset.sigs.k8s.io/jobset-uid": "u-1",
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "2",
        "jobset.sigs.k8s.io/global-replicas": "3",
        "jobset.sigs.k8s.io/job-index": "1",
        "jobset.sigs.k8s.io/job-global-index": "2",
        "jobset.sigs.k8s.io/group-name": "default",
        "jobset.sigs.k8s.io/group-replicas": "3",
        "jobset.sigs.k8s.io/job-group-index": "2",
        "jobset.sigs.k8s.io/restart-attempt": "0",
    }
    for key, value in expected.items():
        assert labels[key] == value, key
        assert annotations[key] == value, key
    assert len(labels["jobset.sigs.k8s.io/job-key"]) == 40, "SHA-1 of ns/job name"
    assert annotations["batch.kubernetes.io/job-completion-index"] == "1"
    assert labels["batch.kubernetes.io/job-name"] == "job-node-1"
    assert pod["metadata"]["ownerReferences"] == [OWNER]


def test_subdomain_and_dns_hostnames_follow_the_network_block() -> None:
    js = jobset(rjob("node"), network={"subdomain": "net", "enableDNSHostnames": False})
    pod = pods_of(js)["job-node-0-0"]
    assert "hostname" not in pod["spec"]
    assert "subdomain" not in pod["spec"]
    service = workload.desired_service(js)
    assert service["metadata"]["name"] == "net"
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": {"jobset.sigs.k8s.io/jobset-name": "job"},
        "publishNotReadyAddresses": True,
    }


def test_coordinator_key_names_the_coordinator_endpoint() -> None:
    js = jobset(rjob("node", pods=2), coordinator={"replicatedJob": "node", "podIndex": 1})
    pod = pods_of(js)["job-node-0-0"]
    assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/coordinator"] == "job-node-0-1.job"


def _observe(js: dict[str, Any], pods: list[dict[str, Any]], **kw: Any) -> observation.Observation:
    return observation.observe(js, pods, **kw)


@pytest.mark.parametrize(
    ("phases", "spec", "outcome"),
    [
        pytest.param(
            {"job-node-0-0": "Succeeded", "job-node-0-1": "Succeeded"},
            {},
            ("Complete", "AllJobsCompleted", "jobset completed successfully"),
            id="all pods of all jobs succeeded: complete",
        ),
        pytest.param(
            {"job-node-0-0": "Succeeded", "job-node-0-1": "Running"},
            {},
            None,
            id="one index still running: not complete",
        ),
        pytest.param(
            {"job-node-0-0": "Running", "job-node-0-1": "Failed"},
            {},
            (
                "Failed",
                "FailedJobs",
                "jobset failed due to one or more job failures (first failed job: job-node-0)",
            ),
            id="no failure policy: one failed job fails the set",
        ),
        pytest.param(
            {"job-node-0-0": "Running", "job-node-0-1": "Failed"},
            {"failurePolicy": {"maxRestarts": 0}},
            (
                "Failed",
                "ReachedMaxRestarts",
                "jobset failed due to reaching max number of restarts "
                "(first failed job: job-node-0)",
            ),
            id="maxRestarts 0: no restart left",
        ),
        pytest.param(
            {"job-node-0-0": "Running", "job-node-0-1": "Failed"},
            {"failurePolicy": {"maxRestarts": 3, "rules": [{"name": "r", "action": "FailJobSet"}]}},
            (
                "Failed",
                "FailJobSetFailurePolicyAction",
                "applying FailJobSet failure policy action (first failed job: job-node-0)",
            ),
            id="a FailJobSet rule fails at once",
        ),
    ],
)
def test_success_and_failure_verdicts(
    phases: dict[str, str], spec: dict[str, Any], outcome: tuple[str, str, str] | None
) -> None:
    js = jobset(rjob("node", pods=2), **spec)
    pods = [with_phase(p, phases[n]) for n, p in pods_of(js).items()]
    seen = _observe(js, pods)
    found = seen.outcome
    assert (None if found is None else (found.type, found.reason, found.message)) == outcome


def test_a_failure_under_max_restarts_restarts_every_pod_with_the_next_attempt() -> None:
    js = jobset(rjob("node", pods=2), failurePolicy={"maxRestarts": 2})
    created = pods_of(js)
    pods = [
        with_phase(created["job-node-0-0"], "Running"),
        with_phase(created["job-node-0-1"], "Failed"),
    ]
    seen = _observe(js, pods)
    assert seen.outcome is None
    assert seen.restart is not None
    assert (seen.restart.restarts, seen.restart.towards_max) == (1, 1)
    plan = trainjob_plan.next_pods(js, seen, pods)
    assert plan.restart == seen.restart
    assert plan.delete == ("job-node-0-0", "job-node-0-1"), "recreate: every pod goes"
    assert plan.create == ()
    assert plan.events == (
        (
            "Warning",
            "RestartJobSetFailurePolicyAction",
            "applying RestartJobSet failure policy action (first failed job: job-node-0)",
        ),
    )
    # Once the counts say attempt 1, the old pods are the previous attempt: deleted, then
    # replaced (a name is reused only once its pod is gone).
    seen = _observe(js, pods, restarts=1, towards_max=1)
    assert seen.outcome is None
    assert seen.restart is None
    plan = trainjob_plan.next_pods(js, seen, pods)
    assert plan.delete == ("job-node-0-0", "job-node-0-1")
    assert plan.create == ()
    plan = trainjob_plan.next_pods(js, _observe(js, [], restarts=1, towards_max=1), [])
    labels = [p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for p in plan.create]
    assert labels == ["1", "1"]


def test_ignore_max_restarts_rules_do_not_count_towards_the_limit() -> None:
    policy = {"maxRestarts": 0, "rules": [{"action": "RestartJobSetAndIgnoreMaxRestarts"}]}
    js = jobset(rjob("node"), failurePolicy=policy)
    pods = [with_phase(pods_of(js)["job-node-0-0"], "Failed")]
    seen = _observe(js, pods)
    assert seen.outcome is None
    assert seen.restart is not None
    assert (seen.restart.restarts, seen.restart.towards_max) == (1, 0)


def test_rules_match_by_target_replicated_job() -> None:
    policy = {
        "maxRestarts": 5,
        "rules": [{"action": "FailJobSet", "targetReplicatedJobs": ["launcher"]}],
    }
    js = jobset(rjob("launcher"), rjob("node"), failurePolicy=policy)
    created = pods_of(js)
    node_failed = [with_phase(created["job-node-0-0"], "Failed")]
    assert _observe(js, node_failed).restart is not None, "the rule targets the launcher only"
    launcher_failed = [with_phase(created["job-launcher-0-0"], "Failed")]
    assert _observe(js, launcher_failed).outcome.reason == "FailJobSetFailurePolicyAction"  # type: ignore[union-attr]


def test_in_place_restarts_beyond_backoff_limit_fail_the_job() -> None:
    node = rjob("node")
    node["template"]["spec"]["backoffLimit"] = 2
    js = jobset(node)
    pod = pods_of(js)["job-node-0-0"]
    assert _observe(js, [with_phase(pod, "Running", restarts=2)]).outcome is None
    outcome = _observe(js, [with_phase(pod, "Running", restarts=3)]).outcome
    assert outcome is not None
    assert outcome.reason == "FailedJobs"


@pytest.mark.parametrize(
    ("policy", "done", "complete"),
    [
        pytest.param({"operator": "Any"}, ["job-node-1-0"], True, id="Any: one job is enough"),
        pytest.param(
            {"operator": "All", "targetReplicatedJobs": ["launcher"]},
            ["job-launcher-0-0"],
            True,
            id="All over the launcher only: the nodes may still run",
        ),
        pytest.param(
            {"operator": "All"}, ["job-launcher-0-0"], False, id="All: every job must succeed"
        ),
    ],
)
def test_success_policy(policy: dict[str, Any], done: list[str], complete: bool) -> None:
    js = jobset(rjob("launcher"), rjob("node", replicas=2), successPolicy=policy)
    pods = [with_phase(p, "Succeeded" if n in done else "Running") for n, p in pods_of(js).items()]
    seen = _observe(js, pods)
    assert (seen.outcome is not None) == complete
    if complete:
        plan = trainjob_plan.next_pods(js, seen, pods)
        assert set(plan.delete) == {n for n in workload.desired_pod_names(js) if n not in done}
        assert plan.create == ()


def test_jobs_status_counts_jobs_not_pods() -> None:
    js = jobset(rjob("node", replicas=3, pods=2))
    created = pods_of(js)
    phases = {
        "job-node-0-0": ("Running", True),
        "job-node-0-1": ("Running", True),
        "job-node-1-0": ("Succeeded", False),
        "job-node-1-1": ("Succeeded", False),
        "job-node-2-0": ("Running", False),
        "job-node-2-1": ("Pending", False),
    }
    pods = [with_phase(created[n], ph, ready=r) for n, (ph, r) in phases.items()]
    (status,) = _observe(js, pods).statuses
    assert status.to_dict() == {
        "name": "node",
        "ready": 1,
        "succeeded": 1,
        "failed": 0,
        "active": 2,
        "suspended": 0,
    }


def test_depends_on_complete_holds_back_the_dependent_job() -> None:
    js = jobset(
        rjob("init"), rjob("node", pods=2, dependsOn=[{"name": "init", "status": "Complete"}])
    )
    assert list(pods_of(js)) == ["job-init-0-0"]
    init = pods_of(js)["job-init-0-0"]
    running = [with_phase(init, "Running", ready=True)]
    assert trainjob_plan.next_pods(js, _observe(js, running), running).create == ()
    done = [with_phase(init, "Succeeded")]
    created = trainjob_plan.next_pods(js, _observe(js, done), done).create
    assert [workload.name_of(p) for p in created] == ["job-node-0-0", "job-node-0-1"]


def test_depends_on_ready_needs_the_dependency_ready() -> None:
    js = jobset(rjob("init"), rjob("node", dependsOn=[{"name": "init", "status": "Ready"}]))
    init = pods_of(js)["job-init-0-0"]
    not_ready = [with_phase(init, "Running")]
    assert trainjob_plan.next_pods(js, _observe(js, not_ready), not_ready).create == ()
    ready = [with_phase(init, "Running", ready=True)]
    created = trainjob_plan.next_pods(js, _observe(js, ready), ready).create
    assert [workload.name_of(p) for p in created] == ["job-node-0-0"]


def test_in_order_startup_starts_one_replicated_job_after_the_other() -> None:
    js = jobset(rjob("a"), rjob("b"), startupPolicy={"startupPolicyOrder": "InOrder"})
    assert list(pods_of(js)) == ["job-a-0-0"]
    a = [with_phase(pods_of(js)["job-a-0-0"], "Running", ready=True)]
    created = trainjob_plan.next_pods(js, _observe(js, a), a).create
    assert [workload.name_of(p) for p in created] == ["job-b-0-0"]


def test_suspended_deletes_active_pods_and_counts_suspended_jobs() -> None:
    js = jobset(rjob("node", replicas=2), suspend=True)
    created = pods_of(jobset(rjob("node", replicas=2)))
    pods = [
        with_phase(created["job-node-0-0"], "Running"),
        with_phase(created["job-node-1-0"], "Succeeded"),
    ]
    seen = _observe(js, pods)
    plan = trainjob_plan.next_pods(js, seen, pods)
    assert plan.delete == ("job-node-0-0",)
    assert plan.create == ()
    assert seen.statuses[0].suspended == 1


def test_changing_the_pod_count_adds_and_removes_pods_by_index() -> None:
    three = jobset(rjob("node", pods=3))
    pods = [with_phase(p, "Running", ready=True) for p in pods_of(three).values()]
    grown = jobset(rjob("node", pods=4))
    plan = trainjob_plan.next_pods(grown, _observe(grown, pods), pods)
    assert [workload.name_of(p) for p in plan.create] == ["job-node-0-3"]
    assert plan.delete == ()
    shrunk = jobset(rjob("node", pods=2))
    plan = trainjob_plan.next_pods(shrunk, _observe(shrunk, pods), pods)
    assert plan.delete == ("job-node-0-2",)
    assert plan.create == ()


def test_a_name_still_taken_by_a_terminating_pod_is_not_reused_yet() -> None:
    js = jobset(rjob("node"))
    pod = copy.deepcopy(pods_of(js)["job-node-0-0"])
    pod["metadata"]["deletionTimestamp"] = "t"
    plan = trainjob_plan.next_pods(js, _observe(js, [pod]), [pod])
    assert plan.create == ()
    assert plan.delete == ()


def test_finished_sets_delete_only_active_pods() -> None:
    js = jobset(rjob("node", pods=2))
    created = pods_of(js)
    pods = [
        with_phase(created["job-node-0-0"], "Succeeded"),
        with_phase(created["job-node-0-1"], "Running"),
    ]
    plan = trainjob_plan.next_pods(js, _observe(js, pods), pods, finished=True)
    assert plan.delete == ("job-node-0-1",)
    assert plan.create == ()


def test_training_starts_when_every_trainer_pod_runs() -> None:
    trainer = rjob("node", pods=2)
    trainer["template"]["metadata"] = {
        "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    }
    js = jobset(rjob("init", pods=1), trainer)
    created = pods_of(js)
    one = [with_phase(created["job-node-0-0"], "Running", when="2030-01-01T00:00:05Z")]
    assert _observe(js, one).training_started_at is None
    both = [
        *one,
        with_phase(created["job-node-0-1"], "Running", when="2030-01-01T00:00:09Z"),
    ]
    assert _observe(js, both).training_started_at == "2030-01-01T00:00:09Z", "the last start"


def test_restart_counts_are_read_from_the_service() -> None:
    service = workload.desired_service(jobset(rjob("node")), 3, 2)
    assert workload.restart_counts(service) == (3, 2)
    assert workload.restart_counts(None) == (0, 0)
