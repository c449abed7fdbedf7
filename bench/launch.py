"""How long ``kubetrain run`` takes to run a small distributed job, next to ``torchrun``.

The workload is :file:`bench/allreduce.py`: four processes join a gloo group, all-reduce one
tensor, print the sum and exit. It is launched two ways, alternately, in the same run:

- **baseline**: ``torchrun --standalone --nproc_per_node=4 bench/allreduce.py``, directly;
- **kubetrain, warm**: ``kubetrain run -f JOB.yaml`` of a PyTorchJob with a Master and three
  Workers (one process each, 250m CPU requested, so the gang fits a 2-core node), against a
  local control plane that is already up. The benchmark starts that control plane once, with
  ``kubetrain up`` in a temporary ``KUBETRAIN_HOME`` (SQLite on disk, as users get it), waits
  for its node, and stops it when the pairs are done, also on Ctrl-C or SIGTERM.

Each figure is the wall time from spawning the command to its exit, as a user at a shell
waits for it; ``kubetrain run``'s output goes to a pipe, so its live view prints one line per
change (the terminal's redrawn block is not measured). Repetitions are interleaved in pairs,
the order flipped every pair (torchrun first, then kubetrain first), after untimed warm-ups of
each (page cache, the operator's first job). The headline is the median over pairs of
kubetrain / torchrun, judged against the goal of 1.25 (PASS or MISS).

Then, once, the **cold** figure: ``kubetrain run`` with a fresh ``KUBETRAIN_HOME`` and no
control plane running, so the command starts one itself; it is stopped afterwards. It runs
after the warm control plane is stopped, so only one is up at a time.

Where the time goes: the script prints the instants at which each process began, had
imported torch, had joined the group, had all-reduced and had left the group (its exit
follows); during warm runs the benchmark also watches the job and its pods through
kubetrain's client and notes when each change arrives (job created, pods created, bound to
the node, Running, Succeeded, job Succeeded). The breakdown table gives the median of each
instant, in seconds from launch, for each launcher.

Usage::

    .venv/bin/python bench/launch.py [--repeat 5] [--warmup 1] [--quick] [--no-cold]
                                     [--json]

``--quick`` is a smoke run: 2 pairs and no warm-up. Other users of the machine show up in
the figures; the header prints the load average before and after. This is not a test: it
asserts nothing about speed and exits 0 whatever the figures are (1 if a launch fails).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from kubetrain import _aio, kube
from kubetrain.errors import KubetrainError
from kubetrain.frameworks import hostimage
from kubetrain.kube import resource
from kubetrain.kube import watch as kube_watch
from kubetrain.local import daemon

T = TypeVar("T")
Clock = Callable[[], float]
Progress = Callable[[str], None]

SCRIPT = Path(__file__).resolve().with_name("allreduce.py")
PODS = resource.PODS
NODES = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")
JOBS = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
JOB_LABEL = "training.kubeflow.org/job-name"
NAMESPACE = "default"
IMAGE = hostimage.HOST_IMAGE  # not pulled: the local node runs the command on this host
WORKERS = 3  # plus one Master
WORLD = WORKERS + 1
CPU_REQUEST = "250m"
GOAL_RATIO = 1.25

UP_TIMEOUT = 120.0  # seconds for `kubetrain up` and the node to be ready
LAUNCH_TIMEOUT = 300.0  # seconds for one launch, start to exit
TRACE_TIMEOUT = 10.0  # seconds for the last watch events of a job after the command exited
CLEANUP_TIMEOUT = 60.0  # seconds for a finished job and its pods to be deleted
STOP_TIMEOUT = 10.0  # seconds a launch gets after SIGTERM before SIGKILL

RANK_LINE = re.compile(
    r"allreduce rank=(?P<rank>\d+) world=(?P<world>\d+) sum=(?P<sum>\d+) "
    r"start=(?P<start>[\d.]+) imported=(?P<imported>[\d.]+) joined=(?P<joined>[\d.]+) "
    r"reduced=(?P<reduced>[\d.]+) left=(?P<left>[\d.]+)"
)
STARTED_LINE = "started the local control plane"  # kubetrain.cli.target's note on stderr
CREATED_SUFFIX = " created"  # `kubetrain run`'s "pytorchjob.kubeflow.org/NAME created"

# The breakdown's rows, in launch order: key, label. A launcher shows the rows it has.
STEPS = (
    ("control_plane", "control plane started (CLI's note)"),
    ("job_created", "job created"),
    ("pods_created", f"{WORLD} pods created (API)"),
    ("pods_bound", f"{WORLD} pods bound to the node (API)"),
    ("started", f"{WORLD} processes began (script's first statement)"),
    ("pods_running", f"{WORLD} pods Running (API)"),
    ("imported", "torch imported, all ranks"),
    ("joined", "rendezvous done (init_process_group), all ranks"),
    ("reduced", "all-reduce done, all ranks"),
    ("left", "group destroyed, all ranks (then the process exits)"),
    ("pods_finished", f"{WORLD} pods Succeeded (API)"),
    ("job_succeeded", "job Succeeded (API)"),
    ("exited", "command exited"),
)
LAUNCHERS = (("torchrun", "torchrun"), ("warm", "kubetrain warm"), ("cold", "kubetrain cold"))


class BenchError(KubetrainError):
    """A launch failed or did not finish; the message says which and shows its output."""


# --- launching a command ----------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    at: float  # when the benchmark read it
    stream: str  # "out" or "err"
    text: str


@dataclass
class Launch:
    """One command from spawn to exit, with every line it printed and when."""

    command: list[str]
    began: float
    ended: float = 0.0
    code: int | None = None
    lines: list[Line] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return self.ended - self.began

    def tail(self, count: int = 30) -> str:
        return "\n".join(f"  {line.text}" for line in self.lines[-count:])


async def launch(
    command: list[str], env: dict[str, str], clock: Clock, timeout: float = LAUNCH_TIMEOUT
) -> Launch:
    """Run ``command`` to its end, reading its output as it comes. It gets a session of its
    own, so a Ctrl-C reaches only the benchmark; if the benchmark stops first (Ctrl-C, a
    timeout), the command's whole process group is ended here."""
    began = clock()
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    result = Launch(command, began)

    async def read(stream: asyncio.StreamReader | None, name: str) -> None:
        assert stream is not None
        async for raw in stream:
            result.lines.append(Line(clock(), name, raw.decode(errors="replace").rstrip("\n")))

    async def wait() -> None:
        result.code = await process.wait()
        result.ended = clock()

    try:
        async with _aio.timeout(timeout), _aio.TaskGroup() as group:
            group.create_task(read(process.stdout, "out"), name="bench: stdout")
            group.create_task(read(process.stderr, "err"), name="bench: stderr")
            group.create_task(wait(), name="bench: wait")
    except TimeoutError:
        raise BenchError(
            f"{' '.join(command)} did not finish within {timeout:.0f}s:\n{result.tail()}"
        ) from None
    finally:
        if process.returncode is None:
            await asyncio.shield(asyncio.to_thread(_end_group, process.pid))
            with contextlib.suppress(ProcessLookupError):
                await asyncio.shield(process.wait())
    return result


def _end_group(group: int) -> None:
    """SIGTERM to a launch's process group, SIGKILL to what is left after a grace period."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


# --- what the script printed ------------------------------------------------------------------


@dataclass(frozen=True)
class Rank:
    rank: int
    world: int
    total: int
    start: float
    imported: float
    joined: float
    reduced: float
    left: float


def ranks_of(result: Launch) -> list[Rank]:
    """The script's lines (prefixed ``[worker-1]`` under kubetrain); a launch counts only if
    it exited 0 and every rank printed the right sum."""
    found: dict[int, Rank] = {}
    for line in result.lines:
        for match in RANK_LINE.finditer(line.text):
            g = match.groupdict()
            rank = Rank(
                int(g["rank"]), int(g["world"]), int(g["sum"]),
                float(g["start"]), float(g["imported"]), float(g["joined"]), float(g["reduced"]),
                float(g["left"]),
            )  # fmt: skip
            found[rank.rank] = rank
    expected_sum = WORLD * (WORLD + 1) // 2
    right = sorted(found) == list(range(WORLD)) and all(
        r.world == WORLD and r.total == expected_sum for r in found.values()
    )
    if result.code != 0 or not right:
        raise BenchError(
            f"{' '.join(result.command)} exited {result.code} with {len(found)} of {WORLD} "
            f"ranks reporting the sum {expected_sum}:\n{result.tail()}"
        )
    return [found[i] for i in range(WORLD)]


def script_steps(ranks: Sequence[Rank], began: float) -> dict[str, float]:
    """The script's instants as seconds from launch; each step is done when its last rank is."""
    return {
        "started": max(r.start for r in ranks) - began,
        "imported": max(r.imported for r in ranks) - began,
        "joined": max(r.joined for r in ranks) - began,
        "reduced": max(r.reduced for r in ranks) - began,
        "left": max(r.left for r in ranks) - began,
    }


def first_line(result: Launch, test: Callable[[Line], bool]) -> float | None:
    return next((line.at - result.began for line in result.lines if test(line)), None)


# --- what the API said, as the benchmark's watches saw it -------------------------------------


@dataclass
class PodTrace:
    created: float | None = None
    bound: float | None = None
    running: float | None = None
    finished: float | None = None


@dataclass
class JobTrace:
    created: float | None = None
    succeeded: float | None = None
    pods: dict[str, PodTrace] = field(default_factory=dict)

    def complete(self) -> bool:
        return (
            self.succeeded is not None
            and len(self.pods) == WORLD
            and all(p.finished is not None for p in self.pods.values())
        )

    def steps(self, began: float) -> dict[str, float]:
        """Each step as seconds from ``began``, when every pod has reached it."""
        steps: dict[str, float] = {}
        if self.created is not None:
            steps["job_created"] = self.created - began
        if self.succeeded is not None:
            steps["job_succeeded"] = self.succeeded - began
        for key, attr in (
            ("pods_created", "created"),
            ("pods_bound", "bound"),
            ("pods_running", "running"),
            ("pods_finished", "finished"),
        ):
            seen = [getattr(p, attr) for p in self.pods.values()]
            if len(seen) == WORLD and all(at is not None for at in seen):
                steps[key] = max(seen) - began
        return steps


class Tracer:
    """Notes when each change of the benchmark's jobs and their pods reaches a watch."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.jobs: dict[str, JobTrace] = {}
        self.changed = asyncio.Event()

    async def follow(self, client: kube.Client, kind: kube.Resource) -> None:
        stream = client.watch(kind, namespace=NAMESPACE)
        async with contextlib.aclosing(aiter(stream)) as events:
            async for event in events:
                now = self.clock()
                items = event.object.get("items") if event.type == kube_watch.SYNC else None
                for obj in [event.object] if items is None else items:
                    if event.type == kube_watch.DELETED:
                        continue
                    if kind == PODS:
                        self._pod(obj, now)
                    else:
                        self._job(obj, now)
                self.changed.set()

    def _job(self, job: dict[str, Any], now: float) -> None:
        trace = self.jobs.setdefault(job["metadata"]["name"], JobTrace())
        trace.created = trace.created or now
        conditions = (job.get("status") or {}).get("conditions") or []
        if trace.succeeded is None and any(
            c.get("type") == "Succeeded" and c.get("status") == "True" for c in conditions
        ):
            trace.succeeded = now

    def _pod(self, pod: dict[str, Any], now: float) -> None:
        metadata = pod.get("metadata") or {}
        job = (metadata.get("labels") or {}).get(JOB_LABEL)
        if job is None:
            return
        trace = self.jobs.setdefault(job, JobTrace()).pods.setdefault(metadata["name"], PodTrace())
        phase = (pod.get("status") or {}).get("phase")
        trace.created = trace.created or now
        if trace.bound is None and (pod.get("spec") or {}).get("nodeName"):
            trace.bound = now
        if trace.running is None and phase == "Running":
            trace.running = now
        if trace.finished is None and phase in ("Succeeded", "Failed"):
            trace.finished = now

    async def settled(self, name: str, timeout: float = TRACE_TIMEOUT) -> JobTrace:
        """The job's trace once its last events arrived (the command may exit first), or as it
        is after ``timeout`` seconds; the breakdown then lacks the missing rows."""
        with contextlib.suppress(TimeoutError):
            async with _aio.timeout(timeout):
                while not self.jobs.get(name, JobTrace()).complete():
                    self.changed.clear()
                    await self.changed.wait()
        return self.jobs.get(name, JobTrace())


# --- the job and the control plane ------------------------------------------------------------


def job_manifest(name: str) -> dict[str, Any]:
    def replicas(count: int) -> dict[str, Any]:
        container = {
            "name": "pytorch",
            "image": IMAGE,
            "command": ["python3", str(SCRIPT)],
            "resources": {"requests": {"cpu": CPU_REQUEST}},
        }
        return {
            "replicas": count,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [container]}},
        }

    return {
        "apiVersion": JOBS.api_version,
        "kind": JOBS.kind,
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(WORKERS)}},
    }


def write_manifest(directory: Path, name: str) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job_manifest(name), sort_keys=False))
    return path


def program(name: str) -> str:
    """A console script of the environment the benchmark runs in (kubetrain, torchrun)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise BenchError(f"{path} is missing; install kubetrain with its train extra")
    return str(path)


def environment(home: str | None = None) -> dict[str, str]:
    """The benchmark's environment, aimed at the control plane in ``home`` (when given)
    whatever the developer's shell points kubetrain at."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBETRAIN_KUBECONFIG")}
    if home is not None:
        env["KUBETRAIN_HOME"] = home
    return env


def state_parent(environ: dict[str, str]) -> str | None:
    """Beside the state directory ``kubetrain up`` would use, so SQLite commits to the disk it
    would commit to there; None (the system's temporary directory) if that does not exist."""
    parent = os.path.dirname(daemon.resolve_home(environ))
    return parent if os.path.isdir(parent) else None


@contextlib.contextmanager
def temporary_home(prefix: str) -> Iterator[str]:
    """A fresh ``KUBETRAIN_HOME``; whatever control plane runs from it is stopped at the end,
    also one a killed command had started moments before (it writes its pid file late)."""
    home = tempfile.mkdtemp(prefix=prefix, dir=state_parent(dict(os.environ)))
    paths = daemon.Paths(home)
    try:
        yield home
    finally:
        try:
            if daemon.stop(paths) is None:  # none running yet, or one about to be
                deadline = time.monotonic() + 2.0
                while time.monotonic() < deadline:
                    if daemon.running_pid(paths) is not None:
                        daemon.stop(paths)
                    time.sleep(0.2)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def start_control_plane(home: str, progress: Progress) -> float:
    """``kubetrain up`` in ``home``; returns how long it took."""
    progress("starting the local control plane (kubetrain up)")
    began = time.monotonic()
    done = subprocess.run(
        [program("kubetrain"), "up", "--timeout", str(UP_TIMEOUT)],
        env=environment(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"kubetrain up failed ({done.returncode}): {done.stderr.strip()}")
    return time.monotonic() - began


async def wait_for_node(client: kube.Client) -> None:
    """The node agent registers after the API server answers: wait for a Ready node, so the
    first timed launch does not wait for it."""
    async with _aio.timeout(UP_TIMEOUT):
        while True:
            with contextlib.suppress(kube.ApiError):
                for node in (await client.list(NODES)).get("items") or []:
                    conditions = (node.get("status") or {}).get("conditions") or []
                    if any(
                        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
                    ):
                        return
            await asyncio.sleep(0.1)


async def delete_job(client: kube.Client, name: str) -> None:
    """Delete a finished job and wait until it and its pods are gone (untimed), so the next
    launch does not share the machine with the garbage collector."""
    with contextlib.suppress(kube.NotFound):
        await client.delete(JOBS, name, namespace=NAMESPACE, propagation_policy="Background")
    async with _aio.timeout(CLEANUP_TIMEOUT):
        while True:
            pods = await client.list(
                PODS, namespace=NAMESPACE, label_selector=f"{JOB_LABEL}={name}"
            )
            if not pods.get("items"):
                try:
                    await client.get(JOBS, name, namespace=NAMESPACE)
                except kube.NotFound:
                    return
            await asyncio.sleep(0.1)


# --- the measurements -------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One timed launch: its wall time and the breakdown's instants, in seconds from launch."""

    wall: float
    steps: dict[str, float]


@dataclass
class Results:
    torchrun: list[Sample] = field(default_factory=list)
    warm: list[Sample] = field(default_factory=list)
    cold: list[Sample] = field(default_factory=list)
    up_s: float | None = None  # how long `kubetrain up` took, for information
    load: list[float] = field(default_factory=list)  # 1-minute load average, before and after


async def run_torchrun(clock: Clock) -> Sample:
    command = [program("torchrun"), "--standalone", f"--nproc_per_node={WORLD}", str(SCRIPT)]
    result = await launch(command, environment(), clock)
    steps = script_steps(ranks_of(result), result.began)
    steps["exited"] = result.wall
    return Sample(result.wall, steps)


async def run_kubetrain(
    client: kube.Client, tracer: Tracer, home: str, manifests: Path, name: str, clock: Clock
) -> Sample:
    path = write_manifest(manifests, name)
    command = [program("kubetrain"), "run", "-f", str(path), "-n", NAMESPACE]
    result = await launch(command, environment(home), clock)
    ranks = ranks_of(result)
    trace = await tracer.settled(name)
    steps = {**trace.steps(result.began), **script_steps(ranks, result.began)}
    steps["exited"] = result.wall
    await delete_job(client, name)
    return Sample(result.wall, steps)


async def measure_warm(
    home: str, manifests: Path, repeat: int, warmup: int, results: Results, clock: Clock,
    progress: Progress,
) -> None:  # fmt: skip
    """Interleaved pairs against the control plane running in ``home``."""
    kubeconfig = daemon.Paths(home).kubeconfig
    async with await kube.Client.from_kubeconfig(kubeconfig, user_agent="kubetrain-bench") as api:
        await wait_for_node(api)
        tracer = Tracer(clock)
        async with _aio.TaskGroup() as group:
            watches = [
                group.create_task(tracer.follow(api, JOBS), name="bench: job watch"),
                group.create_task(tracer.follow(api, PODS), name="bench: pod watch"),
            ]
            try:
                for i in range(warmup + repeat):
                    timed = i >= warmup
                    label = f"pair {i - warmup + 1}/{repeat}" if timed else f"warm-up {i + 1}"
                    name = f"allreduce-{i - warmup + 1}" if timed else f"allreduce-w{i + 1}"
                    kubetrain_first = i % 2 == 1
                    for which in ("warm", "torchrun") if kubetrain_first else ("torchrun", "warm"):
                        progress(f"{label}: {'kubetrain run' if which == 'warm' else 'torchrun'}")
                        if which == "warm":
                            sample = await run_kubetrain(api, tracer, home, manifests, name, clock)
                        else:
                            sample = await run_torchrun(clock)
                        progress(f"  {sample.wall:.2f}s")
                        if timed:
                            getattr(results, which).append(sample)
            finally:
                for task in watches:
                    task.cancel()


async def measure_cold(home: str, manifests: Path, clock: Clock, progress: Progress) -> Sample:
    """One ``kubetrain run`` with no control plane running in ``home``."""
    progress("cold: kubetrain run, starting its own control plane")
    path = write_manifest(manifests, "allreduce-cold")
    command = [program("kubetrain"), "run", "-f", str(path), "-n", NAMESPACE]
    result = await launch(command, environment(home), clock)
    steps = script_steps(ranks_of(result), result.began)
    steps["exited"] = result.wall
    for key, test in (
        ("control_plane", lambda line: STARTED_LINE in line.text),
        ("job_created", lambda line: line.stream == "err" and line.text.endswith(CREATED_SUFFIX)),
    ):
        at = first_line(result, test)
        if at is not None:
            steps[key] = at
    progress(f"  {result.wall:.2f}s")
    return Sample(result.wall, steps)


# --- report -----------------------------------------------------------------------------------


def summary(samples: Sequence[Sample]) -> dict[str, Any] | None:
    if not samples:
        return None
    walls = [s.wall for s in samples]
    steps = {}
    for key, _ in STEPS:
        values = [s.steps[key] for s in samples if key in s.steps]
        if len(values) == len(samples):
            steps[key] = round(statistics.median(values), 3)
    return {
        "runs": len(walls),
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "max_s": round(max(walls), 3),
        "walls_s": [round(w, 3) for w in walls],
        "steps_s": steps,
    }


def build_report(results: Results, args: argparse.Namespace) -> dict[str, Any]:
    pairs = [w.wall / t.wall for t, w in zip(results.torchrun, results.warm, strict=True)]
    ratio = statistics.median(pairs) if pairs else None
    baseline = summary(results.torchrun)
    cold = summary(results.cold)
    return {
        "workload": f"{WORLD}-process gloo all-reduce ({SCRIPT.name})",
        "repeat": args.repeat,
        "warmup": args.warmup,
        "cpus": os.cpu_count(),
        "load_average_1m": [round(x, 2) for x in results.load],
        "kubetrain_up_s": round(results.up_s, 3) if results.up_s is not None else None,
        "torchrun": baseline,
        "kubetrain_warm": summary(results.warm),
        "kubetrain_cold": cold,
        "ratio_pairs": [round(r, 3) for r in pairs],
        "ratio_median": round(ratio, 3) if ratio is not None else None,
        "goal_ratio": GOAL_RATIO,
        "verdict": None if ratio is None else ("PASS" if ratio <= GOAL_RATIO else "MISS"),
        "cold_ratio": (
            round(cold["median_s"] / baseline["median_s"], 3) if cold and baseline else None
        ),
    }


def render(doc: dict[str, Any]) -> str:
    load = doc["load_average_1m"]
    lines = [
        f"launch: {doc['workload']}, kubetrain run against torchrun",
        f"  baseline: torchrun --standalone --nproc_per_node={WORLD}",
        f"  kubetrain: kubetrain run -f, PyTorchJob Master 1 + Worker {WORKERS}, "
        f"{CPU_REQUEST} CPU each, control plane already up (warm) or started by the command (cold)",
        f"  {doc['repeat']} interleaved pairs after {doc['warmup']} untimed warm-up(s) each; "
        f"{doc['cpus']} CPUs; load average (1 min) {' -> '.join(f'{x:.1f}' for x in load)}"
        + ("; the machine is shared, so figures vary" if load and max(load) > 1 else ""),
        "",
        f"{'wall time':<28}{'median':>9}{'min':>9}{'max':>9}{'runs':>6}",
    ]
    for key, label in (
        ("torchrun", "torchrun (baseline)"),
        ("kubetrain_warm", "kubetrain run, warm"),
        ("kubetrain_cold", "kubetrain run, cold"),
    ):
        s = doc[key]
        if s is not None:
            lines.append(
                f"{label:<28}{s['median_s']:>8.2f}s{s['min_s']:>8.2f}s{s['max_s']:>8.2f}s"
                f"{s['runs']:>6}"
            )
    if doc["kubetrain_up_s"] is not None:
        lines.append(f"{'(kubetrain up, for info)':<28}{doc['kubetrain_up_s']:>8.2f}s")
    lines.append("")
    if doc["ratio_median"] is not None:
        pairs = ", ".join(f"{r:.2f}" for r in doc["ratio_pairs"])
        lines.append(
            f"ratio kubetrain/torchrun, median of {len(doc['ratio_pairs'])} pairs: "
            f"{doc['ratio_median']:.2f}x (pairs: {pairs}); goal <= {doc['goal_ratio']:.2f}: "
            f"{doc['verdict']}"
        )
    if doc["cold_ratio"] is not None:
        lines.append(
            f"cold kubetrain run / torchrun median: {doc['cold_ratio']:.2f}x (no goal; includes "
            "starting the control plane)"
        )
    lines += ["", "where the time goes: median seconds from launch (+ since the row above)"]
    columns = [(key, label) for key, label in LAUNCHERS if doc[_summary_key(key)] is not None]
    lines.append(f"{'step':<50}" + "".join(f"{label:>18}" for _, label in columns))
    previous: dict[str, float] = {key: 0.0 for key, _ in columns}
    for step, label in STEPS:
        cells = []
        for key, _ in columns:
            value = doc[_summary_key(key)]["steps_s"].get(step)
            if value is None:
                cells.append(f"{'-':>18}")
                continue
            cells.append(f"{value:>7.2f} ({value - previous[key]:+.2f})".rjust(18))
            previous[key] = value
        if any(cell.strip() != "-" for cell in cells):
            lines.append(f"{label:<50}" + "".join(cells))
    return "\n".join(lines)


def _summary_key(launcher: str) -> str:
    return launcher if launcher == "torchrun" else f"kubetrain_{launcher}"


# --- the run ----------------------------------------------------------------------------------


def progress_to_stderr(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM outside the event loop: unwind as Ctrl-C does, so everything is stopped."""
    raise KeyboardInterrupt


async def cancelled_on_sigterm(work: Awaitable[T]) -> T:
    """Await ``work``; SIGTERM cancels it, as Ctrl-C does under ``asyncio.run``, so each
    launch's process group is ended by the task that started it."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await work
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, interrupt)


def expected_failure(exc: BaseException) -> BaseException | None:
    """The benchmark or API error behind ``exc`` (task groups wrap them), or None for a bug."""
    if isinstance(exc, (KubetrainError, TimeoutError)):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        if (found := expected_failure(inner)) is not None:
            return found
    return None


def measure(args: argparse.Namespace, clock: Clock, progress: Progress) -> Results:
    results = Results(load=[os.getloadavg()[0]])
    with tempfile.TemporaryDirectory(prefix="kubetrain-bench-launch-") as manifests:
        with temporary_home(".kubetrain-bench-launch-") as home:
            results.up_s = start_control_plane(home, progress)
            asyncio.run(
                cancelled_on_sigterm(
                    measure_warm(
                        home, Path(manifests), args.repeat, args.warmup, results, clock, progress
                    )
                )
            )
        if not args.no_cold:
            with temporary_home(".kubetrain-bench-cold-") as home:
                cold = asyncio.run(
                    cancelled_on_sigterm(measure_cold(home, Path(manifests), clock, progress))
                )
                results.cold.append(cold)
    results.load.append(os.getloadavg()[0])
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed pairs (default: 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed pairs first (default: 1)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 pairs, no warm-up")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold kubetrain run")
    parser.add_argument("--json", action="store_true", help="a JSON document, not the tables")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat, args.warmup = 2, 0
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be at least 1 and --warmup at least 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, interrupt)
    try:
        results = measure(args, time.time, progress_to_stderr)
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("bench: interrupted; launches and control planes are stopped", file=sys.stderr)
        return 130
    except Exception as exc:
        failure = expected_failure(exc)
        if failure is None:
            raise
        print(f"bench: {failure or type(failure).__name__}", file=sys.stderr)
        return 1
    doc = build_report(results, args)
    print(json.dumps(doc, indent=2) if args.json else render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
