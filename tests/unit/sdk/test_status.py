"""What the SDK reports about TrainJobs: steps named as the Kubeflow SDK names them, the job's
status, why it failed, runtimes and events (kubetrain.sdk._status)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from kubetrain.sdk import RuntimeKind, TrainerType, _status

RUNTIME = _status.missing_runtime("torch-distributed")


def pod(
    rjob: str,
    index: int,
    phase: str = "Running",
    *,
    job: str = "j",
    exit_code: int | None = None,
    last_exit_code: int | None = None,
    created: str = "2024-05-01T12:00:00Z",
    resources: dict[str, Any] | None = None,
    env: list[dict[str, Any]] | None = None,
    restarts: int = 0,
) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code}}
    elif phase == "Pending":
        state = {"waiting": {"reason": "ContainerCreating"}}
    status: dict[str, Any] = {"name": "node", "state": state, "restartCount": restarts}
    if last_exit_code is not None:
        status["lastState"] = {"terminated": {"exitCode": last_exit_code}}
    container: dict[str, Any] = {"name": "node", "image": "x"}
    if resources is not None:
        container["resources"] = resources
    if env is not None:
        container["env"] = env
    return {
        "metadata": {
            "name": f"{job}-{rjob}-0-{index}",
            "creationTimestamp": created,
            "labels": {
                _status.JOBSET_NAME: job,
                _status.REPLICATED_JOB: rjob,
                _status.COMPLETION_INDEX: str(index),
            },
        },
        "spec": {"containers": [container], "nodeName": "n1"},
        "status": {"phase": phase, "containerStatuses": [status]},
    }


def trainjob(*conditions: tuple[str, str], num_nodes: int | None = 2) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}}
    if num_nodes is not None:
        spec["trainer"] = {"numNodes": num_nodes}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "j", "namespace": "ns", "creationTimestamp": "2024-05-01T11:59:00Z"},
        "spec": spec,
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": f"{t}Reason", "message": f"{t} message"}
                for t, s in conditions
            ]
        },
    }


@pytest.mark.parametrize(
    ("pods", "mpi", "names"),
    [
        pytest.param(
            [pod("node", 1), pod("node", 0)], False, ["node-0", "node-1"], id="nodes by index"
        ),
        pytest.param(
            [pod("node", 0), pod("model-initializer", 0), pod("dataset-initializer", 0)],
            False,
            ["dataset-initializer", "model-initializer", "node-0"],
            id="initializers come first, under their own names",
        ),
        pytest.param(
            [pod("node", 0), pod("node", 1), pod("launcher", 0)],
            True,
            ["node-0", "node-1", "node-2"],
            id="under MPI the launcher is node-0 and the nodes count from 1",
        ),
        pytest.param(
            [pod("node", 2), pod("node", 10)], False, ["node-2", "node-10"], id="numeric order"
        ),
    ],
)
def test_steps_are_named_as_the_kubeflow_sdk_names_them(
    pods: list[dict[str, Any]], mpi: bool, names: list[str]
) -> None:
    assert [s.name for s in _status.steps_of(pods, mpi)] == names


def test_of_several_pods_for_one_step_the_newest_is_shown() -> None:
    old = pod("node", 0, "Failed", exit_code=1, created="2024-05-01T12:00:00Z")
    new = pod("node", 0, "Running", created="2024-05-01T12:05:00Z")
    new["metadata"]["name"] = "j-node-0-0-b"
    (step,) = _status.steps_of([new, old])
    assert step.pod_name == "j-node-0-0-b"
    assert step.status == "Running"


def test_a_step_tells_its_node_device_exit_code_and_restarts() -> None:
    resources = {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "4"}}
    (step,) = _status.steps_of([pod("node", 0, "Failed", exit_code=3, resources=resources)])
    assert (step.status, step.node, step.device, step.device_count) == ("Failed", "n1", "gpu", "2")
    assert step.exit_code == 3
    (cpu_step,) = _status.steps_of(
        [
            pod(
                "node",
                0,
                resources={"requests": {"cpu": "3"}},
                env=[{"name": "PET_NPROC_PER_NODE", "value": "2"}],
                restarts=4,
                last_exit_code=137,
            )
        ]
    )
    assert (cpu_step.device, cpu_step.device_count) == ("cpu", "2")
    assert (cpu_step.restarts, cpu_step.exit_code) == (4, 137)


@pytest.mark.parametrize(
    ("conditions", "phases", "expected"),
    [
        pytest.param([("Failed", "True")], ["Running"], "Failed", id="a Failed condition wins"),
        pytest.param([("Complete", "True")], ["Succeeded"], "Complete", id="a Complete condition"),
        pytest.param(
            [("Running", "True")], ["Pending"], "Running", id="kubetrain's Running condition"
        ),
        pytest.param(
            [], ["Running", "Succeeded"], "Running", id="every node running or done is Running"
        ),
        pytest.param([], ["Running", "Pending"], "Created", id="a node still pending: Created"),
        pytest.param([], [], "Created", id="no pods yet: Created"),
        pytest.param(
            [("Suspended", "True"), ("Running", "False")],
            [],
            "Created",
            id="suspended counts as Created, as the Kubeflow SDK reports it",
        ),
    ],
)
def test_the_status_is_one_of_the_kubeflow_sdks_four(
    conditions: list[tuple[str, str]], phases: list[str], expected: str
) -> None:
    pods = [pod("node", i, p) for i, p in enumerate(phases)]
    job = _status.trainjob_of(trainjob(*conditions), RUNTIME, pods)
    assert job.status == expected
    assert job.status in _status.STATUSES


def test_a_job_reports_its_nodes_time_and_failure_message() -> None:
    job = _status.trainjob_of(trainjob(("Failed", "True"), num_nodes=None), RUNTIME, [])
    assert job.num_nodes == RUNTIME.trainer.num_nodes
    assert job.creation_timestamp == datetime(2024, 5, 1, 11, 59, tzinfo=timezone.utc)
    assert job.message == "FailedReason: Failed message"
    assert (job.name, job.namespace) == ("j", "ns")


def test_a_failed_job_names_the_step_and_its_exit_code() -> None:
    pods = [pod("node", 0, "Running"), pod("node", 1, "Failed", exit_code=3)]
    job = _status.trainjob_of(trainjob(("Failed", "True")), RUNTIME, pods)
    failure = _status.failure_of(job)
    assert failure is not None
    assert failure.message == (
        "TrainJob ns/j failed: FailedReason: Failed message; step node-1 (pod j-node-0-1) "
        "exited with code 3"
    )
    assert (failure.step, failure.pod, failure.exit_code) == ("node-1", "j-node-0-1", 3)


def test_a_step_that_exited_non_zero_fails_at_once_though_it_may_restart() -> None:
    pods = [pod("node", 0, "Running", last_exit_code=2, restarts=1), pod("node", 1)]
    job = _status.trainjob_of(trainjob(), RUNTIME, pods)
    failure = _status.failure_of(job)
    assert failure is not None
    assert failure.message.startswith("TrainJob ns/j: step node-0 failed; step node-0")
    assert failure.exit_code == 2


def test_a_healthy_or_successful_job_has_no_failure() -> None:
    running = _status.trainjob_of(trainjob(), RUNTIME, [pod("node", 0)])
    done = _status.trainjob_of(
        trainjob(("Complete", "True")), RUNTIME, [pod("node", 0, "Succeeded", exit_code=0)]
    )
    assert _status.failure_of(running) is None
    assert _status.failure_of(done) is None


def test_a_runtime_reports_framework_image_command_nodes_and_device() -> None:
    obj = {
        "kind": "TrainingRuntime",
        "metadata": {"name": "rt", "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 3, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": "node",
                                                    "image": "pytorch/pytorch:2",
                                                    "command": ["torchrun"],
                                                    "resources": {"limits": {"cpu": "2"}},
                                                }
                                            ]
                                        }
                                    }
                                }
                            },
                        }
                    ]
                }
            },
        },
    }
    runtime = _status.runtime_of(obj)
    assert runtime.name == "rt"
    assert runtime.kind is RuntimeKind.TRAINING_RUNTIME
    trainer = runtime.trainer
    assert trainer.trainer_type is TrainerType.CUSTOM_TRAINER
    assert (trainer.framework, trainer.image, trainer.command) == (
        "torch",
        "pytorch/pytorch:2",
        ("torchrun",),
    )
    assert (trainer.num_nodes, trainer.device, trainer.device_count) == (3, "cpu", "2")


def test_a_namespaced_runtime_hides_the_cluster_one_of_its_name() -> None:
    def obj(name: str, kind: str, framework: str) -> dict[str, Any]:
        labels = {"trainer.kubeflow.org/framework": framework}
        return {"kind": kind, "metadata": {"name": name, "labels": labels}, "spec": {}}

    merged = _status.merge_runtimes(
        [obj("b", "TrainingRuntime", "jax")],
        [obj("b", "ClusterTrainingRuntime", "torch"), obj("a", "ClusterTrainingRuntime", "mpi")],
    )
    assert [(r.name, r.kind.value, r.trainer.framework) for r in merged] == [
        ("a", "ClusterTrainingRuntime", "mpi"),
        ("b", "TrainingRuntime", "jax"),
    ]


def test_events_take_the_best_time_they_have_and_sort_by_it() -> None:
    late = {
        "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "Started",
        "message": "started",
        "eventTime": "2024-05-01T12:00:01.500000Z",
    }
    early = {
        "involvedObject": {"kind": "TrainJob", "name": "j"},
        "reason": "Created",
        "message": "created",
        "lastTimestamp": "2024-05-01T12:00:00Z",
    }
    events = _status.sorted_events([_status.event_of(late), _status.event_of(early)])
    assert [e.reason for e in events] == ["Created", "Started"]
    assert events[1].event_time == datetime(2024, 5, 1, 12, 0, 1, 500000, tzinfo=timezone.utc)
    assert (events[0].involved_object_kind, events[0].involved_object_name) == ("TrainJob", "j")


@pytest.mark.parametrize(
    ("name", "matches"),
    [
        pytest.param("j-node-0-1", True, id="a node pod"),
        pytest.param("j-dataset-initializer-0-0", True, id="an initializer pod"),
        pytest.param("jj-node-0-0", False, id="another job's pod"),
        pytest.param("j-node-0", False, id="not a JobSet pod name"),
    ],
)
def test_a_jobs_pods_are_recognised_by_name(name: str, matches: bool) -> None:
    assert bool(_status.job_pod_name("j").match(name)) is matches
