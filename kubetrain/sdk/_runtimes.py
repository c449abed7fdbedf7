"""What the SDK reads from a training runtime: its ML policy, its framework label and the
container its trainer step runs in.

Its own module because the TrainJob builder (:mod:`._trainjobs`), the builtin trainers
(:mod:`._builtin`, :mod:`._trl`) and the status reader (:mod:`._status`) all ask the same
questions of a runtime, and none of them should import another for it. Must not: do I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubetrain import accessors

FRAMEWORK_LABEL: Final = "trainer.kubeflow.org/framework"
ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_ANCESTOR: Final = "trainer"
POLICIES: Final = ("torch", "mpi", "jax", "xgboost", "flux")


def policy_of(runtime: Mapping[str, Any]) -> str | None:
    """The runtime's ML policy (``torch``, ``mpi``, ...), None for a plain one."""
    policy = dig(runtime, "spec", "mlPolicy")
    if not isinstance(policy, Mapping):
        return None
    return next((p for p in POLICIES if policy.get(p) is not None), None)


def trainer_container(runtime: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``node`` container of the runtime's trainer step (the MPI launcher, the node job)."""
    rjobs = dig(runtime, "spec", "template", "spec", "replicatedJobs") or []
    chosen = [
        j
        for j in rjobs
        if isinstance(j, Mapping)
        and dig(j, "template", "metadata", "labels", ANCESTOR_LABEL) == TRAINER_ANCESTOR
    ] or [j for j in rjobs if isinstance(j, Mapping) and j.get("name") == "node"]
    for rjob in chosen:
        containers = dig(rjob, "template", "spec", "template", "spec", "containers") or []
        for container in containers:
            if isinstance(container, Mapping) and container.get("name") == "node":
                return container
    return None


def framework_of(runtime: Mapping[str, Any]) -> str:
    """The runtime's ``trainer.kubeflow.org/framework`` label, empty where it has none."""
    return str(dig(runtime, "metadata", "labels", FRAMEWORK_LABEL) or "")


dig = accessors.dig  # one home: kubetrain.accessors
