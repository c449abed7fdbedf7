"""``kubetrain validate -f FILE``: check job manifests offline and print them defaulted."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("validate", help="check manifests and print them defaulted")
    parser.add_argument(
        "-f", "--filename", action="append", required=True, help="file, or - for stdin"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
