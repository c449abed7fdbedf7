"""``kubetrain submit pytorch|tf|xgboost|mpi|jax|paddle|trainjob ... -- COMMAND...``: a job
without writing YAML, Arena-style.

``--dry-run`` prints the manifest (it passes ``kubetrain validate``) and touches no server.
Otherwise the job is created and the next commands to try are printed. Either way, a pod of
the host image runs in the directory the command was typed in (:mod:`kubetrain.cli.workdir`),
so ``-- python3 train.py`` finds ``./train.py``.

Owns: the command line; the manifest is :mod:`kubetrain.cli.manifests`.
"""

from __future__ import annotations

import argparse
import os
import secrets
import string
import sys
from typing import Any

import yaml

from kubetrain import kube
from kubetrain.cli import errors, jobkinds, manifests, target, workdir

NAME_ALPHABET = string.ascii_lowercase + string.digits


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "submit",
        help="submit a job from options, without YAML",
        description="Submit a job built from options: kubetrain submit FRAMEWORK [options] -- "
        "COMMAND... Everything after -- is the command, as an argv list (no shell).",
    )
    frameworks = parser.add_subparsers(dest="framework", metavar="FRAMEWORK", required=True)
    for framework, kind in manifests.FRAMEWORKS.items():
        sub = frameworks.add_parser(
            framework,
            help=f"a {kind}",
            description=f"Submit a {kind}. {_LAYOUT[framework]} Everything after -- is the "
            "command, as an argv list (no shell).",
            epilog=f"example: kubetrain submit {framework} --name demo --workers 2 --cpu 1 "
            "-e EPOCHS=3 -- python train.py --lr 0.01",
        )
        sub.add_argument(
            "--workers", type=int, default=1, help="nodes that train, rank 0 included (default 1)"
        )
        sub.add_argument(
            "--restart-policy",
            choices=("Never", "OnFailure", "Always", "ExitCode"),
            help="replica restartPolicy (default: the API's for a "
            f"{kind}, {manifests.default_restart_policy(framework)})",
        )
        _common(
            sub,
            image_default=f"{manifests.DEFAULT_IMAGE}, the host image: the local node runs "
            "the command on this machine, in the directory this command is typed in",
        )
        if framework in ("pytorch", "mpi"):
            sub.add_argument(
                "--nproc-per-node",
                metavar="N",
                help="PyTorchJob nprocPerNode" if framework == "pytorch" else "slotsPerWorker",
            )
    sub = frameworks.add_parser(
        manifests.TRAINJOB,
        help="a TrainJob on a training runtime",
        description="Submit a TrainJob: --runtime names the (Cluster)TrainingRuntime, --nodes "
        "how many nodes train.",
    )
    sub.add_argument("--nodes", dest="workers", type=int, default=1, help="nodes (default 1)")
    sub.add_argument(
        "--runtime",
        default=manifests.DEFAULT_RUNTIME,
        help=f"the runtime (default {manifests.DEFAULT_RUNTIME})",
    )
    sub.add_argument(
        "--runtime-kind",
        choices=("ClusterTrainingRuntime", "TrainingRuntime"),
        help="kind of the runtime (default ClusterTrainingRuntime)",
    )
    sub.add_argument("--nproc-per-node", metavar="N", help="numProcPerNode")
    _common(
        sub,
        image_default="the runtime's; with the host image "
        f"{manifests.DEFAULT_IMAGE}, the command's files here are given by absolute path",
    )


_LAYOUT = {
    "pytorch": "--workers K: a Master (rank 0) and K-1 Workers.",
    "xgboost": "--workers K: a Master (rank 0) and K-1 Workers.",
    "mpi": "--workers K: K Workers and a Launcher that runs the command (mpirun ...).",
    "tf": "--workers K: K Workers.",
    "jax": "--workers K: K Workers.",
    "paddle": "--workers K: K Workers.",
}


def _common(parser: argparse.ArgumentParser, *, image_default: str) -> None:
    parser.add_argument("--name", help="job name (default: the framework and a random suffix)")
    parser.add_argument("--cpu", help="CPU per replica, e.g. 2 or 500m")
    parser.add_argument("--memory", help="memory per replica, e.g. 4Gi")
    parser.add_argument("--gpus", type=int, default=0, help="GPUs per replica (default 0)")
    parser.add_argument(
        "-e", "--env", action="append", default=[], metavar="KEY=VALUE", help="environment"
    )
    parser.add_argument("--image", help=f"container image (default: {image_default})")
    parser.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="job labels"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the manifest; submit nothing")
    target.add_arguments(parser)
    parser.add_argument(
        "command", nargs="*", metavar="-- COMMAND", help="the command and its arguments"
    )
    parser.set_defaults(func=run)


def submission(args: argparse.Namespace) -> manifests.Submission:
    framework = args.framework
    name = args.name or f"{framework}-{''.join(secrets.choice(NAME_ALPHABET) for _ in range(5))}"
    return manifests.Submission(
        framework=framework,
        name=name,
        command=tuple(args.command),
        namespace=args.namespace,
        workers=args.workers,
        cpu=args.cpu,
        memory=args.memory,
        gpus=args.gpus,
        env=manifests.parse_pairs(args.env, "--env"),
        image=args.image,
        labels=manifests.parse_pairs(args.label, "--label"),
        procs_per_node=getattr(args, "nproc_per_node", None),
        runtime=getattr(args, "runtime", manifests.DEFAULT_RUNTIME),
        runtime_kind=getattr(args, "runtime_kind", None),
        restart_policy=getattr(args, "restart_policy", None),
    )


def manifest_of(args: argparse.Namespace) -> dict[str, Any]:
    """The job to submit: built from the options, run from the directory typed in
    (:mod:`kubetrain.cli.workdir`)."""
    return workdir.typed_in(manifests.build(submission(args)), os.getcwd())


def run(args: argparse.Namespace) -> int:
    if args.dry_run:
        try:
            manifest = manifest_of(args)
        except errors.UserError as exc:
            print(f"kubetrain: {exc}", file=sys.stderr)
            return exc.code
        sys.stdout.write(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
        return 0
    return errors.run(args, lambda: _submit(args))


async def _submit(args: argparse.Namespace) -> int:
    manifest = manifest_of(args)
    kind = jobkinds.of(manifest)
    name = manifest["metadata"]["name"]
    async with target.connect(args) as tgt:
        try:
            await tgt.client.create(
                kind.resource, manifest, namespace=args.namespace or tgt.namespace
            )
        except kube.AlreadyExists as exc:
            raise errors.UserError(
                f"{kind.ref(name)} already exists in namespace {args.namespace or tgt.namespace}; "
                f"pick another --name, or `kubetrain delete {kind.ref(name)}` first"
            ) from exc
        if not tgt.local and not args.image and kind.v1:
            print(
                f"note: the image is the host image {manifests.DEFAULT_IMAGE}, which only "
                "kubetrain's local node runs; a cluster needs --image",
                file=sys.stderr,
            )
    print(f"{kind.qualified}/{name} created")
    ns = f" -n {args.namespace}" if args.namespace else ""
    print(
        f"`kubetrain get {kind.ref(name)}{ns}` shows its state; "
        f"`kubetrain logs -f {kind.ref(name)}{ns}` follows its logs",
        file=sys.stderr,
    )
    return 0
