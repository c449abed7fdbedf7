"""``kubetrain dashboard [--port N] [--address A] [--open]``: the web dashboard.

Serves :mod:`kubetrain.dashboard` on 127.0.0.1 (``--address`` for another interface, with a
warning), reading the target every command reads (``--kubeconfig``/``--context``, else the
local control plane) with the user's own credentials, and prints the address with a fresh
access token in it (or ``$KUBETRAIN_DASHBOARD_TOKEN``). It opens a browser only with
``--open``, and runs until interrupted.

Owns: the command line. The server is :mod:`kubetrain.dashboard.server`.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import re
import sys
import webbrowser

from kubetrain.cli import errors, target
from kubetrain.dashboard import access, server

DEFAULT_PORT = 8765
LOOPBACK = "127.0.0.1"
# A token of the user's choosing instead of a new one per run (as JUPYTER_TOKEN), so that an
# address stays valid across restarts; from the environment, never argv, which others can see.
TOKEN_ENV = "KUBETRAIN_DASHBOARD_TOKEN"
MIN_TOKEN = 16


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="serve a web dashboard of jobs, logs, training curves and nodes",
        description="Serve a web dashboard: every job with its state and progress, a job's "
        "replicas, logs, events and training curves, and the nodes' capacity, all live. It "
        "listens on 127.0.0.1 and prints its address with an access token; -n shows one "
        "namespace only (default: every namespace you may list).",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--address",
        default=LOOPBACK,
        help=f"address to listen on (default {LOOPBACK}: this machine only)",
    )
    parser.add_argument("--open", action="store_true", help="open the dashboard in a browser")
    target.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _serve(args))


async def _serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise errors.UserError(f"--port {args.port}: must be 0..65535")
    if not _loopback(args.address):
        print(
            f"kubetrain: warning: --address {args.address}: the dashboard is reachable from "
            "other machines; anyone who has its address with the token acts with your "
            "credentials",
            file=sys.stderr,
        )

    def ready(url: str) -> None:
        print(f"kubetrain dashboard: {url}", flush=True)
        print("Press Ctrl-C to stop it.", file=sys.stderr, flush=True)
        if args.open:
            webbrowser.open(url)

    token = os.environ.get(TOKEN_ENV) or access.new_token()
    if not re.fullmatch(rf"[A-Za-z0-9._~-]{{{MIN_TOKEN},}}", token):
        raise errors.UserError(
            f"{TOKEN_ENV}: a token is at least {MIN_TOKEN} of A-Z, a-z, 0-9, '.', '_', '~' "
            "and '-' (it goes in the address as it is); unset it for a new random one"
        )
    async with target.connect(args) as tgt:
        try:
            await server.serve(
                tgt.client,
                address=args.address,
                port=args.port,
                token=token,
                namespace=args.namespace,
                fallback_namespace=tgt.namespace,
                on_ready=ready,
            )
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise errors.UserError(
                    f"--port {args.port}: the port is in use on {args.address}; pick another "
                    "(--port 0 picks a free one)"
                ) from exc
            if exc.errno == errno.EADDRNOTAVAIL:
                raise errors.UserError(
                    f"--address {args.address}: no interface of this machine has it"
                ) from exc
            raise
    return 0


def _loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
