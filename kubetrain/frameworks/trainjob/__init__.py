"""The pure half of each Kubeflow Trainer v2 (TrainJob) runtime plugin: one module per plugin.

A plugin has one home for what it decides about a TrainJob, here, and one for the objects it
puts on the JobSet, :mod:`kubetrain.operator.trainjob.plugins` (its ``Build`` and
``EnforceMLPolicy`` phases, which read only this module of theirs). As Kubeflow Trainer's
``pkg/runtime/framework/plugins/<name>/``, each module here holds the plugin's admission
checks (``validate``: upstream's ``Validate``) next to its env contract: given a defaulted
TrainJob and the runtime it references, what the trainer containers get (env vars, ports,
volumes and, for MPI, the hostfile), exactly as upstream's plugins inject them, so a training
script written for Kubeflow finds the same variables here. ``torch``, ``mpi``, ``jax`` and
``xgboost`` have both; ``flux`` and ``volcano`` only checks. ``node`` holds what they share:
the node count, the resources per node, rank 0's address and the template readers;
``reserved`` the reserved-env rule.

The checks reach admission (``kubetrain.api``, a layer below) through
:func:`kubetrain.api.register_trainjob_plugin_checks`, called here with :data:`CHECKS` when
this package is imported (admission loads it by name the first time it judges a TrainJob
against a runtime, so no caller has to). Their order is the order of the errors a user sees:
ML policies first (torch, MPI, XGBoost, Flux), then the pod-group policy (Volcano), as
upstream's registry runs them.

Pure data in, data out: env vars, ports and volumes are plain Kubernetes dicts. These modules
build no objects and decide nothing about when to apply them; the TrainJob controller does.
Import modules, not names: ``from kubetrain.frameworks.trainjob import torch``.
"""

from kubetrain import api
from kubetrain.frameworks.trainjob import flux, mpi, torch, volcano, xgboost

CHECKS: tuple[api.TrainJobPluginCheck, ...] = (
    torch.validate,
    mpi.validate,
    xgboost.validate,
    flux.validate,
    volcano.validate,
)

api.register_trainjob_plugin_checks(CHECKS)
