"""The operator killed with SIGKILL at random moments while 50 jobs run: every job still ends
in the state its pods call for, and no job ever has two pods for one replica index.

``kubetrain operator`` runs as a process of its own against the session's API server and is
killed (seeded random moments, some during its start-up, some mid-work) and started again
several times; a last one is left to finish. Nothing else reconciles: no scheduler, no node.
The test plays the kubelet through ``pods/status`` (each write guarded by the pod's uid), so
every pod runs, then ends as its job's scenario says, whether an operator is up or not.

A monitor watches every pod and Service of the namespace throughout, in the API server's
order, and records a violation when an object's name and its replica labels disagree, when
an index outside the job's replicas appears, or when a pod appears for an index that still
has a live one. At the end each index must have had exactly as many pods as its scenario
needs: one, or two where a retryable exit code (137) made the operator replace the pod. A
duplicate create, a lost restart count, or a pod replaced twice shows up there.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import re
import signal
import socket
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp

from kubetrain import _aio, kube
from kubetrain.kube import watch
from kubetrain.operator.jobs import reasons
from tests.apiserver.cascade import eventually, run
from tests.apiserver.test_pod_log_exec import NO_SCHEDULER
from tests.builders import pytorchjob
from tests.integration.operator.jobs_fixtures import PODS, PYTORCHJOBS, SERVICES, condition

SEED: Final = 20240501
JOBS: Final = 50
KILLS: Final = 6
UPTIME: Final = (0.0, 2.5)  # seconds an operator works (caches synced) before its SIGKILL
EARLY: Final = 0.25  # the share of kills that come during start-up instead, before the sync
EARLY_UPTIME: Final = (0.2, 1.2)  # seconds from its start for those
READY_TIMEOUT: Final = 30.0  # for an operator's caches to sync (its /readyz)
DOWNTIME: Final = (0.0, 0.5)  # seconds until the next one starts
SUBMIT_GAP: Final = (0.0, 0.4)  # seconds between two job submissions: they span the kills
RUNNING_AFTER: Final = (0.1, 0.5)  # seconds from a pod's creation to Running
ENDED_AFTER: Final = (0.3, 2.0)  # seconds from Running to its end (a Master waits for more)
FINISH_TIMEOUT: Final = 40.0  # for the last operator to bring every job to its end
WORKERS: Final = 2
REPLICAS: Final = {"master": 1, "worker": WORKERS}
CONTAINER: Final = "pytorch"
FAULTY: Final = ("worker", WORKERS - 1)  # the replica whose exit code a scenario sets
WATCH: Final = watch.Settings(timeout_seconds=60, inactivity=30.0, backoff_initial=0.05)
KIND: Final = "PyTorchJob"
SENTINEL: Final = "kubetrain.io/test-sentinel"  # a label on the objects that end the watch


@dataclass(frozen=True)
class Scenario:
    """What one job's faulty replica does, and what the job must end as."""

    name: str
    restart_policy: str
    exit_codes: tuple[int, ...]  # per attempt of the faulty replica; the last one repeats
    outcome: str  # Succeeded or Failed
    message: str = ""  # the Failed condition's message; {name} is the job's
    backoff_limit: int | None = None
    pods: int = 1  # pods the faulty replica must have had in all

    def exit_code(self, rtype: str, index: int, attempt: int) -> int:
        if (rtype, index) != FAULTY:
            return 0
        return self.exit_codes[min(attempt, len(self.exit_codes) - 1)]


EXITS_MESSAGE: Final = 'job "{name}" is failing because "Worker" replica(s) failed.'
NEVER_MESSAGE: Final = "PyTorchJob {name} is failed because 1 Worker replica(s) failed."
SCENARIOS: Final = (
    Scenario("succeeds", "OnFailure", (0,), "Succeeded"),
    Scenario("exits", "ExitCode", (1,), "Failed", EXITS_MESSAGE),
    Scenario("retries", "ExitCode", (137, 0), "Succeeded", pods=2),
    Scenario(
        "gives-up",
        "ExitCode",
        (137,),
        "Failed",
        reasons.BACKOFF_LIMIT_MESSAGE,
        backoff_limit=1,
        pods=2,
    ),
    Scenario("never", "Never", (1,), "Failed", NEVER_MESSAGE),
)


def job_name(number: int) -> str:
    return f"j{number:02d}-{SCENARIOS[number % len(SCENARIOS)].name}"


def manifest(namespace: str, number: int) -> dict[str, Any]:
    scenario = SCENARIOS[number % len(SCENARIOS)]
    builder = (
        pytorchjob(namespace, job_name(number))
        .master(restart_policy=scenario.restart_policy)
        .workers(WORKERS, restart_policy=scenario.restart_policy)
        .run_policy(cleanPodPolicy="None")
    )
    if scenario.backoff_limit is not None:
        builder.run_policy(backoffLimit=scenario.backoff_limit)
    doc = builder.doc()
    for replica in doc["spec"]["pytorchReplicaSpecs"].values():
        replica["template"]["spec"]["schedulerName"] = NO_SCHEDULER  # no scheduler, no kubelet
    return doc


Index = tuple[str, str, int]  # job, replica type (lower case), index


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


@dataclass
class Monitor:
    """Watches pods, Services and jobs in the API server's order, checks every pod and
    Service against its replica, counts what each operator wrote, and plays the kubelet for
    the pods."""

    client: kube.Client
    namespace: str
    rng: random.Random
    violations: list[str] = field(default_factory=list)
    history: dict[Index, list[str]] = field(default_factory=lambda: defaultdict(list))
    live: dict[Index, str] = field(default_factory=dict)
    ended: dict[str, str] = field(default_factory=dict)  # uid -> phase this kubelet set
    sentinels: set[str] = field(default_factory=set)  # plurals whose sentinel was seen
    operator: int = -1  # which operator process runs now (-1: none)
    # writes seen while each operator ran: pods created and deleted, job status updates
    work: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    _runs: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    _group: _aio.TaskGroup | None = None
    _progress: asyncio.Condition = field(default_factory=asyncio.Condition)

    def index_of(self, kind: str, obj: dict[str, Any]) -> Index | None:
        """The replica an object is for, after checking its name and labels agree."""
        meta = obj.get("metadata") or {}
        labels = labels_of(obj)
        job = labels.get("training.kubeflow.org/job-name", "")
        rtype = labels.get("training.kubeflow.org/replica-type", "")
        text = labels.get("training.kubeflow.org/replica-index", "")
        name = str(meta.get("name") or "")
        if not re.fullmatch(r"j\d\d-[a-z-]+", job) or not text.isdigit():
            self.violations.append(f"{kind} {name}: its labels name no replica: {labels}")
            return None
        index = int(text)
        if name != f"{job}-{rtype}-{index}":
            self.violations.append(f"{kind} {name}: labels say {job}-{rtype}-{index}")
        if index >= REPLICAS.get(rtype, 0):
            self.violations.append(f"{kind} {name}: index {index} beyond the job's {rtype}s")
        return job, rtype, index

    async def watch(self, resource: kube.Resource) -> None:
        known: dict[str, dict[str, Any]] = {}
        stream = self.client.watch(resource, namespace=self.namespace, settings=WATCH)
        async for event in stream:
            if event.type == watch.SYNC:  # a (re-)list: what vanished meanwhile was deleted
                items = {i["metadata"]["uid"]: i for i in event.object.get("items") or []}
                for uid in set(known) - set(items):
                    self._deleted(resource, known.pop(uid))
                for uid, obj in items.items():
                    if uid not in known:
                        known[uid] = obj
                        self._added(resource, obj)
            elif event.type == watch.ADDED:
                known[event.object["metadata"]["uid"]] = event.object
                self._added(resource, event.object)
            elif event.type == watch.DELETED:
                known.pop(event.object["metadata"]["uid"], None)
                self._deleted(resource, event.object)
            elif event.type == watch.MODIFIED and resource == PYTORCHJOBS:
                self.work[self.operator] += 1

    def _added(self, resource: kube.Resource, obj: dict[str, Any]) -> None:
        if SENTINEL in labels_of(obj):
            self.sentinels.add(resource.plural)
            return
        if resource == PYTORCHJOBS:
            return
        index = self.index_of(resource.kind, obj)
        if index is None or resource != PODS:
            return
        uid = obj["metadata"]["uid"]
        if index in self.live:
            self.violations.append(f"pod {obj['metadata']['name']}: a second live pod ({uid})")
        attempt = len(self.history[index])
        self.work[self.operator] += 1
        self.history[index].append(uid)
        self.live[index] = uid
        assert self._group is not None
        self._runs[uid] = self._group.create_task(
            self._kubelet(obj, index, attempt), name=f"kubelet {uid}"
        )

    def _deleted(self, resource: kube.Resource, obj: dict[str, Any]) -> None:
        if resource != PODS or SENTINEL in labels_of(obj):
            return
        uid = obj["metadata"]["uid"]
        self.work[self.operator] += 1
        index = self.index_of(resource.kind, obj)
        if index is not None and self.live.get(index) == uid:
            del self.live[index]
        task = self._runs.pop(uid, None)
        if task is not None:
            task.cancel()

    async def _kubelet(self, pod: dict[str, Any], index: Index, attempt: int) -> None:
        """One pod's life: Running after a moment, then its scenario's end; a Master ends
        only once every Worker of its job has succeeded, as a training master does."""
        job, rtype, number = index
        scenario = SCENARIOS[int(job[1:3]) % len(SCENARIOS)]
        await asyncio.sleep(self.rng.uniform(*RUNNING_AFTER))
        await self._set(pod, "Running", None)
        await asyncio.sleep(self.rng.uniform(*ENDED_AFTER))
        if rtype == "master":
            async with self._progress:
                await self._progress.wait_for(
                    lambda: all(
                        self.ended.get(self.live.get((job, "worker", i), "")) == "Succeeded"
                        for i in range(WORKERS)
                    )
                )
        code = scenario.exit_code(rtype, number, attempt)
        await self._set(pod, "Succeeded" if code == 0 else "Failed", code)

    async def _set(self, pod: dict[str, Any], phase: str, code: int | None) -> None:
        if code is None:
            state: dict[str, Any] = {"running": {"startedAt": "2024-05-01T12:00:00Z"}}
        else:
            state = {
                "terminated": {
                    "exitCode": code,
                    "reason": "Completed" if code == 0 else "Error",
                    "startedAt": "2024-05-01T12:00:00Z",
                    "finishedAt": "2024-05-01T12:00:01Z",
                }
            }
        status = {
            "phase": phase,
            "containerStatuses": [
                {
                    "name": CONTAINER,
                    "image": "example/train:1",
                    "imageID": "",
                    "ready": phase == "Running",
                    "restartCount": 0,
                    "state": state,
                }
            ],
        }
        meta = pod["metadata"]
        guarded = [  # never the status of a newer pod of the same name
            {"op": "test", "path": "/metadata/uid", "value": meta["uid"]},
            {"op": "add", "path": "/status", "value": status},
        ]
        try:
            await self.client.patch(
                PODS, meta["name"], guarded, namespace=self.namespace, type="json",
                subresource="status",
            )  # fmt: skip
        except (kube.NotFound, kube.Conflict, kube.Invalid):
            return  # deleted, or replaced: that pod's life is over
        if code is not None:
            self.ended[meta["uid"]] = phase
            async with self._progress:
                self._progress.notify_all()

    async def run(self) -> None:
        async with _aio.TaskGroup() as group:
            self._group = group
            group.create_task(self.watch(PODS), name="watch pods")
            group.create_task(self.watch(SERVICES), name="watch services")
            group.create_task(self.watch(PYTORCHJOBS), name="watch jobs")

    def stop(self) -> None:
        for task in self._runs.values():
            task.cancel()


@contextlib.contextmanager
def operators() -> Iterator[list[subprocess.Popen[bytes]]]:
    """A list for the operator processes a test starts; any still running at the end is
    killed."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def ready(port: int) -> bool:
    """Whether the operator on ``port`` answers /readyz: every cache it needs has synced."""
    try:
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{port}/readyz"
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as response:
                return response.status == 200
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError):
        return False


def start_operator(
    kubeconfig: str, namespace: str, log: Path, probes: int
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "kubetrain", "operator",
        "--kubeconfig", kubeconfig,
        "--namespace", namespace,
        "--metrics-bind-address", "0",
        "--health-probe-bind-address", f"127.0.0.1:{probes}",
        "--controller-threads", "4",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)


def test_operator_killed_at_random_moments_leaves_every_job_right(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    log = tmp_path / "operator.log"

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            monitor = Monitor(client, namespace, random.Random(SEED + 1))
            async with _aio.TaskGroup() as group:
                watching = group.create_task(monitor.run(), name="monitor")
                try:
                    await scenario(client, monitor)
                finally:
                    monitor.stop()
                    watching.cancel()

    async def submit(client: kube.Client) -> None:
        for number in range(JOBS):
            await client.create(PYTORCHJOBS, manifest(namespace, number), namespace=namespace)
            await asyncio.sleep(rng.uniform(*SUBMIT_GAP))

    async def finished(client: kube.Client) -> dict[str, dict[str, Any]] | None:
        listed = await client.list(PYTORCHJOBS, namespace=namespace)
        jobs = {j["metadata"]["name"]: j for j in listed.get("items") or []}
        done = {
            name: job
            for name, job in jobs.items()
            if any(
                (condition(job, t) or {}).get("status") == "True" for t in ("Succeeded", "Failed")
            )
        }
        return done if len(done) == JOBS else None

    async def scenario(client: kube.Client, monitor: Monitor) -> None:
        with operators() as started:
            async with _aio.TaskGroup() as group:
                group.create_task(submit(client), name="submit")
                for number in range(KILLS):
                    probes = free_port()
                    process = start_operator(kubeconfig, namespace, log, probes)
                    started.append(process)
                    monitor.operator = number
                    if rng.random() < EARLY:
                        await asyncio.sleep(rng.uniform(*EARLY_UPTIME))
                    else:
                        await eventually(
                            functools.partial(ready, probes),
                            "the operator's /readyz",
                            timeout=READY_TIMEOUT,
                        )
                        await asyncio.sleep(rng.uniform(*UPTIME))
                    process.send_signal(signal.SIGKILL)
                    await asyncio.to_thread(process.wait)
                    monitor.operator = -1
                    await asyncio.sleep(rng.uniform(*DOWNTIME))
            last = start_operator(kubeconfig, namespace, log, free_port())
            started.append(last)
            monitor.operator = KILLS
            try:
                jobs = await eventually(
                    lambda: finished(client), f"all {JOBS} jobs finished", timeout=FINISH_TIMEOUT
                )
            except AssertionError:
                raise AssertionError(
                    f"{monitor.violations=}\n" + log.read_text(errors="replace")[-4000:]
                ) from None
            last.send_signal(signal.SIGTERM)
            await asyncio.to_thread(last.wait, 30)
            await sentinels(client, monitor)
        killed = [p for p in started if p.returncode == -signal.SIGKILL]
        assert len(killed) == KILLS, [p.returncode for p in started]
        # the kills must land on operators at work, or this test shows nothing
        working = [n for n in range(KILLS) if monitor.work.get(n)]
        assert len(working) >= KILLS // 2, f"writes seen per operator: {dict(monitor.work)}"
        check(monitor, jobs)

    run(body())


async def sentinels(client: kube.Client, monitor: Monitor) -> None:
    """Wait until the monitor has seen everything written so far: a watch delivers in order,
    so once it shows a pod and a Service created now, it has shown all before them."""
    meta = {"name": "sentinel", "labels": {SENTINEL: "true"}}
    await client.create(
        PODS,
        {"metadata": meta, "spec": {"schedulerName": NO_SCHEDULER, "containers": [
            {"name": "c", "image": "example/none:1"}]}},
        namespace=monitor.namespace,
    )  # fmt: skip
    await client.create(
        SERVICES,
        {"metadata": meta, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}},
        namespace=monitor.namespace,
    )

    async def seen() -> bool:
        return monitor.sentinels == {PODS.plural, SERVICES.plural}

    await eventually(seen, "the monitor saw the sentinels")


def check(monitor: Monitor, jobs: dict[str, dict[str, Any]]) -> None:
    assert monitor.violations == []
    wrong = []
    for number in range(JOBS):
        name = job_name(number)
        scenario = SCENARIOS[number % len(SCENARIOS)]
        job = jobs[name]
        end = condition(job, scenario.outcome)
        if end is None or end.get("status") != "True":
            wrong.append(f"{name}: conditions {job['status'].get('conditions')}")
            continue
        other = condition(job, "Failed" if scenario.outcome == "Succeeded" else "Succeeded")
        if other is not None:
            wrong.append(f"{name}: also {other}")
        if end.get("reason") != reasons.reason(KIND, scenario.outcome):
            wrong.append(f"{name}: reason {end.get('reason')}")
        if scenario.message and end.get("message") != scenario.message.format(name=name):
            wrong.append(f"{name}: message {end.get('message')!r}")
        for rtype, replicas in REPLICAS.items():
            for index in range(replicas):
                pods = len(monitor.history.get((name, rtype, index), []))
                wanted = scenario.pods if (rtype, index) == FAULTY else 1
                if pods != wanted:
                    wrong.append(f"{name}-{rtype}-{index}: {pods} pods, {wanted} wanted")
    assert wrong == []
