"""``kubetrain status``: what of the local control plane runs, where, and since when.

Exit status 0 when it runs and answers ``/readyz``, 1 when it does not run, 2 when it runs
but is not ready. ``-o json`` prints the daemon's own status record.

This module owns the command line and the wording; the facts come from
:mod:`kubetrain.local.daemon`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone

from kubetrain import timefmt
from kubetrain.local import daemon


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show whether the local control plane runs, where and since when",
        description="Show the local control plane's state: pid, URL, state directory, "
        "kubeconfig, start time and components.",
    )
    parser.add_argument("--home", help="state directory (default: $KUBETRAIN_HOME or ~/.kubetrain)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.set_defaults(func=run)


def _since(started: str) -> str:
    when = timefmt.parse(started)
    if when is None:
        return started
    seconds = int((datetime.now(timezone.utc) - when).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{started} ({seconds // size}{unit} ago)"
    return f"{started} ({max(seconds, 0)}s ago)"


def run(args: argparse.Namespace) -> int:
    paths = daemon.Paths(daemon.resolve_home(os.environ, args.home))
    status = daemon.read_status(paths)
    ready = bool(status and status.get("url") and daemon.probe_ready(paths, status["url"]))
    if args.output == "json":
        print(json.dumps({"running": status is not None, "ready": ready, **(status or {})}))
    elif status is None:
        print(f"local control plane: not running (state dir {paths.home})")
    else:
        print(f"local control plane: {'running' if ready else 'running, not ready'}")
        print(f"  pid:         {status.get('pid')}")
        if status.get("url"):
            print(f"  api server:  {status['url']}")
        print(f"  state dir:   {status.get('home', paths.home)}")
        print(f"  kubeconfig:  {status.get('kubeconfig', paths.kubeconfig)}")
        if status.get("started"):
            print(f"  since:       {_since(status['started'])}")
        if status.get("components"):
            print(f"  components:  {', '.join(status['components'])}")
    if status is None:
        return 1
    if not ready:
        print("kubetrain: the control plane runs but /readyz does not answer ok", file=sys.stderr)
        return 2
    return 0
