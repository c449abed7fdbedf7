"""Ports of host-network pods: one per pod from the range, recorded on its Service, read back,
and told to the peers through the env contract."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubetrain.operator import hostports
from kubetrain.operator.jobs import settings
from tests.builders import jaxjob, mxjob, pytorchjob, tfjob, values, xgboostjob
from tests.unit.operator.jobs.world import World, at

FORCED = settings.Settings(force_host_network=True, host_port_range=(20000, 20009))


def host_network(builder: Any) -> dict[str, Any]:
    doc = builder.doc()
    for spec in doc["spec"][builder.field].values():
        spec["template"]["spec"]["hostNetwork"] = True
    return doc


def named_port(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["spec"]["containers"][0]["ports"][0]


def test_a_host_network_template_gets_one_port_per_pod_recorded_on_its_service() -> None:
    config = settings.Settings(host_port_range=(20000, 20009))
    world = World(host_network(pytorchjob("ns", "a").master().workers(2)), config)
    world.step()
    recorded = {name: hostports.recorded(s) for name, s in world.services.items()}
    assert len(set(recorded.values())) == 3
    assert all(port is not None and 20000 <= port <= 20009 for port in recorded.values())
    for name, pod in world.pods.items():
        assert named_port(pod) == {
            "name": "pytorchjob-port",
            "containerPort": recorded[name],
            "hostPort": recorded[name],
        }
        assert world.services[name]["spec"]["ports"] == [
            {"name": "pytorchjob-port", "port": recorded[name]}
        ]


def test_every_pod_is_told_the_masters_port() -> None:
    world = World(pytorchjob("ns", "a").master().workers(2).doc(), FORCED)
    world.step()
    master = hostports.recorded(world.services["a-master-0"])
    for pod in world.pods.values():
        assert values(pod["spec"]["containers"][0]["env"])["MASTER_PORT"] == str(master)


def test_jax_workers_are_told_the_coordinators_port() -> None:
    world = World(jaxjob("ns", "j").workers(3).doc(), FORCED)
    world.step()
    coordinator = hostports.recorded(world.services["j-worker-0"])
    env = values(world.pods["j-worker-2"]["spec"]["containers"][0]["env"])
    assert env["COORDINATOR_PORT"] == str(coordinator)


def test_tf_config_lists_every_pod_at_the_port_its_service_records() -> None:
    world = World(tfjob("ns", "t").workers(2).replica("PS", 1).doc(), FORCED)
    world.step()
    recorded = {name: hostports.recorded(s) for name, s in world.services.items()}
    assert len(set(recorded.values())) == 3
    expected = {
        "ps": [f"t-ps-0.ns.svc:{recorded['t-ps-0']}"],
        "worker": [f"t-worker-{i}.ns.svc:{recorded[f't-worker-{i}']}" for i in range(2)],
    }
    for name, pod in world.pods.items():
        config = json.loads(values(pod["spec"]["containers"][0]["env"])["TF_CONFIG"])
        assert config["cluster"] == expected, name
        assert named_port(pod)["containerPort"] == recorded[name]


def test_a_pod_recreated_beside_running_peers_is_told_their_recorded_ports() -> None:
    world = World(tfjob("ns", "t").workers(2, restart_policy="ExitCode").doc(), FORCED)
    world.step()
    before = values(world.pods["t-worker-0"]["spec"]["containers"][0]["env"])["TF_CONFIG"]
    world.run()
    world.exit("t-worker-1", 137)
    world.step(at(1))
    world.step(at(2))
    after = values(world.pods["t-worker-1"]["spec"]["containers"][0]["env"])["TF_CONFIG"]
    assert json.loads(after)["cluster"] == json.loads(before)["cluster"]


def test_mx_config_lists_every_pod_at_its_own_port() -> None:
    doc = mxjob("ns", "m").replica("Scheduler", 1).replica("Server", 1).workers(2).doc()
    world = World(doc, FORCED)
    world.step()
    recorded = {name: hostports.recorded(s) for name, s in world.services.items()}
    config = json.loads(
        values(world.pods["m-worker-1"]["spec"]["containers"][0]["env"])["MX_CONFIG"]
    )
    listed = {
        entry["url"]: entry["port"] for entries in config["cluster"].values() for entry in entries
    }
    assert listed == recorded


def test_each_xgboost_worker_is_told_its_own_worker_port() -> None:
    world = World(xgboostjob("ns", "x").master().workers(2).doc(), FORCED)
    world.step()
    for name in ("x-worker-0", "x-worker-1"):
        env = values(world.pods[name]["spec"]["containers"][0]["env"])
        assert env["WORKER_PORT"] == str(hostports.recorded(world.services[name]))
        assert env["MASTER_PORT"] == str(hostports.recorded(world.services["x-master-0"]))


def test_forcing_host_network_changes_the_pods_never_the_job() -> None:
    world = World(pytorchjob("ns", "a").workers(1).doc(), FORCED)
    before = repr(world.job["spec"])
    world.step()
    pod = world.pods["a-worker-0"]
    assert (pod["spec"]["hostNetwork"], pod["spec"]["dnsPolicy"]) == (
        True,
        "ClusterFirstWithHostNet",
    )
    assert repr(world.job["spec"]) == before


def test_a_recreated_pod_keeps_the_port_its_service_records() -> None:
    world = World(pytorchjob("ns", "a").workers(2, restart_policy="ExitCode").doc(), FORCED)
    world.step()
    first = named_port(world.pods["a-worker-1"])["hostPort"]
    world.run()
    world.exit("a-worker-1", 137)
    world.step(at(1))
    assert "a-worker-1" not in world.pods
    world.step(at(2))
    assert named_port(world.pods["a-worker-1"])["hostPort"] == first


def test_a_pod_whose_service_was_lost_keeps_its_port() -> None:
    world = World(pytorchjob("ns", "a").workers(1).doc(), FORCED)
    world.step()
    port = named_port(world.pods["a-worker-0"])["hostPort"]
    del world.objects[("services", "a-worker-0")]
    world.step(at(1))
    assert hostports.recorded(world.services["a-worker-0"]) == port


def test_ports_other_services_record_are_not_handed_out() -> None:
    taken = frozenset(range(20000, 20009))  # one left
    world = World(pytorchjob("ns", "a").workers(1).doc(), FORCED, taken_ports=taken)
    world.step()
    assert hostports.recorded(world.services["a-worker-0"]) == 20009


def test_a_full_range_is_a_problem_reported_as_a_failed_pod_creation() -> None:
    taken = frozenset(range(20000, 20010))
    world = World(pytorchjob("ns", "a").workers(1).doc(), FORCED, taken_ports=taken)
    decided = world.plan()
    assert decided.creates == ()
    assert decided.problem is not None
    assert "no free host port in 20000-20009" in decided.problem
    assert ("Warning", "FailedCreatePod") in [(e.type, e.reason) for e in decided.events]


def test_pods_off_the_host_network_keep_their_template_port() -> None:
    world = World(pytorchjob("ns", "a").workers(1).doc())
    world.step()
    assert named_port(world.pods["a-worker-0"]) == {
        "name": "pytorchjob-port",
        "containerPort": 23456,
    }
    assert hostports.HOST_PORT_ANNOTATION not in (
        world.services["a-worker-0"]["metadata"].get("annotations") or {}
    )


@pytest.mark.parametrize(
    ("seed", "used", "expected"),
    [
        pytest.param("ns/a/worker/0", set(), None, id="a seed fixes the starting point"),
        pytest.param("x", set(range(100, 110)), None, id="a full range gives nothing"),
    ],
)
def test_choose(seed: str, used: set[int], expected: int | None) -> None:
    port = hostports.choose(seed, used, 100, 109)
    if used:
        assert port is expected
    else:
        assert port == hostports.choose(seed, {1}, 100, 109)
        assert port is not None
        assert 100 <= port <= 109
