"""The node's usage statistics (kubetrain.local.node.stats): rates, /proc parsing, process
trees, and the kubelet's Summary shape; one sample of this test's own process."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pytest

from kubetrain.local.node import proctree, runtime, stats

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
GiB = 2**30

RATES = [
    pytest.param(0.5, 1.0, 500_000_000, id="half a core over a second is 500m"),
    pytest.param(2.0, 1.0, 2_000_000_000, id="two busy cores are two cores"),
    pytest.param(0.0, 10.0, 0, id="an idle container uses nothing"),
    pytest.param(-0.1, 1.0, 0, id="a tree that lost a member never reads negative"),
    pytest.param(0.01, 0.01, None, id="a window shorter than a few ticks gives no rate"),
]


@pytest.mark.parametrize(("used", "window", "nano"), RATES)
def test_rate_is_cpu_seconds_over_wall_seconds(used: float, window: float, nano: int) -> None:
    assert stats.rate(used, window) == nano


def test_node_cpu_counts_busy_time_but_not_idle_iowait_or_guest() -> None:
    ticks = stats.CLOCK_TICKS
    # user nice system idle iowait irq softirq steal guest guest_nice
    text = f"cpu  {ticks} {ticks} {ticks} 99999 99999 {ticks} {ticks} {ticks} 777 777\ncpu0 1 2 3\n"
    assert stats.node_cpu_seconds(text) == 6.0


def test_meminfo_is_read_in_bytes() -> None:
    info = stats.meminfo("MemTotal:       2048 kB\nMemAvailable:   1024 kB\nHugePages_Total: 0\n")
    assert info == {"MemTotal": 2048 * 1024, "MemAvailable": 1024 * 1024, "HugePages_Total": 0}


TREE = {1: [10], 10: [11, 12], 11: [13], 50: [51]}
TABLE = {p: proctree.Stat("S", 0, 0, 0, cpu=100) for p in (10, 11, 12, 13, 50, 51)}

TREES = [
    pytest.param(runtime.Processes(11, 0, 10, 0), [11, 12, 13], id="everything below the shim"),
    pytest.param(
        runtime.Processes(11, 0, 77, 0), [11, 13], id="the main process's tree without the shim"
    ),
    pytest.param(runtime.Processes(99, 0, 10, 0), [], id="nothing once the main process ended"),
]


@pytest.mark.parametrize(("processes", "pids"), TREES)
def test_a_container_is_a_process_tree(processes: runtime.Processes, pids: list[int]) -> None:
    assert sorted(stats.tree_of(processes, TREE, TABLE)) == pids


def test_a_tree_uses_the_cpu_of_its_members_only() -> None:
    assert stats.cpu_seconds([11, 12, 999], TABLE) == 200 / stats.CLOCK_TICKS


def _reading(nano: int | None, memory: int, cpu: float = 1.0) -> stats.Reading:
    return stats.Reading(NOW, cpu, nano, memory)


def _snapshot(*containers: stats.ContainerReading) -> stats.Snapshot:
    node = stats.NodeReading(
        _reading(3_000_000_000, 4 * GiB, 100.0), available=12 * GiB, usage=5 * GiB
    )
    pods = (stats.PodRef("u1", "ns", "train"), stats.PodRef("u2", "ns", "idle"))
    return stats.Snapshot(node, pods, containers)


def _container(uid: str, name: str, reading: stats.Reading) -> stats.ContainerReading:
    return stats.ContainerReading(
        runtime.ContainerId(uid, name, 0), NOW - timedelta(minutes=1), reading
    )


def test_the_summary_has_the_kubelets_shape() -> None:
    snap = _snapshot(
        _container("u1", "worker", _reading(250_000_000, 100 * 2**20, cpu=2.5)),
        _container("u1", "sidecar", _reading(50_000_000, 10 * 2**20, cpu=0.5)),
    )
    doc = stats.summary("node-a", NOW - timedelta(hours=1), snap)
    assert doc["node"] == {
        "nodeName": "node-a",
        "startTime": "2026-01-01T11:00:00Z",
        "cpu": {
            "time": "2026-01-01T12:00:00Z",
            "usageNanoCores": 3_000_000_000,
            "usageCoreNanoSeconds": 100 * 10**9,
        },
        "memory": {
            "time": "2026-01-01T12:00:00Z",
            "availableBytes": 12 * GiB,
            "usageBytes": 5 * GiB,
            "workingSetBytes": 4 * GiB,
        },
    }
    (pod,) = doc["pods"]  # the pod without a running container is left out
    assert pod["podRef"] == {"name": "train", "namespace": "ns", "uid": "u1"}
    assert pod["startTime"] == "2026-01-01T11:59:00Z"
    assert [c["name"] for c in pod["containers"]] == ["sidecar", "worker"]
    worker = pod["containers"][1]
    assert worker["cpu"] == {
        "time": "2026-01-01T12:00:00Z",
        "usageNanoCores": 250_000_000,
        "usageCoreNanoSeconds": 2_500_000_000,
    }
    assert worker["memory"]["workingSetBytes"] == 100 * 2**20
    assert pod["cpu"]["usageNanoCores"] == 300_000_000
    assert pod["memory"]["workingSetBytes"] == 110 * 2**20


def test_a_container_without_a_rate_yet_has_no_usage_nano_cores() -> None:
    snap = _snapshot(
        _container("u1", "worker", _reading(None, 1024)),
        _container("u1", "sidecar", _reading(5, 1024)),
    )
    (pod,) = stats.summary("n", NOW, snap)["pods"]
    assert "usageNanoCores" not in pod["containers"][1]["cpu"]
    assert "usageNanoCores" not in pod["cpu"]  # a pod's rate needs every container's
    assert pod["cpu"]["usageCoreNanoSeconds"] == 2 * 10**9


class OwnProcess:
    """A runtime whose one running container is this test process."""

    settings = runtime.Settings(root="/nonexistent")

    def __init__(self) -> None:
        self.id = runtime.ContainerId("uid-self", "main", 0)
        self.start = proctree.starttime(os.getpid())

    def containers(self, uid: str | None = None) -> list[runtime.ContainerState]:
        return [
            runtime.ContainerState(self.id, os.getpid(), NOW - timedelta(seconds=5), None, None)
        ]

    def processes(self, id: runtime.ContainerId) -> runtime.Processes:
        assert self.start is not None
        return runtime.Processes(os.getpid(), self.start)


def test_a_sample_measures_a_live_process_and_the_node() -> None:
    clock = iter([NOW, NOW + timedelta(seconds=1)])
    ticks = iter([100.0, 101.0])
    sampler = stats.Sampler(
        OwnProcess(),  # type: ignore[arg-type]
        interval=10,
        clock=lambda: next(clock, NOW),
        monotonic=lambda: next(ticks),
    )
    first = sampler.sample()
    (container,) = first.containers
    assert container.reading.cpu_seconds > 0  # pytest has been busy
    assert container.reading.memory > 10 * 2**20
    assert container.reading.nano_cores is not None  # since the start, on a first look
    assert first.node.reading.nano_cores is None  # the node needs two looks
    assert first.pods == ()  # no sandbox.json: not a pod this sampler can name
    second = sampler.sample()
    assert second.node.reading.nano_cores is not None
    assert second.node.reading.memory > 0
    assert second.node.available > 0


def test_a_look_too_soon_after_the_last_shows_the_last_rate() -> None:
    ticks = iter([100.0, 100.01, 101.0])
    sampler = stats.Sampler(
        OwnProcess(),  # type: ignore[arg-type]
        interval=10,
        clock=lambda: NOW + timedelta(seconds=1),
        monotonic=lambda: next(ticks),
    )
    first = sampler.sample().containers[0].reading.nano_cores
    again = sampler.sample().containers[0].reading.nano_cores  # 10 ms later: a request's look
    assert first is not None
    assert again == first
    assert sampler.sample().containers[0].reading.nano_cores is not None  # measured from t=100
