"""``kubetrain logs``: the merged logs of a job's pods, read through ``pods/log`` from a fake
kubelet-shaped node (each container's log is ``<container> line 1`` .. ``line 5``; a follow
gets the last two lines only once the test releases them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.apiserver.test_pod_log_exec import FakeNode
from tests.integration.cli.conftest import Cli, Operator, Spawn, pytorchjob

JobFile = Callable[[dict[str, Any]], str]


def lines(replica: str, numbers: range) -> list[str]:
    return [f"[{replica}] pytorch line {i}" for i in numbers]


def running_pods(operator: Operator, job: str, node: str, *replicas: tuple[str, int]) -> None:
    for rtype, index in replicas:
        pod = operator.pod(job, rtype, index, node=node)
        operator.pod_status(pod, "Running")


def test_logs_before_any_pod_runs_say_why_and_what_to_do(
    kt: Cli, job_file: JobFile, operator: Operator
) -> None:
    kt("apply", "-f", job_file(pytorchjob("early", 1)))
    none_yet = kt("logs", "early", binary=True)
    assert none_yet.returncode == 1
    assert none_yet.stderr.strip() == (
        "kubetrain: pytorchjob/early (Pending) has no pods yet; "
        "`kubetrain logs -f pytorchjob/early` waits for them"
    )
    operator.pod("early", "Master", 0)  # not scheduled: no node to read a log from
    unscheduled = kt("logs", "early")
    assert unscheduled.returncode == 1
    assert len(unscheduled.stderr.strip().splitlines()) == 1
    assert "master-0: pod early-master-0 is Pending, not scheduled to a node" in (
        unscheduled.stderr
    )


def test_logs_of_all_replicas_are_merged_with_prefixes(
    kt: Cli, job_file: JobFile, operator: Operator, fake_node: FakeNode, node: str
) -> None:
    kt("apply", "-f", job_file(pytorchjob("m", 2)))
    running_pods(operator, "m", node, ("Worker", 1), ("Master", 0), ("Worker", 0))
    result = kt("logs", "m", binary=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == (
        lines("master-0", range(1, 6))
        + lines("worker-0", range(1, 6))
        + lines("worker-1", range(1, 6))
    )
    tail = kt("logs", "m", "--replica", "worker", "--tail", "2", "--timestamps")
    assert tail.stdout.splitlines() == lines("worker-0", range(4, 6)) + lines(
        "worker-1", range(4, 6)
    )
    query = fake_node.seen(f"/containerLogs/{operator.namespace}/m-worker-1/pytorch")
    assert query["tailLines"] == ["2"]
    assert query["timestamps"] == ["true"]
    bare = kt("logs", "pytorchjob/m", "-r", "master-0", "--no-prefix", "--since", "5m")
    assert bare.stdout.splitlines() == [f"pytorch line {i}" for i in range(1, 6)]
    assert fake_node.seen(f"/containerLogs/{operator.namespace}/m-master-0/pytorch")[
        "sinceSeconds"
    ] == ["300"]


def test_follow_takes_in_later_pods_and_ends_with_the_job(
    kt: Cli,
    job_file: JobFile,
    operator: Operator,
    fake_node: FakeNode,
    node: str,
    spawn: Spawn,
) -> None:
    kt("apply", "-f", job_file(pytorchjob("f", 2)))
    child = spawn("logs", "-f", "f")
    running_pods(operator, "f", node, ("Master", 0), ("Worker", 0))
    child.out.wait_for("[master-0] pytorch line 3\n")
    child.out.wait_for("[worker-0] pytorch line 3\n")
    assert "line 4" not in child.out.text, "the follow streams; the rest is held back"
    running_pods(operator, "f", node, ("Worker", 1))  # a pod that comes later joins
    child.out.wait_for("[worker-1] pytorch line 3\n")
    assert child.process.poll() is None, "following goes on while the job runs"
    for pod in ("f-master-0", "f-worker-0", "f-worker-1"):
        fake_node.release(operator.namespace, pod)
    for replica in ("master-0", "worker-0", "worker-1"):
        child.out.wait_for(f"[{replica}] pytorch line 5\n")
    operator.conditions("PyTorchJob", "f", "Created", "Succeeded")
    code, out, err = child.ended(timeout=30)
    assert code == 0, err
    for replica in ("master-0", "worker-0", "worker-1"):
        assert [line for line in out.splitlines() if line.startswith(f"[{replica}]")] == lines(
            replica, range(1, 6)
        )


def test_top_node_adds_up_what_the_pods_on_each_node_request(
    kt: Cli, job_file: JobFile, operator: Operator, node: str
) -> None:
    kt("apply", "-f", job_file(pytorchjob("t", 1)))
    running_pods(operator, "t", node, ("Master", 0), ("Worker", 0))
    result = kt("top", "node", "-o", "json", namespaced=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (row,) = [r for r in report["nodes"] if r["name"] == node]
    assert row["pods"] >= 2
    assert row["status"] == "NotReady"  # the fake node reports no Ready condition
    assert "note" not in report  # the metrics API answers; this fake node serves no stats
    assert row["cpuUsed"] is None
    table = kt("top", "node", namespaced=False)
    assert table.stdout.splitlines()[0].split() == [
        "NAME", "STATUS", "CPU(REQ/ALLOC)", "CPU(USED)", "MEMORY(REQ/ALLOC)", "MEMORY(USED)",
        "GPU(REQ/ALLOC)", "GPU(USED)", "PODS",
    ]  # fmt: skip
