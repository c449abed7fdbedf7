"""Entry point: builds the argument parser from the command modules and dispatches.

Each command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` to a ``run(args) -> int``. A user mistake ends with a message and a non-zero exit,
never a traceback; ``-v`` shows the traceback of an unexpected error. A mistake in the
arguments themselves is one line too (exit 2), pointing at ``--help`` instead of printing the
usage.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

import kubetrain

# Verb (and alias) -> the command module that registers it, in help order. Only the module of
# the verb being run is imported: the control-plane verbs pull in the operator, node agent and
# scheduler, which `kubetrain list` has no use for.
VERBS: dict[str, str] = {
    "validate": "validate",
    "crds": "crds",
    "up": "up",
    "down": "down",
    "status": "status",
    "kubeconfig": "kubeconfig",
    "apiserver": "apiserver",
    "node": "node",
    "operator": "operator",
    "run": "run",
    "submit": "submit",
    "apply": "apply",
    "list": "listing",
    "ls": "listing",
    "get": "get",
    "describe": "get",
    "logs": "logs",
    "log": "logs",
    "port-forward": "portforward",
    "events": "events",
    "delete": "delete",
    "rm": "delete",
    "suspend": "suspend",
    "resume": "suspend",
    "wait": "wait",
    "top": "top",
    "dashboard": "dashboard",
    "completion": "completion",
}


def _command(module: str) -> ModuleType:
    return importlib.import_module(f"kubetrain.cli.{module}")


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error on one line: ``kubetrain get: error: ...; see ...``.

    Sub-commands' parsers are of this class too (argparse makes them of the parent's).
    """

    def error(self, message: str) -> NoReturn:
        line = " ".join(message.split())  # argparse's messages may wrap
        self.exit(2, f"{self.prog}: error: {line}; see `{self.prog} --help`\n")


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser for every verb, or for ``verb`` alone when it is a known one."""
    parser = _Parser(
        prog="kubetrain",
        description="Kubeflow training jobs on any Kubernetes API, or on this machine.",
    )
    parser.add_argument("--version", action="version", version=f"kubetrain {kubetrain.__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show tracebacks of unexpected errors"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [VERBS[verb]] if verb in VERBS else list(dict.fromkeys(VERBS.values()))
    for module in modules:
        _command(module).register(subparsers)
    return parser


def _verb(argv: Sequence[str]) -> str | None:
    """The verb of a command line: its first word that is not a top-level option."""
    for word in argv:
        if not word.startswith("-"):
            return word
        if word in ("-h", "--help", "--version"):
            return None
    return None


def _asks_version(argv: Sequence[str]) -> bool:
    """Whether the command line is a ``--version`` before any verb or help option."""
    for word in argv:
        if word == "--version":
            return True
        if word in ("-h", "--help") or not word.startswith("-"):
            return False
    return False


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if _asks_version(words):  # at once: no command module is imported for it
        print(f"kubetrain {kubetrain.__version__}")
        return 0
    parser = build_parser(_verb(words))
    args = parser.parse_args(words)
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
