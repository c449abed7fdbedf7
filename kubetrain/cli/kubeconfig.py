"""``kubetrain kubeconfig``: print the path of the local control plane's kubeconfig.

``export KUBECONFIG=$(kubetrain kubeconfig)`` points kubectl at it. Fails with a message when
no control plane has written one yet.
"""

from __future__ import annotations

import argparse
import os
import sys

from kubetrain.local import daemon


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "kubeconfig",
        help="print the path of the local control plane's kubeconfig",
        description="Print the path of the kubeconfig that points at the local control plane.",
    )
    parser.add_argument("--home", help="state directory (default: $KUBETRAIN_HOME or ~/.kubetrain)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    paths = daemon.Paths(daemon.resolve_home(os.environ, args.home))
    if not os.path.exists(paths.kubeconfig):
        print(
            f"kubetrain: no kubeconfig at {paths.kubeconfig}; run `kubetrain up` first",
            file=sys.stderr,
        )
        return 1
    print(paths.kubeconfig)
    return 0
