"""TFJob: TF_CONFIG text (reference 2.2), master role, and upstream's status_test.go table."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain import frameworks
from kubetrain.frameworks import tensorflow
from tests.builders import tfjob


def tf_config_of(job: Any, rtype: str, index: int, **settings: Any) -> str | None:
    env = frameworks.pod_contract(job, rtype, index, frameworks.Settings(**settings)).env
    found = [var["value"] for var in env.get("tensorflow", ()) if var["name"] == "TF_CONFIG"]
    assert len(found) <= 1
    return found[0] if found else None


def test_the_reference_example_for_two_workers_is_reproduced_byte_for_byte() -> None:
    job = tfjob("kubeflow", "tfjob-simple").workers(2).build()
    assert tf_config_of(job, "Worker", 0) == (
        '{"cluster":{"worker":["tfjob-simple-worker-0.kubeflow.svc:2222",'
        '"tfjob-simple-worker-1.kubeflow.svc:2222"]},'
        '"task":{"type":"worker","index":0},"environment":"cloud"}'
    )


def test_cluster_keys_are_sorted_lower_case_types_and_task_names_the_pod() -> None:
    job = tfjob("ns", "j").workers(2).replica("PS", 1).replica("Chief", 1).build()
    assert tf_config_of(job, "Worker", 1) == (
        '{"cluster":{"chief":["j-chief-0.ns.svc:2222"],"ps":["j-ps-0.ns.svc:2222"],'
        '"worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}'
    )


def test_each_replica_type_uses_the_tfjob_port_of_its_own_tensorflow_container() -> None:
    job = (
        tfjob("ns", "j")
        .workers(1)
        .replica("PS", 1, ports=[{"name": "tfjob-port", "containerPort": 3333}])
        .build()
    )
    assert tf_config_of(job, "PS", 0) == (
        '{"cluster":{"ps":["j-ps-0.ns.svc:3333"],"worker":["j-worker-0.ns.svc:2222"]},'
        '"task":{"type":"ps","index":0},"environment":"cloud"}'
    )


def test_a_port_without_the_tfjob_port_name_is_ignored_and_2222_is_used() -> None:
    job = tfjob("ns", "j").workers(2).build()
    container = job.replica_specs()["Worker"].template["spec"]["containers"][0]
    container["ports"] = [{"name": "grpc", "containerPort": 5000}]
    assert tensorflow.cluster_spec(job) == {
        "worker": ["j-worker-0.ns.svc:2222", "j-worker-1.ns.svc:2222"]
    }


def test_a_custom_cluster_domain_is_appended_after_svc() -> None:
    job = tfjob("kubeflow", "tfjob-simple").workers(2).build()
    text = tf_config_of(job, "Worker", 1, cluster_domain="cluster.local")
    assert text == (
        '{"cluster":{"worker":["tfjob-simple-worker-0.kubeflow.svc.cluster.local:2222",'
        '"tfjob-simple-worker-1.kubeflow.svc.cluster.local:2222"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}'
    )


SPARSE = [
    pytest.param(
        "Worker",
        1,
        '{"cluster":{"worker":{"1":"j-worker-1.ns.svc:2222"},'
        '"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"]},"task":{"type":"worker","index":1}}',
        id="a worker lists only itself, keyed by its index, and every PS",
    ),
    pytest.param(
        "PS",
        1,
        '{"cluster":{"worker":{},"ps":["j-ps-1.ns.svc:2222"]},"task":{"type":"ps","index":1}}',
        id="a PS lists only itself",
    ),
    pytest.param(
        "Chief",
        0,
        '{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}',
        id="a chief gets an empty sparse cluster",
    ),
]


@pytest.mark.parametrize(("rtype", "index", "expected"), SPARSE)
def test_enable_dynamic_worker_writes_the_sparse_form_without_environment(
    rtype: str, index: int, expected: str
) -> None:
    job = (
        tfjob("ns", "j")
        .workers(2)
        .replica("PS", 2)
        .replica("Chief", 1)
        .spec(enableDynamicWorker=True)
        .build()
    )
    assert tf_config_of(job, rtype, index) == expected


def test_a_sparse_worker_without_any_ps_gets_ps_null_as_upstream_does() -> None:
    job = tfjob("ns", "j").workers(2).spec(enableDynamicWorker=True).build()
    assert tf_config_of(job, "Worker", 0) == (
        '{"cluster":{"worker":{"0":"j-worker-0.ns.svc:2222"},"ps":null},'
        '"task":{"type":"worker","index":0}}'
    )


def test_a_single_replica_job_is_local_training_and_gets_no_tf_config() -> None:
    job = tfjob("ns", "j").workers(1).build()
    assert frameworks.pod_contract(job, "Worker", 0).env == {}


def test_a_job_with_zero_replicas_in_total_counts_as_distributed() -> None:
    job = tfjob("ns", "j").workers(0).replica("PS", 0).build()
    assert tensorflow.is_distributed(job)


def test_tf_config_goes_only_to_the_tensorflow_container_not_to_sidecars() -> None:
    job = tfjob("ns", "j").workers(2, sidecars=("logger",)).build()
    env = frameworks.pod_contract(job, "Worker", 0).env
    assert list(env) == ["tensorflow"]
    assert [var["name"] for var in env["tensorflow"]] == ["TF_CONFIG"]


MASTER_ROLE = [
    pytest.param(("Chief", "Worker"), "Chief", 0, True, id="the chief when there is a chief"),
    pytest.param(("Chief", "Worker"), "Worker", 0, False, id="not worker 0 when there is a chief"),
    pytest.param(("Master", "PS"), "Master", 0, True, id="the master when there is a master"),
    pytest.param(("Worker", "PS"), "Worker", 0, True, id="worker 0 when there is no chief"),
    pytest.param(("Worker", "PS"), "Worker", 1, False, id="not worker 1"),
    pytest.param(("Worker", "PS"), "PS", 0, False, id="never a PS"),
    pytest.param(("Worker", "Evaluator"), "Evaluator", 0, False, id="never an evaluator"),
]


@pytest.mark.parametrize(("present", "rtype", "index", "master"), MASTER_ROLE)
def test_master_role_label(present: tuple[str, ...], rtype: str, index: int, master: bool) -> None:
    builder = tfjob("ns", "j")
    for rt in present:
        builder.replica(rt, 2 if rt in ("Worker", "PS") else 1)
    labels = frameworks.pod_contract(builder.build(), rtype, index).labels
    assert (labels.get(frameworks.JOB_ROLE_LABEL) == "master") is master


# --- status: upstream tensorflow/status_test.go, "Test Status" (19 cases) and "Test Failed" --

Counts = tuple[int, int, int]  # failed, succeeded, active
NONE: Counts = (0, 0, 0)


def tf_status_job(
    *, chief: bool, workers: int, ps: int, policy: str | None = None, restart: bool = False
) -> Any:
    restart_policy = "ExitCode" if restart else None
    builder = tfjob("default", "test-tfjob")
    if workers:
        builder.workers(workers, restart_policy=restart_policy)
    if ps:
        builder.replica("PS", ps, restart_policy=restart_policy)
    if chief:
        builder.replica("Chief", 1, restart_policy=restart_policy)
    if policy is not None:
        builder.spec(successPolicy=policy)
    return builder.build()


STATUS = [
    # description, job shape, PS, Worker, Chief counts, restart, worker0, present, sequence
    ("Chief worker is succeeded", dict(chief=True, workers=1, ps=0),
     NONE, (0, 1, 0), (0, 1, 0), False, False, "Succeeded", ("Succeeded",)),
    ("Chief worker is running", dict(chief=True, workers=1, ps=0),
     NONE, NONE, (0, 0, 1), False, False, "Running", ("Running",)),
    ("Chief worker is failed", dict(chief=True, workers=1, ps=0),
     NONE, NONE, (1, 0, 0), False, False, "Failed", ("Failed",)),
    ("(No chief worker) Worker is failed", dict(chief=False, workers=1, ps=0),
     NONE, (1, 0, 0), NONE, False, False, "Failed", ("Failed",)),
    ("(No chief worker) Worker is succeeded", dict(chief=False, workers=1, ps=0),
     NONE, (0, 1, 0), NONE, False, False, "Succeeded", ("Succeeded",)),
    ("(No chief worker) Worker is running", dict(chief=False, workers=1, ps=0),
     NONE, (0, 0, 1), NONE, False, False, "Running", ("Running",)),
    ("(No chief worker) 2 workers are succeeded, 2 workers are active",
     dict(chief=False, workers=4, ps=2),
     (0, 0, 2), (0, 2, 2), NONE, False, False, "Running", ("Running",)),
    ("(No chief worker) 2 workers are running, 2 workers are failed",
     dict(chief=False, workers=4, ps=2),
     (0, 0, 2), (2, 0, 2), NONE, False, False, "Failed", ("Running", "Failed")),
    ("(No chief worker) 2 workers are succeeded, 2 workers are failed",
     dict(chief=False, workers=4, ps=2),
     (0, 0, 2), (2, 2, 0), NONE, False, False, "Failed", ("Failed",)),
    ("(No chief worker) worker-0 are succeeded, 3 workers are active",
     dict(chief=False, workers=4, ps=2),
     (0, 0, 2), (0, 1, 3), NONE, False, True, "Succeeded", ("Succeeded",)),
    ("(No chief worker, successPolicy: AllWorkers) worker-0 are succeeded, 3 workers are active",
     dict(chief=False, workers=4, ps=0, policy="AllWorkers"),
     NONE, (0, 1, 3), NONE, False, True, "Running", ("Running",)),
    ("(No chief worker, successPolicy: AllWorkers) 4 workers are succeeded",
     dict(chief=False, workers=4, ps=0, policy="AllWorkers"),
     NONE, (0, 4, 0), NONE, False, True, "Succeeded", ("Succeeded",)),
    ("(No chief worker, successPolicy: AllWorkers) worker-0 is succeeded, "
     "2 workers are running, 1 worker is failed",
     dict(chief=False, workers=4, ps=0, policy="AllWorkers"),
     NONE, (1, 1, 2), NONE, False, True, "Failed", ("Running", "Failed")),
    # Upstream's test only checks that a Running condition was recorded; the worker failures
    # then fail the job, which the sequence pins.
    ("Chief is running, workers are failed", dict(chief=True, workers=4, ps=2),
     (0, 0, 2), (4, 0, 0), (0, 0, 1), False, False, "Running", ("Running", "Failed")),
    ("Chief is running, workers are succeeded", dict(chief=True, workers=4, ps=2),
     (0, 0, 2), (0, 4, 0), (0, 0, 1), False, False, "Running", ("Running",)),
    ("Chief is running, a PS is failed", dict(chief=True, workers=4, ps=2),
     (1, 0, 1), (0, 4, 0), (0, 0, 1), False, False, "Failed", ("Running", "Failed")),
    ("Chief is failed, workers are succeeded", dict(chief=True, workers=4, ps=2),
     (0, 0, 2), (0, 4, 0), (1, 0, 0), False, False, "Failed", ("Failed",)),
    # The chief's success is recorded first, as upstream's test checks; the failed workers
    # are judged after it in the same pass.
    ("Chief is succeeded, workers are failed", dict(chief=True, workers=4, ps=2),
     (0, 0, 2), (4, 0, 0), (0, 1, 0), False, False, "Succeeded", ("Succeeded", "Failed")),
    ("Chief is failed and restarting", dict(chief=True, workers=4, ps=2),
     (0, 0, 2), (4, 0, 0), (1, 0, 0), True, False, "Restarting", ("Restarting", "Restarting")),
    ("Test Failed: one of three workers failed", dict(chief=False, workers=3, ps=0),
     NONE, (1, 0, 0), NONE, False, False, "Failed", ("Failed",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "ps", "worker", "chief", "restart", "worker0", "present", "sequence"),
    [pytest.param(*case[1:], id=case[0]) for case in STATUS],
)
def test_status_table_from_upstream(
    shape: dict[str, Any],
    ps: Counts,
    worker: Counts,
    chief: Counts,
    restart: bool,
    worker0: bool,
    present: str,
    sequence: tuple[str, ...],
) -> None:
    job = tf_status_job(**shape, restart=restart)
    counts = {
        rtype: frameworks.ReplicaCounts(failed=f, succeeded=s, active=a)
        for rtype, (f, s, a) in (("PS", ps), ("Worker", worker), ("Chief", chief))
    }
    restarting = None
    if restart:
        # The pod loop has already seen the chief's pod fail with retryable code 130.
        failure = frameworks.on_pod_failed(job, "Chief", 130)
        assert failure is not None
        assert failure.restart
        restarting = failure.condition
    outcome = frameworks.evaluate(job, counts, worker0_completed=worker0, restarting=restarting)
    assert present in outcome.types
    assert outcome.types == sequence


def test_failure_message_and_reason_name_the_namespace_job_count_and_type() -> None:
    job = tf_status_job(chief=True, workers=4, ps=2)
    counts = {
        "Chief": frameworks.ReplicaCounts(active=1),
        "PS": frameworks.ReplicaCounts(failed=1, active=1),
    }
    outcome = frameworks.evaluate(job, counts)
    assert outcome.condition == frameworks.Condition(
        "Failed",
        "TFJobFailed",
        "TFJob default/test-tfjob has failed because 1 PS replica(s) failed.",
    )
    assert outcome.changes[0] == frameworks.Condition(
        "Running", "TFJobRunning", "TFJob default/test-tfjob is running."
    )


def test_success_message_is_the_same_for_a_chief_and_for_workers() -> None:
    for job, counts in (
        (
            tf_status_job(chief=True, workers=1, ps=0),
            {"Chief": frameworks.ReplicaCounts(succeeded=1)},
        ),
        (
            tf_status_job(chief=False, workers=2, ps=0),
            {"Worker": frameworks.ReplicaCounts(succeeded=2)},
        ),
    ):
        assert frameworks.evaluate(job, counts).condition == frameworks.Condition(
            "Succeeded", "TFJobSucceeded", "TFJob default/test-tfjob successfully completed."
        )


def test_a_restarting_job_keeps_the_reason_and_message_it_already_has() -> None:
    job = tf_status_job(chief=False, workers=2, ps=0, restart=True)
    existing = frameworks.Condition("Restarting", "TFJobRestarting", "job x is restarting")
    outcome = frameworks.evaluate(
        job, {"Worker": frameworks.ReplicaCounts(failed=1, active=1)}, restarting=existing
    )
    assert outcome.changes == (
        frameworks.Condition("Running", "TFJobRunning", "TFJob default/test-tfjob is running."),
        existing,
    )


def test_with_dynamic_workers_a_failed_worker_does_not_fail_the_job() -> None:
    job = (
        tfjob("default", "test-tfjob")
        .workers(3)
        .replica("PS", 1)
        .spec(enableDynamicWorker=True)
        .build()
    )
    counts = {"Worker": frameworks.ReplicaCounts(failed=1, active=2)}
    assert frameworks.evaluate(job, counts).types == ("Running",)


def test_with_dynamic_workers_a_failed_ps_still_fails_the_job() -> None:
    job = (
        tfjob("default", "test-tfjob")
        .workers(3)
        .replica("PS", 1)
        .spec(enableDynamicWorker=True)
        .build()
    )
    counts = {
        "Worker": frameworks.ReplicaCounts(active=3),
        "PS": frameworks.ReplicaCounts(failed=1),
    }
    outcome = frameworks.evaluate(job, counts)
    assert outcome.types == ("Failed", "Running")
    assert outcome.condition is not None
    assert outcome.condition.type == "Failed"


# --- host-network pods, each on its own port -----------------------------------------------

TF_PORTS = {("Worker", 0): 20000, ("Worker", 1): 20001, ("PS", 0): 20002}
HOST_PORTS = [
    pytest.param(
        TF_PORTS,
        "Worker",
        1,
        '{"cluster":{"ps":["j-ps-0.ns.svc:20002"],'
        '"worker":["j-worker-0.ns.svc:20000","j-worker-1.ns.svc:20001"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}',
        id="every pod of every type is listed at its own host port",
    ),
    pytest.param(
        TF_PORTS,
        "PS",
        0,
        '{"cluster":{"ps":["j-ps-0.ns.svc:20002"],'
        '"worker":["j-worker-0.ns.svc:20000","j-worker-1.ns.svc:20001"]},'
        '"task":{"type":"ps","index":0},"environment":"cloud"}',
        id="a PS sees the same cluster as the workers",
    ),
    pytest.param(
        {("Worker", 0): 20000, ("Worker", 1): 20001},
        "Worker",
        0,
        '{"cluster":{"ps":["j-ps-0.ns.svc:2222"],'
        '"worker":["j-worker-0.ns.svc:20000","j-worker-1.ns.svc:20001"]},'
        '"task":{"type":"worker","index":0},"environment":"cloud"}',
        id="a type off the host network keeps its template's port",
    ),
]


@pytest.mark.parametrize(("host_ports", "rtype", "index", "expected"), HOST_PORTS)
def test_tf_config_names_each_pods_host_port(
    host_ports: dict[tuple[str, int], int], rtype: str, index: int, expected: str
) -> None:
    job = tfjob("ns", "j").workers(2).replica("PS", 1).build()
    assert tf_config_of(job, rtype, index, host_ports=host_ports) == expected


def test_a_sparse_worker_names_its_own_host_port_and_every_ps_at_theirs() -> None:
    job = tfjob("ns", "j").workers(2).replica("PS", 1).spec(enableDynamicWorker=True).build()
    assert tf_config_of(job, "Worker", 1, host_ports=TF_PORTS) == (
        '{"cluster":{"worker":{"1":"j-worker-1.ns.svc:20001"},"ps":["j-ps-0.ns.svc:20002"]},'
        '"task":{"type":"worker","index":1}}'
    )


def test_a_tf_pod_with_a_host_port_listens_there() -> None:
    job = tfjob("ns", "j").workers(2).build()
    settings = frameworks.Settings(host_ports=TF_PORTS)
    pod = frameworks.pod_contract(job, "Worker", 1, settings).apply(
        job.replica_specs()["Worker"].template
    )
    assert pod["spec"]["containers"][0]["ports"] == [
        {"name": "tfjob-port", "containerPort": 20001, "hostPort": 20001}
    ]
