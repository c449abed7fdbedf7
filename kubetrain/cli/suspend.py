"""``kubetrain suspend NAME...`` and ``kubetrain resume NAME...``.

Suspending sets ``spec.runPolicy.suspend`` (v1 kinds) or ``spec.suspend`` (TrainJob) with a
merge patch; the controller then deletes the job's pods and keeps the job, and resuming
creates them again. A finished job cannot be suspended: there is nothing left to stop.

Owns: the two commands and the patch each kind takes (:func:`suspend_patch`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from kubetrain.cli import errors, jobkinds, jobs, jobstate, target


def register(subparsers: argparse._SubParsersAction) -> None:
    for verb, doing in (("suspend", "stop"), ("resume", "restart")):
        parser = subparsers.add_parser(
            verb,
            help=f"{verb} jobs ({doing} their pods, keep the job)",
            description=f"{verb.capitalize()} jobs: the controller {doing}s their pods and "
            "keeps the job object.",
        )
        parser.add_argument("names", nargs="+", metavar="NAME", help="jobs: NAME or KIND/NAME")
        target.add_arguments(parser)
        parser.set_defaults(func=run, suspend=verb == "suspend")


def suspend_patch(kind: jobkinds.JobKind, suspend: bool) -> dict[str, Any]:
    """The merge patch that suspends (or resumes) a job of ``kind``."""
    if kind.v1:
        return {"spec": {"runPolicy": {"suspend": suspend}}}
    return {"spec": {"suspend": suspend}}


def is_suspended(job: Mapping[str, Any]) -> bool:
    spec = job.get("spec") if isinstance(job.get("spec"), Mapping) else {}
    if jobkinds.of(job).v1:
        policy = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), Mapping) else {}
        return policy.get("suspend") is True
    return spec.get("suspend") is True


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _change(args))


async def _change(args: argparse.Namespace) -> int:
    async with target.connect(args) as tgt:
        chosen = await jobs.find_all(tgt.client, args.names, tgt.namespace)
        for job in chosen:
            state = jobstate.of(job)
            if args.suspend and state.finished:
                raise errors.UserError(
                    f"{jobs.ref_of(job)} has already {_ended(state)}; there is nothing to suspend"
                )
        for job in chosen:
            kind = jobkinds.of(job)
            name = f"{kind.qualified}/{jobs.name_of(job)}"
            if is_suspended(job) == args.suspend:
                print(f"{name} was already {'suspended' if args.suspend else 'not suspended'}")
                continue
            await tgt.client.patch(
                kind.resource,
                jobs.name_of(job),
                suspend_patch(kind, args.suspend),
                namespace=jobs.namespace_of(job),
            )
            print(f"{name} {'suspended' if args.suspend else 'resumed'}")
    return 0


def _ended(state: jobstate.State) -> str:
    return "failed" if state.failed else "succeeded"
