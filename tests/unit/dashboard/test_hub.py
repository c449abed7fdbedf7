"""The hub's stores and what it tells listeners: which job a pod belongs to (by the labels the
command line finds a job's pods with), a relist's difference, the deleted pods it keeps for
the Gantt chart, and a burst of changes arriving as one."""

from __future__ import annotations

import asyncio
from typing import Any

from kubetrain.dashboard import hub
from kubetrain.kube import watch
from tests.unit.cli import jobobjects


def trainjob_pod(job: str, index: int) -> dict[str, Any]:
    pod = jobobjects.pod("node", index, job=job, container="node")
    pod["metadata"]["labels"] = {
        "jobset.sigs.k8s.io/jobset-name": job,
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
    }
    return pod


def test_a_pod_belongs_to_the_job_its_labels_name() -> None:
    assert hub.job_of_pod(jobobjects.pod("worker", 0, job="a")) == ("PyTorchJob", "ns", "a")
    assert hub.job_of_pod(trainjob_pod("t", 0)) == ("TrainJob", "ns", "t")
    stray = jobobjects.pod("worker", 0)
    stray["metadata"]["labels"] = {"app": "web"}
    assert hub.job_of_pod(stray) is None
    other_operator = jobobjects.pod("worker", 0)
    other_operator["metadata"]["labels"]["training.kubeflow.org/operator-name"] = "someone-else"
    assert hub.job_of_pod(other_operator) is None


class Recording(hub.Listener):
    def __init__(self) -> None:
        super().__init__(coalesce=0)
        self.seen: list[set[hub.Topic]] = []

    def tell(self, topics: Any) -> None:
        self.seen.append(set(topics))
        super().tell(topics)


def fresh_hub() -> tuple[hub.Hub, Recording]:
    source = hub.Hub(client=None)  # type: ignore[arg-type]  # no watch runs: events are fed
    listener = Recording()
    source._listeners.add(listener)
    return source, listener


def test_a_pod_change_tells_its_job_and_its_node_and_a_relist_tells_what_went() -> None:
    source, listener = fresh_hub()
    job = jobobjects.v1_job(name="a")
    source._apply("PyTorchJob", watch.Event(watch.ADDED, job))
    worker = jobobjects.pod("worker", 0, job="a", node="n1")
    source._apply(hub.POD, watch.Event(watch.ADDED, worker))
    assert listener.seen == [
        {(hub.JOB, ("PyTorchJob", "ns", "a"))},
        {(hub.JOB, ("PyTorchJob", "ns", "a")), (hub.NODE, "n1")},
    ]
    assert source.pods_of(("PyTorchJob", "ns", "a")) == [worker]

    listener.seen.clear()
    source._apply(hub.POD, watch.Event(watch.SYNC, {"items": []}))  # gone while disconnected
    assert listener.seen == [{(hub.JOB, ("PyTorchJob", "ns", "a")), (hub.NODE, "n1")}]
    assert source.pods_of(("PyTorchJob", "ns", "a")) == []
    [gone] = source.gone_pods_of(("PyTorchJob", "ns", "a"))
    assert gone["metadata"]["name"] == worker["metadata"]["name"]
    assert gone["metadata"]["deletionTimestamp"], "the time the hub saw it go"


def test_an_unchanged_relist_tells_nothing() -> None:
    source, listener = fresh_hub()
    job = jobobjects.v1_job(name="a")
    source._apply("PyTorchJob", watch.Event(watch.SYNC, {"items": [job]}))
    listener.seen.clear()
    source._apply("PyTorchJob", watch.Event(watch.SYNC, {"items": [jobobjects.v1_job(name="a")]}))
    assert listener.seen == []


def test_deleting_a_job_forgets_its_deleted_pods() -> None:
    source, _ = fresh_hub()
    source._apply("PyTorchJob", watch.Event(watch.ADDED, jobobjects.v1_job(name="a")))
    pod = jobobjects.pod("worker", 0, job="a")
    source._apply(hub.POD, watch.Event(watch.ADDED, pod))
    source._apply(hub.POD, watch.Event(watch.DELETED, pod))
    assert len(source.gone_pods_of(("PyTorchJob", "ns", "a"))) == 1
    source._apply("PyTorchJob", watch.Event(watch.DELETED, jobobjects.v1_job(name="a")))
    assert source.gone_pods_of(("PyTorchJob", "ns", "a")) == []


def test_a_burst_of_changes_reaches_a_listener_as_one_set() -> None:
    async def body() -> set[hub.Topic]:
        listener = hub.Listener(coalesce=0.01)
        listener.tell([(hub.JOB, ("PyTorchJob", "ns", "a"))])
        listener.tell([(hub.JOB, ("PyTorchJob", "ns", "b")), (hub.USAGE, None)])
        first = await listener.next()
        assert not listener._event.is_set(), "nothing more to tell"
        return first

    assert asyncio.run(body(), debug=True) == {
        (hub.JOB, ("PyTorchJob", "ns", "a")),
        (hub.JOB, ("PyTorchJob", "ns", "b")),
        (hub.USAGE, None),
    }
