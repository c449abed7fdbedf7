"""CPU limits on the local node (kubetrain.local.node.cpulimit): reading the limit, the cgroup's
``cpu.max``, and the throttle's arithmetic, simulated; the cgroup files on a fake hierarchy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubetrain.local.node import cpulimit, runtime


def pod(limits: dict[str, Any] | None, name: str = "main") -> dict[str, Any]:
    resources = {"limits": limits} if limits is not None else {}
    return {"spec": {"containers": [{"name": name, "resources": resources}]}}


LIMITS = [
    pytest.param(pod({"cpu": "200m"}), 0.2, id="millicores"),
    pytest.param(pod({"cpu": 2}), 2.0, id="whole cores as a YAML number"),
    pytest.param(pod({"cpu": "1.5"}), 1.5, id="a decimal string"),
    pytest.param(pod({"memory": "1Gi"}), None, id="a memory limit only"),
    pytest.param(pod(None), None, id="no limits"),
    pytest.param(pod({"cpu": "0"}), None, id="a zero limit is no limit"),
    pytest.param(pod({"cpu": "lots"}), None, id="a limit that is not a quantity"),
    pytest.param(pod({"cpu": "1"}, name="other"), None, id="another container's limit"),
    pytest.param(
        {"spec": {"initContainers": [{"name": "main", "resources": {"limits": {"cpu": "3"}}}]}},
        3.0,
        id="an init container's limit",
    ),
]


@pytest.mark.parametrize(("obj", "cores"), LIMITS)
def test_a_containers_cpu_limit_in_cores(obj: dict[str, Any], cores: float | None) -> None:
    assert cpulimit.limit_of(obj, "main") == cores


CPU_MAX = [
    pytest.param(0.2, "20000 100000", id="200m is 20 ms in every 100 ms"),
    pytest.param(2.0, "200000 100000", id="two cores may use 200 ms per 100 ms"),
    pytest.param(0.0015, "1000 100000", id="never below the kernel's 1 ms"),
    pytest.param(0.33333, "33333 100000", id="rounded up to the microsecond"),
]


@pytest.mark.parametrize(("cores", "text"), CPU_MAX)
def test_cpu_max_is_the_kubelets_quota_and_period(cores: float, text: str) -> None:
    assert cpulimit.cpu_max(cores) == text


def test_a_busy_tree_over_its_limit_is_stopped_until_the_debt_is_paid() -> None:
    throttle = cpulimit.Throttle(limit=0.2, period=0.1)
    assert throttle.account(0.1, 0.1) == pytest.approx(0.4)  # ran flat out for one period
    assert throttle.account(0.0, 0.4) == 0.0  # stopped 0.4 s: paid, runs again


def test_an_idle_tree_saves_up_one_period_at_most() -> None:
    throttle = cpulimit.Throttle(limit=0.2, period=0.1)
    assert throttle.account(0.0, 60.0) == 0.0
    assert throttle.account(0.1, 0.1) == pytest.approx(0.3)  # 0.02 saved, not 12


def test_a_long_debt_is_paid_in_stops_of_at_most_max_pause() -> None:
    throttle = cpulimit.Throttle(limit=0.1, period=0.1, max_pause=1.0)
    assert throttle.account(0.8, 0.1) == 1.0  # eight busy threads: 7.9 s of debt
    pauses = []
    while (pause := throttle.account(0.0, 1.0)) > 0:
        pauses.append(pause)
    assert len(pauses) == 7  # then it runs again
    assert throttle.debt <= 0


SIMULATED = [
    pytest.param(0.2, 1.0, id="200m on one busy thread"),
    pytest.param(0.5, 4.0, id="500m on four busy threads"),
    pytest.param(1.5, 2.0, id="1.5 cores on two busy threads"),
]


@pytest.mark.parametrize(("limit", "demand"), SIMULATED)
def test_the_throttle_holds_a_busy_tree_to_its_limit_on_average(
    limit: float, demand: float
) -> None:
    """A tree that would use ``demand`` cores runs only while not stopped."""
    throttle = cpulimit.Throttle(limit, period=0.1)
    clock = used = 0.0
    wait = 0.1
    stopped = False
    while clock < 60.0:
        ran = 0.0 if stopped else demand * wait
        clock += wait
        used += ran
        pause = throttle.account(ran, wait)
        stopped = pause > 0
        wait = pause or 0.1
    assert used / clock == pytest.approx(limit, rel=0.05)


# -- cgroup v2, on a fake hierarchy: plain files where cgroupfs would have its own ----------------


def hierarchy(tmp_path: Path, controllers: str = "cpu memory", enabled: str = "cpu") -> Path:
    root = tmp_path / "cgroup"
    (root / "kubetrain").mkdir(parents=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text(enabled + "\n")
    (root / "kubetrain" / "cgroup.subtree_control").write_text(enabled + "\n")
    return root


def test_the_base_is_used_where_the_cpu_controller_is_on(tmp_path: Path) -> None:
    root = hierarchy(tmp_path)
    assert cpulimit.cgroup_base(str(root)) == str(root / "kubetrain")


def test_no_base_without_a_cpu_controller(tmp_path: Path) -> None:
    assert cpulimit.cgroup_base(str(hierarchy(tmp_path, controllers="memory pids"))) is None
    assert cpulimit.cgroup_base(str(tmp_path / "not-a-cgroup")) is None


def test_a_container_in_its_memory_cgroup_gets_cpu_max_there(tmp_path: Path) -> None:
    root = hierarchy(tmp_path)
    node = runtime.Runtime(runtime.Settings(root=str(tmp_path / "node"), cgroup=str(root)))
    cid = runtime.ContainerId("uid", "main", 2)
    existing = root / "kubetrain" / "uid_main_2"  # what the shim made for the memory limit
    existing.mkdir()
    placed = cpulimit.place(node, cid, runtime.Processes(1, 0), 0.25)
    assert placed == cpulimit.Placed(str(existing), made=False)
    assert (existing / "cpu.max").read_text() == "25000 100000"
    assert placed.remove()  # the shim's to remove, not ours
    assert existing.is_dir()


def test_no_cgroup_when_the_node_is_told_to_use_none(tmp_path: Path) -> None:
    node = runtime.Runtime(runtime.Settings(root=str(tmp_path), cgroup=""))
    cid = runtime.ContainerId("uid", "main", 0)
    assert cpulimit.place(node, cid, runtime.Processes(1, 0), 1.0) is None
