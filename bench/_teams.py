"""Teams sharing one node through Volcano queues, simulated: the ``teams`` part of
``bench/scheduler.py``.

Three teams, each with its own Queue, submit at once for a minute, each more than the share
its weight gives it, so every queue has work waiting for most of the run (the shape of
Kueue's fair-sharing scenarios: ClusterQueues of different weights in one cohort, each able
to fill the pool alone):

==========  ======  ====================  =======  ========  ==============  =============
team        weight  gang                  runtime  priority  one every       its share
==========  ======  ====================  =======  ========  ==============  =============
research    3       4 pods x 1 CPU        1.0 s    100       0.30 s          10 of 20 CPUs
product     2       2 pods x 2 CPUs       0.8 s    50        0.35 s          6.7 CPUs
dev         1       1 pod x 1 CPU         0.4 s    0         0.08 s          3.3 CPUs
==========  ======  ====================  =======  ========  ==============  =============

Every tenth product job is urgent (priority 1000): it may evict product's own lower-priority
gangs. Jobs run a seeded random 75-100% of their stated runtime (``--accuracy``), as in the
rest of the benchmark.

Two policies run the same jobs:

- **queues**: kubetrain's scheduler with the three Queues: turns by share, gangs all or
  nothing, backfill, priority preemption within a queue, reclaim across queues
  (:mod:`kubetrain.local.scheduler.queues`, ``preemption``);
- **current** (the reference): the scheduler as it was before queues, priority then
  submission order with backfill, no queues and no preemption. The teams' priorities order
  everything.

An evicted gang frees its node at once (a real one waits for its pods' grace period) and
goes back to waiting in its place (its PodGroup keeps its creation time); it runs again from
the start, so its run so far is wasted.

Figures, per team: its share of the CPU-seconds allocated while every team had jobs waiting,
against its weight's share; its waits (mean, p90, max); evictions suffered (and the
CPU-seconds they wasted). Goals, judged on the queues policy:

- each team's share within 10% of its weight's share (relative);
- no gang split: every job's pods start together, and an eviction takes all of them;
- no job starved. The bound: a job starts within twice the time its queue would need, given
  exactly its weight's share of the node, to run the work ahead of it (jobs of the team that
  had not started when it was submitted and come before it in the queue's order, plus
  higher-priority ones submitted while it waits, in CPU-seconds of stated runtime), plus
  three times the longest stated runtime of any job (1.2 s), for room to come free and its
  queue's turn to come: ``wait <= 2 x ahead / share + 3.6 s``. Twice and three times,
  because gangs are a large part of the node and turns go by what queues held lately: a
  queue's share is its average, not what it gets at every moment. Printed: jobs over it under
  each policy, and the worst ratio of a wait to its bound.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubetrain.local.scheduler import amounts, fit, gangs, policy, preemption, queue, queues

NODE_CPU = 20
NAMESPACE = "teams"
ARRIVALS_S = 60.0
URGENT = 1000
SHARE_TOLERANCE = 0.10
HALF_LIFE_S = 20.0  # the queues' usage half-life: about 20 runtimes, as 10 min is for 30 s jobs
WAIT_TOLERANCE_S = 1e-9
BOUND_FACTOR = 2.0  # times the work ahead at the queue's share
ROOM_RUNTIMES = 3.0  # times the longest runtime, for room to come free and the turn to come


@dataclass(frozen=True)
class Team:
    name: str
    weight: int
    pods: int
    cpu: int  # per pod
    runtime: float  # stated, seconds
    priority: int
    interval: float
    urgent_every: int = 0  # every n-th job is urgent; 0: none


TEAMS = (
    Team("research", 3, 4, 1, 1.0, 100, 0.30),
    Team("product", 2, 2, 2, 1.2, 50, 0.50, urgent_every=10),
    Team("dev", 1, 1, 2, 0.8, 0, 0.35),
)
LONGEST_RUNTIME = max(t.runtime for t in TEAMS)


@dataclass(frozen=True)
class Job:
    id: int
    team: Team
    submit: float
    actual: float
    priority: int

    @property
    def cpus(self) -> int:
        return self.team.pods * self.team.cpu

    @property
    def name(self) -> str:
        return f"{self.team.name}-{self.id:05d}"


def workload(seed: int, scale: float, accuracy: float) -> list[Job]:
    rng = random.Random(seed)
    drafts = []
    for team in TEAMS:
        count = max(1, round(ARRIVALS_S * scale / team.interval))
        for i in range(count):
            urgent = team.urgent_every and (i + 1) % team.urgent_every == 0
            drafts.append((i * team.interval, team, URGENT if urgent else team.priority))
    drafts.sort(key=lambda d: (d[0], d[1].name))
    return [
        Job(n, team, submit, team.runtime * rng.uniform(accuracy, 1.0), priority)
        for n, (submit, team, priority) in enumerate(drafts)
    ]


def unit_of(job: Job) -> queue.Unit:
    pods = [
        fit.PodInfo(
            NAMESPACE,
            f"{job.name}-{i}",
            uid=f"{job.name}-{i}",
            request={"cpu": Fraction(job.team.cpu)},
        )
        for i in range(job.team.pods)
    ]
    return queue.Unit(
        label=f"pod group {NAMESPACE}/{job.name}",
        namespace=NAMESPACE,
        name=job.name,
        priority=job.priority,
        created=job.submit,
        pods=pods,
        need=job.team.pods,
        runtime=job.team.runtime,
        usage=[{} for _ in pods],
        group=gangs.GroupRef(gangs.VOLCANO, NAMESPACE, job.name),
        queue=job.team.name,
        waiting_since=job.submit,
    )


@dataclass
class Run:
    """One policy's run: when each job started (first and last time), the evictions, and the
    CPU held per team between events while every team had jobs waiting."""

    first_start: dict[int, float] = field(default_factory=dict)
    evictions: list[tuple[int, str, float]] = field(default_factory=list)  # job, kind, wasted
    splits: int = 0
    contended_cpu_s: dict[str, float] = field(default_factory=dict)
    contended_s: float = 0.0
    end: float = 0.0


ARRIVE, FINISH = 1, 0


def simulate(jobs: Sequence[Job], *, with_queues: bool, half_life: float = HALF_LIFE_S) -> Run:
    by_id = {j.id: j for j in jobs}
    queue_objs = [queues.Queue(t.name, weight=t.weight) for t in TEAMS]
    tie = itertools.count()
    events: list[tuple[float, int, int, int]] = [(j.submit, ARRIVE, next(tie), j.id) for j in jobs]
    heapq.heapify(events)
    waiting: dict[int, queue.Unit] = {}
    running: dict[int, tuple[float, list[fit.PodInfo], int]] = {}  # job -> start, pods, token
    run = Run()
    last = 0.0
    lately: dict[str, dict[str, Fraction]] = {}  # the Queues' status.fairSharing
    while events:
        now = events[0][0]
        _account(run, last, now, running, waiting, by_id)
        held_before = _held(running, by_id)
        lately = {
            t.name: queues.held_lately(
                lately.get(t.name, {}), held_before.get(t.name, {}), now - last, half_life
            )
            for t in TEAMS
        }
        last = now
        while events and events[0][0] == now:
            _, kind, token, job_id = heapq.heappop(events)
            if kind == ARRIVE:
                waiting[job_id] = unit_of(by_id[job_id])
            elif job_id in running and running[job_id][2] == token:
                del running[job_id]
        for _ in range(len(jobs)):  # again after evictions: the preemptors start now
            node = fit.NodeInfo("node", allocatable={"cpu": Fraction(NODE_CPU)}, allowed_pods=10**6)
            holding = []
            for job_id, (start, pods, _) in running.items():
                end = start + by_id[job_id].team.runtime
                for pod in pods:
                    node.add(pod)
                    holding.append(policy.Running("node", pod, end if end > now else None))
            units = list(waiting.values())
            fair = None
            if with_queues:
                asked: dict[str, dict[str, Fraction]] = {}
                for unit in units:
                    asked[unit.queue] = amounts.add(asked.get(unit.queue, {}), unit.request)
                fair = queues.Fair.build(
                    queue_objs,
                    {"cpu": Fraction(NODE_CPU)},
                    _held(running, by_id),
                    asked,
                    history=lately,
                )
            plan = policy.plan(units, [node], holding, now, fair=fair.copy() if fair else None)
            job_of = {id(u): int(u.name.rsplit("-", 1)[1]) for u in units}
            for outcome in plan.outcomes:
                if not outcome.placed:
                    continue
                job_id = job_of[id(outcome.unit)]
                if len(outcome.placed) != by_id[job_id].team.pods:
                    run.splits += 1
                del waiting[job_id]
                run.first_start.setdefault(job_id, now)
                token = next(tie)
                running[job_id] = (now, [p for p, _ in outcome.placed], token)
                heapq.heappush(events, (now + by_id[job_id].actual, FINISH, token, job_id))
            if fair is None:
                break
            victims = [
                preemption.Victim(
                    key=job_id,
                    label=f"pod group {NAMESPACE}/{by_id[job_id].name}",
                    queue=by_id[job_id].team.name,
                    priority=by_id[job_id].priority,
                    started=start,
                    pods=[(p, "node") for p in pods],
                )
                for job_id, (start, pods, _) in running.items()
                if start < now  # not the ones just started: the decision's nodes predate them
            ]
            decision = preemption.decide(plan.outcomes, [node], [], victims, fair)
            if not decision.evictions:
                break
            for eviction in decision.evictions:
                for victim in eviction.victims:
                    job_id = int(victim.key)  # type: ignore[call-overload]
                    start, pods, _ = running.pop(job_id)
                    if len(pods) != len(victim.pods):
                        run.splits += 1
                    kind = (
                        preemption.PRIORITY
                        if victim.queue == eviction.preemptor.queue
                        else preemption.RECLAIM
                    )
                    run.evictions.append((job_id, kind, (now - start) * by_id[job_id].cpus))
                    waiting[job_id] = unit_of(by_id[job_id])
                    waiting[job_id].waiting_since = now  # its pods are created again
    run.end = last
    return run


def _held(
    running: dict[int, tuple[float, list[fit.PodInfo], int]], by_id: dict[int, Job]
) -> dict[str, dict[str, Fraction]]:
    held: dict[str, dict[str, Fraction]] = {}
    for job_id in running:
        name = by_id[job_id].team.name
        held[name] = amounts.add(held.get(name, {}), {"cpu": Fraction(by_id[job_id].cpus)})
    return held


def _account(
    run: Run,
    since: float,
    now: float,
    running: dict[int, tuple[float, list[fit.PodInfo], int]],
    waiting: dict[int, queue.Unit],
    by_id: dict[int, Job],
) -> None:
    """Add the CPU each team held from ``since`` to ``now`` if every team had jobs waiting."""
    if now <= since:
        return
    waiting_teams = {u.queue for u in waiting.values()}
    if len(waiting_teams) < len(TEAMS):
        return
    run.contended_s += now - since
    for job_id in running:
        job = by_id[job_id]
        run.contended_cpu_s[job.team.name] = run.contended_cpu_s.get(
            job.team.name, 0.0
        ) + job.cpus * (now - since)


def _order_key(job: Job) -> tuple[int, float, int]:
    return (-job.priority, job.submit, job.id)


def bounds(jobs: Sequence[Job], starts: dict[int, float]) -> dict[int, float]:
    """Each job's starvation bound (see the module docstring), from when the jobs of its
    queue started under the policy measured."""
    total_weight = sum(t.weight for t in TEAMS)
    found = {}
    for team in TEAMS:
        mine = [j for j in jobs if j.team is team]
        share = NODE_CPU * team.weight / total_weight
        for job in mine:
            ahead = 0.0
            for other in mine:
                if other is job or _order_key(other) > _order_key(job):
                    continue
                if starts[other.id] < job.submit - WAIT_TOLERANCE_S:
                    continue  # it had started already
                if other.submit > starts[job.id]:
                    continue
                ahead += other.cpus * other.team.runtime
            found[job.id] = BOUND_FACTOR * ahead / share + ROOM_RUNTIMES * LONGEST_RUNTIME
    return found


def figures(jobs: Sequence[Job], run: Run) -> dict[str, Any]:
    total_weight = sum(t.weight for t in TEAMS)
    held = sum(run.contended_cpu_s.values())
    limit = bounds(jobs, run.first_start)
    waits = {j.id: run.first_start[j.id] - j.submit for j in jobs}
    over = [j.id for j in jobs if waits[j.id] > limit[j.id] + WAIT_TOLERANCE_S]
    teams = {}
    for team in TEAMS:
        mine = [j for j in jobs if j.team is team]
        team_waits = sorted(waits[j.id] for j in mine)
        target = team.weight / total_weight
        share = run.contended_cpu_s.get(team.name, 0.0) / held if held else 0.0
        evicted = [e for e in run.evictions if e[0] in {j.id for j in mine}]
        teams[team.name] = {
            "weight": team.weight,
            "target_share": target,
            "share": share,
            "share_error": abs(share - target) / target,
            "mean_wait_s": statistics.fmean(team_waits),
            "p90_wait_s": team_waits[
                min(len(team_waits) - 1, math.ceil(0.9 * len(team_waits)) - 1)
            ],
            "max_wait_s": team_waits[-1],
            "evictions": len(evicted),
            "wasted_cpu_s": sum(e[2] for e in evicted),
            "over_bound": sum(1 for j in mine if j.id in set(over)),
        }
    return {
        "teams": teams,
        "contended_s": run.contended_s,
        "makespan_s": run.end - min(j.submit for j in jobs),
        "evictions": {
            kind: sum(1 for e in run.evictions if e[1] == kind)
            for kind in (preemption.PRIORITY, preemption.RECLAIM)
        },
        "wasted_cpu_s": sum(e[2] for e in run.evictions),
        "splits": run.splits,
        "over_bound": len(over),
        "worst_bound_ratio": max(waits[j.id] / limit[j.id] for j in jobs),
    }


def compare(jobs: Sequence[Job]) -> dict[str, Any]:
    ours = figures(jobs, simulate(jobs, with_queues=True))
    current = figures(jobs, simulate(jobs, with_queues=False))
    worst = max(t["share_error"] for t in ours["teams"].values())
    goals = [
        {
            "goal": f"every team's share within {SHARE_TOLERANCE:.0%} of its weight's",
            "met": worst <= SHARE_TOLERANCE,
            "detail": f"worst {worst:.1%} off; current policy: worst "
            f"{max(t['share_error'] for t in current['teams'].values()):.1%} off",
        },
        {
            "goal": "no gang split",
            "met": ours["splits"] == 0,
            "detail": f"{ours['splits']} split starts or evictions",
        },
        {
            "goal": "no job starved (wait <= 2 x its queue's work ahead / its share + 3.6 s)",
            "met": ours["over_bound"] == 0,
            "detail": f"{ours['over_bound']} of {len(jobs)} over, worst at "
            f"{ours['worst_bound_ratio']:.2f} of its bound; current policy: "
            f"{current['over_bound']} over, worst at {current['worst_bound_ratio']:.1f}",
        },
    ]
    return {"queues": ours, "current": current, "goals": goals}


def report(seed: int, scale: float, accuracy: float) -> dict[str, Any]:
    jobs = workload(seed, scale, accuracy)
    return {"jobs": len(jobs), "half_life_s": HALF_LIFE_S, **compare(jobs)}


def render(section: dict[str, Any]) -> list[str]:
    ours, current = section["queues"], section["current"]
    lines = [
        f"teams: {section['jobs']} jobs of three teams, each with its own Queue (weights "
        "3:2:1), sharing the node for a minute; queues (usage half-life "
        f"{section['half_life_s']:.0f} s) against the current policy (priority order, no "
        "queues, no preemption), the same jobs in the same run",
    ]
    header = [
        "team",
        "weight",
        "share target",
        "queues",
        "current",
        "mean wait",
        "p90 wait",
        "max wait",
        "evicted",
    ]
    rows = [header]
    for name, mine in ours["teams"].items():
        theirs = current["teams"][name]
        rows.append(
            [
                name,
                str(mine["weight"]),
                f"{mine['target_share']:.1%}",
                f"{mine['share']:.1%}",
                f"{theirs['share']:.1%}",
                f"{mine['mean_wait_s']:.1f} / {theirs['mean_wait_s']:.1f} s",
                f"{mine['p90_wait_s']:.1f} / {theirs['p90_wait_s']:.1f} s",
                f"{mine['max_wait_s']:.1f} / {theirs['max_wait_s']:.1f} s",
                f"{mine['evictions']} ({mine['wasted_cpu_s']:.0f} CPU-s)",
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells))
    lines += [
        "(share: of the CPU-seconds allocated while every team had jobs waiting, "
        f"{ours['contended_s']:.0f} s under queues, {current['contended_s']:.0f} s under the "
        "current policy; waits: queues / current)",
        f"evictions under queues: {ours['evictions'][preemption.PRIORITY]} by priority "
        f"within a queue, {ours['evictions'][preemption.RECLAIM]} reclaimed across queues, "
        f"{ours['wasted_cpu_s']:.0f} CPU-seconds of work lost; makespan "
        f"{ours['makespan_s']:.1f} s (current {current['makespan_s']:.1f} s)",
        "",
    ]
    for goal in section["goals"]:
        lines.append(f"{'PASS' if goal['met'] else 'MISS'}  {goal['goal']} ({goal['detail']})")
    return lines
