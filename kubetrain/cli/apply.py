"""``kubetrain apply -f FILE``: create or update the objects of YAML/JSON files on the target
with server-side apply, as field manager ``kubetrain``.

Any kind the server serves can be applied (jobs, runtimes, ConfigMaps, ...); the server maps
kinds to resources through discovery. What admission rejects is printed as the server words
it, one line per cause: ``PyTorchJob/train: spec.pytorchReplicaSpecs[Master].replicas:
Forbidden: must be 1``. Every object is tried; the exit status is 1 if any failed.

Owns: the command line, reading manifests for sending (:func:`read`) and applying one object
(:func:`apply_one`), which ``kubetrain run`` uses too.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain import kube
from kubetrain.cli import errors, output, target, validate


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "apply",
        help="create or update objects from files (server-side apply)",
        description="Create or update the objects in YAML or JSON files with server-side "
        "apply (field manager kubetrain). Several documents per file; - reads stdin.",
    )
    validate.add_files_argument(parser)
    parser.add_argument(
        "--force-conflicts",
        action="store_true",
        help="take over fields another manager owns instead of failing",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="have the server check everything, store nothing"
    )
    parser.add_argument("-o", "--output", choices=output.FORMATS, help="print what was applied")
    target.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return errors.run(args, lambda: _apply(args))


async def read(names: Sequence[str]) -> list[dict[str, Any]]:
    """Every object in the named files; :class:`errors.Problems` with a line for each file
    or document that cannot be read as one."""
    documents, problems = await asyncio.to_thread(validate.load, list(names))
    objects = []
    for document in documents:
        try:
            objects.append(validate.to_object(document.raw))
        except validate.NotJSON as exc:
            problems.append(f"{document.source}: document {document.number}: {exc}")
    if not documents and not problems:
        problems.append(
            "no objects found in " + ", ".join("<stdin>" if n == "-" else n for n in names)
        )
    if problems:
        raise errors.Problems(problems)
    return objects


async def resource_for(client: kube.Client, obj: Mapping[str, Any]) -> kube.Resource:
    """The resource that holds ``obj``, from discovery (looked up again once when missing,
    since a CRD may just have been installed)."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    if not api_version or not kind:
        raise errors.UserError(f"{_subject(obj)}: apiVersion and kind are required")
    found = (await client.discover()).find_kind(api_version, kind)
    if found is None:
        found = (await client.discover(refresh=True)).find_kind(api_version, kind)
    if found is None:
        raise errors.UserError(
            f"{_subject(obj)}: the API server at {client.host} does not serve kind {kind} "
            f"in {api_version}; `kubetrain crds | kubectl apply -f -` installs kubetrain's CRDs"
        )
    return found


def namespace_for(
    obj: Mapping[str, Any], resource: kube.Resource, tgt: target.Target, given: str | None
) -> str | None:
    """The object's namespace: its own, else the target's. An object that names another
    namespace than ``-n`` is refused, as kubectl refuses it."""
    if not resource.namespaced:
        return None
    own = (obj.get("metadata") or {}).get("namespace")
    if own and given and own != given:
        raise errors.UserError(
            f"{_subject(obj)}: its metadata.namespace is {own}, not {given}; "
            f"pass -n {own} or remove the namespace from the file"
        )
    return str(own or tgt.namespace)


async def apply_one(
    tgt: target.Target,
    obj: Mapping[str, Any],
    *,
    given_namespace: str | None,
    force: bool = False,
    dry_run: bool = False,
) -> tuple[dict[str, Any], str]:
    """Server-side apply ``obj``; returns the stored object and what happened to it
    (``created``, ``configured`` or ``unchanged``)."""
    client = tgt.client
    resource = await resource_for(client, obj)
    namespace = namespace_for(obj, resource, tgt, given_namespace)
    name = str((obj.get("metadata") or {}).get("name") or "")
    if not name:
        raise errors.UserError(f"{_subject(obj)}: metadata.name is required")
    try:
        before = await client.get(resource, name, namespace=namespace)
    except kube.NotFound:
        before = None
    applied = await client.apply(resource, obj, namespace=namespace, force=force, dry_run=dry_run)
    if before is None:
        verb = "created"
    else:
        old = (before.get("metadata") or {}).get("resourceVersion")
        new = (applied.get("metadata") or {}).get("resourceVersion")
        verb = "unchanged" if old == new else "configured"
    return applied, verb


async def _apply(args: argparse.Namespace) -> int:
    objects = await read(args.filename)
    failed = False
    applied_objects = []
    async with target.connect(args) as tgt:
        for obj in objects:
            try:
                applied, verb = await apply_one(
                    tgt,
                    obj,
                    given_namespace=args.namespace,
                    force=args.force_conflicts,
                    dry_run=args.dry_run,
                )
            except kube.Invalid as exc:
                failed = True
                for line in errors.invalid_lines(exc):
                    print(line, file=sys.stderr)
                continue
            except errors.UserError as exc:
                failed = True
                print(f"kubetrain: {exc}", file=sys.stderr)
                continue
            except kube.ApiError as exc:
                failed = True
                print(f"kubetrain: {_subject(obj)}: {errors.describe(exc)}", file=sys.stderr)
                continue
            applied_objects.append(applied)
            if not args.output:
                suffix = " (server dry run)" if args.dry_run else ""
                print(f"{output.qualified_name(applied)} {verb}{suffix}")
    if args.output:
        sys.stdout.write(output.render(applied_objects, args.output))
    return 1 if failed else 0


def _subject(obj: Mapping[str, Any]) -> str:
    name = (obj.get("metadata") or {}).get("name") or "<no name>"
    return f"{obj.get('kind') or '<no kind>'}/{name}"
