"""What ``kubetrain run`` shows while a job runs and when it fails (kubetrain.cli.liveview)."""

from __future__ import annotations

from datetime import datetime, timezone

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
