"""``kubetrain apiserver``: run the local control plane in the foreground.

``kubetrain up`` starts this in the background; tests start it with ``--memory --port 0``.
It runs until SIGTERM or Ctrl-C, and prints nothing but logs (to stderr).

This module owns the command line and logging setup; the control plane is
:mod:`kubetrain.local.daemon`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import os
import sys

from kubetrain.cli import controlplane
from kubetrain.local import daemon


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "apiserver",
        help="run the local control plane in the foreground",
        description="Run the local control plane (API server and controllers) in the "
        "foreground until stopped. `kubetrain up` runs it in the background.",
    )
    parser.add_argument("--home", help="state directory (default: $KUBETRAIN_HOME or ~/.kubetrain)")
    parser.add_argument(
        "--port", type=int, help="port on 127.0.0.1 (0: any free one; default: as last time)"
    )
    parser.add_argument(
        "--memory", action="store_true", help="keep objects in memory only (for tests)"
    )
    parser.add_argument(
        "--with-workloads",
        action="store_true",
        help="also run the scheduler, a node agent and the operator (what `kubetrain up` runs)",
    )
    parser.add_argument(
        "--node-backoff",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with --with-workloads: the node's crash back-off starts at SECONDS and doubles "
        f"up to {controlplane.BACKOFF_SPAN} times it (default: the kubelet's 10s up to 300s)",
    )
    parser.add_argument(
        "--container-runtime",
        choices=("none", "docker", "podman"),
        default="none",
        help="with --with-workloads: the node runs pods whose image is not the host image in "
        "containers of this engine (default: %(default)s: host processes)",
    )
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="log line format"
    )
    parser.add_argument(
        "--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), default="INFO"
    )
    parser.set_defaults(func=run)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 3600:
        raise argparse.ArgumentTypeError(f"{text!r}; accepted: seconds above 0, below 3600")
    return value


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        # Fields a component bound for the record (controller, namespace, name, ...).
        context = getattr(record, "context", None)
        if isinstance(context, dict):
            entry.update({k: v for k, v in context.items() if k not in entry})
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def setup_logging(fmt: str, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def run(args: argparse.Namespace) -> int:
    setup_logging(args.log_format, args.log_level)
    config = daemon.Config(
        home=daemon.resolve_home(os.environ, args.home),
        memory=args.memory,
        port=args.port,
        workloads=args.with_workloads,
    )
    try:
        workloads = (
            functools.partial(
                controlplane.workloads,
                node_backoff=args.node_backoff,
                container_runtime=args.container_runtime,
            )
            if config.workloads
            else None
        )
        asyncio.run(daemon.run(config, workloads=workloads))
    except daemon.DaemonError as exc:
        print(f"kubetrain apiserver: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"kubetrain apiserver: cannot serve: {exc}", file=sys.stderr)
        return 1
    return 0
