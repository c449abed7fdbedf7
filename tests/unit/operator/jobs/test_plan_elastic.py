"""Planning an elastic PyTorchJob whose Workers are scaled while it runs (reference 1.4, 2.2,
3.3): what the operator must do so that torch elastic can take the change in its stride.

torchrun's agents handle the new world size themselves, so the operator only adds or removes
the pods and services of the indices that changed: a new Worker gets exactly the env the others
have (the rendezvous endpoint on worker 0's port, ``PET_NNODES`` as ``min:max``, nothing that
counts Workers), the Workers that stay are left alone, a Worker scaled away is no failure, and
one Worker finishing ends the job.
"""

from __future__ import annotations

from typing import Any

from kubetrain.operator import hostports
from kubetrain.operator.jobs import settings
from tests.builders import pytorchjob, values
from tests.unit.operator.jobs.world import World, at

FORCED = settings.Settings(force_host_network=True, host_port_range=(20000, 20099))
POLICY = {"rdzvBackend": "c10d", "minReplicas": 2, "maxReplicas": 3, "maxRestarts": 5}


def elastic(workers: int = 2, config: settings.Settings | None = None) -> World:
    doc = pytorchjob("ns", "a").workers(workers).spec(elasticPolicy=dict(POLICY)).doc()
    return World(doc, config)


def scale(world: World, workers: int) -> None:
    """Set the Worker replicas, as ``kubectl scale`` or an autoscaler does."""
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = workers


def env_of(pod: dict[str, Any]) -> dict[str, Any]:
    return values(pod["spec"]["containers"][0].get("env", []))


def names(decided: Any) -> list[str]:
    found = []
    for create in decided.creates:
        step = create
        while step is not None:
            found.append(f"{step.resource.plural}/{step.name}")
            step = step.then
    return found


def deleted(decided: Any) -> list[str]:
    return [f"{d.resource.plural}/{d.name}" for d in decided.deletes]


def running(world: World) -> World:
    world.step()
    world.run()
    world.step(at(1))
    return world


def test_scaling_up_creates_only_the_new_workers_service_then_its_pod() -> None:
    world = running(elastic())
    before = {name: dict(pod) for name, pod in world.pods.items()}
    scale(world, 3)
    decided = world.step(at(2))
    assert names(decided) == ["services/a-worker-2", "pods/a-worker-2"]
    assert decided.deletes == ()
    assert decided.patches == ()
    for name, pod in before.items():
        assert world.pods[name] == pod


def test_the_new_worker_gets_the_env_the_others_have_with_nnodes_as_min_max() -> None:
    world = running(elastic())
    scale(world, 3)
    world.step(at(2))
    env = env_of(world.pods["a-worker-2"])
    assert env == env_of(world.pods["a-worker-0"]) == env_of(world.pods["a-worker-1"])
    assert env["PET_NNODES"] == "2:3"
    assert env["PET_RDZV_BACKEND"] == "c10d"
    assert env["PET_MAX_RESTARTS"] == "5"
    # torchrun's rendezvous decides those, so no Worker's env goes stale when the job scales
    assert "WORLD_SIZE" not in env
    assert "RANK" not in env


def test_on_the_host_network_the_new_worker_meets_the_others_at_worker_0s_port() -> None:
    world = running(elastic(config=FORCED))
    scale(world, 3)
    world.step(at(2))
    rendezvous = hostports.recorded(world.services["a-worker-0"])
    assert rendezvous is not None
    own = hostports.recorded(world.services["a-worker-2"])
    assert own is not None
    assert own != rendezvous  # its own port, which the rendezvous does not use
    for index in range(3):
        env = env_of(world.pods[f"a-worker-{index}"])
        assert env["PET_RDZV_ENDPOINT"] == f"a-worker-0:{rendezvous}"


def test_scaling_down_deletes_only_the_surplus_workers_pod_and_service() -> None:
    world = running(elastic(3))
    scale(world, 2)
    decided = world.step(at(2))
    assert sorted(deleted(decided)) == ["pods/a-worker-2", "services/a-worker-2"]
    assert decided.creates == ()
    assert sorted(world.pods) == ["a-worker-0", "a-worker-1"]


def test_a_worker_scaled_away_that_fails_while_stopping_is_no_failure_of_the_job() -> None:
    world = running(elastic(3))
    scale(world, 2)
    world.plan(at(2))  # the delete is on its way; the pod still shows, then fails as it stops
    world.exit("a-worker-2", 1)
    world.step(at(3))
    assert world.condition("Restarting") is None
    assert world.condition("Failed") is None
    assert world.condition("Running")["status"] == "True"
    assert world.status["replicaStatuses"]["Worker"].get("failed") is None
    assert world.status["replicaStatuses"]["Worker"]["active"] == 2


def test_one_worker_succeeding_ends_an_elastic_job_while_the_others_still_run() -> None:
    world = running(elastic(3))
    world.exit("a-worker-1", 0)
    world.step(at(2))
    succeeded = world.condition("Succeeded")
    assert succeeded is not None
    assert succeeded["status"] == "True"
    assert succeeded["message"] == "PyTorchJob ns/a successfully completed."


def test_without_an_elastic_policy_one_worker_succeeding_is_not_the_end() -> None:
    world = World(pytorchjob("ns", "a").workers(3).doc())
    running(world)
    world.exit("a-worker-1", 0)
    world.step(at(2))
    assert world.condition("Succeeded") is None
