"""Job manifests built from ``kubetrain submit`` options, as a user would have written them.

``--workers K`` is the number of nodes that train, rank 0 included:

- PyTorch and XGBoost: a Master (rank 0) and K-1 Workers, since their env contracts take
  the master's address from the Master replica;
- TF, JAX, Paddle: K Workers;
- MPI: K Workers plus a Launcher that runs the command (``mpirun ...``); the workers get no
  command of their own, so the operator gives them its idle command as upstream does.

The command is the container's ``command`` as an argv list, never a shell string. Resources
are per replica (per node for a TrainJob), with requests equal to limits as the Kubeflow SDK
sets them. The default image of the v1 kinds is the host image
(:mod:`kubetrain.frameworks.hostimage`): the local node runs the command on this machine; a
cluster needs ``--image``. A TrainJob's default is its runtime's image.

Owns: building those dicts. Pure: the name, when generated, is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain import api
from kubetrain.cli import jobkinds
from kubetrain.cli.errors import UserError
from kubetrain.frameworks import hostimage

DEFAULT_IMAGE = hostimage.HOST_IMAGE
DEFAULT_RUNTIME = "torch-distributed"
GPU_RESOURCE = "nvidia.com/gpu"

FRAMEWORKS: Mapping[str, str] = {
    "pytorch": "PyTorchJob",
    "tf": "TFJob",
    "xgboost": "XGBoostJob",
    "mpi": "MPIJob",
    "jax": "JAXJob",
    "paddle": "PaddleJob",
}
TRAINJOB = "trainjob"


@dataclass(frozen=True)
class Submission:
    """What ``kubetrain submit`` was asked for."""

    framework: str  # a key of FRAMEWORKS, or "trainjob"
    name: str
    command: tuple[str, ...]
    namespace: str | None = None
    workers: int = 1  # nodes; --nodes for a TrainJob
    cpu: str | None = None
    memory: str | None = None
    gpus: int = 0
    env: tuple[tuple[str, str], ...] = ()
    image: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    procs_per_node: str | None = None
    runtime: str = DEFAULT_RUNTIME
    runtime_kind: str | None = None  # None: the API default, ClusterTrainingRuntime
    restart_policy: str | None = None


def default_restart_policy(framework: str) -> str:
    """The restartPolicy a replica of ``framework`` gets when ``--restart-policy`` is not given:
    the API's default for its kind."""
    kind = FRAMEWORKS[framework]
    return next(k.DEFAULT_RESTART_POLICY for k in api.V1_KINDS if kind == k.KIND)


def parse_pairs(values: Sequence[str], what: str) -> tuple[tuple[str, str], ...]:
    """``K=V`` strings as pairs; a :class:`UserError` for one without ``=`` or a key."""
    pairs = []
    for value in values:
        key, eq, rest = value.partition("=")
        if not eq or not key.strip():
            raise UserError(f"{what} {value!r}: write KEY=VALUE")
        pairs.append((key.strip(), rest))
    return tuple(pairs)


def build(sub: Submission) -> dict[str, Any]:
    """The manifest for ``sub``."""
    if sub.workers < 1:
        raise UserError(f"--workers {sub.workers}: must be 1 or more")
    if sub.gpus < 0:
        raise UserError(f"--gpus {sub.gpus}: must be 0 or more")
    if sub.framework == TRAINJOB:
        return trainjob(sub)
    if sub.framework not in FRAMEWORKS:
        raise UserError(
            f"no framework {sub.framework!r}; accepted: {', '.join([*FRAMEWORKS, TRAINJOB])}"
        )
    if not sub.command:
        raise UserError("give the command to run after --, e.g. -- python train.py")
    return v1_job(sub)


def _metadata(sub: Submission) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": sub.name}
    if sub.namespace:
        meta["namespace"] = sub.namespace
    if sub.labels:
        meta["labels"] = dict(sub.labels)
    return meta


def resources(sub: Submission) -> dict[str, Any] | None:
    amounts: dict[str, Any] = {}
    if sub.cpu:
        amounts["cpu"] = sub.cpu
    if sub.memory:
        amounts["memory"] = sub.memory
    if sub.gpus:
        amounts[GPU_RESOURCE] = sub.gpus
    return {"requests": dict(amounts), "limits": dict(amounts)} if amounts else None


def _env(sub: Submission) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in sub.env]


def layout(framework: str, workers: int) -> list[tuple[str, int, bool]]:
    """(replica type, replicas, runs the command) for ``--workers`` of a framework."""
    if framework in ("pytorch", "xgboost"):
        roles = [("Master", 1, True)]
        return roles + ([("Worker", workers - 1, True)] if workers > 1 else [])
    if framework == "mpi":
        return [("Launcher", 1, True), ("Worker", workers, False)]
    return [("Worker", workers, True)]


def v1_job(sub: Submission) -> dict[str, Any]:
    kind = jobkinds.find(FRAMEWORKS[sub.framework])
    specs: dict[str, Any] = {}
    for rtype, count, runs in layout(sub.framework, sub.workers):
        container: dict[str, Any] = {
            "name": kind.default_container,
            "image": sub.image or DEFAULT_IMAGE,
        }
        if runs:
            container["command"] = list(sub.command)
        if sub.env:
            container["env"] = _env(sub)
        limits = resources(sub)
        if limits and not (sub.framework == "mpi" and rtype == "Launcher"):
            container["resources"] = limits
        replica: dict[str, Any] = {"replicas": count}
        if sub.restart_policy:
            replica["restartPolicy"] = sub.restart_policy
        replica["template"] = {"spec": {"containers": [container]}}
        specs[rtype] = replica
    spec: dict[str, Any] = {}
    if sub.procs_per_node is not None:
        if sub.framework == "pytorch":
            spec["nprocPerNode"] = str(sub.procs_per_node)
        elif sub.framework == "mpi":
            spec["slotsPerWorker"] = _int(sub.procs_per_node, "--nproc-per-node")
        else:
            raise UserError(
                f"--nproc-per-node applies to pytorch, mpi and trainjob, not {sub.framework}"
            )
    spec[kind.replica_field or ""] = specs
    return {
        "apiVersion": kind.resource.api_version,
        "kind": kind.kind,
        "metadata": _metadata(sub),
        "spec": spec,
    }


def trainjob(sub: Submission) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": sub.runtime}
    if sub.runtime_kind:
        ref["kind"] = sub.runtime_kind
    trainer: dict[str, Any] = {}
    if sub.image:
        trainer["image"] = sub.image
    if sub.command:
        trainer["command"] = list(sub.command)
    if sub.env:
        trainer["env"] = _env(sub)
    trainer["numNodes"] = sub.workers
    limits = resources(sub)
    if limits:
        trainer["resourcesPerNode"] = limits
    if sub.procs_per_node is not None:
        value = sub.procs_per_node
        trainer["numProcPerNode"] = int(value) if value.isdigit() else value
    return {
        "apiVersion": jobkinds.TRAINJOB.resource.api_version,
        "kind": jobkinds.TRAINJOB.kind,
        "metadata": _metadata(sub),
        "spec": {"runtimeRef": ref, "trainer": trainer},
    }


def _int(value: str, what: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise UserError(f"{what} {value!r}: must be a whole number here") from None
    if number < 1:
        raise UserError(f"{what} {value!r}: must be 1 or more")
    return number
