"""``kubetrain down``: stop the local control plane (SIGTERM, then SIGKILL after a grace
period) and everything in its process group.

This module owns the command line; stopping is :mod:`kubetrain.local.daemon`.
"""

from __future__ import annotations

import argparse
import os
import sys

from kubetrain.local import daemon


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "down",
        help="stop the local control plane",
        description="Stop the local control plane started by `kubetrain up`. Its state stays "
        "on disk; `kubetrain up` starts it again where it left off.",
    )
    parser.add_argument("--home", help="state directory (default: $KUBETRAIN_HOME or ~/.kubetrain)")
    parser.add_argument(
        "--grace",
        type=float,
        default=daemon.STOP_GRACE,
        help="seconds to wait after SIGTERM before SIGKILL",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    paths = daemon.Paths(daemon.resolve_home(os.environ, args.home))
    pid = daemon.stop(paths, grace=args.grace)
    if pid is None:
        print("kubetrain: the local control plane is not running", file=sys.stderr)
    else:
        print(f"kubetrain: stopped the local control plane (pid {pid})", file=sys.stderr)
    return 0
