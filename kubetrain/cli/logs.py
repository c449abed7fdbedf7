"""``kubetrain logs NAME [--replica worker-1] [-f] [--tail N] [--since 5m] [--timestamps]``.

Prints the logs of all of a job's replicas, each line prefixed ``[worker-1]``; with ``-f`` it
keeps following, takes in pods that appear later, and ends when the job has finished.

Owns: the command line; reading and merging is :mod:`kubetrain.cli.logstream`.
"""

from __future__ import annotations

import argparse
import math
import sys

from kubetrain.cli import durations, errors, jobkinds, jobs, jobstate, logstream, target


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "logs",
        aliases=["log"],
        help="print (or follow) the merged logs of a job's replicas",
        description="Print the logs of a job's replicas, each line prefixed by its replica "
        "([master-0], [worker-1], [node-0]). With -f, follow them until the job finishes, "
        "including pods that start later.",
    )
    parser.add_argument("name", metavar="NAME", help="the job: NAME or KIND/NAME")
    add_options(parser)
    target.add_arguments(parser)
    parser.set_defaults(func=run)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-r",
        "--replica",
        action="append",
        default=[],
        metavar="REPLICA",
        help="only this replica (worker-1) or type (worker); repeatable",
    )
    parser.add_argument("-f", "--follow", action="store_true", help="follow until the job ends")
    parser.add_argument("--tail", type=int, metavar="N", help="only the last N lines of each")
    parser.add_argument("--since", metavar="DURATION", help="only lines newer than this (5m)")
    parser.add_argument("--timestamps", action="store_true", help="prefix each line's time")
    parser.add_argument("-p", "--previous", action="store_true", help="the previous container")
    parser.add_argument("-c", "--container", help="this container instead of the main one")
    parser.add_argument(
        "--no-prefix", dest="prefix", action="store_false", help="no [replica] prefixes"
    )


def options_of(args: argparse.Namespace) -> logstream.Options:
    if args.tail is not None and args.tail < 0:
        raise errors.UserError(f"--tail {args.tail}: must be 0 or more")
    since = math.ceil(durations.parse(args.since)) if args.since else None
    return logstream.Options(
        follow=args.follow,
        tail=args.tail,
        since_seconds=since or None,
        timestamps=args.timestamps,
        previous=args.previous,
        container=args.container,
    )


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _logs(args))


async def _logs(args: argparse.Namespace) -> int:
    options = options_of(args)
    ref = jobkinds.parse_ref(args.name)
    sink = logstream.Writer(prefix=args.prefix)
    async with target.connect(args) as tgt:
        job = await jobs.find(tgt.client, ref, tgt.namespace)
        name = jobs.ref_of(job)
        if args.follow:
            last = await logstream.Follower(
                tgt.client, job, sink, wanted=args.replica, options=options
            ).run()
            if last is None:
                print(f"kubetrain: {name} was deleted", file=sys.stderr)
                return 1
            return 0
        read, missing = await logstream.print_logs(tgt.client, job, args.replica, options, sink)
    if read == 0:
        state = jobstate.of(job).phase
        if missing:
            raise errors.UserError(
                f"no logs of {name} ({state}) yet: {'; '.join(missing)}; "
                f"`kubetrain logs -f {name}` waits for them"
            )
        what = f" matching --replica {', '.join(args.replica)}" if args.replica else ""
        raise errors.UserError(
            f"{name} ({state}) has no pods{what} yet; `kubetrain logs -f {name}` waits for them"
        )
    for why in missing:
        sink.note(f"no log of {why}")
    return 0
