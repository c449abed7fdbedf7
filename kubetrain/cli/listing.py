"""``kubetrain list``: the jobs of every kind in one table, or as JSON, YAML or names.

Columns: KIND, NAME, STATE, AGE, DURATION (start to end, or to now while running), REPLICAS
(running/desired, as the controller reports them) and PROGRESS when some job reports it;
``-A`` adds NAMESPACE first, ``-o wide`` adds the reason of the state and always PROGRESS.

Owns: the command line and the table. Finding jobs is :mod:`kubetrain.cli.jobs`, their state
:mod:`kubetrain.cli.jobstate`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from kubetrain import kube
from kubetrain.cli import (
    durations,
    errors,
    jobkinds,
    jobs,
    jobstate,
    output,
    replicas,
    tables,
    target,
)

FORMATS = ("wide", *output.FORMATS)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "list",
        aliases=["ls"],
        help="list jobs of every kind",
        description="List training jobs: every kubeflow.org/v1 kind and TrainJob.",
    )
    add_filters(parser)
    parser.add_argument(
        "-o", "--output", choices=FORMATS, help="wide, json, yaml or name (default: a table)"
    )
    target.add_arguments(parser, all_namespaces=True)
    parser.set_defaults(func=run)


def add_filters(parser: argparse.ArgumentParser) -> None:
    """``--kind``, ``--state`` and ``-l``: shared with ``delete``."""
    parser.add_argument(
        "--kind",
        action="append",
        metavar="KIND",
        help="only jobs of this kind (pytorchjob, tfjob, trainjob, ...; repeatable, or "
        "comma-separated)",
    )
    parser.add_argument(
        "--state",
        action="append",
        metavar="STATE",
        help=f"only jobs in this state ({', '.join(jobstate.STATES)}; repeatable, or "
        "comma-separated)",
    )
    parser.add_argument("-l", "--selector", help="label selector, e.g. team=vision")


def kinds_of(args: argparse.Namespace) -> list[jobkinds.JobKind]:
    names = [n for given in args.kind or () for n in given.split(",") if n.strip()]
    if not names:
        return list(jobkinds.KINDS)
    chosen = [jobkinds.find(n) for n in names]
    return [k for k in jobkinds.KINDS if k in chosen]


def states_of(args: argparse.Namespace) -> list[str]:
    names = [n for given in args.state or () for n in given.split(",") if n.strip()]
    try:
        return [jobstate.canonical(n) for n in names]
    except ValueError as exc:
        raise errors.UserError(str(exc)) from exc


async def matching(tgt: target.Target, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The jobs the filters select, in the target's namespace (or all with ``-A``)."""
    kinds = kinds_of(args)
    states = states_of(args)
    found = await jobs.list_jobs(
        tgt.client, tgt.list_namespace, kinds, label_selector=args.selector
    )
    if states:
        found = [j for j in found if any(jobstate.matches(jobstate.of(j), s) for s in states)]
    return found


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _list(args))


async def _list(args: argparse.Namespace) -> int:
    async with target.connect(args) as tgt:
        found = await matching(tgt, args)
        nodes = {} if args.output in output.FORMATS else await node_counts(tgt.client, found)
    if args.output in output.FORMATS:
        sys.stdout.write(output.render(found, args.output))
        return 0
    if not found:
        where = "any namespace" if tgt.all_namespaces else f"namespace {tgt.namespace}"
        print(f"No jobs found in {where}.", file=sys.stderr)
        return 0
    now = datetime.now(timezone.utc)
    sys.stdout.write(
        table(found, now, wide=args.output == "wide", namespaces=tgt.all_namespaces, nodes=nodes)
    )
    return 0


async def node_counts(
    client: kube.Client, found: Sequence[Mapping[str, Any]]
) -> dict[tuple[str, str], tuple[int, int | None]]:
    """(running, desired) nodes of each TrainJob in ``found``, by (namespace, name): from its
    pods and its runtime (see :func:`replicas.node_counts`)."""
    trainjobs = [job for job in found if jobkinds.of(job) is jobkinds.TRAINJOB]
    if not trainjobs:
        return {}
    pods = await jobs.trainjob_pods(client, (jobs.namespace_of(job) for job in trainjobs))
    counts = {}
    known: jobs.RuntimeNodes = {}  # jobs of one runtime read it once
    for job in trainjobs:
        nodes = await jobs.runtime_nodes(client, job, known)
        key = (jobs.namespace_of(job), jobs.name_of(job))
        counts[key] = replicas.node_counts(job, pods.get(key, []), nodes)
    return counts


def table(
    found: Sequence[Mapping[str, Any]],
    now: datetime,
    *,
    wide: bool,
    namespaces: bool,
    nodes: Mapping[tuple[str, str], tuple[int, int | None]] | None = None,
) -> str:
    """The job table; pure, for tests. ``nodes``: TrainJobs' (running, desired) nodes, by
    (namespace, name), counted by :func:`node_counts`."""
    progress = [jobstate.progress(job) for job in found]
    show_progress = wide or any(progress)
    headers = ["KIND", "NAME", "STATE", "AGE", "DURATION", "REPLICAS"]
    headers = (["NAMESPACE"] if namespaces else []) + headers
    if show_progress:
        headers.append("PROGRESS")
    if wide:
        headers.append("REASON")
    rows = []
    for job, done in zip(found, progress, strict=True):
        state = jobstate.of(job)
        counted = (nodes or {}).get((jobs.namespace_of(job), jobs.name_of(job)))
        running, total = counted if counted is not None else jobstate.replica_counts(job)
        age = jobstate.age(job, now)
        duration = jobstate.duration(job, now)
        row: list[object] = [
            job.get("kind"),
            jobs.name_of(job),
            state.phase,
            durations.human(age) if age is not None else None,
            durations.human(duration) if duration is not None else None,
            f"{running}/{total if total is not None else '?'}",
        ]
        if namespaces:
            row.insert(0, jobs.namespace_of(job))
        if show_progress:
            row.append(done)
        if wide:
            row.append(state.reason)
        rows.append(row)
    return tables.render(headers, rows)
