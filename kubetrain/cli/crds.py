"""``kubetrain crds``: print the CustomResourceDefinitions for every kind kubetrain serves."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("crds", help="print the CRDs (apiextensions.k8s.io/v1)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
