"""How well the local scheduler's policy packs a machine, next to strict FIFO, in simulated
time.

A discrete-event simulation of one node, driven by the scheduler's own pure modules
(:mod:`kubetrain.local.scheduler.policy`, ``queue``, ``fit``): at every arrival and every
completion the policy decides, on a simulated clock, which waiting jobs start. Nothing talks
to an API server; the figures are about the policy, not about the controller's speed.

The workload replays the shape of Kueue's scheduler performance generator
(``test/performance/scheduler/configs/baseline/generator.yaml``, reference/scheduling.md
§5.4), one ClusterQueue's share of it, on one node of 20 CPUs (its ``nominalQuota``):

======  ====  ==========================  ========  ========  ==============
class   jobs  gang                        runtime   priority  one every
======  ====  ==========================  ========  ========  ==============
small   350   1 pod x 1 CPU               200 ms    50        100 ms
medium  100   5 pods x 1 CPU              500 ms    100       500 ms
large    50   4 pods x 5 CPUs (the node)  1000 ms   200       1200 ms
======  ====  ==========================  ========  ========  ==============

Each job states its runtime (the ``kubetrain.io/expected-runtime-seconds`` estimate the
backfill uses) and really runs a seeded random fraction of it, from ``--accuracy`` (default
0.75) to all of it, as jobs bounded by ``activeDeadlineSeconds`` do: backfill decides on
estimates, never on true runtimes. With the default the jobs ask for about 96% of the
machine (Kueue's stated runtimes, ``--accuracy 1``, for 110%), so how well a policy packs
shows in the makespan; with ``--accuracy 0.5`` they ask for 82%, every policy finishes with
the last arrival, and utilisations are equal.

Two policies run the same jobs:

- **kubetrain**: the scheduler's default, priority then submission order, gangs all or
  nothing, conservative backfill (every waiting job holds a reservation) with a bound on how
  long a backfill may hold up a job it passes;
- **FIFO** (the baseline): submission order only, and the first job that does not fit blocks
  every job behind it (``Options(ordering="fifo", backfill=False)``).

Two scenarios: every job at the same priority, where the policies differ only by the
backfill, and Kueue's priorities (large 200, medium 100, small 50), which kubetrain honours
and FIFO ignores. Figures: utilisation (allocated CPU-seconds / (20 CPUs x makespan)),
makespan, mean and max wait (start - submission), and mean wait per class. Goals, judged on
the equal-priority scenario and printed PASS or MISS: higher utilisation than FIFO, lower
mean wait than FIFO (with their ratios), and no job waiting more than twice its own FIFO
wait (each job against the same job under FIFO; printed with how many jobs are over, and the
worst ratio). With priorities, the per-job count is printed for information.

A job that FIFO starts on arrival (FIFO wait 0) passes only if it starts on arrival too:
twice zero is zero. No grace of "one scheduling pass" is given: here a pass takes no simulated
time and runs at every arrival and completion, so a job never waits for a pass, only for
room. The only tolerance, ``WAIT_TOLERANCE_S`` (1 ns), absorbs float rounding in sums of
simulated times. How many jobs FIFO starts at once, and how many of them waited under
kubetrain, is printed beside the goal.

The policy bounds how long a backfill may hold up each job it passes, so that job's wait at
most doubles (see :mod:`kubetrain.local.scheduler.policy`). It cannot bound it for jobs that
arrive later and queue behind a job held up: they inherit its delay. With the default
accuracy that does not show; with ``--accuracy 0.5`` many jobs wait a fraction of a second
under FIFO, and on some seeds some of them wait more than twice that here: the count says
how many.

A third part, ``teams`` (:mod:`_teams`, next to this file), has three teams with Queues of
different weights and priorities share the node for a minute, and measures each queue's share
of the allocated CPU-seconds against its weight, waits per team, and evictions, next to the
policy without queues measured in the same run. Its goals: shares within 10% of the weights
while every team has work waiting, no gang split, and no job waiting more than twice what a
queue given exactly its weight's share would need to run the work ahead of it. ``--only``
runs one part.

Usage::

    .venv/bin/python bench/scheduler.py [--seed N] [--scale X] [--accuracy F] [--json]
                                        [--only mix|teams]

Deterministic for a given seed; runs in about a minute. This is not a test: it asserts nothing and
exits 0 whatever the figures are.
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import _teams  # this directory's, as the script runs from here

from kubetrain.local.scheduler import fit, gangs, policy, queue

NODE_CPU = 20
NAMESPACE = "bench"
WAIT_TOLERANCE_S = 1e-9  # float rounding only: see the module docstring


@dataclass(frozen=True)
class JobClass:
    name: str
    count: int
    pods: int
    cpu: int  # per pod
    runtime: float  # stated, seconds
    priority: int
    interval: float  # seconds between submissions


CLASSES = (
    JobClass("small", 350, 1, 1, 0.2, 50, 0.1),
    JobClass("medium", 100, 5, 1, 0.5, 100, 0.5),
    JobClass("large", 50, 4, 5, 1.0, 200, 1.2),
)


@dataclass(frozen=True)
class Job:
    id: int
    cls: JobClass
    submit: float
    actual: float  # how long it really runs
    priority: int

    @property
    def cpu_seconds(self) -> float:
        return self.cls.pods * self.cls.cpu * self.actual


def workload(seed: int, scale: float, accuracy: float, priorities: bool) -> list[Job]:
    """The jobs, in submission order; each runs ``accuracy`` to 1 times its stated runtime."""
    rng = random.Random(seed)
    drafts = []
    for cls in CLASSES:
        for i in range(max(1, round(cls.count * scale))):
            drafts.append((i * cls.interval, cls))
    drafts.sort(key=lambda d: (d[0], d[1].name))
    return [
        Job(
            n,
            cls,
            submit,
            cls.runtime * rng.uniform(accuracy, 1.0),
            cls.priority if priorities else 0,
        )
        for n, (submit, cls) in enumerate(drafts)
    ]


def unit_of(job: Job) -> queue.Unit:
    name = f"job-{job.id:05d}"
    pods = [
        fit.PodInfo(
            NAMESPACE, f"{name}-{i}", uid=f"{name}-{i}", request={"cpu": Fraction(job.cls.cpu)}
        )
        for i in range(job.cls.pods)
    ]
    gang = job.cls.pods > 1
    return queue.Unit(
        label=f"{'pod group' if gang else 'pod'} {NAMESPACE}/{name}",
        namespace=NAMESPACE,
        name=name,
        priority=job.priority,
        created=job.submit,
        pods=pods,
        need=job.cls.pods,
        runtime=job.cls.runtime,
        usage=[{} for _ in pods],
        group=gangs.GroupRef(gangs.COSCHEDULING, NAMESPACE, name) if gang else None,
    )


ARRIVE, FINISH = 1, 0  # at one instant, completions free the node before arrivals are seen


def simulate(jobs: Sequence[Job], options: policy.Options) -> dict[int, float]:
    """Start time of every job under ``options``."""
    events: list[tuple[float, int, int]] = [(j.submit, ARRIVE, j.id) for j in jobs]
    heapq.heapify(events)
    by_id = {j.id: j for j in jobs}
    units: dict[int, queue.Unit] = {}
    job_of: dict[int, int] = {}  # id(unit) -> job id
    running: dict[int, tuple[float, list[fit.PodInfo]]] = {}
    starts: dict[int, float] = {}
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, job_id = heapq.heappop(events)
            if kind == ARRIVE:
                unit = units[job_id] = unit_of(by_id[job_id])
                job_of[id(unit)] = job_id
            else:
                running.pop(job_id)
        node = fit.NodeInfo("node", allocatable={"cpu": Fraction(NODE_CPU)}, allowed_pods=10**6)
        holding = []
        for job_id, (start, pods) in running.items():
            end = start + by_id[job_id].cls.runtime
            for pod in pods:
                node.add(pod)
                holding.append(policy.Running("node", pod, end if end > now else None))
        plan = policy.plan(list(units.values()), [node], holding, now, options=options)
        for outcome in plan.outcomes:
            if not outcome.placed:
                continue
            job_id = job_of[id(outcome.unit)]
            del units[job_id]
            starts[job_id] = now
            running[job_id] = (now, [pod for pod, _ in outcome.placed])
            heapq.heappush(events, (now + by_id[job_id].actual, FINISH, job_id))
    return starts


def figures(jobs: Sequence[Job], starts: dict[int, float]) -> dict[str, Any]:
    waits = {j.id: starts[j.id] - j.submit for j in jobs}
    makespan = max(starts[j.id] + j.actual for j in jobs) - min(j.submit for j in jobs)
    busy = sum(j.cpu_seconds for j in jobs)
    per_class = {
        f"mean_wait_{cls.name}_s": statistics.fmean(waits[j.id] for j in jobs if j.cls is cls)
        for cls in CLASSES
    }
    return {
        "utilisation": busy / (NODE_CPU * makespan),
        "makespan_s": makespan,
        "mean_wait_s": statistics.fmean(waits.values()),
        "max_wait_s": max(waits.values()),
        **per_class,
        "waits": waits,
    }


SCENARIOS = (
    ("equal", "every job at the same priority", False),
    ("priorities", "Kueue's priorities: large 200, medium 100, small 50", True),
)
ROWS = (
    ("utilisation", "utilisation", "{:.1%}", True),
    ("makespan", "makespan_s", "{:.2f} s", False),
    ("mean wait", "mean_wait_s", "{:.2f} s", False),
    ("max wait", "max_wait_s", "{:.2f} s", False),
    *((f"mean wait, {c.name}", f"mean_wait_{c.name}_s", "{:.2f} s", False) for c in CLASSES),
)


def compare(jobs: Sequence[Job]) -> dict[str, Any]:
    """Both policies on ``jobs``: their figures, and the goals."""
    ours = figures(jobs, simulate(jobs, policy.Options()))
    fifo = figures(jobs, simulate(jobs, policy.Options(ordering="fifo", backfill=False)))
    ours_waits, fifo_waits = ours.pop("waits"), fifo.pop("waits")
    per_job = per_job_bound(jobs, ours_waits, fifo_waits)
    goals = [
        {
            "goal": "utilisation higher than FIFO",
            "ratio": _ratio(ours["utilisation"], fifo["utilisation"]),
            "met": ours["utilisation"] > fifo["utilisation"],
        },
        {
            "goal": "mean wait lower than FIFO",
            "ratio": _ratio(ours["mean_wait_s"], fifo["mean_wait_s"]),
            "met": ours["mean_wait_s"] < fifo["mean_wait_s"],
        },
        {
            "goal": "no job waits more than twice its own FIFO wait",
            "ratio": per_job["worst_ratio"],
            "met": per_job["over"] == 0,
            "detail": (
                f"{per_job['over']} of {len(jobs)} over; worst ratio "
                f"{_format_ratio(per_job['worst_ratio'])} among jobs FIFO kept waiting; "
                f"{per_job['fifo_at_once']} started at once under FIFO, "
                f"{per_job['fifo_at_once_waited']} of them waited under kubetrain"
            ),
        },
    ]
    return {"kubetrain": ours, "fifo": fifo, "goals": goals, "per_job": per_job}


def per_job_bound(
    jobs: Sequence[Job], ours: dict[int, float], fifo: dict[int, float]
) -> dict[str, Any]:
    """Each job's wait against twice its own FIFO wait (plus ``WAIT_TOLERANCE_S``)."""
    over = [j.id for j in jobs if ours[j.id] > 2 * fifo[j.id] + WAIT_TOLERANCE_S]
    at_once = [j.id for j in jobs if fifo[j.id] <= WAIT_TOLERANCE_S]
    ratios = [ours[j.id] / fifo[j.id] for j in jobs if fifo[j.id] > WAIT_TOLERANCE_S]
    return {
        "over": len(over),
        "over_jobs": over,
        "worst_ratio": max(ratios, default=None),
        "fifo_at_once": len(at_once),
        "fifo_at_once_waited": sum(1 for i in at_once if ours[i] > WAIT_TOLERANCE_S),
        "tolerance_s": WAIT_TOLERANCE_S,
    }


def build_report(
    seed: int, scale: float, accuracy: float, only: str | None = None
) -> dict[str, Any]:
    started = time.process_time()
    scenarios = {}
    count = 0
    if only in (None, "mix"):
        for key, description, priorities in SCENARIOS:
            jobs = workload(seed, scale, accuracy, priorities)
            count = len(jobs)
            scenarios[key] = {"description": description, **compare(jobs)}
    report: dict[str, Any] = {
        "seed": seed,
        "scale": scale,
        "accuracy": accuracy,
        "jobs": count,
        "node_cpus": NODE_CPU,
        "scenarios": scenarios,
    }
    if only in (None, "teams"):
        report["teams"] = _teams.report(seed, scale, accuracy)
    report["simulation_cpu_s"] = time.process_time() - started
    return report


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _format_ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}"


def _table(scenario: dict[str, Any]) -> list[str]:
    ours, fifo = scenario["kubetrain"], scenario["fifo"]
    table = [["figure", "kubetrain", "FIFO", "kubetrain/FIFO", ""]]
    for label, key, fmt, higher in ROWS:
        ratio = _ratio(ours[key], fifo[key])
        better = "higher is better" if higher else "lower is better"
        cells = [label, fmt.format(ours[key]), fmt.format(fifo[key])]
        table.append([*cells, "-" if ratio is None else f"{ratio:.2f}", f"({better})"])
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = []
    for r in table:
        cells = [r[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(r[1:4], widths[1:4], strict=True)]
        lines.append("  ".join([*cells, r[4]]).rstrip())
    return lines


def render(report: dict[str, Any]) -> str:
    lines = [
        f"kubetrain scheduler policy, simulated on one node of {report['node_cpus']} CPUs; "
        f"each job runs {report['accuracy']:.0%} to 100% of its stated runtime; seed "
        f"{report['seed']}, scale {report['scale']}",
    ]
    if report["scenarios"]:
        lines += [
            f"mix: {report['jobs']} jobs, Kueue's baseline mix; reference: strict FIFO "
            "(submission order; the first job that does not fit blocks the rest), the same "
            "jobs in the same run",
        ]
    for key, scenario in report["scenarios"].items():
        lines += ["", f"{key}: {scenario['description']}", *_table(scenario)]
        per_job = scenario["per_job"]
        if key == "equal":
            lines.append("")
            for goal in scenario["goals"]:
                detail = goal.get("detail") or f"ratio {_format_ratio(goal['ratio'])}"
                lines.append(f"{'PASS' if goal['met'] else 'MISS'}  {goal['goal']} ({detail})")
        else:
            lines.append(
                f"jobs that waited more than twice their own FIFO wait: {per_job['over']} "
                f"of {report['jobs']} (for information)"
            )
    if report["scenarios"]:
        lines += [
            "",
            "The mix's goals are judged on equal priorities, where the two differ only by "
            "backfill. With Kueue's priorities, kubetrain honours them and FIFO does not: "
            "large jobs pass the queue and small ones wait longer; that is the priorities' "
            "price, shown for information.",
        ]
    if "teams" in report:
        lines += ["", *_teams.render(report["teams"])]
    lines += ["", f"simulation: {report['simulation_cpu_s']:.1f} s of CPU"]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/scheduler.py",
        description="Simulate the local scheduler's policy on one node: against strict FIFO, "
        "and with queues against the policy without them.",
    )
    parser.add_argument("--seed", type=int, default=1, help="the runtime draw (default 1)")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every class's job count (default 1)"
    )
    parser.add_argument(
        "--accuracy",
        type=float,
        default=0.75,
        help="jobs run this fraction of their stated runtime or more, up to all of it "
        "(default 0.75; 1 is Kueue's exact runtimes)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON document")
    parser.add_argument(
        "--only", choices=("mix", "teams"), help="one part: Kueue's mix, or teams with queues"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    report = build_report(args.seed, args.scale, args.accuracy, args.only)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
