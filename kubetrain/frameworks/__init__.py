"""Per-framework contracts: replica roles, the env each pod gets, and success/failure rules.

One module per ``kubeflow.org/v1`` framework (``tensorflow``, ``pytorch``, ``xgboost``,
``paddle``, ``jax``, ``mpi``, ``mxnet``), each holding one :class:`Framework` value, listed in
order in :data:`FRAMEWORKS`. The generic functions read those values:

- :func:`pod_contract` / :func:`service_contract`: what the operator adds to a pod or creates
  as its headless service; ``Settings.host_ports`` gives host-network pods their own ports,
  which every env contract then names;
- :func:`evaluate` / :func:`on_pod_failed`: which condition a job gets from its pods.

Everything here is pure (no network, files, environment, clock or logging) and imports only
``kubetrain.api`` and ``kubetrain.errors``. Framework-specific text (TF_CONFIG, MPI's hostfile
and scripts) is reached through the framework modules, e.g. ``frameworks.mpi.hostfile(job)``.
The TrainJob runtime plugins' pure halves are in :mod:`.trainjob`.
"""

from kubetrain.frameworks._framework import (
    ContractError,
    EnvVar,
    Framework,
    HostPorts,
    Messages,
    PodExtras,
    PodKey,
    Settings,
    StatusRules,
)
from kubetrain.frameworks._pod import (
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    OPERATOR_NAME_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    HostPort,
    PodContract,
    ServiceContract,
    job_labels,
    pod_contract,
    pod_restart_policy,
    replica_labels,
    replica_selector,
    service_contract,
)
from kubetrain.frameworks._registry import FRAMEWORKS, for_kind
from kubetrain.frameworks._status import (
    Condition,
    Outcome,
    PodFailure,
    ReplicaCounts,
    evaluate,
    is_retryable,
    on_pod_failed,
)

__all__ = [
    "FRAMEWORKS",
    "JOB_NAME_LABEL",
    "JOB_ROLE_LABEL",
    "OPERATOR_NAME_LABEL",
    "REPLICA_INDEX_LABEL",
    "REPLICA_TYPE_LABEL",
    "Condition",
    "ContractError",
    "EnvVar",
    "Framework",
    "HostPort",
    "HostPorts",
    "Messages",
    "Outcome",
    "PodContract",
    "PodExtras",
    "PodFailure",
    "PodKey",
    "ReplicaCounts",
    "ServiceContract",
    "Settings",
    "StatusRules",
    "evaluate",
    "for_kind",
    "is_retryable",
    "job_labels",
    "on_pod_failed",
    "pod_contract",
    "pod_restart_policy",
    "replica_labels",
    "replica_selector",
    "service_contract",
]
