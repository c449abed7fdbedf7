"""MPI end to end, on both planes, with mpi4py all-reducing over TCP:

- an MPIJob (v1), ``examples/mpi/mpijob.yaml`` submitted with ``kubetrain run``. The operator
  makes the hostfile ConfigMap, the launcher's ServiceAccount, Role and RoleBinding, and the
  pods; the launcher's init container puts kubectl in its volume; its ``mpirun`` starts one
  rank in each worker pod through ``kubectl exec`` with the pod's ServiceAccount token; the job
  Succeeds;
- a TrainJob (v2) on the built-in ``mpi-distributed`` runtime, ``examples/mpi/trainjob.yaml``
  (2 nodes; the launcher is one of them). The operator makes upstream's hostfile ConfigMap,
  and the launcher's ``mpirun`` reaches both hosts by ssh, which the node serves by running
  the command in the pod the host names; the job is Complete.

Read back only through the API: the jobs' conditions, the launcher's log (the sum, and the
host of every rank: pod hostnames, so the ranks ran in the pods the hostfile names), and the
objects the operator made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kubetrain import kube
from kubetrain.operator.jobs import reasons
from kubetrain.operator.trainjob import kinds
from tests.apiserver.cascade import run
from tests.e2e import mpi_fixtures, trainjob_fixtures
from tests.integration.operator.jobs_fixtures import PODS, condition, get

mpi_installed = mpi_fixtures.mpi_installed  # fixtures, found by name
mpirun_installed = mpi_fixtures.mpirun_installed

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mpi"
MPIJOBS = kube.Resource("kubeflow.org", "v1", "mpijobs", kind="MPIJob")
ROLES = kube.Resource("rbac.authorization.k8s.io", "v1", "roles", kind="Role")
ROLE_BINDINGS = kube.Resource("rbac.authorization.k8s.io", "v1", "rolebindings", kind="RoleBinding")
JOB_TIMEOUT = 90.0  # seconds: the job itself takes a few


def example(namespace: str) -> dict[str, Any]:
    """The example MPIJob, its script named by absolute path (the example runs from the
    repository root)."""
    doc = yaml.safe_load((EXAMPLE / "mpijob.yaml").read_text(encoding="utf-8"))
    doc["metadata"]["namespace"] = namespace
    launcher = doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["command"] = [
        str(EXAMPLE / "allreduce.py") if arg == "examples/mpi/allreduce.py" else arg
        for arg in launcher["command"]
    ]
    return dict(doc)


async def log_of(client: kube.Client, namespace: str, pod: str, container: str) -> str:
    path = PODS.path(namespace, pod, "log")
    async with client.stream(path, query={"container": container}) as lines:
        return "\n".join([line.decode(errors="replace") async for line in lines])


def test_an_mpijob_all_reduces_with_mpi4py_across_its_worker_pods(
    mpi_installed: None, kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "mpijob.yaml"
    manifest.write_text(yaml.safe_dump(example(namespace)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(KUBETRAIN_KUBECONFIG=kubeconfig, KUBETRAIN_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-m", "kubetrain", "run", "-f", str(manifest), "-n", namespace],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT + 30,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "all-reduce sum: 3 (expected 3)" in done.stdout, done.stdout

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            job = await get(client, MPIJOBS, namespace, "mpi-allreduce")
            succeeded = condition(job, "Succeeded")
            assert succeeded is not None, job
            assert succeeded["status"] == "True", job
            assert succeeded["reason"] == reasons.reason("MPIJob", reasons.SUCCEEDED)
            assert job["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}, job

            log = await log_of(client, namespace, "mpi-allreduce-launcher", "mpi-launcher")
            assert "all-reduce sum: 3 (expected 3)" in log, log
            hosts = {line.rsplit(" on ", 1)[1] for line in log.splitlines() if " of 2 on " in line}
            assert hosts == {"mpi-allreduce-worker-0", "mpi-allreduce-worker-1"}, log

            launcher = await get(client, PODS, namespace, "mpi-allreduce-launcher")
            assert launcher is not None
            assert launcher["spec"]["serviceAccountName"] == "mpi-allreduce-launcher"
            init = launcher["status"]["initContainerStatuses"][0]
            assert init["name"] == "kubectl-delivery", init
            assert init["state"]["terminated"]["exitCode"] == 0, init
            role = await get(client, ROLES, namespace, "mpi-allreduce-launcher")
            assert role is not None
            assert {"create"} == set(role["rules"][1]["verbs"]), role
            binding = await get(client, ROLE_BINDINGS, namespace, "mpi-allreduce-launcher")
            assert binding is not None
            assert binding["subjects"][0]["name"] == "mpi-allreduce-launcher", binding

    run(body())


def example_trainjob(namespace: str) -> dict[str, Any]:
    """The example TrainJob, its script named by absolute path."""
    doc = yaml.safe_load((EXAMPLE / "trainjob.yaml").read_text(encoding="utf-8"))
    doc["metadata"]["namespace"] = namespace
    trainer = doc["spec"]["trainer"]
    trainer["args"] = [
        str(EXAMPLE / "allreduce.py") if arg == "examples/mpi/allreduce.py" else arg
        for arg in trainer["args"]
    ]
    return dict(doc)


def test_a_trainjob_on_mpi_distributed_all_reduces_across_its_two_nodes(
    mpirun_installed: None, kubeconfig: str, namespace: str
) -> None:
    name = "mpi-trainjob"

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(kinds.TRAINJOBS, example_trainjob(namespace), namespace=namespace)
            job = await trainjob_fixtures.wait_finished(client, namespace, name)
            logs = await trainjob_fixtures.logs_of(client, namespace, name)
            why = trainjob_fixtures.explain(job, logs)
            complete = trainjob_fixtures.condition(job, "Complete") or {}
            assert complete.get("status") == "True", why
            # runLauncherAsNode: numNodes 2 is the launcher and one node pod. The node pod may
            # be gone by now (the real plane's Job controller removes it once the JobSet is
            # done): the ranks' hosts below name it.
            assert f"{name}-launcher-0-0" in logs, why

            hostfile = await client.get(
                kinds.CONFIGMAPS, f"{name}-mpi-hostfile", namespace=namespace
            )
            assert hostfile["data"] == {
                "hostfile": f"{name}-launcher-0-0.{name} slots=1\n{name}-node-0-0.{name} slots=1\n"
            }, hostfile
            secret = await client.get(kinds.SECRETS, f"{name}-mpi-ssh-auth", namespace=namespace)
            assert secret["type"] == "kubernetes.io/ssh-auth", secret

            log = logs[f"{name}-launcher-0-0"]
            assert "all-reduce sum: 3 (expected 3)" in log, why
            ranks = {line.rsplit(" on ", 1)[1] for line in log.splitlines() if " of 2 on " in line}
            assert ranks == {f"{name}-launcher-0-0", f"{name}-node-0-0"}, why

    run(body())
