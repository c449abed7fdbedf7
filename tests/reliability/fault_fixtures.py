"""What the fault-injection and crash tests share: the control plane's components as processes
of their own (so that a test can cut their connections or kill them), a mix of small jobs
with known outcomes, a monitor that follows them through a watch no fault touches, and the
checks both tests make at the end.

The jobs run for real on a node agent: each container is a short ``python3 -c`` that prints
``kt-log <pod name>`` (its log line, checked at the end) and exits as its scenario says. Every
container carries ``KT_RUN=<token>`` and its pod's uid in its environment, so the node's
process table can be read for exactly this run's processes (:func:`process_table`).

This module is also a process entry point, for the components that have no command of their
own with test timings: ``python -m tests.reliability.fault_fixtures scheduler ...`` (the
scheduler has no verb) and ``... node ...`` (``kubetrain node`` with the short retry, resync
and back-off timings the tests need, which are not all flags of that verb).

Must not: touch anything of the control plane's but through the API, apart from two things
said where they are done: the node's process table, and a copy of the SQLite file for its
integrity check.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import random
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from kubetrain import _aio, kube
from kubetrain.kube import watch
from kubetrain.local import daemon
from kubetrain.local.node import shim
from kubetrain.operator.jobs import reasons
from tests.apiserver.cascade import eventually
from tests.builders import pytorchjob, tfjob

REPO: Final = Path(__file__).resolve().parents[2]
PODS: Final = kube.resource.PODS
NAMESPACES: Final = kube.resource.NAMESPACES
NODES: Final = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")
PYTORCHJOBS: Final = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
TFJOBS: Final = kube.Resource("kubeflow.org", "v1", "tfjobs", kind="TFJob")
JOB_RESOURCES: Final = {"PyTorchJob": PYTORCHJOBS, "TFJob": TFJOBS, "Pod": PODS}

START_TIMEOUT: Final = 60.0
STOP_TIMEOUT: Final = 20.0
NODE_BACKOFF: Final = "0.2"  # seconds: the crash back-off of a node the daemon runs
# Short waits everywhere: the tests last seconds, and every component is restarted many times.
WATCH: Final = watch.Settings(
    timeout_seconds=60, inactivity=30.0, backoff_initial=0.05, backoff_max=1.0
)
RUN_ENV: Final = "KT_RUN"  # the run's token, in every container's environment
UID_ENV: Final = "KT_POD_UID"
NAME_ENV: Final = "KT_POD"
HOLD_ENV: Final = "KT_HOLD"
LOG_LINE: Final = "kt-log"
JOB_LABEL: Final = "training.kubeflow.org/job-name"
TERMINAL: Final = ("Succeeded", "Failed")

# -- processes ------------------------------------------------------------------------------


def environment() -> dict[str, str]:
    """This process's environment for a component: no KUBECONFIG (the test names the server),
    and the repository on the path so that ``-m tests.reliability...`` resolves."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Process:
    """One component as a child process, its output appended to ``log``: started, killed
    with SIGKILL and started again by a test. Methods block; async tests call them through
    ``asyncio.to_thread``."""

    def __init__(self, name: str, command: Sequence[str], log: Path) -> None:
        self.name = name
        self.command = list(command)
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.kills = 0

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        assert not self.running, f"{self.name} is running already"
        self.starts += 1
        with open(self.log, "ab") as out:
            out.write(f"--- {self.name}: start {self.starts}\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=environment(),
            )

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing of the process's own runs."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(STOP_TIMEOUT)
        self.kills += 1

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not end in time."""
        if not self.running:
            return
        assert self.process is not None
        self.process.terminate()
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class ApiServer(Process):
    """``kubetrain apiserver`` on a fixed port with its state on disk (SQLite, as ``kubetrain
    up`` keeps it), so that it can be killed and started again with every client's
    kubeconfig still valid. ``workloads``: the whole local control plane in one process."""

    def __init__(self, home: Path, *, workloads: bool = False, port: int = 0) -> None:
        self.home = home
        self.port = port or free_port()
        command = [sys.executable, "-m", "kubetrain", "apiserver", "--home", str(home)]
        command += ["--port", str(self.port)]
        if workloads:
            command += ["--with-workloads", "--node-backoff", NODE_BACKOFF]
        name = "daemon" if workloads else "apiserver"
        super().__init__(name, command, home.parent / f"{home.name}-{name}.log")

    @property
    def paths(self) -> daemon.Paths:
        return daemon.Paths(str(self.home))

    @property
    def kubeconfig(self) -> str:
        return self.paths.kubeconfig

    @property
    def database(self) -> Path:
        return Path(self.paths.database)

    def ready(self) -> bool:
        """Whether this start of it serves (blocking: a TLS request)."""
        if not self.running:
            return False
        status = daemon.read_status(self.paths)
        if not status or status.get("pid") != self.pid or not status.get("url"):
            return False
        return daemon.probe_ready(self.paths, status["url"], timeout=1.0)

    async def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        async def check() -> bool:
            if not self.running:
                raise AssertionError(f"{self.name} exited:\n{self.tail()}")
            return await asyncio.to_thread(self.ready)

        await eventually(check, f"{self.name} serving", timeout=timeout)


def module_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.reliability.fault_fixtures", *args]


def operator_process(kubeconfig: str, namespace: str, log: Path) -> Process:
    """``kubetrain operator`` for one namespace, as the local control plane configures it
    (host networking: every local pod shares this machine's network)."""
    command = [
        sys.executable, "-m", "kubetrain", "operator",
        "--kubeconfig", kubeconfig,
        "--namespace", namespace,
        "--metrics-bind-address", "0",
        "--health-probe-bind-address", "0",
        "--host-network",
        "--controller-threads", "4",
        "--log-format", "text",
    ]  # fmt: skip
    return Process("operator", command, log)


def node_process(kubeconfig: str, root: Path, name: str, pki: Path, log: Path) -> Process:
    command = module_command(
        "node", "--kubeconfig", kubeconfig, "--root", str(root), "--name", name, "--pki", str(pki)
    )
    return Process("node", command, log)


def scheduler_process(kubeconfig: str, namespace: str, node: str, log: Path) -> Process:
    command = module_command(
        "scheduler", "--kubeconfig", kubeconfig, "--namespace", namespace, "--node", node
    )
    return Process("scheduler", command, log)


def local_pki(kubeconfig: str) -> Path:
    """The pki directory of the local control plane behind ``kubeconfig``: its CA (a node
    agent's certificate must come from it, so the API server can reach the node for logs) and
    its serving certificate (which the fault proxy presents too). Skips for another server."""
    pki = Path(kubeconfig).parent / "pki"
    if os.environ.get("KUBETRAIN_TEST_KUBECONFIG") or not (pki / "ca.key").exists():
        pytest.skip(
            "needs the local control plane the tests start (its CA and serving certificate); "
            "KUBETRAIN_TEST_KUBECONFIG names another API server"
        )
    return pki


def upstream_of(kubeconfig: str) -> tuple[str, ssl.SSLContext]:
    """The API server's URL in ``kubeconfig`` and a TLS context that trusts its CA."""
    with open(kubeconfig, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    cluster = doc["clusters"][0]["cluster"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    return str(cluster["server"]), ssl.create_default_context(cadata=ca)


def serving_tls(pki: Path) -> ssl.SSLContext:
    """TLS for the fault proxy: the API server's own certificate, valid for 127.0.0.1 and
    issued by the CA every kubeconfig of the control plane trusts."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    return context


async def node_ready(client: kube.Client, name: str, timeout: float = START_TIMEOUT) -> None:
    async def ready() -> bool:
        try:
            node = await client.get(NODES, name)
        except kube.NotFound:
            return False
        conditions = (node.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    await eventually(ready, f"node {name} Ready", timeout=timeout)


async def create_namespace(client: kube.Client, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    with contextlib.suppress(kube.AlreadyExists):
        await client.create(NAMESPACES, body)


# -- the entry point for components without a command of their own ------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.fault_fixtures")
    verbs = parser.add_subparsers(dest="verb", required=True)
    node = verbs.add_parser("node", help="a node agent with the tests' short timings")
    node.add_argument("--kubeconfig", required=True)
    node.add_argument("--root", required=True)
    node.add_argument("--name", required=True)
    node.add_argument("--pki", required=True, help="the control plane's pki directory (its CA)")
    scheduler = verbs.add_parser("scheduler", help="the scheduler, for one namespace and node")
    scheduler.add_argument("--kubeconfig", required=True)
    scheduler.add_argument("--namespace", required=True)
    scheduler.add_argument("--node", required=True)
    args = parser.parse_args(argv)
    from kubetrain.cli import apiserver  # the daemon's log format

    apiserver.setup_logging("text", "INFO")
    asyncio.run(_serve(args))
    return 0


async def _serve(args: argparse.Namespace) -> None:
    from kubetrain.local.node import agent
    from kubetrain.local.node import settings as node_settings
    from kubetrain.local.scheduler import scheduler

    cluster = await kube.from_kubeconfig(args.kubeconfig)
    main_task = asyncio.current_task()
    assert main_task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, main_task.cancel)
    if args.verb == "node":
        pki = Path(args.pki)
        config = node_settings.Settings(
            root=args.root,
            name=args.name,
            ca_cert=str(pki / "ca.crt"),
            ca_key=str(pki / "ca.key"),
            token=node_settings.token_of(cluster.configuration),
            gpus=0,
            backoff_initial=0.2,
            backoff_max=2.0,
            resync=2.0,
            retry_initial=0.1,
            retry_max=1.0,
            orphan_grace=1.0,
            status_interval=5.0,
            lease_renew=2.0,
            watch=WATCH,
            environment=(("PATH", os.environ.get("PATH", "/usr/bin:/bin")),),
        )
        async with kube.Client(cluster, user_agent="kubetrain-node", field_manager="kubelet") as c:
            with contextlib.suppress(asyncio.CancelledError):  # SIGTERM: a stop, pods run on
                await agent.run(c, config)
        return
    settings = scheduler.Settings(
        namespaces=frozenset({args.namespace}),
        node_selector=f"kubernetes.io/hostname={args.node}",
        resync=1.0,
        retry_initial=0.05,
        retry_max=1.0,
        watch=WATCH,
    )
    async with kube.Client(cluster, user_agent="default-scheduler") as client:
        with contextlib.suppress(asyncio.CancelledError):
            await scheduler.run(client, settings)


# -- the jobs -------------------------------------------------------------------------------

# Every program first waits its job's hold (``KT_HOLD`` seconds; 0 unless a test spreads the
# jobs out in time), then says its line.
HOLD: Final = f"import os, time; time.sleep(float(os.environ.get({HOLD_ENV!r}, '0')))"
PRINT: Final = f"{HOLD}; print({LOG_LINE!r}, os.environ[{NAME_ENV!r}])"
FAIL: Final = PRINT + "; raise SystemExit(1)"
# Killed (137, retryable) on its first run, done on the next: a marker file on a hostPath
# remembers the first run across the pod's replacement.
FLAKY: Final = (
    f"{HOLD}; import sys; mark = os.path.join(sys.argv[1], os.environ[{NAME_ENV!r}]); "
    "first = not os.path.exists(mark); open(mark, 'a').close(); "
    f"print({LOG_LINE!r}, os.environ[{NAME_ENV!r}]); sys.exit(137 if first else 0)"
)
STEADY: Final = PRINT[:-1] + ", flush=True); import time; time.sleep(3600)"


@dataclass(frozen=True)
class Scenario:
    """One kind of job in the mix: its kind, how its replicas run, and what it must end as
    (``Running`` for one still running when the test ends)."""

    name: str
    kind: str  # PyTorchJob, TFJob or Pod
    outcome: str  # Succeeded, Failed or Running
    replicas: Mapping[str, tuple[int, str]]  # replica type -> (count, program); Pod: {"": ...}
    restart_policy: str = "Never"
    # The replicas whose end decides the job's ("master-0"): each must have had its pods. The
    # others may never have had one: once the job has ended (a Master done), the operator
    # creates none of its missing pods, and a create that a fault stopped stays undone.
    decisive: frozenset[str] = frozenset()
    replaced: frozenset[str] = frozenset()  # replicas the operator must replace once (retries)

    def pods(self, name: str) -> dict[str, tuple[int, int]]:
        """Each pod name of a job of this scenario, with the fewest and the most pods (uids)
        it may have had over the run."""
        if self.kind == "Pod":
            return {name: (1, 1)}
        out = {}
        for rtype, (count, _) in self.replicas.items():
            for index in range(count):
                replica = f"{rtype.lower()}-{index}"
                most = 2 if replica in self.replaced else 1
                least = most if replica in self.decisive else 0
                out[f"{name}-{replica}"] = (least, most)
        return out


SCENARIOS: Final = {
    s.name: s
    for s in (
        Scenario("ok", "PyTorchJob", "Succeeded", {"Master": (1, PRINT), "Worker": (1, PRINT)},
                 "OnFailure", decisive=frozenset({"master-0"})),
        Scenario("fails", "PyTorchJob", "Failed", {"Master": (1, FAIL), "Worker": (1, PRINT)},
                 decisive=frozenset({"master-0"})),
        Scenario("retries", "PyTorchJob", "Succeeded",
                 {"Master": (1, FLAKY), "Worker": (1, PRINT)}, "ExitCode",
                 decisive=frozenset({"master-0"}), replaced=frozenset({"master-0"})),
        Scenario("tf", "TFJob", "Succeeded", {"Worker": (2, PRINT)}, "OnFailure",
                 decisive=frozenset({"worker-0"})),
        Scenario("pod", "Pod", "Succeeded", {"": (1, PRINT)}),
        Scenario("pod-fails", "Pod", "Failed", {"": (1, FAIL)}),
        Scenario("steady", "PyTorchJob", "Running",
                 {"Master": (1, STEADY), "Worker": (1, STEADY)}, "OnFailure",
                 decisive=frozenset({"master-0", "worker-0"})),
    )
}  # fmt: skip
FINISHING: Final = ("ok", "fails", "retries", "tf", "pod", "pod-fails")


@dataclass(frozen=True)
class Job:
    name: str
    scenario: Scenario
    hold: float = 0.0  # seconds each of its containers waits before it does its part

    @property
    def resource(self) -> kube.Resource:
        return JOB_RESOURCES[self.scenario.kind]


def plan(
    count: int, rng: random.Random, *, steady: int = 0, hold: tuple[float, float] = (0.0, 0.0)
) -> list[Job]:
    """``steady`` long-running jobs first, then ``count`` finishing ones, a seeded shuffle of
    the finishing scenarios in equal shares, each holding a seeded time from ``hold``."""
    jobs = [Job(f"steady-{i}", SCENARIOS["steady"]) for i in range(steady)]
    kinds = [FINISHING[i % len(FINISHING)] for i in range(count)]
    rng.shuffle(kinds)
    jobs += [
        Job(f"j{i:03d}-{kind}", SCENARIOS[kind], round(rng.uniform(*hold), 2))
        for i, kind in enumerate(kinds)
    ]
    return jobs


def _container(name: str, program: str, job: Job, token: str, marks: Path) -> dict[str, Any]:
    args = [str(marks)] if program == FLAKY else []
    return {
        "name": name,
        "image": "example/none:1",
        "command": ["python3", "-c", program, *args],
        "env": [
            {"name": RUN_ENV, "value": token},
            {"name": HOLD_ENV, "value": str(job.hold)},
            {"name": NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": UID_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        ],
        "volumeMounts": [{"name": "marks", "mountPath": str(marks)}],
    }


def _pod_spec(container: dict[str, Any], marks: Path, restart_policy: str) -> dict[str, Any]:
    return {
        "restartPolicy": restart_policy,
        "terminationGracePeriodSeconds": 2,
        "containers": [container],
        # the same path inside as outside: works with and without a private mount namespace
        "volumes": [{"name": "marks", "hostPath": {"path": str(marks)}}],
    }


def manifest(job: Job, namespace: str, token: str, marks: Path) -> dict[str, Any]:
    scenario = job.scenario
    if scenario.kind == "Pod":
        _, program = scenario.replicas[""]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": job.name, "namespace": namespace},
            "spec": _pod_spec(_container("main", program, job, token, marks), marks, "Never"),
        }
    builder = (
        pytorchjob(namespace, job.name)
        if scenario.kind == "PyTorchJob"
        else tfjob(namespace, job.name)
    )
    for rtype, (count, _) in scenario.replicas.items():
        builder.replica(rtype, count, restart_policy=scenario.restart_policy)
    builder.run_policy(cleanPodPolicy="None")
    doc = builder.doc()
    field_name = next(iter(doc["spec"].keys() - {"runPolicy"}))
    for rtype, spec in doc["spec"][field_name].items():
        _, program = scenario.replicas[rtype]
        container = spec["template"]["spec"]["containers"][0]
        spec["template"]["spec"] = _pod_spec(
            _container(container["name"], program, job, token, marks),
            marks,
            scenario.restart_policy,
        )
        del spec["template"]["spec"]["restartPolicy"]  # the replica's restartPolicy rules
    return doc


async def submit(
    client: kube.Client,
    jobs: Sequence[Job],
    namespace: str,
    token: str,
    marks: Path,
    rng: random.Random,
    gap: tuple[float, float],
    acknowledged: list[str],
) -> None:
    """Create each job, ``gap`` seconds apart; a create that gets no answer (the API server
    restarting, a connection cut) is sent again until it is acknowledged or found to exist.
    Appends each job acknowledged to ``acknowledged``, as it goes: every one of them must be
    accounted for at the end."""
    for job in jobs:
        body = manifest(job, namespace, token, marks)
        while True:
            try:
                await client.create(job.resource, body, namespace=namespace)
            except kube.AlreadyExists:
                pass  # an earlier attempt got through
            except (kube.Unavailable, kube.ServerError, kube.TooManyRequests):
                await asyncio.sleep(0.1)
                continue
            break
        acknowledged.append(job.name)
        await asyncio.sleep(rng.uniform(*gap))


# -- the monitor ----------------------------------------------------------------------------


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def ended(job: Job, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a finished job shows of its end (its terminal condition; a pod's phase and exit
    code), or None while it has not ended."""
    if job.scenario.kind == "Pod":
        status = obj.get("status") or {}
        if status.get("phase") not in ("Succeeded", "Failed"):
            return None
        states = [c.get("state") or {} for c in status.get("containerStatuses") or []]
        terminated = [s["terminated"] for s in states if "terminated" in s]
        return {
            "type": status["phase"],
            "exitCodes": [t.get("exitCode") for t in terminated],
            "finishedAt": [t.get("finishedAt") for t in terminated],
        }
    for type_ in (reasons.SUCCEEDED, reasons.FAILED):
        found = condition(obj, type_)
        if found is not None and found.get("status") == "True":
            return found
    return None


@dataclass
class Monitor:
    """Follows the namespace's pods and jobs through watches of the test's own (never
    proxied): every pod uid each pod name had over the run, and the end each job showed when
    it was first seen finished."""

    client: kube.Client
    namespace: str
    jobs: dict[str, Job]
    uids: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    first_end: dict[str, dict[str, Any]] = field(default_factory=dict)
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)  # job name -> object

    async def run(self) -> None:
        kinds = {j.scenario.kind for j in self.jobs.values()} | {"Pod"}
        async with _aio.TaskGroup() as group:
            for kind in sorted(kinds):
                group.create_task(self._follow(JOB_RESOURCES[kind]), name=f"monitor {kind}")

    async def _follow(self, resource: kube.Resource) -> None:
        stream = self.client.watch(resource, namespace=self.namespace, settings=WATCH)
        async for event in stream:
            if event.type == watch.SYNC:
                for item in event.object.get("items") or []:
                    self._seen(resource, item)
            elif event.type in (watch.ADDED, watch.MODIFIED):
                self._seen(resource, event.object)

    def _seen(self, resource: kube.Resource, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if resource == PODS:
            history = self.uids[name]
            if meta.get("uid") not in history:
                history.append(str(meta.get("uid")))
        job = self.jobs.get(name)
        if job is None or job.resource != resource:
            return
        self.latest[name] = obj
        end = ended(job, obj)
        if end is not None:
            self.first_end.setdefault(name, end)


@dataclass
class Settling:
    """Waits for every job to reach its outcome (steady ones Running) and every pod of a
    finished job to end too; :attr:`waiting` says what it waited for last, for a failure
    message."""

    client: kube.Client
    jobs: Sequence[Job]
    namespace: str
    waiting: str = ""

    async def __call__(self) -> dict[str, Any]:
        """Every job and pod as they are once all have settled; {} while not."""
        objects = {}
        for job in self.jobs:
            try:
                obj = await self.client.get(job.resource, job.name, namespace=self.namespace)
            except kube.NotFound:
                return self._wait(f"{job.name}: not found")
            status = obj.get("status") or {}
            if job.scenario.outcome == "Running":
                if (condition(obj, reasons.RUNNING) or {}).get("status") != "True":
                    return self._wait(f"{job.name}: not Running: {status}")
            elif ended(job, obj) is None:
                return self._wait(f"{job.name}: not ended: {status}")
            objects[job.name] = obj
        pods = await self.client.list(PODS, namespace=self.namespace)
        steady = {j.name for j in self.jobs if j.scenario.outcome == "Running"}
        for pod in pods.get("items") or []:
            labels = pod["metadata"].get("labels") or {}
            phase = (pod.get("status") or {}).get("phase")
            wanted = ("Running",) if labels.get(JOB_LABEL) in steady else TERMINAL
            if phase not in wanted:
                return self._wait(f"pod {pod['metadata']['name']}: {pod.get('status')}")
        self.waiting = ""
        return {"jobs": objects, "pods": {p["metadata"]["name"]: p for p in pods["items"]}}

    def _wait(self, why: str) -> dict[str, Any]:
        self.waiting = why
        return {}


# -- evidence for a failure -----------------------------------------------------------------


def _pod_line(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    containers = []
    for c in status.get("containerStatuses") or []:
        state = c.get("state") or {}
        (what, detail), *_ = state.items() or [("none", {})]
        code = f" exit {detail.get('exitCode')}" if what == "terminated" else ""
        reason = f" {detail.get('reason')}" if detail.get("reason") else ""
        containers.append(f"{c.get('name')}: {what}{reason}{code} restarts {c.get('restartCount')}")
    return (
        f"  pod {meta.get('name')} uid {meta.get('uid')} rv {meta.get('resourceVersion')} "
        f"phase {status.get('phase')} node {(pod.get('spec') or {}).get('nodeName')} "
        f"deleting {meta.get('deletionTimestamp')} containers [{'; '.join(containers)}]"
    )


async def unsettled(
    client: kube.Client,
    jobs: Sequence[Job],
    namespace: str,
    monitor: Monitor,
    logs: Sequence[Process],
    lines: int = 40,
) -> str:
    """What a job that did not reach its end shows: its status, its pods as the API server
    holds them, every uid each of its pod names had over the run, and the lines of each
    component's log that name it (the last ``lines`` of each); and the end of the log of a
    component that is no longer running."""
    out = [f"== {p.name} exited:\n{await asyncio.to_thread(p.tail)}" for p in logs if not p.running]
    pods = (await client.list(PODS, namespace=namespace)).get("items") or []
    for job in jobs:
        try:
            obj = await client.get(job.resource, job.name, namespace=namespace)
        except kube.NotFound:
            out.append(f"{job.name}: not found")
            continue
        if job.scenario.outcome == "Running":
            if (condition(obj, reasons.RUNNING) or {}).get("status") == "True":
                continue
        elif ended(job, obj) is not None:
            continue
        out.append(f"{job.name} ({job.scenario.name}): status {obj.get('status')}")
        mine = [
            p
            for p in pods
            if p["metadata"]["name"] == job.name
            or (p["metadata"].get("labels") or {}).get(JOB_LABEL) == job.name
        ]
        out += [_pod_line(p) for p in mine]
        for pod in job.scenario.pods(job.name):
            out.append(f"  uids of {pod} over the run: {monitor.uids.get(pod, [])}")
        for process in logs:
            try:
                text = await asyncio.to_thread(process.log.read_text, errors="replace")
            except OSError:
                continue
            named = [line for line in text.splitlines() if job.name in line]
            out.append(f"  -- {process.name} log ({len(named)} lines name it)")
            out += [f"    {line}" for line in named[-lines:]]
    return "\n".join(out)


# -- the checks -----------------------------------------------------------------------------


def check_outcomes(
    jobs: Sequence[Job], acknowledged: Sequence[str], state: Mapping[str, Any], monitor: Monitor
) -> list[str]:
    """Every acknowledged job exists and shows its scenario's outcome (with upstream's
    reason), none is left Restarting, and each finished one still shows the end it showed
    when it was first seen finished."""
    wrong = [f"{name}: lost" for name in lost(acknowledged, state)]
    objects = state["jobs"]
    for job in jobs:
        obj = objects.get(job.name)
        if obj is None:
            continue
        scenario = job.scenario
        if scenario.kind == "Pod":
            end = ended(job, obj)
            if end is None or end["type"] != scenario.outcome:
                wrong.append(f"{job.name}: phase {(obj.get('status') or {}).get('phase')}")
        elif scenario.outcome == "Running":
            if ended(job, obj) is not None:
                wrong.append(f"{job.name}: ended {ended(job, obj)}; it runs until deleted")
        else:
            end = ended(job, obj)
            if end is None or end["type"] != scenario.outcome:
                wrong.append(
                    f"{job.name}: conditions {(obj.get('status') or {}).get('conditions')}"
                )
            elif end.get("reason") != reasons.reason(scenario.kind, scenario.outcome):
                wrong.append(f"{job.name}: reason {end.get('reason')}")
        restarting = condition(obj, reasons.RESTARTING)
        if restarting is not None and restarting.get("status") == "True":
            wrong.append(f"{job.name}: still Restarting: {restarting}")
        if scenario.outcome != "Running":
            first = monitor.first_end.get(job.name)
            if first is not None and first != ended(job, obj):
                wrong.append(f"{job.name}: ended as {first}, now shows {ended(job, obj)}")
    return wrong


def lost(acknowledged: Sequence[str], state: Mapping[str, Any]) -> list[str]:
    """The acknowledged jobs that are not there at the end."""
    return [name for name in acknowledged if name not in state["jobs"]]


def duplicates(jobs: Sequence[Job], monitor: Monitor) -> tuple[list[str], list[str]]:
    """Pod names that had more pods (uids) over the run than their scenario allows (a
    duplicate create, or a replacement too many), and those that had fewer than it needs (a
    replacement missing, a decisive pod never made)."""
    extra, missing = [], []
    for job in jobs:
        for pod, (least, most) in job.scenario.pods(job.name).items():
            had = monitor.uids.get(pod, [])
            if len(had) > most:
                extra.append(f"{pod}: {len(had)} pods over the run, at most {most} allowed: {had}")
            elif len(had) < least:
                missing.append(f"{pod}: {len(had)} pods over the run, {least} needed")
    return extra, missing


async def pod_log(client: kube.Client, namespace: str, name: str) -> str:
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/log"
    lines = []
    async with client.stream(path) as body:
        async for line in body:
            lines.append(line.decode(errors="replace"))
    return "\n".join(lines)


async def check_logs(
    client: kube.Client, jobs: Sequence[Job], namespace: str, state: Mapping[str, Any]
) -> list[str]:
    """Every pod of every finished job still serves its log, with its line in it."""
    wrong = []
    for job in jobs:
        if job.scenario.outcome == "Running":
            continue
        for pod, (least, _) in job.scenario.pods(job.name).items():
            if pod not in state["pods"]:
                if least:
                    wrong.append(f"{pod}: gone")
                continue
            try:
                text = await pod_log(client, namespace, pod)
            except kube.ApiError as exc:
                wrong.append(f"{pod}: no log: {exc}")
                continue
            if f"{LOG_LINE} {pod}" not in text:
                wrong.append(f"{pod}: log {text[-200:]!r}")
    return wrong


@dataclass(frozen=True)
class Proc:
    """A process of this run on the node: a container's (``container``) or a shim's."""

    pid: int
    role: str
    pod_uid: str


def process_table(root: Path, token: str) -> list[Proc]:
    """This run's processes, from /proc (blocking): the containers by the token in their
    environment, the shims by the node root in their command line (``.../pods/<uid>/...``)."""
    prefix = f"{root}/pods/"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        base = f"/proc/{entry}"
        try:
            with open(f"{base}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue  # a zombie runs nothing
            with open(f"{base}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0")]
            with open(f"{base}/environ", "rb") as f:
                env = dict(
                    item.decode(errors="replace").partition("=")[::2]
                    for item in f.read().split(b"\0")
                    if item
                )
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
        attempt = next((a for a in argv if a.startswith(prefix)), None)
        if attempt is not None and shim.BOOT in argv:
            found.append(Proc(int(entry), "shim", attempt[len(prefix) :].split("/")[0]))
        elif env.get(RUN_ENV) == token:
            found.append(Proc(int(entry), "container", env.get(UID_ENV, "")))
    return found


def check_processes(table: Sequence[Proc], state: Mapping[str, Any]) -> list[str]:
    """One container process and one shim per running container, none for any other pod."""
    running = {
        p["metadata"]["uid"]: name
        for name, p in state["pods"].items()
        if (p.get("status") or {}).get("phase") == "Running"
    }
    per_pod: dict[tuple[str, str], list[int]] = defaultdict(list)
    for proc in table:
        per_pod[(proc.pod_uid, proc.role)].append(proc.pid)
    wrong = []
    for uid, name in running.items():
        for role in ("container", "shim"):
            pids = per_pod.get((uid, role), [])
            if len(pids) != 1:
                wrong.append(f"{name} (running): {len(pids)} {role} processes {pids}")
    for (uid, role), pids in per_pod.items():
        if uid not in running:
            wrong.append(f"pod {uid} (not running): {role} processes {pids} left")
    return wrong


def integrity(database: Path, scratch: Path) -> str:
    """``PRAGMA integrity_check`` of a copy of the store (with its WAL, where one is left):
    the one place a test reads the control plane's file, and only a copy of it."""
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / database.name
    for suffix in ("", "-wal"):
        source = Path(f"{database}{suffix}")
        target = Path(f"{copy}{suffix}")
        target.unlink(missing_ok=True)
        if source.exists():
            shutil.copyfile(source, target)
    connection = sqlite3.connect(copy)
    try:
        return "; ".join(str(row[0]) for row in connection.execute("PRAGMA integrity_check"))
    finally:
        connection.close()


def sweep(root: Path, token: str) -> None:
    """Stop and remove every pod a node left under ``root``, then anything of this run still
    alive (blocking; the end of every test, whatever happened)."""
    from kubetrain.local.node import runtime

    async def remove() -> None:
        node_runtime = runtime.Runtime(runtime.Settings(root=str(root)))
        for uid in node_runtime.pods():
            await node_runtime.remove(uid, 0)

    if root.exists():
        asyncio.run(remove())
    for proc in process_table(root, token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)


# -- figures --------------------------------------------------------------------------------


class Figures:
    """Lines the reliability tests report, printed in pytest's terminal summary (so they show
    without ``-s``)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        self.lines.append(line)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.lines:
            terminalreporter.section("reliability figures")
            for line in self.lines:
                terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def figures(request: pytest.FixtureRequest) -> Figures:
    found = request.config.pluginmanager.get_plugin("kubetrain-reliability-figures")
    if isinstance(found, Figures):
        return found
    made = Figures()
    request.config.pluginmanager.register(made, "kubetrain-reliability-figures")
    return made


def counted(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "none"


@contextlib.asynccontextmanager
async def processes() -> AsyncIterator[list[Process]]:
    """A list for the component processes a test starts; each is stopped at the end, last
    started first."""
    started: list[Process] = []
    try:
        yield started
    finally:
        for process in reversed(started):
            await asyncio.to_thread(process.stop)


if __name__ == "__main__":
    sys.exit(main())
