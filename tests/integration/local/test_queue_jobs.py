"""Queues and preemption with real jobs on the local control plane: the operator (its v1
controllers with Volcano gang scheduling, as ``--gang-scheduler-name=volcano`` runs them, and
the TrainJob controller), kubetrain's scheduler and a node agent run beside the session's API
server, and the jobs' pods run for real as processes of this machine.

- a queue at its capability holds a PyTorchJob Pending (its PodGroup says which queue and
  which capability) until the queue has room, and the job then runs;
- a high-priority TrainJob evicts a running low-priority PyTorchJob gang, whole; the
  PyTorchJob recreates its pods (restartPolicy OnFailure), which wait for the TrainJob and
  then run to success;
- a job that Kueue's queue label marks and that is suspended stays suspended, and ``kubetrain
  get`` says what it waits for;
- the seed document's Queue, runtime and TrainJob (with its queue override) behave as the
  document says: the PodGroup is in the TrainJob's queue, which must exist for it to run, and
  a TrainJob without the override goes to the runtime's queue.

Everything a test creates cluster-wide (Queues, PriorityClasses, runtimes) carries the test's
token. Jobs that must run "until preempted" wait for a marker file their test writes once it
has seen what it waits for; the file is in a directory the pods mount at the same path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from kubetrain import _aio, kube
from kubetrain.local.scheduler import scheduler
from kubetrain.operator.jobs import setup as job_setup
from kubetrain.operator.jobs.settings import Settings as JobSettings
from kubetrain.operator.runtime import manager
from kubetrain.operator.trainjob import kinds
from kubetrain.operator.trainjob import setup as trainjob_setup
from tests.apiserver.cascade import PRIORITY_CLASSES, eventually, run
from tests.fixtures.operator import FAST_WATCH
from tests.integration.local.conftest import Node, local_only, node_settings, running_node

PODS = kube.resource.PODS
EVENTS = kube.Resource("", "v1", "events", kind="Event")
PYTORCHJOBS = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
QUEUES = scheduler.QUEUES
VOLCANO_GROUPS = kinds.VOLCANO_POD_GROUPS
NODE_KEY = "queue-jobs-test.kubetrain.io/node"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
TEST_TAINT = {"key": "kubetrain.io/test-node", "operator": "Exists", "effect": "NoSchedule"}
WAIT = 90.0  # seconds for a job to get somewhere: pods start as real processes


@pytest.fixture(scope="module")
def queue_node(
    kubeconfig: str, core: k8s.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Node]:
    """A node agent of this module's own, labelled for its scheduler."""
    local_only(kubeconfig)
    root = tmp_path_factory.mktemp("queue-node")
    name = "kt-queues-" + secrets.token_hex(3)
    with running_node(core, kubeconfig, root, name, node_settings(kubeconfig, root, name)) as n:
        core.patch_node(name, {"metadata": {"labels": {NODE_KEY: name}}})
        yield n


@dataclass
class Plane:
    client: kube.Client
    namespace: str
    token: str
    markers: Path
    kubeconfig: str
    placing: scheduler.Scheduler
    cluster_objects: list[tuple[kube.Resource, str]] = field(default_factory=list)

    def marker(self, name: str) -> str:
        return str(self.markers / name)

    async def release(self, name: str) -> None:
        """Write the marker ``name``: the pods waiting for it end."""
        await asyncio.to_thread((self.markers / name).touch)

    async def cluster_object(self, resource: kube.Resource, body: dict[str, Any]) -> str:
        created = await self.client.create(resource, body)
        self.cluster_objects.append((resource, created["metadata"]["name"]))
        return str(created["metadata"]["name"])

    async def queue(self, name: str, **spec: Any) -> str:
        body = {"apiVersion": QUEUES.api_version, "kind": "Queue", "metadata": {"name": name}}
        return await self.cluster_object(QUEUES, {**body, "spec": spec})

    async def group(self, name: str) -> dict[str, Any] | None:
        with contextlib.suppress(kube.NotFound):
            return await self.client.get(VOLCANO_GROUPS, name, namespace=self.namespace)
        return None

    async def job(self, resource: kube.Resource, name: str) -> dict[str, Any]:
        return await self.client.get(resource, name, namespace=self.namespace)

    async def condition(self, resource: kube.Resource, name: str, kind: str) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            status = (await self.job(resource, name)).get("status") or {}
            for found in status.get("conditions") or []:
                if found.get("type") == kind and found.get("status") == "True":
                    return dict(found)
            return None

        return await eventually(check, f"{resource.kind} {name} is {kind}", timeout=WAIT)

    async def pods(self, prefix: str) -> dict[str, dict[str, Any]]:
        listed = await self.client.list(PODS, namespace=self.namespace)
        return {
            p["metadata"]["name"]: p
            for p in listed["items"]
            if p["metadata"]["name"].startswith(prefix)
        }

    async def running(self, *names: str) -> dict[str, dict[str, Any]]:
        async def check() -> dict[str, dict[str, Any]] | None:
            pods = await self.pods("")
            found = {n: pods[n] for n in names if n in pods}
            ok = len(found) == len(names) and all(
                (p.get("status") or {}).get("phase") == "Running" for p in found.values()
            )
            return found if ok else None

        return await eventually(check, f"{', '.join(names)} run", timeout=WAIT)

    async def kubetrain(self, *args: str) -> str:
        """``kubetrain ARGS -n NAMESPACE`` run as a user runs it; its output (it must succeed)."""
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG",)}
        env.update(
            KUBETRAIN_KUBECONFIG=self.kubeconfig,
            KUBETRAIN_HOME=str(self.markers / "home"),
            COLUMNS="250",
        )
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kubetrain",
            *args,
            "-n",
            self.namespace,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, err = await child.communicate()
        assert child.returncode == 0, err.decode()
        return out.decode()

    async def cycles(self, count: int = 3) -> None:
        """Wait for ``count`` more scheduling cycles (they come at least every resync)."""
        target = self.placing.cycles + count

        async def done() -> bool:
            return self.placing.cycles >= target

        await eventually(done, f"{count} more scheduling cycles")

    async def told(self, involved: str, reason: str) -> list[dict[str, Any]]:
        """The events of ``reason`` about ``involved``, once there are any (the scheduler
        posts them after the writes they tell of)."""

        async def check() -> list[dict[str, Any]]:
            return await self.events(involved, reason)

        return await eventually(check, f"a {reason} event about {involved}")

    async def events(self, involved: str, reason: str) -> list[dict[str, Any]]:
        listed = await self.client.list(EVENTS, namespace=self.namespace)
        return [
            e
            for e in listed["items"]
            if e["involvedObject"]["name"] == involved and e["reason"] == reason
        ]


def waits_for(marker: str) -> list[str]:
    """A command that runs until ``marker`` exists, then succeeds."""
    code = f"import os, time\nwhile not os.path.exists({marker!r}):\n    time.sleep(0.2)\n"
    return ["python3", "-c", code]


def pod_spec(plane: Plane, command: list[str], cpu: str, **extra: Any) -> dict[str, Any]:
    return {
        "tolerations": [TEST_TAINT],
        "terminationGracePeriodSeconds": 5,
        "volumes": [{"name": "markers", "hostPath": {"path": str(plane.markers)}}],
        "containers": [
            {
                "name": "pytorch",
                "image": "python:3",
                "command": command,
                "resources": {"requests": {"cpu": cpu}},
                "volumeMounts": [{"name": "markers", "mountPath": str(plane.markers)}],
            }
        ],
        **extra,
    }


def pytorchjob(
    plane: Plane, name: str, marker: str, *, workers: int = 0, queue: str | None = None
) -> dict[str, Any]:
    replica = {"replicas": 1, "restartPolicy": "OnFailure"}
    template = {"spec": pod_spec(plane, waits_for(plane.marker(marker)), "1")}
    specs = {"Master": {**replica, "template": template}}
    if workers:
        specs["Worker"] = {**replica, "replicas": workers, "template": template}
    run_policy: dict[str, Any] = {}
    if queue is not None:
        run_policy["schedulingPolicy"] = {"queue": queue}
    spec: dict[str, Any] = {"pytorchReplicaSpecs": specs}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {
        "apiVersion": PYTORCHJOBS.api_version,
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": spec,
    }


@contextlib.asynccontextmanager
async def plane(kubeconfig: str, namespace: str, node: Node, markers: Path) -> AsyncIterator[Plane]:
    """The operator and the scheduler running beside the block, for ``namespace`` only."""
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        mgr = manager.Manager(
            client,
            manager.Settings(
                namespace=namespace,
                leader_election=False,
                metrics_address="",
                probe_address="",
                workers=2,
                watch=FAST_WATCH,
            ),
        )
        job_setup.setup(mgr, JobSettings(gang_scheduler="volcano", force_host_network=True))
        trainjob_setup.setup(mgr, trainjob_setup.Settings(workers=2, force_host_network=True))
        placing = scheduler.Scheduler(
            client,
            scheduler.Settings(
                namespaces=frozenset({namespace}),
                node_selector=f"{NODE_KEY}={node.name}",
                resync=0.5,
                watch=FAST_WATCH,
            ),
        )
        stop = asyncio.Event()
        p = Plane(client, namespace, secrets.token_hex(3), markers, kubeconfig, placing)
        async with _aio.TaskGroup() as group:
            operator_task = group.create_task(mgr.run(), name="operator")
            group.create_task(placing.run(stop), name="scheduler")
            try:
                yield p
            finally:
                stop.set()
                operator_task.cancel()
                for resource, name in reversed(p.cluster_objects):
                    with contextlib.suppress(kube.NotFound):
                        await client.delete(resource, name)


def scenario(kubeconfig: str, namespace: str, node: Node, tmp_path: Path, body: Any) -> None:
    tmp_path.chmod(0o755)

    async def main() -> None:
        async with plane(kubeconfig, namespace, node, tmp_path) as p:
            await body(p)

    run(main())


# --- the tests ----------------------------------------------------------------------------------


def test_a_queue_at_its_capability_holds_a_job_pending_until_it_has_room(
    kubeconfig: str, namespace: str, queue_node: Node, tmp_path: Path
) -> None:
    async def body(p: Plane) -> None:
        team = await p.queue(f"team-{p.token}", capability={"cpu": "1"})
        await p.client.create(
            PYTORCHJOBS, pytorchjob(p, "first", "first-done", queue=team), namespace=p.namespace
        )
        await p.running("first-master-0")
        await p.client.create(
            PYTORCHJOBS, pytorchjob(p, "second", "second-done", queue=team), namespace=p.namespace
        )

        async def held() -> dict[str, Any] | None:
            group = await p.group("second")
            status = (group or {}).get("status") or {}
            for found in status.get("conditions") or []:
                if found["type"] == "Unschedulable" and status.get("phase") == "Pending":
                    return dict(found)
            return None

        condition = await eventually(held, "the second job's PodGroup is held Pending")
        assert condition["reason"] == "NotEnoughResources"
        assert condition["message"] == (
            f"queue resource quota insufficient: insufficient cpu: pod group "
            f"{p.namespace}/second: queue {team} has capability cpu=1, its running pods hold "
            "cpu=1, and this asks for cpu=1; waiting."
        )
        assert not await p.pods("second-"), "Volcano's operator creates no pods before Inqueue"
        told = await p.told("second", "Unschedulable")
        assert told[-1]["message"] == condition["message"]

        async def counted() -> dict[str, Any] | None:
            status = (await p.client.get(QUEUES, team)).get("status") or {}
            shown = (status.get("state"), status.get("running"), status.get("pending"))
            return status if shown == ("Open", 1, 1) else None

        status = await eventually(counted, f"Queue {team} counts one job running, one pending")
        assert status["allocated"]["cpu"] == "1"
        shown = await p.kubetrain("get", "pytorchjob/second")
        assert f"Queue:     {team} (Open, weight 1; holds cpu=1 of its deserved cpu=" in shown
        assert f"Waiting:   {condition['message']}" in shown
        (row,) = [line.split() for line in (await p.kubetrain("top", "queue")).splitlines()
                  if line.startswith(team)]  # fmt: skip
        assert row[:4] == [team, "Open", "1", "cpu=1"], "name, state, weight, capability"
        assert row[-2:] == ["1", "1"], "one job running, one waiting"
        jobs = [line.split() for line in (await p.kubetrain("top", "job")).splitlines()]
        assert jobs[0][:4] == ["KIND", "NAME", "STATE", "QUEUE"]
        assert {tuple(r[1:4:2]) for r in jobs[1:]} == {("first", team), ("second", team)}

        await p.release("first-done")
        await p.release("second-done")
        await p.condition(PYTORCHJOBS, "first", "Succeeded")
        await p.condition(PYTORCHJOBS, "second", "Succeeded")

    scenario(kubeconfig, namespace, queue_node, tmp_path, body)


def test_a_high_priority_trainjob_evicts_a_low_priority_pytorchjob_which_restarts_after(
    kubeconfig: str, namespace: str, queue_node: Node, tmp_path: Path
) -> None:
    async def body(p: Plane) -> None:
        node_cpus = int(
            (await p.client.get(scheduler.NODES, queue_node.name))["status"]["allocatable"]["cpu"]
        )
        workers = node_cpus - 1  # the low job fills the node, one CPU per pod
        await p.client.create(
            PYTORCHJOBS,
            pytorchjob(p, "low", "low-may-end", workers=workers),
            namespace=p.namespace,
        )
        names = ["low-master-0", *[f"low-worker-{i}" for i in range(workers)]]
        first = await p.running(*names)
        urgent = await p.cluster_object(
            PRIORITY_CLASSES,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"urgent-{p.token}"},
                "value": 1000,
            },
        )
        runtime = await p.cluster_object(
            kinds.CLUSTER_TRAINING_RUNTIMES,
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "ClusterTrainingRuntime",
                "metadata": {"name": f"urgent-{p.token}"},
                "spec": {
                    "podGroupPolicy": {"volcano": {}},
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "node",
                                    "template": {
                                        "metadata": {"labels": {ANCESTOR: "trainer"}},
                                        "spec": {
                                            "template": {
                                                "spec": {
                                                    **pod_spec(
                                                        p,
                                                        [
                                                            "python3",
                                                            "-c",
                                                            "import time; time.sleep(1)",
                                                        ],
                                                        "1",
                                                        schedulerName="volcano",
                                                        priorityClassName=urgent,
                                                    ),
                                                    "containers": [
                                                        {
                                                            "name": "node",
                                                            "image": "python:3",
                                                            "command": [
                                                                "python3",
                                                                "-c",
                                                                "import time; time.sleep(1)",
                                                            ],
                                                            "resources": {"requests": {"cpu": "1"}},
                                                        }
                                                    ],
                                                }
                                            }
                                        },
                                    },
                                }
                            ]
                        }
                    },
                },
            },
        )
        trainjob = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "urgent"},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": 1}},
        }
        await p.client.create(kinds.TRAINJOBS, trainjob, namespace=p.namespace)

        async def evicted() -> bool:
            pods = await p.pods("low-")
            return all(
                name not in pods or pods[name]["metadata"]["uid"] != first[name]["metadata"]["uid"]
                for name in names
            )

        await eventually(evicted, "every pod of the low gang is gone", timeout=WAIT)
        for name in names:
            (event,) = await p.told(name, "Preempted")
            assert event["message"].startswith("Preempted by pod ")
        (lost,) = await p.told("low", "Preempted")
        assert lost["message"] == (
            f"pod group {p.namespace}/low: evicted, every pod of it, to make room for pod "
            f"group {p.namespace}/urgent: priority 1000 over 0 in queue default."
        )
        await p.release("low-may-end")  # the restarted pods may end, once they run
        await p.condition(kinds.TRAINJOBS, "urgent", "Complete")
        await p.condition(PYTORCHJOBS, "low", "Succeeded")
        again = await p.pods("low-")
        assert {n: again[n]["metadata"]["uid"] for n in names if n in again} != {
            n: first[n]["metadata"]["uid"] for n in names
        }, "the low job ran again in new pods"

    scenario(kubeconfig, namespace, queue_node, tmp_path, body)


def test_a_job_kueue_holds_suspended_stays_suspended(
    kubeconfig: str, namespace: str, queue_node: Node, tmp_path: Path
) -> None:
    async def body(p: Plane) -> None:
        doc = pytorchjob(p, "held", "never")
        doc["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
        doc["spec"]["runPolicy"] = {"suspend": True}
        await p.client.create(PYTORCHJOBS, doc, namespace=p.namespace)
        await p.condition(PYTORCHJOBS, "held", "Suspended")
        await p.cycles()
        assert not await p.pods("held-"), "nothing runs a job its queue keeps suspended"
        assert (await p.job(PYTORCHJOBS, "held"))["spec"]["runPolicy"]["suspend"] is True
        shown = await p.kubetrain("get", "pytorchjob/held")
        assert "Queue:     team (Kueue)" in shown
        assert (
            "Waiting:   suspended, for Kueue to admit it from LocalQueue team; no Kueue serves "
            "this cluster, so it stays suspended until resumed (kubetrain resume "
            "pytorchjob/held)"
        ) in shown

    scenario(kubeconfig, namespace, queue_node, tmp_path, body)


SEED_QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: high-priority-queue
spec:
  weight: 10
  reclaimable: false
  capability:
    cpu: "100"
    memory: "500Gi"
    nvidia.com/gpu: "32"
"""
SEED_RUNTIME = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torch-high-priority
spec:
  podGroupPolicy:
    volcano: {}
  template:
    metadata:
      annotations:
        scheduling.volcano.sh/queue-name: "high-priority-queue"
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                schedulerName: volcano
                containers:
                - name: node
                  image: docker.io/kubeflow/pytorch-mnist
"""
SEED_TRAINJOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: urgent-training
spec:
  runtimeRef:
    name: torch-high-priority
  annotations:
    scheduling.volcano.sh/queue-name: "urgent-queue"
  trainer:
    numNodes: 8
"""


def test_the_seed_queue_runtime_and_trainjob_override_behave_as_the_seed_says(
    kubeconfig: str, namespace: str, queue_node: Node, tmp_path: Path
) -> None:
    """The seed document's YAML, but for: ``trainer.kubeflow.org/v1alpha1`` (the document
    writes ``v2alpha1``, which Kubeflow Trainer never served); the runtime's trainer marked
    as Trainer v2.1 wants it for a TrainJob's ``trainer`` settings to apply (the
    ``trainjob-ancestor-step: trainer`` label, the container named ``node``); the test's
    token in the cluster-wide names; and a command and a toleration for this node (the
    document's image has no command the node could run)."""
    import yaml

    async def body(p: Plane) -> None:
        high, urgent = f"high-priority-queue-{p.token}", f"urgent-queue-{p.token}"
        queue_doc = yaml.safe_load(SEED_QUEUE)
        queue_doc["metadata"]["name"] = high
        await p.cluster_object(QUEUES, queue_doc)
        runtime_doc = yaml.safe_load(SEED_RUNTIME)
        runtime_doc["metadata"]["name"] = f"torch-high-priority-{p.token}"
        runtime_doc["spec"]["template"]["metadata"]["annotations"][
            "scheduling.volcano.sh/queue-name"
        ] = high
        pod = runtime_doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
            "template"
        ]["spec"]
        pod["tolerations"] = [TEST_TAINT]
        pod["containers"][0]["command"] = ["python3", "-c", "pass"]
        runtime = await p.cluster_object(kinds.CLUSTER_TRAINING_RUNTIMES, runtime_doc)
        job_doc = yaml.safe_load(SEED_TRAINJOB)
        job_doc["spec"]["runtimeRef"]["name"] = runtime
        job_doc["spec"]["annotations"]["scheduling.volcano.sh/queue-name"] = urgent
        await p.client.create(kinds.TRAINJOBS, job_doc, namespace=p.namespace)

        async def missing() -> dict[str, Any] | None:
            group = await p.group("urgent-training")
            status = (group or {}).get("status") or {}
            for found in status.get("conditions") or []:
                if found["type"] == "Unschedulable" and found["reason"] == "QueueNotFound":
                    return group
            return None

        group = await eventually(missing, "the PodGroup waits for the TrainJob's queue")
        assert group["spec"]["queue"] == urgent, "the TrainJob's annotation overrides the runtime's"
        assert group["spec"]["minMember"] == 8
        assert group["status"]["phase"] == "Pending"
        pods = await p.pods("urgent-training-")
        assert len(pods) == 8
        assert not [n for n, x in pods.items() if x["spec"].get("nodeName")], "none placed"

        await p.queue(urgent)
        await p.condition(kinds.TRAINJOBS, "urgent-training", "Complete")

        plain = yaml.safe_load(SEED_TRAINJOB)
        plain["metadata"]["name"] = "standard-training"
        plain["spec"]["runtimeRef"]["name"] = runtime
        del plain["spec"]["annotations"]
        plain["spec"]["trainer"]["numNodes"] = 2
        await p.client.create(kinds.TRAINJOBS, plain, namespace=p.namespace)
        await p.condition(kinds.TRAINJOBS, "standard-training", "Complete")
        group = await p.group("standard-training")
        assert group is None or group["spec"]["queue"] == high

        async def counted() -> dict[str, Any] | None:
            status = (await p.client.get(QUEUES, high)).get("status") or {}
            return status if status.get("state") == "Open" and "fairSharing" in status else None

        status = await eventually(counted, f"Queue {high} shows its work")
        assert status["fairSharing"]["lastUpdate"]

    scenario(kubeconfig, namespace, queue_node, tmp_path, body)
