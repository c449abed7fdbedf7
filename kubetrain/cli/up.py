"""``kubetrain up``: start the local control plane in the background and wait until it serves.

Prints the kubeconfig path on stdout (so ``export KUBECONFIG=$(kubetrain up)`` works) and a
note on stderr. Running it again while the control plane runs says so and succeeds.

This module owns the command line; starting and waiting is :mod:`kubetrain.local.daemon`.
"""

from __future__ import annotations

import argparse
import os
import sys

from kubetrain.local import daemon


def add_container_runtime_argument(parser: argparse.ArgumentParser) -> None:
    """``--container-runtime``, which ``up`` passes on to the node agent it starts and
    ``node`` reads itself: one spelling, so that the two cannot drift apart."""
    parser.add_argument(
        "--container-runtime",
        choices=("none", "docker", "podman"),
        default="none",
        help="run pods whose image is not the host image in containers of that image, in this "
        "engine (found through DOCKER_HOST / CONTAINER_HOST or its default socket); none: every "
        "pod runs as host processes (default: %(default)s)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "up",
        help="start the local control plane in the background",
        description="Start the local control plane (API server on 127.0.0.1, state under "
        "$KUBETRAIN_HOME or ~/.kubetrain) and print the path of its kubeconfig.",
    )
    parser.add_argument("--home", help="state directory (default: $KUBETRAIN_HOME or ~/.kubetrain)")
    parser.add_argument("--port", type=int, help="port on 127.0.0.1 (default: as last time)")
    parser.add_argument(
        "--timeout", type=float, default=daemon.READY_TIMEOUT, help="seconds to wait for ready"
    )
    add_container_runtime_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = daemon.Config(
        home=daemon.resolve_home(os.environ, args.home),
        port=args.port,
        workloads=True,
        container_runtime=args.container_runtime,
    )
    paths = config.paths
    try:
        status = daemon.start_background(config, timeout=args.timeout)
    except daemon.AlreadyRunning as exc:
        current = daemon.read_status(paths) or {}
        where = f" at {current['url']}" if current.get("url") else ""
        print(f"kubetrain: already running (pid {exc.pid}){where}", file=sys.stderr)
        print(paths.kubeconfig)
        return 0
    except daemon.DaemonError as exc:
        print(f"kubetrain up: {exc}", file=sys.stderr)
        return 1
    print(
        f"kubetrain: local control plane ready at {status['url']} (pid {status['pid']})",
        file=sys.stderr,
    )
    print(paths.kubeconfig)
    return 0
