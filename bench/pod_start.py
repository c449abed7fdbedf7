"""How fast the node agent starts pods: creation to process start, and creation to Running.

What it measures: a fresh local control plane (``kubetrain apiserver`` in a temporary home)
and a node agent (``kubetrain node`` on a temporary root) run as the user would run them;
the benchmark creates pods through kubetrain's own client with ``spec.nodeName`` set (no
scheduler involved), one every ``1/rate`` seconds, each running ``sh -c 'echo started; exec
sleep 3600'``. For each pod:

- **creation → process start**: from just before the create request is sent to the time the
  node's log gives the process's first line (``pods/log?timestamps=true``; the shim stamps a
  line when it reads it, so this is when the process ran);
- **creation → Running**: from the same instant to the arrival, on a watch of the namespace,
  of the first version of the pod whose status says ``phase: Running``.

A few pods are started first, untimed (caches, connections). Figures are p50 and p99 over
all timed pods, printed with their ratio to the goal (p50 150 ms for both, on 2 cores),
labelled as a goal: it is a target, not a measurement. For information, the same command
spawned directly with ``subprocess`` (no API, no agent) is timed in the same run: the floor
any node has to pay. With ``--burst`` every pod is created at once instead, which measures
throughput under a queue rather than latency.

With ``--container-runtime docker --image IMAGE`` the node runs the pods in containers of
``IMAGE`` (a Docker engine found as its clients find it, ``DOCKER_HOST`` first; the image must
be there already, it is not pulled), and the baseline is ``docker run --rm --network host IMAGE
sh -c 'echo started'`` timed to its first line, in the same run: the figure printed is
kubetrain's creation → process start p50 over that, the goal being 1.2x at most.

Usage::

    .venv/bin/python bench/pod_start.py [--pods 100] [--rate 5] [--burst] [--memory]
                                        [--container-runtime docker --image IMAGE] [--json]

This is not a test: it asserts nothing and exits 0 whatever the figures are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import _processes  # this directory's, as the script runs from here

from kubetrain import _aio, kube
from kubetrain.kube import resource
from kubetrain.kube import watch as kube_watch
from kubetrain.local import daemon
from kubetrain.local.node import runtime

PODS = resource.PODS
NAMESPACES = resource.NAMESPACES
SERVICE_ACCOUNTS = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
START_TIMEOUT = 60.0
GOAL_P50 = 0.150  # seconds, for both figures
GOAL_OVER_DOCKER = 1.2  # containers: kubetrain's p50 over `docker run`'s, at most
WARMUP = 5
COMMAND = ["sh", "-c", "echo started; exec sleep 3600"]


class BenchError(Exception):
    pass


@dataclass
class Sample:
    created: float  # wall clock, just before the create was sent
    started: float | None = None  # the process's first log line
    running: float | None = None  # the watch brought phase Running


@dataclass
class Result:
    samples: dict[str, Sample] = field(default_factory=dict)
    direct: list[float] = field(default_factory=list)
    docker_run: list[float] = field(default_factory=list)  # containers: the baseline


# --- processes --------------------------------------------------------------------------------


@contextlib.contextmanager
def control_plane_and_node(
    memory: bool, node: str, container_runtime: str = "none"
) -> Iterator[tuple[str, str]]:
    """Start ``kubetrain apiserver`` and ``kubetrain node`` in a temporary home; yield the
    kubeconfig and the node's root; stop both (and every pod process) however the block
    ends."""
    with tempfile.TemporaryDirectory(prefix="kubetrain-bench-") as home:
        paths = daemon.Paths(home)
        command = [sys.executable, "-m", "kubetrain", "apiserver", "--home", home, "--port", "0"]
        if memory:
            command.append("--memory")
        log = Path(home) / "apiserver.log"
        api = _processes.spawn(command, log, home)
        agent: subprocess.Popen[bytes] | None = None
        root = os.path.join(home, "node")
        try:
            _processes.wait_for_file(
                paths.kubeconfig,
                api,
                START_TIMEOUT,
                lambda why: BenchError(f"the local control plane: {why}:\n{_processes.tail(log)}"),
            )
            agent = _processes.spawn(
                [
                    sys.executable, "-m", "kubetrain", "node", "--kubeconfig", paths.kubeconfig,
                    "--name", node, "--root", root, "--gpus", "0", "--log-level", "WARNING",
                    "--container-runtime", container_runtime,
                ],
                Path(home) / "node.log",
                home,
            )  # fmt: skip
            yield paths.kubeconfig, root
        finally:
            if agent is not None:
                _processes.stop(agent)
            asyncio.run(_remove_pods(root, container_runtime))
            _processes.stop(api)


async def _remove_pods(root: str, container_runtime: str) -> None:
    settings = runtime.Settings(root=root)
    if container_runtime != "none":
        from kubetrain.local.node import engine  # the containers extra

        kind = container_runtime
        await engine.Engine(settings, kind, engine.find(kind)).release(0)
    node_runtime = runtime.Runtime(settings)
    for uid in node_runtime.pods():
        await node_runtime.remove(uid, 0)


# --- the workload -----------------------------------------------------------------------------


async def wait_for_node(client: kube.Client, name: str) -> None:
    nodes = kube.Resource("", "v1", "nodes", namespaced=False)
    async with _aio.timeout(START_TIMEOUT):
        while True:
            with contextlib.suppress(kube.NotFound, kube.Unavailable):
                node = await client.get(nodes, name)
                conditions = (node.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                    return
            await asyncio.sleep(0.1)


async def create_namespace(client: kube.Client) -> str:
    name = "bench-" + secrets.token_hex(3)
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    async with _aio.timeout(START_TIMEOUT):
        while True:
            try:
                await client.get(SERVICE_ACCOUNTS, "default", namespace=name)
                return name
            except kube.NotFound:
                await asyncio.sleep(0.05)


def pod(name: str, node: str, image: str = "busybox") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": image, "command": COMMAND}],
        },
    }


async def watch_running(
    client: kube.Client,
    namespace: str,
    result: Result,
    listening: asyncio.Event,
    expected: int,
    done: asyncio.Event,
) -> None:
    stream = client.watch(PODS, namespace=namespace)
    async for event in stream:
        listening.set()
        items = event.object.get("items") if event.type == kube_watch.SYNC else [event.object]
        now = time.time()
        for item in items or []:
            name = (item.get("metadata") or {}).get("name")
            sample = result.samples.get(name)
            phase = (item.get("status") or {}).get("phase")
            if sample is not None and sample.running is None and phase == "Running":
                sample.running = now
        samples = result.samples.values()
        if len(samples) == expected and all(s.running is not None for s in samples):
            done.set()


async def first_line_time(client: kube.Client, namespace: str, name: str) -> float | None:
    """The RFC 3339 stamp of the log's first line (``kubectl logs --timestamps``)."""
    path = f"{PODS.path(namespace, name)}/log"
    async with _aio.timeout(30):
        while True:
            try:
                async with client.stream(path, query={"timestamps": "true"}) as lines:
                    async for line in lines:
                        stamp = line.split(b" ", 1)[0].decode()
                        return parse_nano(stamp)
            except kube.ApiError:
                pass
            await asyncio.sleep(0.1)


def parse_nano(stamp: str) -> float:
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(whole + "+00:00").timestamp()
    return seconds + float("0." + (fraction or "0"))


async def run_pods(
    kubeconfig: str,
    node: str,
    count: int,
    rate: float,
    burst: bool,
    result: Result,
    image: str = "busybox",
) -> None:
    async with await kube.Client.from_kubeconfig(kubeconfig, user_agent="kubetrain-bench") as api:
        await wait_for_node(api, node)
        namespace = await create_namespace(api)
        for i in range(WARMUP):  # untimed: connections, caches, the first shims
            await api.create(PODS, pod(f"warm-{i}", node, image), namespace=namespace)
        listening = asyncio.Event()
        done = asyncio.Event()
        async with _aio.TaskGroup() as group:
            watcher = group.create_task(
                watch_running(api, namespace, result, listening, count, done)
            )
            await listening.wait()
            await asyncio.sleep(1.0)  # let the warm-up pods settle
            creates = []
            for i in range(count):
                name = f"pod-{i:04d}"
                result.samples[name] = Sample(time.time())
                creates.append(api.create(PODS, pod(name, node, image), namespace=namespace))
                if not burst:
                    await creates.pop()
                    await asyncio.sleep(1 / rate)
            await asyncio.gather(*creates)
            async with _aio.timeout(120):
                await done.wait()
            watcher.cancel()
        for name, sample in result.samples.items():
            sample.started = await first_line_time(api, namespace, name)
        with contextlib.suppress(kube.ApiError):
            await api.delete(NAMESPACES, namespace)


def direct_spawns(count: int) -> list[float]:
    """The same command spawned here, timed to its first line: the floor."""
    times = []
    for _ in range(count):
        began = time.perf_counter()
        with subprocess.Popen(
            ["sh", "-c", "echo started"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
        ) as process:
            assert process.stdout is not None
            process.stdout.readline()
            times.append(time.perf_counter() - began)
            process.wait()
    return times


def docker_runs(count: int, image: str) -> list[float]:
    """``docker run`` of the image, timed to its first line: the baseline for containers."""
    command = ["docker", "run", "--rm", "--network", "host", image, "sh", "-c", "echo started"]
    subprocess.run(command, capture_output=True, check=True)  # untimed: the CLI's first start
    times = []
    for _ in range(count):
        began = time.perf_counter()
        with subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL) as run:
            assert run.stdout is not None
            run.stdout.readline()
            times.append(time.perf_counter() - began)
            run.wait()
    return times


# --- figures ----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, math.ceil(q / 100 * len(ordered)) - 1)
    return ordered[rank]


def report(result: Result, args: argparse.Namespace) -> dict[str, Any]:
    started = [s.started - s.created for s in result.samples.values() if s.started is not None]
    running = [s.running - s.created for s in result.samples.values() if s.running is not None]
    figures = {}
    for name, values in (("creation_to_process_start", started), ("creation_to_running", running)):
        if not values:
            continue
        p50 = percentile(values, 50)
        figures[name] = {
            "p50_ms": round(p50 * 1000, 1),
            "p99_ms": round(percentile(values, 99) * 1000, 1),
            "goal_p50_ms": GOAL_P50 * 1000,
            "ratio_to_goal": round(p50 / GOAL_P50, 2),
            "pods": len(values),
        }
    direct = result.direct
    over_docker = None
    if result.docker_run and started:
        docker_p50 = percentile(result.docker_run, 50)
        over_docker = {
            "image": args.image,
            "kubetrain_p50_ms": round(percentile(started, 50) * 1000, 1),
            "docker_run_p50_ms": round(docker_p50 * 1000, 1),
            "ratio": round(percentile(started, 50) / docker_p50, 2),
            "goal_ratio": GOAL_OVER_DOCKER,
        }
    return {
        "pods": args.pods,
        "mode": "burst" if args.burst else f"{args.rate:g} pods/s",
        "cpus": os.cpu_count(),
        "figures": figures,
        "direct_spawn_p50_ms": round(percentile(direct, 50) * 1000, 2) if direct else None,
        "container_runtime": args.container_runtime,
        "over_docker_run": over_docker,
    }


def render(doc: dict[str, Any]) -> str:
    lines = [
        f"pod start on the local node: {doc['pods']} pods, {doc['mode']}, {doc['cpus']} CPUs",
        f"{'figure':<28}{'p50':>10}{'p99':>10}{'goal p50':>10}{'ratio':>8}",
    ]
    for name, f in doc["figures"].items():
        lines.append(
            f"{name.replace('_', ' '):<28}{f['p50_ms']:>8.1f}ms{f['p99_ms']:>8.1f}ms"
            f"{f['goal_p50_ms']:>8.0f}ms{f['ratio_to_goal']:>7.2f}x"
        )
    lines.append("ratio: kubetrain / goal (a target, not a measurement); below 1 meets it")
    over = doc.get("over_docker_run")
    if over:
        lines.append(
            f"containers of {over['image']}: creation to process start p50 "
            f"{over['kubetrain_p50_ms']:.1f} ms through kubetrain, {over['docker_run_p50_ms']:.1f}"
            f" ms by `docker run`: ratio {over['ratio']:.2f}x (goal at most "
            f"{over['goal_ratio']:.1f}x)"
        )
    if doc["direct_spawn_p50_ms"] is not None:
        lines.append(
            f"for information: the same command spawned directly, p50 "
            f"{doc['direct_spawn_p50_ms']:.2f} ms (no API server, no agent)"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=100, help="pods timed (default: 100)")
    parser.add_argument("--rate", type=float, default=5.0, help="pods created per second")
    parser.add_argument("--burst", action="store_true", help="create every pod at once")
    parser.add_argument("--memory", action="store_true", help="in-memory store, not SQLite")
    parser.add_argument(
        "--container-runtime",
        choices=("none", "docker"),
        default="none",
        help="the node runs the pods in containers of --image (default: host processes)",
    )
    parser.add_argument("--image", default="busybox", help="the pods' image (default: busybox)")
    parser.add_argument("--json", action="store_true", help="a JSON document, not the table")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    node = "bench-node"
    result = Result(direct=direct_spawns(20))
    try:
        if args.container_runtime != "none":
            result.docker_run = docker_runs(20, args.image)
        with control_plane_and_node(args.memory, node, args.container_runtime) as (kubeconfig, _):
            asyncio.run(
                run_pods(kubeconfig, node, args.pods, args.rate, args.burst, result, args.image)
            )
    except (BenchError, kube.ApiError, TimeoutError, subprocess.CalledProcessError) as exc:
        print(f"pod_start: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    doc = report(result, args)
    print(json.dumps(doc, indent=2) if args.json else render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
