"""TrainJob lifecycle against a real API server, the operator in-process: suspend and resume,
runtime snapshots, ``managedBy``, the active deadline and ``dependsOn`` ordering (reference §5.2:
"TrainJob with suspend semantics", "Runtime snapshots", "skip when managedBy external",
"Timeouts"; JobSet's dependsOn).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import eventually, run
from tests.integration.operator.trainjob_fixtures import (
    ANCESTOR,
    builtin_runtime,
    cluster_runtime,
    condition,
    env_of,
    fetch_object,
    get_job,
    operator,
    pods_of,
    set_phase,
    trainjob,
    wait_condition,
    wait_pods,
)

Settings = Callable[..., manager.Settings]


def test_suspend_holds_pods_back_and_resume_creates_them(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-suspend-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            job = trainjob("held", runtime_name, suspend=True, trainer={"numNodes": 2})
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            suspended = await wait_condition(client, namespace, "held", "Suspended")
            assert (suspended["reason"], suspended["message"]) == (
                "Suspended",
                "TrainJob is suspended",
            )
            stored = await get_job(client, namespace, "held")
            assert stored["status"]["jobsStatus"][0]["suspended"] == 1
            assert await pods_of(client, namespace) == {}, "no pods while suspended"

            await client.patch(
                kinds.TRAINJOBS, "held", {"spec": {"suspend": False}}, namespace=namespace
            )
            resumed = await wait_condition(client, namespace, "held", "Suspended", "False")
            assert (resumed["reason"], resumed["message"]) == (
                "Resumed",
                "TrainJob is resumed",
            )
            names = {"held-node-0-0", "held-node-0-1"}
            await wait_pods(client, namespace, names)
            for name in names:
                await set_phase(client, namespace, name, "Running", ready=True)
            await wait_condition(client, namespace, "held", "Running")

            await client.patch(
                kinds.TRAINJOBS, "held", {"spec": {"suspend": True}}, namespace=namespace
            )
            await wait_condition(client, namespace, "held", "Suspended")
            await wait_pods(client, namespace, set())
            stopped = await wait_condition(client, namespace, "held", "Running", "False")
            assert stopped["reason"] == "Suspended"

    run(body())


def test_a_runtime_edited_after_creation_does_not_change_the_job(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-snapshot-{namespace}"

    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            doc = builtin_runtime("torch_distributed.yaml", runtime_name)
            async with cluster_runtime(client, doc):
                await client.create(
                    kinds.TRAINJOBS,
                    trainjob("frozen", runtime_name, trainer={"numNodes": 1}),
                    namespace=namespace,
                )
                await wait_pods(client, namespace, {"frozen-node-0-0"})
                snapshot = await fetch_object(
                    client, kinds.CONFIGMAPS, namespace, "frozen-runtime-snapshot"
                )
                assert snapshot is not None
                (owner,) = snapshot["metadata"]["ownerReferences"]
                assert (owner["kind"], owner["name"], owner["controller"]) == (
                    "TrainJob",
                    "frozen",
                    True,
                )

                # Suspend (pods go), change the runtime's command, resume: the pods come back
                # from the snapshot, not from the edited runtime.
                await client.patch(
                    kinds.TRAINJOBS, "frozen", {"spec": {"suspend": True}}, namespace=namespace
                )
                await wait_pods(client, namespace, set())
                container = doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"][
                    "spec"
                ]["template"]["spec"]["containers"][0]
                container["command"] = ["python3", "edited.py"]
                edited = await client.get(kinds.CLUSTER_TRAINING_RUNTIMES, runtime_name)
                edited["spec"] = doc["spec"]
                await client.replace(kinds.CLUSTER_TRAINING_RUNTIMES, edited)
                await client.patch(
                    kinds.TRAINJOBS, "frozen", {"spec": {"suspend": False}}, namespace=namespace
                )
                pods = await wait_pods(client, namespace, {"frozen-node-0-0"})
                assert pods["frozen-node-0-0"]["spec"]["containers"][0]["command"] == ["torchrun"]

                # A new TrainJob on the edited runtime gets the edit.
                await client.create(
                    kinds.TRAINJOBS,
                    trainjob("fresh", runtime_name, trainer={"numNodes": 1}),
                    namespace=namespace,
                )
                pods = await wait_pods(client, namespace, {"frozen-node-0-0", "fresh-node-0-0"})
                command = pods["fresh-node-0-0"]["spec"]["containers"][0]["command"]
                assert command == ["python3", "edited.py"]

    run(body())


def test_a_trainjob_managed_by_another_controller_is_left_alone(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-managed-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            theirs = trainjob("theirs", runtime_name, managedBy="kueue.x-k8s.io/multikueue")
            await client.create(kinds.TRAINJOBS, theirs, namespace=namespace)
            await client.create(
                kinds.TRAINJOBS, trainjob("ours", runtime_name), namespace=namespace
            )
            # The job we manage proves the controller ran past the other one.
            await wait_pods(client, namespace, {"ours-node-0-0"})
            skipped = await get_job(client, namespace, "theirs")
            assert not (skipped.get("status") or {}).get("conditions")
            assert (
                await fetch_object(client, kinds.CONFIGMAPS, namespace, "theirs-runtime-snapshot")
                is None
            )

    run(body())


def test_the_active_deadline_fails_the_job_and_removes_its_pods(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-deadline-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            job = trainjob("late", runtime_name, activeDeadlineSeconds=2)
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            await wait_pods(client, namespace, {"late-node-0-0"})
            await set_phase(client, namespace, "late-node-0-0", "Running", ready=True)
            failed = await wait_condition(client, namespace, "late", "Failed", timeout=15)
            assert (failed["reason"], failed["message"]) == (
                "DeadlineExceeded",
                "TrainJob exceeded its active deadline",
            )
            await wait_pods(client, namespace, set())

    run(body())


def test_depends_on_complete_holds_the_trainer_until_the_initializer_is_done(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"staged-{namespace}"

    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            doc = builtin_runtime("torch_distributed.yaml", runtime_name)
            jobs = doc["spec"]["template"]["spec"]["replicatedJobs"]
            mount = [{"name": "initializer", "mountPath": "/workspace"}]
            initializer = {
                "name": "dataset-initializer",
                "template": {
                    "metadata": {"labels": {ANCESTOR: "dataset-initializer"}},
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "dataset-initializer",
                                        "image": "example/init",
                                        "command": ["python3", "-c", "pass"],
                                        "volumeMounts": mount,
                                    }
                                ],
                                "volumes": [{"name": "initializer", "emptyDir": {}}],
                            }
                        }
                    },
                },
            }
            jobs[0]["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
            jobs.insert(0, initializer)
            async with cluster_runtime(client, doc):
                job = trainjob(
                    "staged",
                    runtime_name,
                    initializer={"dataset": {"storageUri": "hf://org/data"}},
                )
                await client.create(kinds.TRAINJOBS, job, namespace=namespace)
                pods = await wait_pods(client, namespace, {"staged-dataset-initializer-0-0"})
                env = env_of(pods["staged-dataset-initializer-0-0"], "dataset-initializer")
                assert env["STORAGE_URI"] == "hf://org/data"

                async def initializer_seen() -> bool:
                    stored = await get_job(client, namespace, "staged")
                    statuses = {s["name"]: s for s in stored["status"].get("jobsStatus") or []}
                    return statuses.get("dataset-initializer", {}).get("active") == 1

                # Once a reconcile has seen the initializer's pod, the trainer is still held back.
                await eventually(initializer_seen, "jobsStatus shows the initializer active")
                assert set(await pods_of(client, namespace)) == {"staged-dataset-initializer-0-0"}
                await set_phase(client, namespace, "staged-dataset-initializer-0-0", "Succeeded")
                await wait_pods(
                    client, namespace, {"staged-dataset-initializer-0-0", "staged-node-0-0"}
                )

                async def initializer_counted() -> bool:
                    stored = await get_job(client, namespace, "staged")
                    statuses = {s["name"]: s for s in stored["status"].get("jobsStatus") or []}
                    return statuses.get("dataset-initializer", {}).get("succeeded") == 1

                await eventually(initializer_counted, "jobsStatus counts the initializer")
                assert condition(await get_job(client, namespace, "staged"), "Complete") is None

    run(body())


def elastic_runtime(name: str, low: int, high: int) -> dict[str, Any]:
    """The built-in torch runtime made elastic (a runtime may not set numNodes then)."""
    doc = builtin_runtime("torch_distributed.yaml", name)
    policy = doc["spec"]["mlPolicy"]
    policy.pop("numNodes", None)
    policy["torch"]["elasticPolicy"] = {"minNodes": low, "maxNodes": high}
    return doc


def test_an_elastic_trainjob_resized_while_running_gets_the_new_node(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    runtime_name = f"torch-elastic-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, elastic_runtime(runtime_name, 2, 4)),
        ):
            job = trainjob("grow", runtime_name, trainer={"numNodes": 2})
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            first = {"grow-node-0-0", "grow-node-0-1"}
            pods = await wait_pods(client, namespace, first)
            for name in sorted(first):
                await set_phase(client, namespace, name, "Running", ready=True)
            await wait_condition(client, namespace, "grow", "Running")

            await client.patch(
                kinds.TRAINJOBS, "grow", {"spec": {"trainer": {"numNodes": 3}}}, namespace=namespace
            )
            grown = await wait_pods(client, namespace, {*first, "grow-node-0-2"})
            assert {n: grown[n]["metadata"]["uid"] for n in first} == {
                n: pods[n]["metadata"]["uid"] for n in first
            }, "the running nodes are kept"
            env = env_of(grown["grow-node-0-2"])
            assert env["PET_NNODES"] == "2:4"
            assert env["PET_RDZV_ENDPOINT"] == "grow-node-0-0.grow:29500"
            assert env["PET_NNODES"] == env_of(grown["grow-node-0-0"])["PET_NNODES"]

            await client.patch(
                kinds.TRAINJOBS, "grow", {"spec": {"trainer": {"numNodes": 2}}}, namespace=namespace
            )
            await wait_pods(client, namespace, first)

    run(body())
