"""Where jobs stand in the queues (kubetrain.cli.queuing): the rows of ``kubetrain top queue``,
a job's queue, its queue line and why it waits, as ``kubetrain get`` shows them."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import pytest

from kubetrain import kube
from kubetrain.cli import get, queuing
from tests.unit.cli.jobobjects import v1_job


def queue(name: str, **spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {"state": "Open"})
    return {"metadata": {"name": name}, "spec": spec, "status": status}


def group(name: str, queue_name: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": 1, "queue": queue_name, "minResources": {"cpu": "4"}},
        "status": status,
    }


def pod(name: str, group_name: str, cpu: str, node: str | None = None, **status: Any) -> dict:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "annotations": {"scheduling.k8s.io/group-name": group_name},
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending", **status},
    }


NODE = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "16", "pods": "110"}}}


def snapshot() -> queuing.Snapshot:
    """16 CPUs; team a (weight 3) runs 12 and wants 4 more, team b (weight 1) runs nothing and
    waits for a job of 4 whose pods do not exist yet."""
    return queuing.Snapshot(
        queues=[
            queue("a", weight=3, status={"state": "Open", "running": 3, "pending": 1}),
            queue("b", weight=1, capability={"cpu": "8"}, status={"state": "Open", "pending": 1}),
        ],
        groups=[
            group("a1", "a"),
            group("a2", "a"),
            group("a3", "a"),
            group("a4", "a"),
            group("b1", "b"),
        ],
        pods=[
            pod("a1-0", "a1", "4", node="n"),
            pod("a2-0", "a2", "4", node="n"),
            pod("a3-0", "a3", "4", node="n"),
            pod("a4-0", "a4", "4"),
        ],
        nodes=[NODE],
    )


def test_top_queue_rows_show_each_queues_deserved_share_and_how_much_of_it_it_holds() -> None:
    rows = {r["name"]: r for r in queuing.queue_rows(snapshot())}
    assert rows["a"] == {
        "name": "a",
        "state": "Open",
        "weight": 3,
        "reclaimable": True,
        "capability": "-",
        "allocated": "cpu=12",
        "deserved": "cpu=12",
        "share": "100%",
        "running": 3,
        "waiting": 1,
    }
    assert (rows["b"]["allocated"], rows["b"]["deserved"], rows["b"]["share"]) == (
        "-",
        "cpu=4",
        "0%",
    )
    assert rows["b"]["capability"] == "cpu=8"


def test_a_jobs_queue_is_its_podgroups_or_else_its_kueue_localqueue() -> None:
    job = v1_job(name="a1")
    assert queuing.queue_of_job(job, group("a1", "a")) == "a"
    assert queuing.queue_of_job(job, group("a1", "")) == "default"
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
    assert queuing.queue_of_job(job, None) == "team (Kueue)"
    assert queuing.queue_of_job(v1_job(), None) is None


def test_the_queue_line_says_the_queues_state_weight_and_share() -> None:
    line = queuing.queue_line(v1_job(name="b1"), group("b1", "b"), snapshot())
    assert line == "b (Open, weight 1; holds - of its deserved cpu=4: 0%)"
    missing = queuing.queue_line(v1_job(name="x"), group("x", "gone"), snapshot())
    assert missing == "gone (no such Queue)"


def test_a_job_waits_for_what_its_podgroup_says() -> None:
    message = "queue resource quota insufficient: insufficient cpu: pod group ns/b1: ..."
    condition = {"type": "Unschedulable", "status": "True", "message": message}
    pending = group("b1", "b", phase="Pending", conditions=[condition])
    assert queuing.waiting(v1_job(name="b1"), pending, []) == message


def test_a_job_waits_for_what_its_waiting_pod_says_when_its_group_says_nothing() -> None:
    said = {"type": "PodScheduled", "status": "False", "message": "pod ns/x waits behind ..."}
    pods = [pod("a4-0", "a4", "4", conditions=[said]), pod("a4-1", "a4", "4", node="n")]
    assert queuing.waiting(v1_job(name="a4"), None, pods) == "pod ns/x waits behind ..."
    assert queuing.waiting(v1_job(name="a4"), None, [pods[1]]) is None


def test_a_running_gang_waits_for_nothing_its_group_said_before() -> None:
    condition = {"type": "Unschedulable", "status": "True", "message": "old news"}
    running = group("a1", "a", phase="Running", conditions=[condition])
    assert queuing.waiting(v1_job(name="a1"), running, [pod("a1-0", "a1", "4", node="n")]) is None


def test_a_suspended_job_labelled_for_kueue_waits_for_kueue() -> None:
    job = v1_job(name="k")
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
    job["spec"]["runPolicy"] = {"suspend": True}
    assert queuing.waiting(job, None, [], kueue_served=True) == (
        "suspended until Kueue admits it from LocalQueue team"
    )
    assert queuing.waiting(job, None, []) == (
        "suspended, for Kueue to admit it from LocalQueue team; no Kueue serves this cluster, "
        "so it stays suspended until resumed (kubetrain resume pytorchjob/k)"
    )


def test_get_shows_the_queue_and_why_the_job_waits() -> None:
    now = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    text = get.describe(
        v1_job(), [], [], now, queue="b (Open, weight 1; ...)", waiting="it waits behind x"
    )
    lines = text.splitlines()
    assert any(line.split() == ["Queue:", "b", "(Open,", "weight", "1;", "...)"] for line in lines)
    assert any(line.startswith("Waiting:") and line.endswith("it waits behind x") for line in lines)
    plain = get.describe(v1_job(), [], [], now)
    assert "Queue:" not in plain
    assert "Waiting:" not in plain


class _Discovery:
    """A client that answers discovery requests from ``docs`` by path, and notes each path."""

    def __init__(self, docs: dict[str, Any]) -> None:
        self.docs = docs
        self.asked: list[str] = []

    async def request(self, method: str, path: str) -> Any:
        self.asked.append(f"{method} {path}")
        if path not in self.docs:
            raise kube.NotFound(f"{path} not found")
        return self.docs[path]


def _groups(*group_versions: str) -> dict[str, Any]:
    return {
        "groups": [
            {"name": gv.split("/")[0], "versions": [{"version": gv.split("/")[1]}]}
            for gv in group_versions
        ]
    }


VOLCANO_V1BETA1 = {
    "groupVersion": "scheduling.volcano.sh/v1beta1",
    "resources": [
        {"name": "queues", "kind": "Queue"},
        {"name": "queues/status", "kind": "Queue"},
        {"name": "podgroups", "namespaced": True, "kind": "PodGroup"},
    ],
}
SERVED = [
    ({"/apis": _groups("apps/v1", "scheduling.volcano.sh/v1beta1", "kueue.x-k8s.io/v1beta1"),
      "/apis/scheduling.volcano.sh/v1beta1": VOLCANO_V1BETA1}, (True, True), 2),
    ({"/apis": _groups("apps/v1", "kubeflow.org/v1")}, (False, False), 1),
    ({"/apis": _groups("scheduling.volcano.sh/v1beta1"),
      "/apis/scheduling.volcano.sh/v1beta1": {"resources": [{"name": "podgroups"}]}},
     (False, False), 2),
    ({"/apis": _groups("scheduling.volcano.sh/v1beta1", "kueue.x-k8s.io/v1beta2")},
     (False, True), 2),
]  # fmt: skip


@pytest.mark.parametrize(
    ("docs", "answer", "requests"),
    SERVED,
    ids=[
        "Volcano's queues and Kueue both served",
        "neither group listed: one request",
        "Volcano's group without queues",
        "Volcano's group-version failing to answer counts as not served",
    ],
)
def test_served_reads_the_group_list_and_volcano_s_group_version_only(
    docs: dict[str, Any], answer: tuple[bool, bool], requests: int
) -> None:
    client = _Discovery(docs)
    assert asyncio.run(queuing.served(client)) == answer  # type: ignore[arg-type]
    assert client.asked[0] == "GET /apis"
    assert len(client.asked) == requests
