"""MPIJob v1: an unindexed launcher, idle workers, no services, and the objects the launcher
needs to ``kubectl exec`` into them (reference 1.6, 2.2; upstream's MPI controller tests)."""

from __future__ import annotations

from kubetrain.operator.jobs import children, plan
from tests.builders import mpijob
from tests.unit.operator.jobs.world import World, at

LABELS = "training.kubeflow.org/"


def mpi(workers: int = 2, **launcher: object) -> World:
    return World(mpijob("ns", "m").replica("Launcher", 1, **launcher).workers(workers).doc())


def test_the_launcher_has_no_index_and_the_workers_have_one_and_no_job_has_services() -> None:
    world = mpi()
    world.step()
    assert sorted(world.pods) == ["m-launcher", "m-worker-0", "m-worker-1"]
    assert world.services == {}
    launcher = world.pods["m-launcher"]["metadata"]["labels"]
    assert f"{LABELS}replica-index" not in launcher
    assert launcher[f"{LABELS}job-role"] == "master"
    assert world.pods["m-worker-1"]["metadata"]["labels"][f"{LABELS}replica-index"] == "1"


def test_the_config_map_holds_the_hostfile_and_the_scripts_and_is_owned_by_the_job() -> None:
    world = mpi()
    world.step()
    config = world.objects[("configmaps", "m-config")]
    assert config["metadata"]["labels"] == {"app": "m"}
    assert children.is_controlled_by(config, "job-uid")
    assert config["data"]["hostfile"] == "m-worker-0 slots=1\nm-worker-1 slots=1\n"
    assert config["data"]["discover_hosts.sh"] == "#!/bin/sh"
    assert "kubectl exec ${POD_NAME}" in config["data"]["kubexec.sh"]


def test_the_launcher_service_account_role_and_binding_are_ensured() -> None:
    world = mpi()
    world.step()
    assert world.ensured == [
        "serviceaccounts/m-launcher", "roles/m-launcher", "rolebindings/m-launcher",
    ]  # fmt: skip
    assert world.pods["m-launcher"]["spec"]["serviceAccountName"] == "m-launcher"


def test_the_role_allows_exec_into_the_worker_pods_only() -> None:
    decided = mpi(3).plan()
    (role,) = [c for c in decided.ensure if c.resource == children.ROLES]
    assert role.body["rules"][1] == {
        "verbs": ["create"],
        "apiGroups": [""],
        "resources": ["pods/exec"],
        "resourceNames": ["m-worker-0", "m-worker-1", "m-worker-2"],
    }


def test_running_workers_are_added_to_discover_hosts() -> None:
    world = mpi()
    world.step()
    world.run("m-worker-1", "m-worker-0")
    decided = world.step(at(1))
    (patch,) = decided.patches
    assert patch.patch == {
        "data": {"discover_hosts.sh": "#!/bin/sh\necho m-worker-0:1\necho m-worker-1:1"}
    }


def test_a_config_map_someone_else_owns_is_reported_and_not_touched() -> None:
    world = mpi()
    world.add("configmaps", {"metadata": {"name": "m-config", "namespace": "ns"}, "data": {}})
    decided = world.plan()
    assert decided.problem == (
        'Resource "m-config" of MPIJobKind "ConfigMap" already exists and is not managed by MPIJob'
    )
    assert ("Warning", "ErrResourceExists") in [(e.type, e.reason) for e in decided.events]
    assert not [p for p in decided.patches if p.resource == children.CONFIGMAPS]


def test_the_launcher_decides_success() -> None:
    world = mpi()
    world.step()
    world.run()
    world.exit("m-launcher", 0)
    decided = world.step(at(1))
    succeeded = world.condition("Succeeded")
    assert succeeded is not None
    assert succeeded["message"] == "MPIJob m is successfully completed."
    assert decided.metrics == ("successful",)


def test_a_failed_worker_fails_the_job_and_is_not_recreated() -> None:
    world = mpi()
    world.step()
    world.run()
    world.exit("m-worker-0", 137)
    decided = world.step(at(1))
    failed = world.condition("Failed")
    assert failed is not None
    assert failed["reason"] == "MPIJobFailed"
    assert not [d for d in decided.deletes if d.resource == children.PODS]


def test_no_companions_for_a_finished_job() -> None:
    world = mpi()
    world.step()
    world.run()
    world.exit("m-launcher", 0)
    world.step(at(1))
    later: plan.Plan = world.plan(at(2))
    assert later.ensure == ()


def test_the_deprecated_top_level_clean_pod_policy_applies_when_run_policy_has_none() -> None:
    doc = mpijob("ns", "m").replica("Launcher", 1).workers(1).spec(cleanPodPolicy="All").doc()
    world = World(doc)
    world.step()
    world.run()
    world.exit("m-launcher", 0)
    decided = world.step(at(1))
    assert sorted(d.name for d in decided.deletes) == ["m-launcher", "m-worker-0"]
