"""``kubetrain top job [NAME]``, ``kubetrain top node`` and ``kubetrain top queue``: CPU,
memory and GPUs requested and used, and the queues' shares.

``top job``: per job, what its spec requests in all (each replica's template times its
replicas), how many of its pods are running on a node, and what those pods use now. ``top
node``: per node, what the pods bound to it and not finished request against what the node
offers (allocatable), and what the node uses now.

Usage comes from the metrics API, ``metrics.k8s.io/v1beta1`` (PodMetrics and NodeMetrics), as
for ``kubectl top``: the local API server serves it from its node agent's measurements, a
cluster from metrics-server. Without it (404, or 503 from an unavailable metrics-server) both
views keep showing requests and say, in one note, what is missing. GPU usage is not measured
(``-``).

``top queue``: per Volcano Queue, its state, weight, capability, what its running pods hold,
its deserved share and how much of it they hold (:mod:`kubetrain.cli.queuing`). ``top job``
adds a QUEUE column when any job listed is in a queue.

Owns: the views and adding up measured usage; requests are :mod:`kubetrain.cli.usage`'s,
queues :mod:`kubetrain.cli.queuing`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain import kube
from kubetrain.cli import (
    errors,
    jobkinds,
    jobs,
    jobstate,
    queuing,
    replicas,
    tables,
    target,
    usage,
)
from kubetrain.kube import resource

POD_METRICS = kube.Resource("metrics.k8s.io", "v1beta1", "pods", kind="PodMetrics")
NODE_METRICS = kube.Resource(
    "metrics.k8s.io", "v1beta1", "nodes", namespaced=False, kind="NodeMetrics"
)
USAGE_NOTE = (
    "requests only: measured usage needs the metrics API (metrics.k8s.io, from metrics-server "
    "on a cluster), which this API server does not serve"
)
LIVE_PHASES = ("Pending", "Running", "Unknown")
NOT_MEASURED = "-"
USED_HELP = (
    "USED is what the metrics API (metrics.k8s.io) measured last: the local control plane's "
    "node agent samples every 10 s, a cluster needs metrics-server. GPU use is not measured "
    "and shows as -."
)

PodKey = tuple[str, str]  # (namespace, name)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "top",
        help="CPU, memory and GPUs requested and used by jobs or on nodes",
        description="Show the CPU, memory and GPUs that jobs request and use, or that the pods "
        "on each node request against what the node offers, with what it uses. " + USED_HELP,
    )
    views = parser.add_subparsers(dest="view", metavar="VIEW", required=True)
    job = views.add_parser("job", aliases=["jobs"], help="per job", description=USED_HELP)
    job.add_argument("name", nargs="?", metavar="NAME", help="one job: NAME or KIND/NAME")
    job.add_argument("-o", "--output", choices=("json",), help="rows as JSON")
    target.add_arguments(job, all_namespaces=True)
    job.set_defaults(func=run_jobs)
    node = views.add_parser("node", aliases=["nodes"], help="per node", description=USED_HELP)
    node.add_argument("-o", "--output", choices=("json",), help="rows as JSON")
    target.add_arguments(node)
    node.set_defaults(func=run_nodes)
    queue = views.add_parser(
        "queue", aliases=["queues"], help="per Volcano queue", description=queuing.QUEUE_HELP
    )
    queue.add_argument("-o", "--output", choices=("json",), help="rows as JSON")
    target.add_arguments(queue)
    queue.set_defaults(func=run_queues)


def run_jobs(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _jobs(args))


def run_nodes(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _nodes(args))


def run_queues(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _queues(args))


# -- measured usage -----------------------------------------------------------------------------


def metrics_usage(item: Mapping[str, Any]) -> usage.Amounts:
    """What a PodMetrics (its containers, added up) or a NodeMetrics says is in use."""
    parts = item.get("containers") if "containers" in item else [item]
    total = usage.Amounts()
    for part in parts if isinstance(parts, list) else []:
        used = part.get("usage") if isinstance(part, Mapping) else None
        if isinstance(used, Mapping):
            total = total + usage.resources_requests({"requests": used})
    return total


def by_pod(listed: Mapping[str, Any]) -> dict[PodKey, usage.Amounts]:
    """A PodMetricsList's usage by (namespace, name)."""
    found = {}
    for item in listed.get("items") or []:
        meta = item.get("metadata") or {}
        found[(str(meta.get("namespace")), str(meta.get("name")))] = metrics_usage(item)
    return found


def pods_used(
    pods: Sequence[Mapping[str, Any]], measured: Mapping[PodKey, usage.Amounts]
) -> usage.Amounts | None:
    """What a job's pods use: the sum over those measured; None when none is."""
    found = [measured.get((jobs.namespace_of(p), jobs.name_of(p))) for p in pods]
    known = [a for a in found if a is not None]
    return sum(known, usage.Amounts()) if known else None


# -- rows ---------------------------------------------------------------------------------------


def job_row(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], used: usage.Amounts | None = None
) -> dict[str, Any]:
    """One job's line, as plain values (for the table and for ``-o json``); ``used`` is what
    its pods use (None: not measured)."""
    asked = usage.job_requests(job)
    expected = sum(1 for _ in replicas.expected(job)) or None
    running = sum(1 for p in pods if replicas.phase(p) == "Running")
    return {
        "namespace": jobs.namespace_of(job),
        "kind": job.get("kind"),
        "name": jobs.name_of(job),
        "state": jobstate.of(job, pods).phase,
        "pods": f"{running}/{expected if expected is not None else len(pods)}",
        "cpu": usage.cpu(asked.cpu),
        "memory": usage.memory(asked.memory),
        "gpu": usage.gpu(asked.gpu),
        "cpuUsed": usage.cpu(used.cpu) if used is not None else None,
        "memoryUsed": usage.memory(used.memory) if used is not None else None,
        "gpuUsed": None,
    }


def node_row(
    node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], used: usage.Amounts | None = None
) -> dict[str, Any]:
    offered = usage.node_allocatable(node)
    live = [p for p in pods if replicas.phase(p) in LIVE_PHASES]
    asked = sum((usage.pod_requests(p) for p in live), usage.Amounts())
    return {
        "name": jobs.name_of(node),
        "status": node_status(node),
        "cpu": f"{usage.cpu(asked.cpu)}/{usage.cpu(offered.cpu)}",
        "memory": f"{usage.memory(asked.memory)}/{usage.memory(offered.memory)}",
        "gpu": f"{usage.gpu(asked.gpu)}/{usage.gpu(offered.gpu)}",
        "pods": len(live),
        "cpuUsed": usage.cpu(used.cpu) if used is not None else None,
        "memoryUsed": usage.memory(used.memory) if used is not None else None,
        "gpuUsed": None,
    }


def node_status(node: Mapping[str, Any]) -> str:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )
    text = "Ready" if ready else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


JOB_COLUMNS = (
    ("KIND", "kind"),
    ("NAME", "name"),
    ("STATE", "state"),
    ("PODS", "pods"),
    ("CPU(REQ)", "cpu"),
    ("CPU(USED)", "cpuUsed"),
    ("MEMORY(REQ)", "memory"),
    ("MEMORY(USED)", "memoryUsed"),
    ("GPU(REQ)", "gpu"),
    ("GPU(USED)", "gpuUsed"),
)
NODE_COLUMNS = (
    ("NAME", "name"),
    ("STATUS", "status"),
    ("CPU(REQ/ALLOC)", "cpu"),
    ("CPU(USED)", "cpuUsed"),
    ("MEMORY(REQ/ALLOC)", "memory"),
    ("MEMORY(USED)", "memoryUsed"),
    ("GPU(REQ/ALLOC)", "gpu"),
    ("GPU(USED)", "gpuUsed"),
    ("PODS", "pods"),
)


def render(columns: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, Any]]) -> str:
    """The table; an unmeasured amount shows as ``-``."""
    headers = [h for h, _ in columns]
    cells = [[NOT_MEASURED if row[k] is None else row[k] for _, k in columns] for row in rows]
    return tables.render(headers, cells)


# -- reading ------------------------------------------------------------------------------------


async def _metrics(
    client: kube.Client, r: kube.Resource, namespace: str | None = None
) -> tuple[dict[str, Any] | None, str]:
    """A metrics list, or None with the note that says why there is none: the API is not
    served (404), its server is unavailable (503), or this user may not read it."""
    try:
        return await client.list(r, namespace=namespace), ""
    except kube.NotFound:
        return None, USAGE_NOTE
    except kube.Forbidden as exc:
        return None, f"requests only: the metrics API refused to show usage: {exc.message}"
    except kube.ServerError as exc:
        if exc.code != 503:
            raise
        return None, f"requests only: the metrics API is unavailable: {exc.message}"


async def _jobs(args: argparse.Namespace) -> int:
    async with target.connect(args) as tgt:
        if args.name:
            found = [await jobs.find(tgt.client, jobkinds.parse_ref(args.name), tgt.namespace)]
            where = jobs.namespace_of(found[0])
        else:
            found = await jobs.list_jobs(tgt.client, tgt.list_namespace)
            where = tgt.list_namespace
        pods, (measured, note), groups = await asyncio.gather(
            asyncio.gather(*(jobs.pods(tgt.client, job) for job in found)),
            _metrics(tgt.client, POD_METRICS, where),
            _pod_groups(tgt.client, where),
        )
    per_pod = by_pod(measured) if measured is not None else {}
    rows = [
        job_row(job, p, pods_used(p, per_pod) if measured is not None else None)
        for job, p in zip(found, pods, strict=True)
    ]
    for job, row in zip(found, rows, strict=True):
        row["queue"] = queuing.queue_of_job(job, queuing.group_of_job(job, groups))
    if args.output == "json":
        print(json.dumps({"jobs": rows, **({"note": note} if note else {})}, indent=2))
        return 0
    if not rows:
        where_text = "any namespace" if tgt.all_namespaces else f"namespace {tgt.namespace}"
        print(f"No jobs found in {where_text}.", file=sys.stderr)
        return 0
    columns = JOB_COLUMNS
    if any(row["queue"] for row in rows):
        columns = (*columns[:3], ("QUEUE", "queue"), *columns[3:])
    if tgt.all_namespaces:
        columns = (("NAMESPACE", "namespace"), *columns)
    sys.stdout.write(render(columns, rows))
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0


async def _pod_groups(client: kube.Client, namespace: str | None) -> list[dict[str, Any]]:
    """The Volcano PodGroups of ``namespace`` (None: every one); none where not served."""
    volcano, _ = await queuing.served(client)
    if not volcano:
        return []
    listed = await client.list_all(queuing.POD_GROUPS, namespace=namespace)
    return list(listed.get("items") or [])


async def _queues(args: argparse.Namespace) -> int:
    async with target.connect(args) as tgt:
        snap = await queuing.snapshot(tgt.client)
    if snap is None:
        print(
            "This API server serves no Volcano Queue (scheduling.volcano.sh/v1beta1): "
            "install Volcano on a cluster; the local control plane serves it.",
            file=sys.stderr,
        )
        return 0
    rows = queuing.queue_rows(snap)
    if args.output == "json":
        print(json.dumps({"queues": rows}, indent=2))
        return 0
    sys.stdout.write(render(queuing.QUEUE_COLUMNS, rows))
    return 0


async def _nodes(args: argparse.Namespace) -> int:
    async with target.connect(args) as tgt:
        nodes, pods, (measured, note) = await asyncio.gather(
            tgt.client.list_all(jobs.NODES),
            tgt.client.list_all(resource.PODS),
            _metrics(tgt.client, NODE_METRICS),
        )
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods.get("items") or []:
        bound = replicas.node(pod)
        if bound:
            by_node.setdefault(bound, []).append(pod)
    used = {jobs.name_of(item): metrics_usage(item) for item in (measured or {}).get("items") or []}
    items = sorted(nodes.get("items") or [], key=jobs.name_of)
    rows = [
        node_row(node, by_node.get(jobs.name_of(node), []), used.get(jobs.name_of(node)))
        for node in items
    ]
    if args.output == "json":
        print(json.dumps({"nodes": rows, **({"note": note} if note else {})}, indent=2))
        return 0
    if not rows:
        print(
            "No nodes have registered with the API server yet (locally, the node agent "
            "registers one when it runs).",
            file=sys.stderr,
        )
        return 0
    sys.stdout.write(render(NODE_COLUMNS, rows))
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0
