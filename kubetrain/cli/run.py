"""``kubetrain run -f JOB.yaml``: submit a job, watch it live, and exit with its outcome.

While the job runs, its replicas' logs stream merged (``[worker-1] ...``) and a live view
shows each replica's phase, restarts, node and elapsed time, and why a replica does not run
(the scheduler's message, a container's waiting reason, the pod's or the job's latest Warning
event): on a terminal a block redrawn in place under the logs, otherwise one ``[kubetrain]``
line on stderr per change. The command ends when the job does:

- exit 0 when it succeeded;
- exit 1 when it failed, after a summary: the reason, the failing replica and its exit code,
  and that replica's last log lines; also exit 1 when the job is deleted meanwhile;
- on Ctrl-C, a terminal is asked whether to delete the job or leave it running; without a
  terminal it is left running and the command to delete it is printed; exit 130.

``-f`` may be given several times: the files are read as one, in order, and must hold exactly
one job between them; the other objects (a runtime, a ConfigMap) are applied first, as
``apply`` would. The job's pods of the host image run in the directory the command was typed
in (:mod:`kubetrain.cli.workdir`); ``--dry-run`` prints what would be submitted, that
included, and touches no server.

Owns: the command line, the terminal handling and the sequence above. The texts are
:mod:`kubetrain.cli.liveview`, the logs :mod:`kubetrain.cli.logstream`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TextIO

import yaml

from kubetrain import _aio, kube
from kubetrain.cli import (
    apply,
    durations,
    errors,
    jobkinds,
    jobs,
    jobstate,
    liveview,
    logstream,
    output,
    replicas,
    target,
    validate,
    workdir,
)
from kubetrain.kube import resource, watch

FAILURE_TAIL = 20  # log lines of the failing replica in the summary
TICK = 1.0  # seconds between redraws of the elapsed times on a terminal
REDRAW_DELAY = 0.05  # seconds of quiet in the logs before the block is drawn again
ERASE_BLOCK = "\x1b[{n}F\x1b[J"  # cursor up n lines to column 1, clear to the end of screen
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="submit a job, show it live with its logs, exit with its outcome",
        description="Submit the job in FILE, stream its replicas' logs with a live view of "
        "their state, and exit 0 only if it succeeds. On failure, print the reason, the "
        "failing replica, its exit code and last log lines, and exit 1. Ctrl-C asks whether "
        "to delete the job (without a terminal it is left running).",
    )
    validate.add_files_argument(
        parser,
        "the job manifest, or - for stdin; several -f are read as one (exactly one job "
        "among them; the other objects, such as its runtime, are applied first)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the objects as they would be submitted (the job with the working "
        "directory its host-image pods get); submit nothing",
    )
    target.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.dry_run:
        return errors.run(args, lambda: _dry_run(args))
    return errors.run(args, lambda: _run(args))


async def _read(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The objects of the files, the job among them written for the directory typed in, and
    that job."""
    objects = await apply.read(args.filename)
    found = [i for i, obj in enumerate(objects) if jobkinds.is_job(obj)]
    if len(found) != 1:
        kinds = ", ".join(k.kind for k in jobkinds.KINDS)
        files = ", ".join(args.filename)
        holds = "holds" if len(args.filename) == 1 else "hold"
        raise errors.UserError(
            f"{files} {holds} {len(found)} jobs; `kubetrain run` takes exactly one "
            f"({kinds}); `kubetrain apply` takes several"
        )
    objects[found[0]] = workdir.typed_in(objects[found[0]], os.getcwd())
    return objects, objects[found[0]]


async def _dry_run(args: argparse.Namespace) -> int:
    objects, _ = await _read(args)
    sys.stdout.write(yaml.safe_dump_all(objects, sort_keys=False, allow_unicode=True))
    return 0


class Screen:
    """The sink for logs and the live view, on a terminal or on plain streams.

    On a terminal, log lines are written above the block: the block is erased before the
    first of a burst of lines and drawn again once the burst is over (:data:`REDRAW_DELAY`),
    so a chatty job does not pay a redraw per line.
    """

    def __init__(self, out: TextIO, err: TextIO, *, tty: bool) -> None:
        self.out = out
        self.err = err
        self.tty = tty
        self.job: Mapping[str, Any] | None = None
        self.pods: list[Mapping[str, Any]] = []
        self.warnings: list[Mapping[str, Any]] = []
        self._drawn = 0
        self._redraw: asyncio.TimerHandle | None = None
        self._seen: dict[str, liveview.ReplicaLine] = {}
        self._phase: str | None = None
        self._job_warning = ""

    # -- logstream.Sink
    def line(self, replica: str, text: str) -> None:
        if not self.tty:
            self.out.write(f"[{replica}] {text}\n")
            self.out.flush()
            return
        self._erase()
        self.out.write(f"[{replica}] {text}\n")
        self._draw_soon()

    def note(self, text: str) -> None:
        if self.tty:
            self.line("kubetrain", text)
        else:
            print(f"[kubetrain] {text}", file=self.err, flush=True)

    # -- the view
    def show(
        self,
        job: Mapping[str, Any],
        pods: list[Mapping[str, Any]],
        warnings: list[Mapping[str, Any]] | None = None,
    ) -> None:
        """The job, its pods and (when given) the Warning events about them, now."""
        self.job, self.pods = job, pods
        if warnings is not None:
            self.warnings = warnings
        if self.tty:
            self._erase()
            self._draw()
            return
        phase = jobstate.of(job, pods).phase
        lines = []
        if phase != self._phase:
            lines.append(f"{jobs.ref_of(job)} {phase}")
            self._phase = phase
        warning = liveview.job_warning(job, self.warnings)
        if warning is not None and str(warning) != self._job_warning:
            lines.append(f"{jobs.ref_of(job)}: Warning {warning}")
            self._job_warning = str(warning)
        current = liveview.snapshot(job, pods, self.warnings)
        lines += liveview.changes(self._seen, current)
        self._seen = current
        for text in lines:
            print(f"[kubetrain] {text}", file=self.err, flush=True)

    def tick(self) -> None:
        if self.tty and self.job is not None:
            self._erase()
            self._draw()

    def leave(self) -> None:
        """Draw the last block and stop: it stays on the screen above what follows."""
        self.tick()
        self._drawn = 0
        self.out.flush()

    def _erase(self) -> None:
        if self._redraw is not None:
            self._redraw.cancel()
            self._redraw = None
        if self._drawn:
            self.out.write(ERASE_BLOCK.format(n=self._drawn))
            self._drawn = 0

    def _draw_soon(self) -> None:
        self.out.flush()
        if self._redraw is None:
            self._redraw = asyncio.get_running_loop().call_later(REDRAW_DELAY, self._draw)

    def _draw(self) -> None:
        self._redraw = None
        if self.tty and self.job is not None and not self._drawn:
            width = max(20, shutil.get_terminal_size((100, 24)).columns - 1)
            block = liveview.frame(self.job, self.pods, _now(), width, self.warnings)
            self.out.write("".join(f"{line}\n" for line in block))
            self._drawn = len(block)
        self.out.flush()


def _now() -> datetime:
    return datetime.now(timezone.utc)


async def _run(args: argparse.Namespace) -> int:
    objects, manifest = await _read(args)
    kind = jobkinds.of(manifest)
    screen = Screen(sys.stdout, sys.stderr, tty=sys.stdout.isatty())
    async with target.connect(args) as tgt:
        for obj in objects:
            if obj is not manifest:
                applied, verb = await apply.apply_one(tgt, obj, given_namespace=args.namespace)
                print(f"{output.qualified_name(applied)} {verb}", file=sys.stderr)
        namespace = apply.namespace_for(manifest, kind.resource, tgt, args.namespace)
        name = jobs.name_of(manifest)
        try:
            job = await tgt.client.create(kind.resource, manifest, namespace=namespace)
        except kube.AlreadyExists as exc:
            existing = await jobs.get(tgt.client, kind, namespace or "", name)
            state = jobstate.of(existing).phase if existing else "gone again"
            raise errors.UserError(
                f"{kind.ref(name)} already exists in namespace {namespace} ({state}); "
                f"`kubetrain delete {kind.ref(name)}` first, or change metadata.name"
            ) from exc
        job.setdefault("kind", kind.kind)
        job.setdefault("apiVersion", kind.resource.api_version)
        print(f"{kind.qualified}/{name} created", file=sys.stderr)
        outcome = await _watch(tgt.client, job, screen)
        if outcome.interrupted:
            return await _interrupted(tgt.client, job)
        return await _conclude(tgt.client, job, outcome.job)


@dataclass(frozen=True)
class Outcome:
    """How watching ended: Ctrl-C, or the job as last seen (None: it was deleted)."""

    interrupted: bool
    job: dict[str, Any] | None = None


async def _watch(client: kube.Client, job: dict[str, Any], screen: Screen) -> Outcome:
    """Follow the job until it ends or the user presses Ctrl-C."""
    interrupted = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, interrupted.set)
    try:
        async with _aio.TaskGroup() as group:
            follower = logstream.Follower(client, job, screen)
            following = group.create_task(follower.run(), name="run: logs")
            viewing = group.create_task(_view(client, job, screen), name="run: view")
            stopping = group.create_task(interrupted.wait(), name="run: ctrl-c")
            await asyncio.wait({following, stopping}, return_when=asyncio.FIRST_COMPLETED)
            viewing.cancel()
            if not following.done():
                following.cancel()
            stopping.cancel()
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    screen.leave()
    if following.cancelled():
        return Outcome(interrupted=True)
    return Outcome(interrupted=False, job=following.result())


async def _view(client: kube.Client, job: dict[str, Any], screen: Screen) -> None:
    """Keep the screen's picture of the job, its pods and their Warning events current."""
    kind = jobkinds.of(job)
    pods: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] = job
    warnings: dict[str, dict[str, Any]] = {}  # by event name, in the order last seen

    async def follow_job() -> None:
        nonlocal current
        async for seen in jobs.follow(client, job):
            if seen is not None:
                current = seen
                screen.show(current, list(pods.values()))

    async def follow_warnings() -> None:
        stream = client.watch(
            jobs.EVENTS, namespace=jobs.namespace_of(job), field_selector="type=Warning"
        )
        try:
            async with contextlib.aclosing(aiter(stream)) as events:
                async for event in events:
                    if event.type == watch.SYNC:
                        warnings.clear()
                        items = event.object.get("items") or []
                    else:
                        items = [event.object]
                    for item in items:
                        name = str((item.get("metadata") or {}).get("name") or "")
                        warnings.pop(name, None)
                        if event.type != watch.DELETED and _about(item, job):
                            warnings[name] = item
                    screen.show(current, list(pods.values()), list(warnings.values()))
        except kube.ApiError as exc:  # events are a help, not a need: the view goes on without
            screen.note(f"cannot watch events ({exc}); `kubetrain events` shows them")

    async def follow_pods() -> None:
        stream = client.watch(
            resource.PODS,
            namespace=jobs.namespace_of(job),
            label_selector=kind.pod_selector(jobs.name_of(job)),
        )
        async with contextlib.aclosing(aiter(stream)) as events:
            async for event in events:
                if event.type == watch.SYNC:
                    pods.clear()
                    for pod in event.object.get("items") or []:
                        pods[_uid(pod)] = pod
                elif event.type == watch.DELETED:
                    pods.pop(_uid(event.object), None)
                else:
                    pods[_uid(event.object)] = event.object
                screen.show(current, list(pods.values()))

    async def ticks() -> None:
        while True:
            await asyncio.sleep(TICK)
            screen.tick()

    screen.show(job, [])
    async with _aio.TaskGroup() as group:
        group.create_task(follow_job(), name="run: job watch")
        group.create_task(follow_pods(), name="run: pod watch")
        group.create_task(follow_warnings(), name="run: event watch")
        if screen.tty:
            group.create_task(ticks(), name="run: clock")


def _about(event: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether an event is about the job or one of its pods (named ``<job>-...``), so the
    view keeps only those of a namespace's events."""
    involved = event.get("involvedObject") or {}
    name = str(involved.get("name") or "")
    if involved.get("kind") == job.get("kind"):
        return name == jobs.name_of(job)
    return involved.get("kind") == "Pod" and name.startswith(f"{jobs.name_of(job)}-")


def _uid(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or meta.get("name") or "")


async def _conclude(
    client: kube.Client, job: Mapping[str, Any], last: dict[str, Any] | None
) -> int:
    name = jobs.ref_of(job)
    if last is None:
        print(f"kubetrain: {name} was deleted before it finished", file=sys.stderr)
        return EXIT_FAILED
    pods = await jobs.pods(client, last)
    now = _now()
    if jobstate.of(last, pods).succeeded:
        spent = jobstate.duration(last, now)
        took = f" in {durations.elapsed(spent)}" if spent is not None else ""
        print(f"{name} {jobstate.of(last, pods).phase}{took}", file=sys.stderr)
        return 0
    tail = await _failure_tail(client, last, pods)
    for line in liveview.failure(last, pods, now, tail):
        print(line, file=sys.stderr)
    return EXIT_FAILED


async def _failure_tail(
    client: kube.Client, job: Mapping[str, Any], pods: list[dict[str, Any]]
) -> list[str]:
    culprit = liveview.failing_replica(job, pods)
    if culprit is None:
        return []
    pod = next((p for p in pods if jobs.name_of(p) == culprit.pod), None)
    if pod is None or replicas.node(pod) is None:
        return []
    ended = culprit.termination
    container = ended.container if ended is not None else None
    container = container or replicas.default_container(pod, jobkinds.of(job))
    if container is None:
        return []
    options = logstream.Options(tail=FAILURE_TAIL, previous=ended is not None and not ended.current)
    try:
        return [line async for line in logstream.lines(client, pod, container, options)]
    except kube.ApiError:
        return []


async def _interrupted(client: kube.Client, job: Mapping[str, Any]) -> int:
    name = jobs.ref_of(job)
    hint = f"`kubetrain delete {name}` deletes it"
    if not sys.stdin.isatty():
        print(f"\nkubetrain: interrupted; {name} is left running; {hint}", file=sys.stderr)
        return EXIT_INTERRUPTED
    answer = await asyncio.to_thread(_ask, f"\ndelete {name}? [y/N] ")
    if answer.strip().lower() in ("y", "yes"):
        kind = jobkinds.of(job)
        with contextlib.suppress(kube.NotFound):
            await client.delete(kind.resource, jobs.name_of(job), namespace=jobs.namespace_of(job))
        print(f"{name} deleted", file=sys.stderr)
    else:
        print(f"{name} is left running; {hint}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _ask(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        return ""
