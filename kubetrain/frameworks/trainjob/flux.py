"""Flux: what admission checks of a TrainJob on a runtime with ``mlPolicy.flux``.

Upstream's Flux plugin installs the Flux framework through an init container of its own
(``flux-installer``) and runs ``numProcPerNode`` tasks per node. kubetrain builds nothing
Flux-specific (a Flux runtime's pods run as its template says); it checks what upstream's
``Validate`` checks, so a TrainJob judged here is judged as upstream would judge it:

- ``trainer.numProcPerNode`` must be a number (kubetrain's addition, as for MPI: upstream
  would accept ``auto`` and hand Flux a word it cannot count);
- the runtime's ``node`` job may not have an init container named ``flux-installer``: that
  name is the plugin's own.

Pure.
"""

from __future__ import annotations

from kubetrain import api
from kubetrain.frameworks.trainjob import node

INSTALLER = "flux-installer"
INSTALLER_MESSAGE = "InitContainer 'flux-installer' is reserved"
NUM_PROC_MESSAGE = "must have an int value for Flux TrainJob"


def validate(
    job: api.TrainJob, runtime: api.Runtime, _: api.PriorityClassLookup | None = None
) -> list[api.FieldError]:
    """The Flux plugin's admission checks; none without a Flux policy."""
    policy = node.ml_policy(runtime)
    if policy is None or policy.flux is None:
        return []
    errors: list[api.FieldError] = []
    trainer = job.spec.trainer if job.spec else None
    if trainer is not None and isinstance(trainer.num_proc_per_node, str):
        errors.append(
            api.FieldError(
                api.ErrorType.INVALID,
                "spec.trainer.numProcPerNode",
                NUM_PROC_MESSAGE,
                trainer.num_proc_per_node,
            )
        )
    rjob = node.replicated_job(runtime, api.NODE)
    for container in node.init_containers(rjob) if rjob is not None else ():
        if container.get("name") == INSTALLER:
            errors.append(
                api.FieldError(
                    api.ErrorType.INVALID,
                    "spec.trainer.initContainers",
                    INSTALLER_MESSAGE,
                    INSTALLER,
                )
            )
    return errors
