"""``kubetrain delete NAME... | --all | --state STATE``: delete jobs.

Deletion cascades in the background by default, as kubectl's does: the job object goes at
once and the garbage collector then removes its pods and services. ``--cascade foreground``
waits until the pods are gone too; ``--cascade orphan`` leaves them running.

Owns: the command line. Selecting jobs by kind, state and label is shared with ``list``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping
from typing import Any, cast

from kubetrain import _aio, kube
from kubetrain.cli import durations, errors, jobkinds, jobs, listing, target

CASCADES = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "delete",
        aliases=["rm"],
        help="delete jobs",
        description="Delete jobs by name, or every job the filters select (--all, --state, "
        "--kind, -l). Pods and services go with them, in the background unless --cascade "
        "foreground.",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="jobs: NAME or KIND/NAME")
    parser.add_argument("--all", action="store_true", help="every job the filters select")
    listing.add_filters(parser)
    parser.add_argument(
        "--cascade",
        choices=tuple(CASCADES),
        default="background",
        help="background (default): return at once, pods go after; foreground: wait until "
        "they are gone; orphan: leave them",
    )
    parser.add_argument(
        "--timeout", default="5m", help="how long --cascade foreground waits (default 5m)"
    )
    target.add_arguments(parser, all_namespaces=True)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _delete(args))


async def _delete(args: argparse.Namespace) -> int:
    filtered = bool(args.all or args.state or args.kind or args.selector)
    if args.names and filtered:
        raise errors.UserError("name jobs, or select them with --all/--state/--kind/-l, not both")
    if not args.names and not filtered:
        raise errors.UserError(
            "name the jobs to delete, or select them with --all, --state, --kind or -l"
        )
    if args.names and getattr(args, "all_namespaces", False):
        raise errors.UserError("-A selects jobs in every namespace; it does not go with names")
    timeout = durations.parse(args.timeout)
    policy = cast(kube.PropagationPolicy, CASCADES[args.cascade])
    async with target.connect(args) as tgt:
        if args.names:
            chosen = await jobs.find_all(tgt.client, args.names, tgt.namespace)
        else:
            chosen = await listing.matching(tgt, args)
            if not chosen:
                where = "any namespace" if tgt.all_namespaces else f"namespace {tgt.namespace}"
                print(f"No jobs to delete in {where}.", file=sys.stderr)
                return 0
        failed = False
        for job in chosen:
            try:
                await _delete_one(tgt.client, job, policy)
            except kube.NotFound:
                print(f"{_name(job)} was already gone", file=sys.stderr)
                continue
            except kube.ApiError as exc:
                failed = True
                print(f"kubetrain: {_name(job)}: {errors.describe(exc)}", file=sys.stderr)
                continue
            print(f"{_name(job)} deleted")
        if policy == "Foreground":
            await _wait_gone(tgt.client, chosen, timeout)
    return 1 if failed else 0


async def _delete_one(client: kube.Client, job: Mapping[str, Any], policy: str) -> None:
    kind = jobkinds.of(job)
    uid = (job.get("metadata") or {}).get("uid")
    await client.delete(  # the uid precondition: never a job of that name created since
        kind.resource,
        jobs.name_of(job),
        namespace=jobs.namespace_of(job),
        propagation_policy=cast(kube.PropagationPolicy, policy),
        preconditions={"uid": str(uid)} if uid else None,
    )


async def _wait_gone(client: kube.Client, chosen: list[dict[str, Any]], timeout: float) -> None:
    async def gone(job: Mapping[str, Any]) -> None:
        async for current in jobs.follow(client, job):
            if current is None or current.get("metadata", {}).get("uid") != _uid(job):
                return

    try:
        async with _aio.timeout(timeout):
            await asyncio.gather(*(gone(job) for job in chosen))
    except TimeoutError as exc:
        raise errors.UserError(
            f"jobs still being deleted after {durations.human(timeout)} (their pods are "
            "terminating); `kubetrain list` shows what is left"
        ) from exc


def _uid(job: Mapping[str, Any]) -> str | None:
    return (job.get("metadata") or {}).get("uid")


def _name(job: Mapping[str, Any]) -> str:
    return f"{jobkinds.of(job).qualified}/{jobs.name_of(job)}"
