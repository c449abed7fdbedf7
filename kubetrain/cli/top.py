"""``kubetrain top job [NAME]`` and ``kubetrain top node``: CPU, memory and GPUs asked for.

``top job``: per job, what its spec requests in all (each replica's template times its
replicas) and how many of its pods are running on a node. ``top node``: per node, what the
pods bound to it and not finished request, against what the node offers (allocatable).

Used amounts need a source of measurements: a metrics API (``metrics.k8s.io``) or node
statistics. Neither the local node agent nor kubetrain's API server provides one yet, so
both views show requests only and say so in a note.

Owns: the two views; the arithmetic is :mod:`kubetrain.cli.usage`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.cli import errors, jobkinds, jobs, jobstate, replicas, tables, target, usage
from kubetrain.kube import resource

USAGE_NOTE = (
    "requests only: measured usage needs metrics.k8s.io or node statistics, and this "
    "API server offers neither yet"
)
LIVE_PHASES = ("Pending", "Running", "Unknown")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "top",
        help="CPU, memory and GPUs requested by jobs or on nodes",
        description="Show the CPU, memory and GPUs that jobs request, or that the pods on "
        "each node request against what the node offers.",
    )
    views = parser.add_subparsers(dest="view", metavar="VIEW", required=True)
    job = views.add_parser("job", aliases=["jobs"], help="per job")
    job.add_argument("name", nargs="?", metavar="NAME", help="one job: NAME or KIND/NAME")
    job.add_argument("-o", "--output", choices=("json",), help="rows as JSON")
    target.add_arguments(job, all_namespaces=True)
    job.set_defaults(func=run_jobs)
    node = views.add_parser("node", aliases=["nodes"], help="per node")
    node.add_argument("-o", "--output", choices=("json",), help="rows as JSON")
    target.add_arguments(node)
    node.set_defaults(func=run_nodes)


def run_jobs(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _jobs(args))


def run_nodes(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _nodes(args))


def job_row(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One job's line, as plain values (for the table and for ``-o json``)."""
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
    }


def node_row(node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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


async def _jobs(args: argparse.Namespace) -> int:
    async with target.connect(args) as tgt:
        if args.name:
            found = [await jobs.find(tgt.client, jobkinds.parse_ref(args.name), tgt.namespace)]
        else:
            found = await jobs.list_jobs(tgt.client, tgt.list_namespace)
        pods = await asyncio.gather(*(jobs.pods(tgt.client, job) for job in found))
    rows = [job_row(job, p) for job, p in zip(found, pods, strict=True)]
    if args.output == "json":
        print(json.dumps({"jobs": rows, "note": USAGE_NOTE}, indent=2))
        return 0
    if not rows:
        where = "any namespace" if tgt.all_namespaces else f"namespace {tgt.namespace}"
        print(f"No jobs found in {where}.", file=sys.stderr)
        return 0
    headers = ["KIND", "NAME", "STATE", "PODS", "CPU(REQ)", "MEMORY(REQ)", "GPU(REQ)"]
    keys = ["kind", "name", "state", "pods", "cpu", "memory", "gpu"]
    if tgt.all_namespaces:
        headers, keys = ["NAMESPACE", *headers], ["namespace", *keys]
    sys.stdout.write(tables.render(headers, [[row[k] for k in keys] for row in rows]))
    print(f"note: {USAGE_NOTE}", file=sys.stderr)
    return 0


async def _nodes(args: argparse.Namespace) -> int:
    async with target.connect(args) as tgt:
        nodes, pods = await asyncio.gather(
            tgt.client.list_all(jobs.NODES), tgt.client.list_all(resource.PODS)
        )
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods.get("items") or []:
        bound = replicas.node(pod)
        if bound:
            by_node.setdefault(bound, []).append(pod)
    items = sorted(nodes.get("items") or [], key=jobs.name_of)
    rows = [node_row(node, by_node.get(jobs.name_of(node), [])) for node in items]
    if args.output == "json":
        print(json.dumps({"nodes": rows, "note": USAGE_NOTE}, indent=2))
        return 0
    if not rows:
        print(
            "No nodes have registered with the API server yet (locally, the node agent "
            "registers one when it runs).",
            file=sys.stderr,
        )
        return 0
    headers = ["NAME", "STATUS", "CPU(REQ/ALLOC)", "MEMORY(REQ/ALLOC)", "GPU(REQ/ALLOC)", "PODS"]
    keys = ["name", "status", "cpu", "memory", "gpu", "pods"]
    sys.stdout.write(tables.render(headers, [[row[k] for k in keys] for row in rows]))
    print(f"note: {USAGE_NOTE}", file=sys.stderr)
    return 0
