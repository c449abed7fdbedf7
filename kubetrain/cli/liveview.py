"""What ``kubetrain run`` shows about a job while it runs, as text.

On a terminal, :func:`frame` is a block redrawn in place below the scrolling logs: the job's
state, elapsed time and progress, then a row per replica (phase, restarts, node, elapsed).
Elsewhere (a pipe, CI logs), :func:`changes` gives one line per thing that changed, so the
output reads as a history. :func:`failure` is the summary printed when the job fails.

Owns: those texts. Pure: the job, its pods and the time are passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubetrain.cli import durations, jobkinds, jobs, jobstate, replicas, tables


@dataclass(frozen=True)
class ReplicaLine:
    """What the view tracks of one replica."""

    phase: str
    restarts: int
    node: str | None


def elapsed(pod: Mapping[str, Any] | None, now: datetime) -> float | None:
    """Seconds a replica's pod has been running (until its main container ended)."""
    status = (pod or {}).get("status") or {}
    start = durations.timestamp(status.get("startTime"))
    if start is None:
        return None
    end = None
    for container in status.get("containerStatuses") or []:
        finished = ((container.get("state") or {}).get("terminated") or {}).get("finishedAt")
        when = durations.timestamp(finished)
        if when is not None and (end is None or when > end):
            end = when
    if end is None or replicas.phase(pod) not in ("Succeeded", "Failed"):
        end = now
    return max(0.0, (end - start).total_seconds())


def headline(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime) -> str:
    state = jobstate.of(job, pods)
    spent = jobstate.duration(job, now)
    if spent is None:
        spent = jobstate.age(job, now)
    parts = [jobs.ref_of(job), state.phase]
    if spent is not None:
        parts.append(durations.elapsed(spent))
    progress = jobstate.progress(job)
    if progress:
        parts.append(progress)
    return "  ".join(parts)


def frame(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime, width: int = 0
) -> list[str]:
    """The block shown on a terminal, each line cut to ``width`` (0: no limit)."""
    rows = []
    for replica in replicas.of_job(job, pods):
        pod = replica.pod
        spent = elapsed(pod, now)
        waiting = replicas.waiting_reason(pod)
        phase = replicas.phase(pod) if pod is not None else "not created"
        rows.append(
            [
                replica.id,
                f"{phase} ({waiting})" if waiting else phase,
                replicas.restarts(pod) if pod is not None else None,
                replicas.node(pod),
                durations.elapsed(spent) if spent is not None else None,
            ]
        )
    lines = [headline(job, pods, now)]
    if rows:
        table = tables.render(
            ["REPLICA", "PHASE", "RESTARTS", "NODE", "ELAPSED"], rows, indent="  "
        )
        lines += table.rstrip("\n").split("\n")
    return [line[:width] if width > 0 else line for line in lines]


def snapshot(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> dict[str, ReplicaLine]:
    """Per replica, what :func:`changes` compares."""
    return {
        r.id: ReplicaLine(replicas.phase(r.pod), replicas.restarts(r.pod), replicas.node(r.pod))
        for r in replicas.of_job(job, pods)
        if r.pod is not None
    }


def changes(before: Mapping[str, ReplicaLine], after: Mapping[str, ReplicaLine]) -> list[str]:
    """One line per replica that appeared, moved to another phase or node, or restarted."""
    lines = []
    for rid, now in after.items():
        was = before.get(rid)
        if was is None:
            where = f" on {now.node}" if now.node else ""
            lines.append(f"{rid}: {now.phase}{where}")
            continue
        if now.restarts > was.restarts:
            lines.append(f"{rid}: restarted ({now.restarts} restarts)")
        if now.phase != was.phase:
            where = f" on {now.node}" if now.node and now.node != was.node else ""
            lines.append(f"{rid}: {was.phase} -> {now.phase}{where}")
        elif now.node != was.node and now.node:
            lines.append(f"{rid}: scheduled on {now.node}")
    return lines


@dataclass(frozen=True)
class Failure:
    """The replica that failed a job, how it ended, and the log lines to show."""

    replica: str
    pod: str
    termination: replicas.Termination | None


def failing_replica(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Failure | None:
    """The replica to blame for a failure: the first (in the framework's order) whose pod
    failed or whose container last exited non-zero."""
    kind = jobkinds.of(job)
    for replica in replicas.of_job(job, pods):
        pod = replica.pod
        if pod is None:
            continue
        ended = replicas.termination(pod, replicas.default_container(pod, kind))
        ended = ended or replicas.termination(pod)
        if replicas.phase(pod) == "Failed" or (ended is not None and ended.exit_code != 0):
            return Failure(replica.id, replica.pod_name or "", ended)
    return None


def failure(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    now: datetime,
    last_lines: Sequence[str] = (),
) -> list[str]:
    """The summary of a failed job: reason, failing replica with its exit code, log tail."""
    state = jobstate.of(job, pods)
    spent = jobstate.duration(job, now)
    after = f" after {durations.human(spent)}" if spent is not None else ""
    why = ": ".join(p for p in (state.reason, state.message) if p)
    lines = [f"{jobs.ref_of(job)} {state.phase}{after}" + (f": {why}" if why else "")]
    culprit = failing_replica(job, pods)
    if culprit is None:
        lines.append("no replica reported a failure of its own (see `kubetrain events`)")
        return lines
    ended = culprit.termination
    how = f"exited with code {ended}" if ended is not None else "failed"
    if ended is not None and ended.message:
        how += f": {ended.message.strip()}"
    lines.append(f"failing replica: {culprit.replica} (pod {culprit.pod}) {how}")
    if last_lines:
        lines.append(f"last {len(last_lines)} log lines of {culprit.replica}:")
        lines += [f"  {line}" for line in last_lines]
    return lines
