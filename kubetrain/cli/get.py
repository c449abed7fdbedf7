"""``kubetrain get NAME``: one job in detail: its state and times, its queue (and the queue's
share) and why it waits, its conditions, a table of its replicas (pod, phase, node, restarts,
exit code) and its most recent events.

Owns: the command line and that layout. ``-o json|yaml|name`` prints the job object itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from kubetrain import kube, timefmt
from kubetrain.cli import (
    durations,
    errors,
    jobkinds,
    jobs,
    jobstate,
    output,
    queuing,
    replicas,
    tables,
    target,
)

RECENT_EVENTS = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "get",
        aliases=["describe"],
        help="show one job: state, conditions, replicas, events",
        description="Show one job: its state, conditions, replicas with their pods, and its "
        "recent events. NAME may be KIND/NAME (e.g. pytorchjob/train) when a name is used "
        "by jobs of several kinds.",
    )
    parser.add_argument("name", metavar="NAME", help="the job: NAME or KIND/NAME")
    parser.add_argument("-o", "--output", choices=output.FORMATS, help="print the job object")
    target.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _get(args))


async def _get(args: argparse.Namespace) -> int:
    ref = jobkinds.parse_ref(args.name)
    async with target.connect(args) as tgt:
        job = await jobs.find(tgt.client, ref, tgt.namespace)
        if args.output:
            sys.stdout.write(output.render([job], args.output, single=True))
            return 0
        pods = await jobs.pods(tgt.client, job)
        events = await jobs.events(tgt.client, job, pods)
        nodes = await jobs.runtime_nodes(tgt.client, job)
        queue, waits = await _queuing(tgt.client, job, pods)
    now = datetime.now(timezone.utc)
    sys.stdout.write(describe(job, pods, events, now, nodes, queue=queue, waiting=waits))
    return 0


async def _queuing(
    client: kube.Client, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> tuple[str | None, str | None]:
    """The job's queue line and why it waits (see :mod:`kubetrain.cli.queuing`)."""
    volcano, kueue = await queuing.served(client)
    group = None
    if volcano:
        group = await queuing.group(client, job)
    snap = await queuing.snapshot(client) if group is not None else None
    line = queuing.queue_line(job, group, snap)
    return line, queuing.waiting(job, group, pods, kueue_served=kueue)


def describe(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    now: datetime,
    runtime_nodes: int | None = None,
    *,
    queue: str | None = None,
    waiting: str | None = None,
) -> str:
    """The whole description; pure, for tests. ``runtime_nodes``: a TrainJob's nodes when its
    runtime decides them; ``queue`` and ``waiting``: :mod:`kubetrain.cli.queuing`'s lines,
    shown when there are any."""
    state = jobstate.of(job, pods)
    meta = job.get("metadata") or {}
    if jobkinds.of(job) is jobkinds.TRAINJOB:
        running, total = replicas.node_counts(job, pods, runtime_nodes)
    else:
        running, total = jobstate.replica_counts(job)
    duration = jobstate.duration(job, now)
    fields: list[tuple[str, object]] = [
        ("Name", meta.get("name")),
        ("Namespace", meta.get("namespace")),
        ("Kind", job.get("kind")),
        ("State", _state_line(state)),
        ("Created", _when(meta.get("creationTimestamp"), now)),
        ("Started", _when(_iso(jobstate.started(job)), now)),
        ("Finished", _when(_iso(jobstate.finished(job)), now)),
        ("Duration", durations.human(duration) if duration is not None else None),
        ("Replicas", f"{running}/{total if total is not None else '?'} running"),
    ]
    progress = jobstate.progress(job)
    if progress:
        fields.append(("Progress", progress))
    if queue:
        fields.append(("Queue", queue))
    if waiting:
        fields.append(("Waiting", waiting))
    width = max(len(k) for k, _ in fields) + 2
    text = "".join(
        f"{(k + ':').ljust(width)}{v if v not in (None, '') else '-'}\n" for k, v in fields
    )
    text += "\nConditions:\n" + _conditions(job, now)
    text += "\nReplicas:\n" + replica_table(job, pods, now)
    text += "\nEvents:\n" + event_table(events[-RECENT_EVENTS:], now)
    return text


def replica_table(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], now: datetime) -> str:
    rows = []
    for replica in replicas.of_job(job, pods):
        pod = replica.pod
        ended = replicas.termination(pod)
        age = durations.since(((pod or {}).get("metadata") or {}).get("creationTimestamp"), now)
        phase = replicas.phase(pod)
        waiting = replicas.waiting_reason(pod)
        rows.append(
            [
                replica.id,
                replica.pod_name,
                f"{phase} ({waiting})" if waiting and pod is not None else phase,
                replicas.node(pod),
                replicas.restarts(pod) if pod is not None else None,
                str(ended) if ended is not None else None,
                durations.human(age) if age is not None else None,
            ]
        )
    if not rows:
        return "  (none)\n"
    headers = ["REPLICA", "POD", "PHASE", "NODE", "RESTARTS", "EXIT CODE", "AGE"]
    return tables.render(headers, rows, indent="  ")


def event_table(events: Sequence[Mapping[str, Any]], now: datetime, *, indent: str = "  ") -> str:
    if not events:
        return f"{indent}(none)\n"
    rows = []
    for event in events:
        involved = event.get("involvedObject") or {}
        seen = durations.since(jobs.event_time(event), now)
        count = event.get("count")
        message = str(event.get("message") or "")
        if isinstance(count, int) and count > 1:
            message += f" (x{count})"
        rows.append(
            [
                durations.human(seen) if seen is not None else None,
                event.get("type"),
                event.get("reason"),
                f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
                message,
            ]
        )
    headers = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    return tables.render(headers, rows, indent=indent)


def _conditions(job: Mapping[str, Any], now: datetime) -> str:
    rows = []
    for condition in jobstate.conditions(job):
        changed = durations.since(
            condition.get("lastTransitionTime") or condition.get("lastUpdateTime"), now
        )
        rows.append(
            [
                condition.get("type"),
                condition.get("status"),
                condition.get("reason"),
                durations.human(changed) if changed is not None else None,
                condition.get("message"),
            ]
        )
    if not rows:
        return "  (none yet: the controller has not reported on this job)\n"
    return tables.render(["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"], rows, indent="  ")


def _state_line(state: jobstate.State) -> str:
    if state.reason and state.message:
        return f"{state.phase} ({state.reason}: {state.message})"
    return state.phase


def _when(value: str | None, now: datetime) -> str | None:
    ago = durations.since(value, now)
    return f"{value} ({durations.human(ago)} ago)" if value and ago is not None else None


def _iso(when: datetime | None) -> str | None:
    return timefmt.seconds(when) if when is not None else None
