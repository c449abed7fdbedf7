"""``kubetrain wait NAME --for STATE --timeout 10m``: block until a job gets to a state.

Exit status: 0 when the job reaches the state, 1 when it ends in another final state (or is
deleted) and so never will, 2 when the timeout passes first. ``--for Created`` is reached by
every state after Pending; Complete and Succeeded are the same state. A job the operator
refuses as written (Failed, reason ``<Kind>FailedValidation``) ends the wait with exit 1 and
the operator's message: it will not get anywhere until its spec is fixed.

Owns: the command line and the exit statuses; the states are :mod:`kubetrain.cli.jobstate`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from kubetrain import _aio
from kubetrain.cli import durations, errors, jobkinds, jobs, jobstate, target

REACHED = 0
NEVER = 1
TIMED_OUT = 2
TARGETS = (
    jobstate.CREATED,
    jobstate.RUNNING,
    jobstate.SUSPENDED,
    jobstate.SUCCEEDED,
    jobstate.COMPLETE,
    jobstate.FAILED,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "wait",
        help="wait until a job reaches a state",
        description="Wait until a job reaches a state. Exit status: 0 when it does, 1 when "
        "the job ends in another final state (or is deleted), 2 on timeout.",
    )
    parser.add_argument("name", metavar="NAME", help="the job: NAME or KIND/NAME")
    parser.add_argument(
        "--for",
        dest="wanted",
        default=jobstate.SUCCEEDED,
        metavar="STATE",
        help=f"{', '.join(TARGETS)} (default: Succeeded; Complete is the same)",
    )
    parser.add_argument(
        "--timeout", default="10m", help="how long to wait, e.g. 90s, 10m, 2h (default 10m)"
    )
    target.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _wait(args))


async def _wait(args: argparse.Namespace) -> int:
    try:
        wanted = jobstate.canonical(args.wanted)
    except ValueError as exc:
        raise errors.UserError(str(exc)) from exc
    if wanted not in TARGETS:
        raise errors.UserError(f"--for {args.wanted}: accepted: {', '.join(TARGETS)}")
    timeout = durations.parse(args.timeout)
    ref = jobkinds.parse_ref(args.name)
    async with target.connect(args) as tgt:
        job = await jobs.find(tgt.client, ref, tgt.namespace)
        name = jobs.ref_of(job)
        last = jobstate.of(job)
        with contextlib.suppress(TimeoutError):
            async with _aio.timeout(timeout):
                async for current in jobs.follow(tgt.client, job):
                    if current is None:
                        print(
                            f"kubetrain: {name} was deleted before it was {wanted}", file=sys.stderr
                        )
                        return NEVER
                    last = jobstate.of(current)
                    if jobstate.reached(last, wanted):
                        print(f"{name} {last.phase}")
                        return REACHED
                    if last.refused:
                        print(
                            f"kubetrain: {name} cannot run as written: {last.message}; "
                            "fix its spec and wait again",
                            file=sys.stderr,
                        )
                        return NEVER
                    if last.finished:
                        why = f": {last.reason}: {last.message}" if last.message else ""
                        print(
                            f"kubetrain: {name} ended {last.phase}{why}; it will not be {wanted}",
                            file=sys.stderr,
                        )
                        return NEVER
    print(
        f"kubetrain: {name} is still {last.phase} after {durations.human(timeout)}, not {wanted}",
        file=sys.stderr,
    )
    return TIMED_OUT
