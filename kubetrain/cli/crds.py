"""``kubetrain crds``: print or write the CustomResourceDefinitions for every kind kubetrain serves.

With no options the CRDs go to stdout as one multi-document YAML stream, ready for
``kubectl apply -f -``. With ``--output-dir DIR`` each CRD goes to its own file, named as
upstream names it, plus a ``kustomization.yaml`` that lists them in the same order; that is
how ``make crds`` keeps ``deploy/crds`` in step with the API models.

This module owns serializing and writing; what the CRDs say belongs to ``kubetrain.api``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import yaml

from kubetrain import api

KUSTOMIZATION = "kustomization.yaml"


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe YAML that writes every node out in full: no ``&id`` anchors, long rules unwrapped.
    libyaml's emitter where PyYAML has it (the same text, three times faster: the CRDs that
    embed pod templates are megabytes)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "crds",
        help="print the CRDs (apiextensions.k8s.io/v1)",
        description="Print the CustomResourceDefinitions of every kind kubetrain serves.",
    )
    parser.add_argument(
        "--output-dir",
        metavar="DIR",
        help="write one file per CRD and a kustomization.yaml listing them into DIR",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    documents = api.crds()
    if args.output_dir is None:
        sys.stdout.write(render_stream(documents))
        return 0
    try:
        write_dir(documents, args.output_dir)
    except OSError as exc:
        where = exc.filename or args.output_dir
        print(f"kubetrain crds: {where}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


def render(document: dict[str, Any]) -> str:
    """One YAML document, keys in the order the API builds them."""
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=2**31 - 1)


def render_stream(documents: list[dict[str, Any]]) -> str:
    return "".join(f"---\n{render(document)}" for document in documents)


def kustomization(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The kustomization listing the CRD files, in the order :func:`api.crds` gives them."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [api.crd_filename(document) for document in documents],
    }


def write_dir(documents: list[dict[str, Any]], directory: str) -> list[str]:
    """Write each CRD and the kustomization into ``directory``; return the paths written.

    Files of CRDs that no longer exist are left alone; the kustomization no longer lists them.
    """
    os.makedirs(directory, exist_ok=True)
    files = [(api.crd_filename(d), render(d)) for d in documents]
    files.append((KUSTOMIZATION, render(kustomization(documents))))
    written = []
    for name, text in files:
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written
