"""Entry point: builds the argument parser from the command modules and dispatches.

Each command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> int``. A user mistake ends with a message and a non-zero exit,
never a traceback; ``-v`` shows the traceback of an unexpected error. A mistake in the
arguments themselves is one line too (exit 2), pointing at ``--help`` instead of printing the
usage.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

import kubetrain
from kubetrain.cli import (
    apiserver,
    apply,
    completion,
    crds,
    delete,
    down,
    events,
    get,
    kubeconfig,
    listing,
    logs,
    node,
    operator,
    run,
    status,
    submit,
    suspend,
    top,
    up,
    validate,
    wait,
)

COMMANDS = (validate, crds, up, down, status, kubeconfig, apiserver, node, operator)
COMMANDS += (run, submit, apply, listing, get, logs, events, delete, suspend, wait, top, completion)


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error on one line: ``kubetrain get: error: ...; see ...``.

    Sub-commands' parsers are of this class too (argparse makes them of the parent's).
    """

    def error(self, message: str) -> NoReturn:
        line = " ".join(message.split())  # argparse's messages may wrap
        self.exit(2, f"{self.prog}: error: {line}; see `{self.prog} --help`\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kubetrain",
        description="Kubeflow training jobs on any Kubernetes API, or on this machine.",
    )
    parser.add_argument("--version", action="version", version=f"kubetrain {kubetrain.__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show tracebacks of unexpected errors"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the one place an unexpected error becomes a message
        if args.verbose:
            traceback.print_exc()
        print(f"kubetrain: internal error: {exc} (run with -v for the traceback)", file=sys.stderr)
        return 70
