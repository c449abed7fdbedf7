"""``kubetrain events NAME``: every event about a job and its pods, oldest first.

Owns: the command line. The table is :func:`kubetrain.cli.get.event_table`, the reading
:func:`kubetrain.cli.jobs.events`.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone

from kubetrain.cli import errors, get, jobkinds, jobs, output, target


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "events",
        help="show the events of a job and its pods",
        description="Show every event about a job and its pods, oldest first.",
    )
    parser.add_argument("name", metavar="NAME", help="the job: NAME or KIND/NAME")
    parser.add_argument("-o", "--output", choices=("json", "yaml"), help="print Event objects")
    target.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _events(args))


async def _events(args: argparse.Namespace) -> int:
    ref = jobkinds.parse_ref(args.name)
    async with target.connect(args) as tgt:
        job = await jobs.find(tgt.client, ref, tgt.namespace)
        pods = await jobs.pods(tgt.client, job)
        found = await jobs.events(tgt.client, job, pods)
    if args.output:
        sys.stdout.write(output.render(found, args.output))
        return 0
    if not found:
        print(f"No events for {jobs.ref_of(job)} yet.", file=sys.stderr)
        return 0
    sys.stdout.write(get.event_table(found, datetime.now(timezone.utc), indent=""))
    return 0
