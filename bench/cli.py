"""How long a ``kubetrain`` command takes to answer, next to ``kubectl get pods`` in the same run.

A user types ``kubetrain list`` and waits; most of that wait used to be Python importing modules
the command had no use for. This measures the commands as a shell runs them, from spawn to exit:

- ``kubetrain --version``: the interpreter and the entry point, nothing else (goal: < 0.15 s);
- ``kubetrain list``: the jobs of every kind in the namespace (goal: < 0.35 s);
- ``kubetrain get JOB``: one job, its replicas, pods and events (goal: < 0.35 s);
- ``kubectl get pods``: the reference, a compiled client against the same server;
- the floor: the least any command on kubetrain's stack can take, a few lines of Python that
  import asyncio and aiohttp (the one HTTP stack every kubetrain client uses), read the
  kubeconfig and list the pods once over TLS, with nothing of kubetrain imported. Its ratio to
  kubectl says how much of a command's ratio is the runtime's and how much is kubetrain's.

What it runs: ``kubetrain up`` in a temporary ``KUBETRAIN_HOME`` (the developer's own control
plane is left alone), one suspended PyTorchJob created with ``kubectl apply`` so that ``list``
and ``get`` have a job to show and nothing runs, then rounds of the four commands (the order
rotated each round, one untimed round first to warm the page cache and write the bytecode),
and ``kubetrain down`` at the end, also on Ctrl-C. Each figure is the median over rounds,
printed with its ratio to kubectl's median (goal: at most 3x) and PASS or MISS against its
goal, and with the median CPU time the command used (user and system): on a busy machine the
wall times grow with the load, the CPU time much less.

Usage::

    .venv/bin/python bench/cli.py [--rounds 15] [--quick] [--json]

``--quick`` is a smoke run of 3 rounds. Other users of the machine show up in the figures; the
header prints the load average before and after. This is not a test: it asserts nothing about
speed and exits 0 whatever the figures are (1 when it could not run, saying why).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

JOB = "bench-cli"
UP_TIMEOUT = 120.0  # seconds for `kubetrain up`
GOALS = {"version": 0.15, "list": 0.35, "get": 0.35}  # seconds
RATIO_GOAL = 3.0  # at most this many times kubectl's time
MANIFEST = f"""\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {JOB}
spec:
  runPolicy:
    suspend: true
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: kubetrain.local/host-python:latest
              command: ["python3", "-c", "pass"]
"""


class BenchError(Exception):
    """The benchmark could not run; the message says why."""


def program(name: str) -> str:
    """A console script of the environment the benchmark runs in."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise BenchError(f"{path} is missing; install kubetrain first (make run)")
    return str(path)


# Left out of the commands' environment: what points elsewhere than the temporary control
# plane, and PYTHONDONTWRITEBYTECODE, under which a module changed since its bytecode was last
# written is compiled again on every run (a fifth of `kubetrain list` for a few edited
# modules), where an installed kubetrain has its bytecode; the untimed round writes it.
UNSET = ("KUBECONFIG", "KUBETRAIN_KUBECONFIG", "PYTHONDONTWRITEBYTECODE")


def environment(home: str) -> dict[str, str]:
    """The commands' environment: the temporary control plane, whatever the shell points at."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["KUBETRAIN_HOME"] = home
    return env


# The floor. The control plane's kubeconfig holds a token and the CA's certificate data.
FLOOR = """\
import asyncio, base64, os, ssl
import aiohttp, yaml

async def main():
    with open(os.path.join(os.environ["KUBETRAIN_HOME"], "kubeconfig")) as f:
        config = yaml.load(f, Loader=yaml.CSafeLoader)
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    context = ssl.create_default_context(cadata=ca)
    headers = {"Authorization": "Bearer " + user["token"]}
    url = cluster["server"] + "/api/v1/namespaces/default/pods"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        async with session.get(url, headers=headers) as response:
            response.raise_for_status()
            await response.read()

asyncio.run(main())
"""


def commands(home: str) -> dict[str, list[str]]:
    kubetrain = program("kubetrain")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise BenchError("kubectl is not on PATH: it is the reference")
    return {
        "version": [kubetrain, "--version"],
        "list": [kubetrain, "list"],
        "get": [kubetrain, "get", JOB],
        "kubectl": [kubectl, "--kubeconfig", os.path.join(home, "kubeconfig"), "get", "pods"],
        "floor": [sys.executable, "-c", FLOOR],
    }


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning ``command`` to its exit, and the CPU seconds it used (user and
    system); a failure stops the benchmark."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    took = time.perf_counter() - began
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()
        raise BenchError(f"{' '.join(command)} failed ({done.returncode}): {err}")
    return took, now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime


def start(home: str, env: dict[str, str]) -> None:
    """``kubetrain up`` in ``home``, and the job that ``list`` and ``get`` show."""
    up = subprocess.run(
        [program("kubetrain"), "up", "--timeout", str(UP_TIMEOUT)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if up.returncode != 0:
        raise BenchError(f"kubetrain up failed ({up.returncode}): {up.stderr.strip()}")
    apply = subprocess.run(
        ["kubectl", "--kubeconfig", os.path.join(home, "kubeconfig"), "apply", "-f", "-"],
        input=MANIFEST,
        env=env,
        capture_output=True,
        text=True,
    )
    if apply.returncode != 0:
        raise BenchError(f"kubectl apply of the job failed: {apply.stderr.strip()}")


def stop(env: dict[str, str]) -> None:
    subprocess.run(
        [program("kubetrain"), "down"], env=env, stdin=subprocess.DEVNULL, capture_output=True
    )


def measure(rounds: int, progress: Any) -> dict[str, Any]:
    home = tempfile.mkdtemp(prefix="kubetrain-bench-cli-")
    env = environment(home)
    load = [os.getloadavg()[0]]
    try:
        progress("starting a local control plane (kubetrain up) in a temporary home")
        start(home, env)
        named = commands(home)
        names = list(named)
        for name in names:  # warm-up, untimed
            timed(named[name], env)
        samples: dict[str, list[float]] = {name: [] for name in names}
        cpu: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            progress(f"round {r + 1}/{rounds}")
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                wall, used = timed(named[name], env)
                samples[name].append(wall)
                cpu[name].append(used)
    finally:
        stop(env)
        shutil.rmtree(home, ignore_errors=True)
    load.append(os.getloadavg()[0])
    medians = {name: statistics.median(values) for name, values in samples.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    reference = medians["kubectl"]
    return {
        "rounds": rounds,
        "load_average_1m": [round(x, 2) for x in load],
        "kubectl_s": round(reference, 4),
        "kubectl_cpu_s": round(cpu_medians["kubectl"], 4),
        "floor": {
            "median_s": round(medians["floor"], 4),
            "cpu_s": round(cpu_medians["floor"], 4),
            "ratio_to_kubectl": round(medians["floor"] / reference, 2),
        },
        "commands": {
            name: {
                "median_s": round(medians[name], 4),
                "cpu_s": round(cpu_medians[name], 4),
                "ratio_to_kubectl": round(medians[name] / reference, 2),
                "goal_s": GOALS[name],
                "meets_goal": medians[name] < GOALS[name],
                "meets_ratio_goal": medians[name] / reference <= RATIO_GOAL,
            }
            for name in GOALS
        },
    }


def render(doc: dict[str, Any]) -> str:
    before, after = doc["load_average_1m"]
    lines = [
        f"kubetrain commands against a local control plane: median of {doc['rounds']} rounds "
        f"(load average {before:.2f} before, {after:.2f} after)",
        "",
        f"{'command':<24}{'median':>9}{'x kubectl':>11}{'goal':>9}  verdict  {'CPU':>7}",
        f"{'kubectl get pods':<24}{doc['kubectl_s']:>8.3f}s{1.0:>10.2f}x{'':>9}  (ref.)  "
        f"{doc['kubectl_cpu_s']:>6.3f}s",
    ]
    labels = {"version": "kubetrain --version", "list": "kubetrain list", "get": "kubetrain get"}
    for name, row in doc["commands"].items():
        ok = row["meets_goal"] and row["meets_ratio_goal"]
        lines.append(
            f"{labels[name]:<24}{row['median_s']:>8.3f}s{row['ratio_to_kubectl']:>10.2f}x"
            f"{'<' + format(row['goal_s'], '.2f') + 's':>9}  {'PASS' if ok else 'MISS'}  "
            f"   {row['cpu_s']:>6.3f}s"
        )
    floor = doc["floor"]
    lines.append(
        f"{'floor (aiohttp, 1 GET)':<24}{floor['median_s']:>8.3f}s"
        f"{floor['ratio_to_kubectl']:>10.2f}x{'':>9}  (ref.)  {floor['cpu_s']:>6.3f}s"
    )
    lines.append("")
    lines.append(f"goal: under the time shown, and at most {RATIO_GOAL:.0f}x kubectl get pods")
    if floor["ratio_to_kubectl"] > RATIO_GOAL:
        lines.append(
            f"the floor alone is {floor['ratio_to_kubectl']:.2f}x kubectl: no command on this "
            f"stack (Python, asyncio, aiohttp) can meet a ratio goal of {RATIO_GOAL:.0f}x here"
        )
    above = {
        name: doc["commands"][name]["median_s"] - floor["median_s"] for name in ("list", "get")
    }
    lines.append(
        "above the floor: "
        + ", ".join(f"{labels[name]} {seconds * 1000:+.0f} ms" for name, seconds in above.items())
    )
    lines.append("CPU: the median user and system time of the command itself, for information")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds (default 15)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds")
    parser.add_argument("--json", action="store_true", help="a JSON document instead")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else max(1, args.rounds)

    def progress(message: str) -> None:
        print(f"[bench] {message}", file=sys.stderr, flush=True)

    try:
        doc = measure(rounds, progress)
    except BenchError as exc:
        print(f"bench/cli.py: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(doc, indent=2) if args.json else render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
