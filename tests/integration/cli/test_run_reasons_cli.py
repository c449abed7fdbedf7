"""``kubetrain run`` says why a job does not run: the scheduler's message for an unschedulable
pod, a container's waiting reason, a pod's Warning event (FailedMount), and the job's own
Warning event (a pod refused by a ResourceQuota); and ``-f`` given several times reads the
files as one.

As in test_run_cli.py the test plays operator, scheduler and node through the API
(conftest.py); here it also records the events they would, with the uid of what they are
about, and reads the history ``run`` writes on stderr without a terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from tests.fixtures.waits import wait_for
from tests.integration.cli.conftest import Cli, Operator, Spawn, pytorchjob, stamp
from tests.integration.cli.test_run_cli import exists

JobFile = Callable[[dict[str, Any]], str]
INSUFFICIENT = "0/1 nodes are available: 1 Insufficient cpu."


def warning(
    core: client.CoreV1Api,
    namespace: str,
    about: dict[str, Any],
    reason: str,
    message: str,
    source: str,
) -> None:
    """A Warning event about ``about`` (a Pod or a job, as returned by the API)."""
    meta = about["metadata"]
    core.create_namespaced_event(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}."},
            "involvedObject": {
                "apiVersion": about.get("apiVersion", "v1"),
                "kind": about.get("kind", "Pod"),
                "name": meta["name"],
                "namespace": namespace,
                "uid": meta["uid"],
            },
            "reason": reason,
            "message": message,
            "type": "Warning",
            "firstTimestamp": stamp(),
            "lastTimestamp": stamp(),
            "count": 1,
            "source": {"component": source},
        },
    )


def pod_json(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, Any]:
    pod = core.read_namespaced_pod(name, namespace)
    return {"kind": "Pod", "metadata": {"name": name, "uid": pod.metadata.uid}}


def test_an_unschedulable_replica_shows_the_schedulers_message(
    job_file: JobFile, operator: Operator, core: client.CoreV1Api, spawn: Spawn
) -> None:
    child = spawn("run", "-f", job_file(pytorchjob("big", 1)))
    wait_for(lambda: exists(operator, "big"))
    name = operator.pod("big", "Master", 0)
    unscheduled = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": INSUFFICIENT,
        "lastTransitionTime": stamp(),
    }
    core.patch_namespaced_pod_status(
        name, operator.namespace, {"status": {"phase": "Pending", "conditions": [unscheduled]}}
    )
    pod = pod_json(core, operator.namespace, name)
    warning(core, operator.namespace, pod, "FailedScheduling", INSUFFICIENT, "default-scheduler")
    child.err.wait_for(f"[kubetrain] master-0: Unschedulable: {INSUFFICIENT}\n")
    child.process.kill()
    _, _, err = child.ended()
    assert "Warning FailedScheduling" not in err, "the event repeats the reason: said once"


def test_a_container_that_cannot_be_created_and_a_failed_mount_are_shown(
    job_file: JobFile, operator: Operator, core: client.CoreV1Api, node: str, spawn: Spawn
) -> None:
    child = spawn("run", "-f", job_file(pytorchjob("stuck", 1)))
    wait_for(lambda: exists(operator, "stuck"))
    master = operator.pod("stuck", "Master", 0, node=node)
    worker = operator.pod("stuck", "Worker", 0, node=node)
    message = (
        f"Pod {operator.namespace}/{master}: spec.containers[0].command: required on this "
        "node: images are not pulled locally"
    )
    waiting = {"waiting": {"reason": "CreateContainerError", "message": message}}
    core.patch_namespaced_pod_status(
        master,
        operator.namespace,
        {"status": {"phase": "Pending", "containerStatuses": [
            {"name": "pytorch", "state": waiting, "ready": False, "restartCount": 0,
             "image": "example/train:1", "imageID": ""}]}},
    )  # fmt: skip
    operator.pod_status(worker, "Pending")  # ContainerCreating
    mount = 'MountVolume.SetUp failed for volume "data" : persistentvolumeclaim "data" not found'
    warning(core, operator.namespace, pod_json(core, operator.namespace, worker),
            "FailedMount", mount, "kubelet")  # fmt: skip
    child.err.wait_for(f"[kubetrain] master-0: CreateContainerError: {message}\n")
    child.err.wait_for(f"[kubetrain] worker-0: FailedMount: {mount}\n")
    child.process.kill()
    child.ended()


def test_a_pod_refused_by_a_quota_shows_the_jobs_warning(
    job_file: JobFile, operator: Operator, core: client.CoreV1Api, node: str, spawn: Spawn
) -> None:
    child = spawn("run", "-f", job_file(pytorchjob("quota", 1)))
    wait_for(lambda: exists(operator, "quota"))
    master = operator.pod("quota", "Master", 0, node=node)
    operator.pod_status(master, "Running")
    job = operator.job("PyTorchJob", "quota")
    refused = (
        'Error creating: 403 Forbidden: pods "quota-worker-0" is forbidden: exceeded quota: '
        "small, requested: cpu=500m, used: cpu=1, limited: cpu=1"
    )
    warning(core, operator.namespace, job, "FailedCreatePod", refused, "pytorchjob-controller")
    child.err.wait_for(f"[kubetrain] pytorchjob/quota: Warning FailedCreatePod: {refused}\n")
    child.process.kill()
    child.ended()


def test_several_files_are_read_as_one(
    job_file: JobFile, operator: Operator, core: client.CoreV1Api, kt: Cli, spawn: Spawn
) -> None:
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                "data": {"lr": "0.1"}}  # fmt: skip
    child = spawn("run", "-f", job_file(settings), "-f", job_file(pytorchjob("two-files", 1)))
    wait_for(lambda: exists(operator, "two-files"))
    assert core.read_namespaced_config_map("settings", operator.namespace).data == {"lr": "0.1"}
    child.err.wait_for("pytorchjob.kubeflow.org/two-files created\n")
    child.process.kill()
    _, _, err = child.ended()
    assert "configmap/settings created" in err


def test_several_files_with_more_than_one_job_are_refused(
    job_file: JobFile, operator: Operator, kt: Cli
) -> None:
    first, second = job_file(pytorchjob("one", 1)), job_file(pytorchjob("other", 1))
    result = kt("run", "-f", first, "-f", second)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"kubetrain: {first}, {second} hold 2 jobs; `kubetrain run` takes exactly one (TFJob, "
        "PyTorchJob, XGBoostJob, PaddleJob, JAXJob, MPIJob, MXJob, TrainJob); `kubetrain apply` "
        "takes several"
    ]
    assert not exists(operator, "one")
    assert not exists(operator, "other")
