"""What ``kubetrain run`` shows while a job runs and when it fails (kubetrain.cli.liveview)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from kubetrain.cli import liveview
from tests.unit.cli.jobobjects import pod, v1_job

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
RUNNING = [{"type": "Running", "status": "True", "reason": "PyTorchJobRunning"}]


def test_the_frame_has_the_job_then_a_row_per_replica() -> None:
    job = v1_job(conditions=RUNNING, startTime="2024-05-01T11:58:00Z")
    pods = [
        pod("master", 0),
        pod("worker", 0, restarts=1),
        pod("worker", 1, phase="Pending", node=None, start=None),
    ]
    lines = liveview.frame(job, pods, NOW)
    assert lines[0] == "pytorchjob/p  Running  2m00s"
    assert lines[1].split() == ["REPLICA", "PHASE", "RESTARTS", "NODE", "ELAPSED"]
    assert lines[2].split() == ["master-0", "Running", "0", "n1", "2m00s"]
    assert lines[3].split() == ["worker-0", "Running", "1", "n1", "2m00s"]
    assert lines[4].split() == ["worker-1", "Pending", "0", "-", "-"]


def test_lines_are_cut_to_the_terminal_width() -> None:
    lines = liveview.frame(v1_job(), [], NOW, width=12)
    assert all(len(line) <= 12 for line in lines)


def test_a_finished_replica_stops_its_clock() -> None:
    done = pod("worker", 0, phase="Succeeded", exit_code=0)
    assert liveview.elapsed(done, NOW) == 60


def test_changes_read_as_a_history() -> None:
    job = v1_job()
    before = liveview.snapshot(job, [pod("worker", 0, phase="Pending", node=None)])
    after = liveview.snapshot(job, [pod("worker", 0, node="n1"), pod("worker", 1, restarts=0)])
    assert liveview.changes(before, after) == [
        "worker-0: Pending -> Running on n1",
        "worker-1: Running on n1",
    ]
    again = liveview.snapshot(job, [pod("worker", 0, node="n1", restarts=1), pod("worker", 1)])
    assert liveview.changes(after, again) == ["worker-0: restarted (1 restarts)"]
    assert liveview.changes(again, again) == []


def test_the_failure_summary_names_reason_replica_exit_code_and_log_tail() -> None:
    failed = [
        {
            "type": "Failed",
            "status": "True",
            "reason": "PyTorchJobFailed",
            "message": "PyTorchJob p is failed because 1 Worker replica(s) failed.",
        }
    ]
    job = v1_job(
        conditions=failed, startTime="2024-05-01T11:58:00Z", completionTime="2024-05-01T11:59:30Z"
    )
    pods = [
        pod("master", 0, phase="Running"),
        pod("worker", 1, phase="Failed", exit_code=3, reason="Error"),
    ]
    lines = liveview.failure(job, pods, NOW, ["loss nan", "Traceback"])
    assert lines == [
        "pytorchjob/p Failed after 90s: PyTorchJobFailed: "
        "PyTorchJob p is failed because 1 Worker replica(s) failed.",
        "failing replica: worker-1 (pod p-worker-1) exited with code 3 (Error)",
        "last 2 log lines of worker-1:",
        "  loss nan",
        "  Traceback",
    ]


def test_without_a_failing_replica_the_summary_points_at_events() -> None:
    job = v1_job(conditions=[{"type": "Failed", "status": "True"}])
    assert liveview.failure(job, [pod("master", 0)], NOW)[1].startswith("no replica reported")


# -- why a job does not run ----------------------------------------------------------------------

INSUFFICIENT = "0/1 nodes are available: 1 Insufficient cpu."
NO_CLAIM = 'MountVolume.SetUp failed for volume "data" : persistentvolumeclaim "data" not found'
NO_COMMAND = (
    "Pod ns/p-worker-0: spec.containers[0].command: required on this node: images are not "
    "pulled locally"
)


def unschedulable(rtype: str, index: int) -> dict[str, Any]:
    p = pod(rtype, index, phase="Pending", node=None, start=None)
    p["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": INSUFFICIENT,
            }
        ],
    }
    return p


def waiting(rtype: str, index: int, reason: str, message: str = "") -> dict[str, Any]:
    p = pod(rtype, index, phase="Pending")
    state: dict[str, Any] = {"reason": reason}
    if message:
        state["message"] = message
    p["status"]["containerStatuses"][0]["state"] = {"waiting": state}
    return p


def warning(
    about: dict[str, Any], reason: str, message: str, when: str = "2024-05-01T11:59:00Z"
) -> dict[str, Any]:
    meta = about["metadata"]
    return {
        "metadata": {"name": f"{meta['name']}.{reason}.{when}"},
        "involvedObject": {
            "kind": about.get("kind", "Pod"),
            "name": meta["name"],
            "uid": meta["uid"],
        },
        "type": "Warning",
        "reason": reason,
        "message": message,
        "lastTimestamp": when,
    }


REASONS = {
    "an unschedulable pod gives the scheduler's message": (
        unschedulable("worker", 0),
        [],
        ("Unschedulable", INSUFFICIENT),
    ),
    "a container that cannot be created gives the kubelet's message": (
        waiting("worker", 0, "CreateContainerError", NO_COMMAND),
        [],
        ("CreateContainerError", NO_COMMAND),
    ),
    "a pod on its way with a FailedMount event gives the event": (
        waiting("worker", 0, "ContainerCreating"),
        [
            warning(
                pod("worker", 0),
                "FailedMount",
                NO_CLAIM,
            )
        ],
        ("FailedMount", NO_CLAIM),
    ),
    "of its events, the latest": (
        waiting("worker", 0, "ContainerCreating"),
        [
            warning(pod("worker", 0), "FailedMount", "second", "2024-05-01T11:59:30Z"),
            warning(pod("worker", 0), "FailedMount", "first", "2024-05-01T11:59:00Z"),
        ],
        ("FailedMount", "second"),
    ),
    "an event about a pod of the same name from before is not this pod's": (
        waiting("worker", 0, "ContainerCreating"),
        [
            {
                **warning(pod("worker", 0), "FailedMount", "old"),
                "involvedObject": {"kind": "Pod", "name": "p-worker-0", "uid": "an-older-pod"},
            }
        ],
        ("ContainerCreating", ""),
    ),
    "a pod on its way without an event says only that": (
        waiting("worker", 0, "ContainerCreating"),
        [],
        ("ContainerCreating", ""),
    ),
    "a running pod needs no reason": (pod("worker", 0), [], None),
    "nor does one that ended": (pod("worker", 0, phase="Succeeded", exit_code=0), [], None),
}


@pytest.mark.parametrize(("p", "events", "expected"), REASONS.values(), ids=REASONS.keys())
def test_why_a_replica_does_not_run(
    p: dict[str, Any], events: list[dict[str, Any]], expected: tuple[str, str] | None
) -> None:
    why = liveview.replica_reason(p, events)
    assert (None if why is None else (why.reason, why.message)) == expected


def test_the_frame_says_under_each_replica_why_it_does_not_run() -> None:
    job = v1_job(replicas={"Master": 1, "Worker": 1})
    lines = liveview.frame(job, [unschedulable("master", 0), unschedulable("worker", 0)], NOW)
    assert lines[2].split()[:3] == ["master-0", "Pending", "(Unschedulable)"]
    assert lines[3] == f"      {INSUFFICIENT}"
    assert lines[4].split()[:3] == ["worker-0", "Pending", "(Unschedulable)"]
    assert lines[5] == f"      {INSUFFICIENT}"


def test_the_frame_names_the_event_that_explains_a_pod_on_its_way() -> None:
    job = v1_job(replicas={"Worker": 1})
    p = waiting("worker", 0, "ContainerCreating")
    lines = liveview.frame(job, [p], NOW, warnings=[warning(p, "FailedMount", "no claim")])
    assert lines[-1] == "      FailedMount: no claim"


def test_the_frame_shows_the_jobs_warning_while_the_job_does_not_run() -> None:
    job = v1_job(replicas={"Worker": 2}, conditions=RUNNING)
    quota = warning(
        job,
        "FailedCreatePod",
        'Error creating: 403 Forbidden: pods "p-worker-1" is forbidden: exceeded quota: small',
    )
    lines = liveview.frame(job, [pod("worker", 0)], NOW, warnings=[quota])
    assert lines[1] == (
        '  Warning FailedCreatePod: Error creating: 403 Forbidden: pods "p-worker-1" is '
        "forbidden: exceeded quota: small"
    )
    assert lines[-1].split()[:2] == ["worker-1", "not"]
    going = liveview.frame(job, [pod("worker", 0), pod("worker", 1)], NOW, warnings=[quota])
    assert not any("Warning" in line for line in going)


def test_the_history_says_why_and_each_new_warning_once() -> None:
    job = v1_job(replicas={"Worker": 1})
    first = liveview.snapshot(job, [unschedulable("worker", 0)])
    assert liveview.changes({}, first) == [
        "worker-0: Pending",
        f"worker-0: Unschedulable: {INSUFFICIENT}",
    ]
    scheduled = waiting("worker", 0, "ContainerCreating")
    mount = warning(scheduled, "FailedMount", "no claim")
    second = liveview.snapshot(job, [scheduled], [mount])
    assert liveview.changes(first, second) == [
        "worker-0: scheduled on n1",
        "worker-0: FailedMount: no claim",
    ]
    assert liveview.changes(second, liveview.snapshot(job, [scheduled], [mount])) == []
    unhealthy = warning(scheduled, "Unhealthy", "probe failed", "2024-05-01T11:59:40Z")
    running = pod("worker", 0)
    third = liveview.snapshot(job, [running], [mount, unhealthy])
    assert liveview.changes(second, third) == [
        "worker-0: Pending -> Running",
        "worker-0: Warning Unhealthy: probe failed",
    ]


def test_a_warning_that_repeats_the_reason_is_not_said_twice() -> None:
    job = v1_job(replicas={"Worker": 1})
    p = waiting("worker", 0, "CreateContainerError", NO_COMMAND)
    failed = warning(p, "Failed", f"Error: {NO_COMMAND}")
    assert liveview.changes({}, liveview.snapshot(job, [p], [failed])) == [
        "worker-0: Pending on n1",
        f"worker-0: CreateContainerError: {NO_COMMAND}",
    ]
