"""What ``kubetrain run`` shows about a job while it runs, as text.

On a terminal, :func:`frame` is a block redrawn in place below the scrolling logs: the job's
state, elapsed time and progress, then a row per replica (phase, restarts, node, elapsed).
Elsewhere (a pipe, CI logs), :func:`changes` gives one line per thing that changed, so the
output reads as a history. :func:`failure` is the summary printed when the job fails.

A job that does not get going says why, in both: under each replica that does not run, the
reason and message (:func:`replica_reason`: the scheduler's, as in "0/1 nodes are available:
1 Insufficient cpu.", a container's waiting reason, or the pod's latest Warning event, such
as a FailedMount); and the latest Warning event of the job itself, which is where a
controller says it could not create a pod (a ResourceQuota's 403) or would not run the job
(it failed validation). The history also gets a line each time a pod's latest Warning event
changes.

Owns: those texts. Pure: the job, its pods, their Warning events and the time are passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubetrain.cli import durations, jobkinds, jobs, jobstate, replicas, tables

# Waiting reasons of a pod on its way: by themselves they explain nothing, an event may.
STARTING = frozenset({"ContainerCreating", "PodInitializing"})
DETAIL_INDENT = "      "


@dataclass(frozen=True)
class ReplicaLine:
    """What the view tracks of one replica: what it shows, and why it does not run (and its
    latest Warning event), as text ("" for none)."""

    phase: str
    restarts: int
    node: str | None
    why: str = ""
    warning: str = ""


# --- why a job does not run ---------------------------------------------------------------------


def involves(event: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Whether ``event`` is about ``obj``: the same uid where both have one (a pod or job of
    the same name from before is another object), else the same kind and name."""
    involved = event.get("involvedObject") or {}
    meta = obj.get("metadata") or {}
    if involved.get("uid") and meta.get("uid"):
        return bool(involved.get("uid") == meta.get("uid"))
    return bool(
        involved.get("kind") == obj.get("kind", "Pod") and involved.get("name") == meta.get("name")
    )


def latest_warning(
    warnings: Sequence[Mapping[str, Any]], obj: Mapping[str, Any] | None
) -> replicas.Reason | None:
    """The latest Warning event about ``obj`` among ``warnings`` (oldest first; of equal times
    the later one), as a reason and message."""
    if obj is None:
        return None
    found: Mapping[str, Any] | None = None
    for event in warnings:
        if event.get("type", "Warning") != "Warning" or not involves(event, obj):
            continue
        if found is None or jobs.event_time(event) >= jobs.event_time(found):
            found = event
    if found is None:
        return None
    return replicas.Reason(
        str(found.get("reason") or "Warning"), replicas.one_line(found.get("message"))
    )


def replica_reason(
    pod: Mapping[str, Any] | None, warnings: Sequence[Mapping[str, Any]] = ()
) -> replicas.Reason | None:
    """Why a replica's pod does not run: the scheduler's reason and message, or a container's
    waiting reason (CreateContainerError, CrashLoopBackOff, ...) with the kubelet's message;
    for a Pending pod that is only on its way (ContainerCreating), its latest Warning event
    (FailedMount, ...) says more. None for a pod that runs or has ended."""
    if pod is None or replicas.phase(pod) not in ("Pending", "Running"):
        return None
    why = replicas.why_waiting(pod)
    if why is not None and why.reason not in STARTING:
        return why
    if replicas.phase(pod) != "Pending":
        return None
    return latest_warning(warnings, pod) or why


def job_warning(
    job: Mapping[str, Any], warnings: Sequence[Mapping[str, Any]] = ()
) -> replicas.Reason | None:
    """The latest Warning event about the job itself (FailedCreatePod, FailedValidation, ...)."""
    return latest_warning(warnings, job)


def _detail(why: replicas.Reason, shown: str | None) -> str:
    """The text under a replica's row: the message alone when the row shows its reason."""
    return why.message if why.reason == shown and why.message else str(why)


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
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    now: datetime,
    width: int = 0,
    warnings: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """The block shown on a terminal, each line cut to ``width`` (0: no limit). ``warnings``
    are the Warning events about the job and its pods, oldest first."""
    rows = []
    details: list[str | None] = []
    underway = True  # every replica has a pod that runs
    for replica in replicas.of_job(job, pods):
        pod = replica.pod
        spent = elapsed(pod, now)
        waiting = replicas.waiting_reason(pod)
        phase = replicas.phase(pod) if pod is not None else "not created"
        underway = underway and phase in ("Running", "Succeeded")
        rows.append(
            [
                replica.id,
                f"{phase} ({waiting})" if waiting else phase,
                replicas.restarts(pod) if pod is not None else None,
                replicas.node(pod),
                durations.elapsed(spent) if spent is not None else None,
            ]
        )
        why = replica_reason(pod, warnings)
        details.append(_detail(why, waiting) if why is not None and why.message else None)
    lines = [headline(job, pods, now)]
    warning = job_warning(job, warnings)
    if warning is not None and not underway and not jobstate.of(job, pods).finished:
        lines.append(f"  Warning {warning}")
    if rows:
        table = tables.render(
            ["REPLICA", "PHASE", "RESTARTS", "NODE", "ELAPSED"], rows, indent="  "
        )
        header, *body = table.rstrip("\n").split("\n")
        lines.append(header)
        for row, detail in zip(body, details, strict=True):
            lines.append(row)
            if detail:
                lines.append(DETAIL_INDENT + detail)
    return [line[:width] if width > 0 else line for line in lines]


def snapshot(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    warnings: Sequence[Mapping[str, Any]] = (),
) -> dict[str, ReplicaLine]:
    """Per replica, what :func:`changes` compares."""
    out = {}
    for r in replicas.of_job(job, pods):
        if r.pod is None:
            continue
        why = replica_reason(r.pod, warnings)
        warning = latest_warning(warnings, r.pod)
        out[r.id] = ReplicaLine(
            replicas.phase(r.pod),
            replicas.restarts(r.pod),
            replicas.node(r.pod),
            str(why) if why is not None and why.message else "",
            str(warning) if warning is not None else "",
        )
    return out


def changes(before: Mapping[str, ReplicaLine], after: Mapping[str, ReplicaLine]) -> list[str]:
    """One line per replica that appeared, moved to another phase or node, or restarted; one
    when the reason it does not run changes, and one when its latest Warning event changes
    (unless that reason already said the same)."""
    lines = []
    for rid, now in after.items():
        was = before.get(rid) or ReplicaLine("", 0, None)
        if rid not in before:
            where = f" on {now.node}" if now.node else ""
            lines.append(f"{rid}: {now.phase}{where}")
        else:
            if now.restarts > was.restarts:
                lines.append(f"{rid}: restarted ({now.restarts} restarts)")
            if now.phase != was.phase:
                where = f" on {now.node}" if now.node and now.node != was.node else ""
                lines.append(f"{rid}: {was.phase} -> {now.phase}{where}")
            elif now.node != was.node and now.node:
                lines.append(f"{rid}: scheduled on {now.node}")
        if now.why and now.why != was.why:
            lines.append(f"{rid}: {now.why}")
        if now.warning and now.warning != was.warning and not _says(now.why, now.warning):
            lines.append(f"{rid}: Warning {now.warning}")
    return lines


def _says(why: str, warning: str) -> bool:
    """Whether a replica's reason already says what its Warning event says (the kubelet's
    ``Failed`` event repeats the waiting message after "Error: ")."""
    message = warning.partition(": ")[2].removeprefix("Error: ")
    return bool(why) and bool(message) and message in why


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
