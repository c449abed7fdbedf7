"""An operator left idle on a real kube-apiserver: how many WARNING lines does it log?

An operator whose cluster sees no change must log nothing worth a look. Its watches are quiet
then: kube-apiserver sends nothing at all on a watch that sees no change, bookmarks included,
until it ends the connection at the ``timeoutSeconds`` it was asked for (300 s, shortened by
up to 20%), and the operator opens it again. A watchdog that took that silence for a fault
logged a WARNING for every watch every 90 s.

What it runs: a fresh control plane (etcd, kube-apiserver, kube-controller-manager from
``KUBEBUILDER_ASSETS``, through :mod:`kubetrain.envtest`), kubetrain's CRDs installed with
``kubectl apply --server-side -k deploy/crds``, then ``kubetrain operator --kubeconfig K`` as
deployed (all controllers, every namespace, JSON logs) for ``--minutes`` (default 60) after its
caches synced, logging at DEBUG so that each watch's end shows. Then the operator is stopped
(SIGTERM) and its log read.

Printed: the WARNING (and ERROR) lines, each in full, and one result line: how many there
were, beside how many times its watches were ended by the server and opened again, how many
connections its watchdog gave up, and how many lists it made again. The goal is no WARNING
line at all: PASS or MISS. The operator's resident memory at sync and at the end is shown
for information.

Usage::

    .venv/bin/python bench/idle_operator.py [--minutes 60] [--watch-timeout-seconds 300]
                                            [--json]

This is not a test: it asserts nothing and exits 0 whatever the figures are (1 when it could
not run, saying why).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import _processes  # this directory's, as the script runs from here
import _realcluster

from kubetrain import envtest
from kubetrain.kube import watch

MINUTES = 60.0
SYNC_TIMEOUT = 120.0  # seconds for the operator to sync its caches
PROGRESS_EVERY = 300.0  # seconds between progress lines on stderr
WATCH_LOGGER = watch.__name__
LOUD = ("WARNING", "ERROR", "CRITICAL")


class BenchError(Exception):
    """The benchmark could not run; the message says why."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proc_rss_mb(pid: int) -> float | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) / 1024 if found else None


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class Tally:
    """What the operator's log says."""

    lines: int = 0
    loud: list[str] = field(default_factory=list)  # WARNING, ERROR, CRITICAL lines, verbatim
    unparsed: list[str] = field(default_factory=list)  # lines that are not one JSON record
    watch_ends: int = 0  # a watch ended by the server and opened again
    watchdog: int = 0  # a connection the watchdog gave up
    relists: int = 0  # a list after 410 Gone

    @property
    def warnings(self) -> int:
        return sum(1 for line in self.loud if '"WARNING"' in line)


def tally(log: Path) -> Tally:
    found = Tally()
    for line in log.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        found.lines += 1
        try:
            record: dict[str, Any] = json.loads(line)
        except ValueError:
            found.unparsed.append(line)
            continue
        if record.get("level") in LOUD:
            found.loud.append(line)
        if record.get("logger") != WATCH_LOGGER:
            continue
        message = str(record.get("message", ""))
        if "stream ended" in message:
            found.watch_ends += 1
        elif "did not end the connection" in message or "nothing received" in message:
            found.watchdog += 1
        elif "listing again" in message:
            found.relists += 1
    return found


@dataclass
class Result:
    server: str
    minutes: float
    watch_timeout_seconds: int
    lines: int
    warnings: int
    loud: list[str]
    unparsed: list[str]
    watch_ends: int
    watchdog: int
    relists: int
    rss_synced_mb: float | None
    rss_end_mb: float | None
    exit_status: int | None

    @property
    def verdict(self) -> str:
        return "PASS" if self.warnings == 0 else "MISS"


def idle(plane: envtest.ControlPlane, minutes: float, watch_timeout: int) -> Result:
    """Run the operator against ``plane`` for ``minutes`` after it synced; read its log."""
    log = plane.directory / "operator.log"
    metrics, probes = free_port(), free_port()
    command = [
        sys.executable, "-m", "kubetrain", "operator",
        "--kubeconfig", plane.kubeconfig,
        "--metrics-bind-address", f"127.0.0.1:{metrics}",
        "--health-probe-bind-address", f"127.0.0.1:{probes}",
        "--watch-timeout-seconds", str(watch_timeout),
        "--log-format", "json",
        "--log-level", "DEBUG",
    ]  # fmt: skip
    process = _processes.spawn(command, log, str(plane.directory))
    rss_synced = rss_end = None
    try:
        deadline = time.monotonic() + SYNC_TIMEOUT
        while not ready(f"http://127.0.0.1:{probes}/readyz"):
            if process.poll() is not None:
                raise BenchError(f"the operator exited:\n{_processes.tail(log)}")
            if time.monotonic() > deadline:
                raise BenchError(f"the operator did not sync within {SYNC_TIMEOUT:.0f}s")
            time.sleep(0.2)
        rss_synced = proc_rss_mb(process.pid)
        progress(f"the operator synced; idle for {minutes:g} min")
        started = time.monotonic()
        end = started + minutes * 60
        next_note = started + PROGRESS_EVERY
        while (now := time.monotonic()) < end:
            if process.poll() is not None:
                raise BenchError(
                    f"the operator exited ({process.returncode}) after "
                    f"{(now - started) / 60:.1f} min:\n{_processes.tail(log)}"
                )
            if now >= next_note:
                so_far = tally(log)
                progress(
                    f"{(now - started) / 60:.0f} min: {so_far.warnings} WARNING lines, "
                    f"{so_far.watch_ends} watch ends"
                )
                next_note += PROGRESS_EVERY
            time.sleep(min(1.0, end - now))
        rss_end = proc_rss_mb(process.pid)
    finally:
        _processes.stop(process)
    found = tally(log)
    return Result(
        server=_realcluster.version(plane.assets),
        minutes=minutes,
        watch_timeout_seconds=watch_timeout,
        lines=found.lines,
        warnings=found.warnings,
        loud=found.loud,
        unparsed=found.unparsed,
        watch_ends=found.watch_ends,
        watchdog=found.watchdog,
        relists=found.relists,
        rss_synced_mb=rss_synced,
        rss_end_mb=rss_end,
        exit_status=process.returncode,
    )


def render(result: Result) -> str:
    out = [f"-- {line}" for line in result.loud]
    out += [f"-- (not JSON) {line}" for line in result.unparsed[:20]]

    def mb(value: float | None) -> str:
        return "?" if value is None else f"{value:.0f} MB"

    out.append(
        f"idle operator on {result.server}, {result.minutes:g} min, watches of "
        f"{result.watch_timeout_seconds}s: {result.warnings} WARNING lines "
        f"(goal 0: {result.verdict}); {len(result.loud) - result.warnings} ERROR lines; "
        f"{result.watch_ends} watch ends, {result.watchdog} watchdog reconnects, "
        f"{result.relists} relists; {result.lines} log lines; RSS {mb(result.rss_synced_mb)} "
        f"synced, {mb(result.rss_end_mb)} at the end"
    )
    return "\n".join(out)


def progress(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM: unwind as Ctrl-C does, so the operator and the control plane are stopped."""
    raise KeyboardInterrupt


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--minutes",
        type=float,
        default=MINUTES,
        help=f"how long the operator stays idle after it synced (default {MINUTES:g})",
    )
    parser.add_argument(
        "--watch-timeout-seconds",
        type=int,
        default=watch.Settings.timeout_seconds,
        metavar="N",
        help="the operator's flag of that name: how long each watch is held open "
        f"(default {watch.Settings.timeout_seconds}, as deployed)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON document")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.watch_timeout_seconds < 1:
        parser.error("--minutes must be above 0 and --watch-timeout-seconds at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, interrupt)
    try:
        progress("starting etcd, kube-apiserver and kube-controller-manager")
        with _realcluster.control_plane(controllers=True) as plane:
            result = idle(plane, args.minutes, args.watch_timeout_seconds)
    except KeyboardInterrupt:
        print("bench: interrupted; the operator and the control plane are stopped", file=sys.stderr)
        return 130
    except (BenchError, _realcluster.Unavailable) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({**asdict(result), "verdict": result.verdict}, indent=2))
    else:
        print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
