"""The torch env contract: what ``torchrun`` reads in a TrainJob's trainer pods.

Injected into container ``node`` of the trainer-ancestor job, after the TrainJob's own
``trainer.env`` (so these win), in this order:

- ``PET_NNODES``: the trainer job's node count;
- ``PET_NPROC_PER_NODE``: the TrainJob's ``trainer.numProcPerNode``, else the runtime's torch
  ``numProcPerNode``, else ``auto``; then ``cpu``, or ``auto`` on a node without GPUs, becomes
  the node's whole CPU count (request, else limit; at least 1). ``gpu``, and ``auto`` with a GPU,
  stay literal for torchrun to resolve. A GPU is any resource whose name contains "gpu";
- ``PET_NODE_RANK``: the pod's Job completion index (a downward-API fieldRef);
- ``PET_MASTER_ADDR`` = ``<job>-node-0-0.<job>`` and ``PET_MASTER_PORT`` = 29500 (or the port
  the job was given on a shared host network: every function here takes it), except for
  torchtune (``command: [tune, run]``), which upstream passes a rendezvous endpoint on the
  command line instead; that command rewriting is not done here;
- container port 29500.

Elastic training (v2.1 ``mlPolicy.torch.elasticPolicy``) was an API upstream never implemented.
kubetrain gives it the natural torchrun c10d contract:

- the trainer job starts ``trainer.numNodes`` pods, else ``maxNodes``, else ``minNodes``;
- ``PET_NNODES`` = ``<min>:<max>``, where min defaults to that pod count and max to the larger
  of the two;
- ``PET_RDZV_BACKEND`` = ``c10d`` and ``PET_RDZV_ENDPOINT`` = ``<master addr>:29500``: rank 0's
  pod hosts the c10d rendezvous store, so every node can find it by a stable name;
- ``PET_MAX_RESTARTS`` = ``maxRestarts``, when set;
- the static variables above stay (torchrun ignores master addr/port and node rank for c10d).

``envInjection`` targets (master) receive the PET and master variables too, always including
the master ones. kubetrain computes the env whether or not the TrainJob has a ``trainer``
block; upstream skips injection without one, which leaves a multi-node torch job uncoordinated.

Admission (:func:`validate`, upstream's torch ``Validate``): every ``envInjection`` target
container must exist in the runtime's template; the TrainJob may not set the variables above
(the rendezvous ones only on an elastic runtime); and, kubetrain's addition, on an elastic
runtime ``trainer.numNodes`` must lie within ``minNodes..maxNodes``, since upstream would
accept any count and start a job its own policy says cannot run.
"""

from __future__ import annotations

from typing import Any

from kubetrain import api
from kubetrain.frameworks.trainjob import node, reserved

NNODES = "PET_NNODES"
NPROC_PER_NODE = "PET_NPROC_PER_NODE"
NODE_RANK = "PET_NODE_RANK"
MASTER_ADDR = "PET_MASTER_ADDR"
MASTER_PORT = "PET_MASTER_PORT"
RDZV_BACKEND = "PET_RDZV_BACKEND"
RDZV_ENDPOINT = "PET_RDZV_ENDPOINT"
MAX_RESTARTS = "PET_MAX_RESTARTS"

RESERVED_ENV: tuple[str, ...] = (NNODES, NPROC_PER_NODE, NODE_RANK, MASTER_ADDR, MASTER_PORT)
ELASTIC_RESERVED_ENV: tuple[str, ...] = (RDZV_BACKEND, RDZV_ENDPOINT, MAX_RESTARTS)
C10D = "c10d"
TORCHTUNE_ENTRYPOINT: tuple[str, ...] = ("tune", "run")
AUTO, CPU = "auto", "cpu"
ENV_INJECTION_TARGET_MESSAGE = (
    'envInjection target podSet "{job}" container "{container}" not found in runtime template'
)
ELASTIC_NUM_NODES_MESSAGE = (
    "must be within the runtime's torch elasticPolicy minNodes..maxNodes {bounds}"
)


def _policy(runtime: api.Runtime) -> Any:
    policy = node.ml_policy(runtime)
    return policy.torch if policy is not None else None


def _elastic(runtime: api.Runtime) -> Any:
    torch = _policy(runtime)
    return torch.elastic_policy if torch is not None else None


def is_elastic(runtime: api.Runtime) -> bool:
    return _elastic(runtime) is not None


def node_count(job: api.TrainJob, runtime: api.Runtime) -> int:
    """Pods in the trainer job; for an elastic runtime, the size it starts at."""
    elastic = _elastic(runtime)
    trainer = job.spec.trainer if job.spec else None
    if elastic is None or (trainer is not None and trainer.num_nodes is not None):
        return node.trainer_count(job, runtime)
    return elastic.max_nodes or elastic.min_nodes or node.runtime_num_nodes(runtime)


def pod_counts(job: api.TrainJob, runtime: api.Runtime) -> dict[str, int]:
    """Pods per Job of each replicated job, with the torch node count on the trainer job."""
    counts = node.pod_counts(job, runtime)
    for rjob in node.replicated_jobs(runtime):
        if node.ancestor(rjob) == api.TRAINER_ANCESTOR:
            counts[rjob["name"]] = node_count(job, runtime)
    return counts


def nnodes(job: api.TrainJob, runtime: api.Runtime) -> str:
    """``PET_NNODES``: a count, or ``min:max`` for an elastic runtime."""
    count = node_count(job, runtime)
    elastic = _elastic(runtime)
    if elastic is None:
        return str(count)
    low = elastic.min_nodes if elastic.min_nodes is not None else count
    high = elastic.max_nodes if elastic.max_nodes is not None else max(count, low)
    return f"{low}:{high}"


def num_proc_per_node(job: api.TrainJob, runtime: api.Runtime) -> str:
    """``PET_NPROC_PER_NODE`` after resolving ``auto`` and ``cpu`` against the node's resources."""
    value: int | str = AUTO
    torch = _policy(runtime)
    if torch is not None and torch.num_proc_per_node is not None:
        value = torch.num_proc_per_node
    trainer = job.spec.trainer if job.spec else None
    if trainer is not None and trainer.num_proc_per_node is not None:
        value = trainer.num_proc_per_node
    if value == CPU or (value == AUTO and node.gpus_per_node(job, runtime) == 0):
        return str(max(1, node.cpus_per_node(job, runtime)))
    return str(value)


def is_torchtune(job: api.TrainJob) -> bool:
    trainer = job.spec.trainer if job.spec else None
    return trainer is not None and tuple(trainer.command or ()) == TORCHTUNE_ENTRYPOINT


def _pet_env(job: api.TrainJob, runtime: api.Runtime) -> list[dict[str, Any]]:
    return [
        node.value_env(NNODES, nnodes(job, runtime)),
        node.value_env(NPROC_PER_NODE, num_proc_per_node(job, runtime)),
        node.completion_index_env(NODE_RANK),
    ]


def _master_env(job: api.TrainJob, port: int) -> list[dict[str, Any]]:
    return [
        node.value_env(MASTER_ADDR, node.master_host(job)),
        node.value_env(MASTER_PORT, str(port)),
    ]


def _elastic_env(job: api.TrainJob, runtime: api.Runtime, port: int) -> list[dict[str, Any]]:
    elastic = _elastic(runtime)
    if elastic is None:
        return []
    env = [
        node.value_env(RDZV_BACKEND, C10D),
        node.value_env(RDZV_ENDPOINT, f"{node.master_host(job)}:{port}"),
    ]
    if elastic.max_restarts is not None:
        env.append(node.value_env(MAX_RESTARTS, str(elastic.max_restarts)))
    return env


def env(job: api.TrainJob, runtime: api.Runtime, port: int = node.PORT) -> list[dict[str, Any]]:
    """The env for container ``node`` of the trainer job, in upstream's order."""
    master = [] if is_torchtune(job) else _master_env(job, port)
    return _pet_env(job, runtime) + master + _elastic_env(job, runtime, port)


def injected_env(
    job: api.TrainJob, runtime: api.Runtime, port: int = node.PORT
) -> list[dict[str, Any]]:
    """The env for ``envInjection`` targets: always with the master variables."""
    return _pet_env(job, runtime) + _master_env(job, port) + _elastic_env(job, runtime, port)


def injection_targets(runtime: api.Runtime) -> list[tuple[str, str]]:
    """``(replicatedJob, container)`` pairs named by the runtime's ``envInjection``."""
    torch = _policy(runtime)
    targets = torch.env_injection.targets if torch is not None and torch.env_injection else None
    return [
        (target.job_name, container)
        for target in targets or ()
        if target.job_name
        for container in target.container_names or ()
    ]


def ports(port: int = node.PORT) -> list[dict[str, Any]]:
    return [node.trainer_port(port)]


def validate(
    job: api.TrainJob, runtime: api.Runtime, _: api.PriorityClassLookup | None = None
) -> list[api.FieldError]:
    """The torch plugin's admission checks (see the module docstring); none without torch."""
    torch = _policy(runtime)
    if torch is None:
        return []
    errors: list[api.FieldError] = []
    for target in (torch.env_injection.targets if torch.env_injection else None) or ():
        rjob = node.replicated_job(runtime, target.job_name or "")
        known = node.container_names(rjob) if rjob is not None else set()
        for container in target.container_names or ():
            if container not in known:
                detail = ENV_INJECTION_TARGET_MESSAGE.format(
                    job=target.job_name, container=container
                )
                errors.append(
                    api.FieldError(
                        api.ErrorType.INVALID, "spec.runtimeRef", detail, target.to_dict()
                    )
                )
    elastic = torch.elastic_policy
    errors += reserved.env_errors(job, RESERVED_ENV + (ELASTIC_RESERVED_ENV if elastic else ()))
    trainer = job.spec.trainer if job.spec else None
    if elastic is not None and trainer is not None and trainer.num_nodes is not None:
        low, high = elastic.min_nodes or 1, elastic.max_nodes
        if trainer.num_nodes < low or (high is not None and trainer.num_nodes > high):
            bounds = f"[{low}, {high if high is not None else 'unbounded'}]"
            errors.append(
                api.FieldError(
                    api.ErrorType.INVALID,
                    "spec.trainer.numNodes",
                    ELASTIC_NUM_NODES_MESSAGE.format(bounds=bounds),
                    trainer.num_nodes,
                )
            )
    return errors
