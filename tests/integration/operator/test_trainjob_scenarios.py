"""The TrainJob controller's reference §5.2 scenarios that the other test_trainjob*.py files do
not already show (``trainjob_controller_test.go``, the runtime controllers' and the status
server's tests, and the e2e cases that are controller behaviour), against a real API server
with the operator in-process and no node agent: pod life is written through pods/status.

- PlainML on a namespaced TrainingRuntime, with runtimePatches (grace period, node selector)
  and a snapshot that survives an edit of that runtime while the job is suspended;
- runtimePatches changed while suspended reach the pods on resume, and are refused while the
  job runs ("update JobSet only while suspended");
- OpenMPI, JAX and XGBoost TrainJobs: Complete and Failed from their pods;
- the active deadline: no failure before it, no clock while suspended, a new clock on resume;
- a TrainJob created while no operator runs gets its snapshot once one starts;
- a runtime in use can be deleted, and its TrainJob goes on from the snapshot;
- ``trainerStatus`` through the status subresource (upstream's status server cases);
- a coscheduling PodGroup changes only while its TrainJob is suspended.

Admission (the webhook scenarios) is in test_trainjob_admission.py.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import yaml

from kubetrain import kube
from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import eventually, run, wait_gone
from tests.integration.operator.trainjob_fixtures import (
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
from tests.unit.api.trainers import pod_spec_patch, runtime

Settings = Callable[..., manager.Settings]
PATCHES_SUSPENDED = (
    "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is "
    "suspended before or after the update"
)


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def runtime_patch(manager_name: str = "acme.io/tool", **pod_spec: Any) -> dict[str, Any]:
    """A runtime patch of the ``node`` job's pod spec."""
    jobs = [pod_spec_patch("node", **pod_spec)]
    return {
        "manager": manager_name,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}},
    }


def node_command(pod: dict[str, Any]) -> list[str]:
    return pod["spec"]["containers"][0]["command"]


async def complete_all(client: kube.Client, namespace: str, names: set[str]) -> None:
    for name in sorted(names):
        await set_phase(client, namespace, name, "Running", ready=True)
    for name in sorted(names):
        await set_phase(client, namespace, name, "Succeeded")


def test_a_plain_trainjob_on_a_namespaced_runtime_gets_its_patches_and_keeps_its_snapshot(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    """PlainML "create TrainJob with TrainingRuntime" and "propagate
    terminationGracePeriodSeconds from RuntimePatches"; Torch "create with RuntimePatches";
    snapshots of a TrainingRuntime (structure, owner, and the suspended job keeping the original
    runtime after the runtime is edited: the e2e case)."""
    doc = runtime(None, name="plain", kind="TrainingRuntime", namespace=namespace)
    doc = doc.ml_policy(numNodes=1)
    plain = doc.build()
    container = plain["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]["spec"]["containers"][0]
    container["command"] = ["python3", "train.py"]

    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            await client.create(kinds.TRAINING_RUNTIMES, plain, namespace=namespace)
            job = trainjob("plain", "plain", trainer={"numNodes": 2})
            job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
            job["spec"]["runtimePatches"] = [
                runtime_patch(terminationGracePeriodSeconds=7, nodeSelector={"disk": "ssd"})
            ]
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            names = {"plain-node-0-0", "plain-node-0-1"}
            pods = await wait_pods(client, namespace, names)
            for pod in pods.values():
                assert pod["spec"]["terminationGracePeriodSeconds"] == 7
                assert pod["spec"]["nodeSelector"] == {"disk": "ssd"}
                assert node_command(pod) == ["python3", "train.py"]
                assert not any(k.startswith(("PET_", "JAX_", "DMLC_")) for k in env_of(pod))

            snapshot = await fetch_object(
                client, kinds.CONFIGMAPS, namespace, "plain-runtime-snapshot"
            )
            assert snapshot is not None
            (owner,) = snapshot["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["controller"]) == (
                "TrainJob",
                "plain",
                True,
            )
            frozen = yaml.safe_load(snapshot["data"]["runtime"])
            assert (frozen["kind"], frozen["metadata"]["name"]) == ("TrainingRuntime", "plain")
            assert frozen["metadata"]["namespace"] == namespace

            # Suspend, edit the runtime, resume: the pods come back as the snapshot says.
            await client.patch(
                kinds.TRAINJOBS, "plain", {"spec": {"suspend": True}}, namespace=namespace
            )
            await wait_pods(client, namespace, set())
            stored = await client.get(kinds.TRAINING_RUNTIMES, "plain", namespace=namespace)
            edited = copy.deepcopy(stored)
            edited["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
                "spec"
            ]["containers"][0]["command"] = ["python3", "edited.py"]
            await client.replace(kinds.TRAINING_RUNTIMES, edited, namespace=namespace)
            await client.patch(
                kinds.TRAINJOBS, "plain", {"spec": {"suspend": False}}, namespace=namespace
            )
            pods = await wait_pods(client, namespace, names)
            assert {n: node_command(p) for n, p in pods.items()} == {
                n: ["python3", "train.py"] for n in names
            }
            await complete_all(client, namespace, names)
            await wait_condition(client, namespace, "plain", "Complete")

    run(body())


def test_runtime_patches_change_while_suspended_and_reach_the_pods_on_resume(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    """PlainML "update JobSet only while suspended": what a suspended job's patches say is what
    its pods get when it resumes; a running job's patches cannot change."""
    runtime_name = f"torch-patches-{namespace}"

    def patches(value: str) -> list[dict[str, Any]]:
        return [runtime_patch(nodeSelector={"pool": value})]

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            job = trainjob("tuned", runtime_name, suspend=True, runtimePatches=patches("a"))
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            await wait_condition(client, namespace, "tuned", "Suspended")
            await client.patch(
                kinds.TRAINJOBS,
                "tuned",
                {"spec": {"runtimePatches": patches("b")}},
                namespace=namespace,
            )
            assert await pods_of(client, namespace) == {}, "still suspended: no pods"
            await client.patch(
                kinds.TRAINJOBS, "tuned", {"spec": {"suspend": False}}, namespace=namespace
            )
            pods = await wait_pods(client, namespace, {"tuned-node-0-0"})
            assert pods["tuned-node-0-0"]["spec"]["nodeSelector"] == {"pool": "b"}

            with pytest.raises(kube.Invalid) as caught:
                await client.patch(
                    kinds.TRAINJOBS,
                    "tuned",
                    {"spec": {"runtimePatches": patches("c")}},
                    namespace=namespace,
                )
            assert PATCHES_SUSPENDED in caught.value.message

            # Suspending in the same request may change them; the pods follow on resume.
            await client.patch(
                kinds.TRAINJOBS,
                "tuned",
                {"spec": {"suspend": True, "runtimePatches": patches("c")}},
                namespace=namespace,
            )
            await wait_pods(client, namespace, set())
            await client.patch(
                kinds.TRAINJOBS, "tuned", {"spec": {"suspend": False}}, namespace=namespace
            )
            pods = await wait_pods(
                client,
                namespace,
                {"tuned-node-0-0"},
                where=lambda pod: pod["spec"].get("nodeSelector") == {"pool": "c"},
            )

    run(body())


def test_an_mpi_trainjob_completes_with_its_launcher_and_fails_with_it(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    """OpenMPI "Complete" and "Failed": the runtime's successPolicy targets the launcher."""
    runtime_name = f"mpi-verdicts-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("mpi_distributed.yaml", runtime_name)),
        ):
            for name in ("good", "bad"):
                job = trainjob(name, runtime_name, trainer={"numNodes": 2, "args": ["pi.py"]})
                await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            everything = {f"{j}-{r}-0-0" for j in ("good", "bad") for r in ("launcher", "node")}
            await wait_pods(client, namespace, everything)
            for name in sorted(everything):
                await set_phase(client, namespace, name, "Running", ready=True)

            await set_phase(client, namespace, "good-launcher-0-0", "Succeeded")
            complete = await wait_condition(client, namespace, "good", "Complete")
            assert (complete["reason"], complete["message"]) == (
                "AllJobsCompleted",
                "jobset completed successfully",
            )

            await set_phase(client, namespace, "bad-launcher-0-0", "Failed", exit_code=2)
            failed = await wait_condition(client, namespace, "bad", "Failed")
            assert failed["reason"] == "FailedJobs"
            assert failed["message"].startswith("jobset failed due to one or more job failures")

            # Finished jobs keep their finished pods (for logs) and lose the running ones.
            await wait_pods(client, namespace, {"good-launcher-0-0", "bad-launcher-0-0"})
            assert condition(await get_job(client, namespace, "good"), "Failed") is None
            assert condition(await get_job(client, namespace, "bad"), "Complete") is None

    run(body())


@pytest.mark.parametrize(
    ("file", "env"),
    [
        pytest.param(
            "jax_distributed.yaml",
            {"JAX_NUM_PROCESSES": "2", "JAX_COORDINATOR_ADDRESS": "{job}-node-0-0.{job}:29500"},
            id="JAX",
        ),
        pytest.param(
            "xgboost_distributed.yaml",
            {
                "DMLC_NUM_WORKER": "2",
                "DMLC_TRACKER_URI": "{job}-node-0-0.{job}",
                "DMLC_TRACKER_PORT": "29500",
            },
            id="XGBoost",
        ),
    ],
)
def test_a_framework_trainjob_gets_its_env_and_completes_or_fails_with_its_pods(
    kubeconfig: str, namespace: str, manager_settings: Settings, file: str, env: dict[str, str]
) -> None:
    """JAX and XGBoost: "create", "Complete", "Failed"."""
    runtime_name = f"{file.split('_')[0]}-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime(file, runtime_name)),
        ):
            for name in ("good", "bad"):
                job = trainjob(name, runtime_name, trainer={"numNodes": 2, "args": ["train.py"]})
                await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            good = {"good-node-0-0", "good-node-0-1"}
            bad = {"bad-node-0-0", "bad-node-0-1"}
            pods = await wait_pods(client, namespace, good | bad)
            for name in sorted(good):
                values = env_of(pods[name])
                for key, value in env.items():
                    assert values[key] == value.format(job="good"), (name, key)
            await complete_all(client, namespace, good)
            complete = await wait_condition(client, namespace, "good", "Complete")
            assert complete["reason"] == "AllJobsCompleted"

            await set_phase(client, namespace, "bad-node-0-0", "Running", ready=True)
            await set_phase(client, namespace, "bad-node-0-1", "Failed", exit_code=1)
            failed = await wait_condition(client, namespace, "bad", "Failed")
            assert failed["reason"] == "FailedJobs"
            assert condition(await get_job(client, namespace, "good"), "Failed") is None

    run(body())


def test_the_deadline_waits_for_expiry_stops_while_suspended_and_restarts_on_resume(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    """Timeouts: "no failure before expiry", "no timer while suspended", "timer reset on
    resume" (the expiry itself: test_trainjob_lifecycle.py)."""
    runtime_name = f"torch-clock-{namespace}"
    deadline = 2

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            await client.create(
                kinds.TRAINJOBS,
                trainjob("patient", runtime_name, activeDeadlineSeconds=3600),
                namespace=namespace,
            )
            held = await client.create(
                kinds.TRAINJOBS,
                trainjob("held", runtime_name, suspend=True, activeDeadlineSeconds=deadline),
                namespace=namespace,
            )
            await wait_condition(client, namespace, "held", "Suspended")
            await wait_pods(client, namespace, {"patient-node-0-0"})
            await set_phase(client, namespace, "patient-node-0-0", "Running", ready=True)
            await wait_condition(client, namespace, "patient", "Running")

            # Let the held job's deadline pass as counted from its creation: time itself is
            # what this waits for.
            created = parse_time(held["metadata"]["creationTimestamp"])
            past = created + timedelta(seconds=deadline + 1.5)
            await asyncio.sleep(max(0.0, (past - datetime.now(timezone.utc)).total_seconds()))
            assert condition(await get_job(client, namespace, "held"), "Failed") is None

            await client.patch(
                kinds.TRAINJOBS, "held", {"spec": {"suspend": False}}, namespace=namespace
            )
            resumed = await wait_condition(client, namespace, "held", "Suspended", "False")
            failed = await wait_condition(client, namespace, "held", "Failed", timeout=15)
            assert failed["reason"] == "DeadlineExceeded"
            waited = parse_time(failed["lastTransitionTime"]) - parse_time(
                resumed["lastTransitionTime"]
            )
            assert waited >= timedelta(seconds=deadline), "a new clock from the resume"

            patient = await get_job(client, namespace, "patient")
            assert condition(patient, "Failed") is None, "its deadline is an hour away"
            assert condition(patient, "Running")["status"] == "True"  # type: ignore[index]

    run(body())


def test_a_trainjob_created_while_no_operator_ran_gets_its_snapshot_when_one_starts(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    """Runtime snapshots: "snapshots created for pre-existing TrainJobs"."""
    runtime_name = f"torch-early-{namespace}"

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            doc = builtin_runtime("torch_distributed.yaml", runtime_name)
            async with cluster_runtime(client, doc):
                await client.create(
                    kinds.TRAINJOBS, trainjob("early", runtime_name), namespace=namespace
                )
                assert (
                    await fetch_object(
                        client, kinds.CONFIGMAPS, namespace, "early-runtime-snapshot"
                    )
                    is None
                )
                async with operator(kubeconfig, manager_settings()) as running:
                    await wait_pods(running, namespace, {"early-node-0-0"})
                    snapshot = await fetch_object(
                        running, kinds.CONFIGMAPS, namespace, "early-runtime-snapshot"
                    )
                    assert snapshot is not None
                    frozen = yaml.safe_load(snapshot["data"]["runtime"])
                    assert frozen["metadata"]["name"] == runtime_name
                    assert snapshot["metadata"]["ownerReferences"][0]["name"] == "early"

    run(body())


def test_a_runtime_in_use_can_be_deleted_and_its_trainjob_goes_on_from_the_snapshot(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    """trainingruntime/clustertrainingruntime controllers: "runtime can be deleted while
    referenced by a TrainJob" (master: no finalizer holds it). The job goes on: a lost pod
    comes back from the snapshot, and the job completes. As upstream's webhook looks the
    runtime up on every update too, the job's spec can no longer change, and no new TrainJob
    can use the runtime."""
    runtime_name = f"torch-gone-{namespace}"

    async def body() -> None:
        async with operator(kubeconfig, manager_settings()) as client:
            await client.create(
                kinds.CLUSTER_TRAINING_RUNTIMES,
                builtin_runtime("torch_distributed.yaml", runtime_name),
            )
            await client.create(
                kinds.TRAINJOBS,
                trainjob("orphan", runtime_name, trainer={"numNodes": 2}),
                namespace=namespace,
            )
            names = {"orphan-node-0-0", "orphan-node-0-1"}
            first = await wait_pods(client, namespace, names)
            await client.delete(kinds.CLUSTER_TRAINING_RUNTIMES, runtime_name)
            await wait_gone(client, None, runtime_name, kinds.CLUSTER_TRAINING_RUNTIMES)

            await client.delete(kinds.PODS, "orphan-node-0-1", namespace=namespace)
            lost = first["orphan-node-0-1"]["metadata"]["uid"]
            pods = await wait_pods(
                client, namespace, names, where=lambda pod: pod["metadata"]["uid"] != lost
            )
            assert node_command(pods["orphan-node-0-1"]) == ["torchrun"], "from the snapshot"
            await complete_all(client, namespace, names)
            await wait_condition(client, namespace, "orphan", "Complete")

            with pytest.raises(kube.Invalid) as caught:
                await client.patch(
                    kinds.TRAINJOBS, "orphan", {"spec": {"suspend": True}}, namespace=namespace
                )
            assert "specified clusterTrainingRuntime must be created" in caught.value.message
            with pytest.raises(kube.Invalid) as caught:
                await client.create(
                    kinds.TRAINJOBS, trainjob("late", runtime_name), namespace=namespace
                )
            assert "specified clusterTrainingRuntime must be created" in caught.value.message

    run(body())


def trainer_status(progress: int, metrics: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "status": {
            "trainerStatus": {
                "progressPercentage": progress,
                "metrics": metrics,
                "lastUpdatedTime": "2030-01-01T00:00:00Z",
            }
        }
    }


def test_trainer_status_through_the_status_subresource(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    """Upstream's status server cases, for kubetrain's transport (``kubetrain.report`` patches
    ``status.trainerStatus``): a valid update persists; a new report replaces the metrics
    rather than merging them; an empty one wipes nothing; progress over 100 is refused with a
    message; an unknown TrainJob is refused."""
    runtime_name = f"torch-status-{namespace}"

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, builtin_runtime("torch_distributed.yaml", runtime_name)),
        ):
            await client.create(
                kinds.TRAINJOBS, trainjob("report", runtime_name), namespace=namespace
            )
            await wait_pods(client, namespace, {"report-node-0-0"})

            async def write(patch: dict[str, Any], name: str = "report") -> dict[str, Any]:
                return await client.patch(
                    kinds.TRAINJOBS, name, patch, namespace=namespace, subresource="status"
                )

            first = [{"name": "loss", "value": "0.5"}, {"name": "accuracy", "value": "0.8"}]
            await write(trainer_status(40, first))
            stored = await write(trainer_status(60, [{"name": "loss", "value": "0.3"}]))
            assert stored["status"]["trainerStatus"]["progressPercentage"] == 60
            assert stored["status"]["trainerStatus"]["metrics"] == [
                {"name": "loss", "value": "0.3"}
            ], "replaced, not merged"
            kept = await write({"status": {"trainerStatus": {}}})
            assert kept["status"]["trainerStatus"]["progressPercentage"] == 60

            with pytest.raises(kube.Invalid) as caught:
                await write(trainer_status(101, []))
            assert "status.trainerStatus.progressPercentage" in caught.value.message
            assert "less than or equal to 100" in caught.value.message
            with pytest.raises(kube.NotFound):
                await write(trainer_status(10, []), name="nobody")

            # The controller's own status writes leave the report alone.
            await set_phase(client, namespace, "report-node-0-0", "Running", ready=True)
            await wait_condition(client, namespace, "report", "Running")

            async def still_reported() -> bool:
                job = await get_job(client, namespace, "report")
                return job["status"].get("trainerStatus", {}).get("progressPercentage") == 60

            await eventually(still_reported, "the report survives the controller's write")

    run(body())


def test_a_pod_group_changes_only_while_its_trainjob_is_suspended(
    kubeconfig: str, namespace: str, manager_settings: Settings
) -> None:
    """Coscheduling: the PodGroup is "updated only while suspended". An elastic job resized
    while it runs keeps the PodGroup it started with; suspended, the PodGroup follows."""
    runtime_name = f"torch-gang-resize-{namespace}"
    doc = builtin_runtime("torch_distributed.yaml", runtime_name)
    doc["spec"]["mlPolicy"].pop("numNodes", None)
    doc["spec"]["mlPolicy"]["torch"]["elasticPolicy"] = {"minNodes": 1, "maxNodes": 4}
    doc["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 30}}

    async def body() -> None:
        async with (
            operator(kubeconfig, manager_settings()) as client,
            cluster_runtime(client, doc),
        ):
            job = trainjob("gang", runtime_name, trainer={"numNodes": 2})
            await client.create(kinds.TRAINJOBS, job, namespace=namespace)
            await wait_pods(client, namespace, {"gang-node-0-0", "gang-node-0-1"})

            async def group() -> dict[str, Any] | None:
                return await fetch_object(client, kinds.COSCHEDULING_POD_GROUPS, namespace, "gang")

            first = await eventually(group, "the PodGroup")
            assert first["spec"]["minMember"] == 2

            await client.patch(
                kinds.TRAINJOBS, "gang", {"spec": {"trainer": {"numNodes": 3}}}, namespace=namespace
            )
            await wait_pods(client, namespace, {"gang-node-0-0", "gang-node-0-1", "gang-node-0-2"})
            running = await group()
            assert running is not None
            assert running["spec"]["minMember"] == 2, "not while the job runs"
            assert running["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]

            await client.patch(
                kinds.TRAINJOBS, "gang", {"spec": {"suspend": True}}, namespace=namespace
            )

            async def followed() -> bool:
                found = await group()
                return found is not None and found["spec"]["minMember"] == 3

            await eventually(followed, "the suspended job's PodGroup counts 3 pods")

    run(body())
