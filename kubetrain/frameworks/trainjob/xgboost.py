"""The XGBoost env contract: the DMLC/Rabit tracker settings in a TrainJob's pods.

Injected into container ``node`` of the trainer-ancestor job, after ``trainer.env``; all four
names are reserved (a TrainJob may not set them):

- ``DMLC_TRACKER_URI`` = ``<job>-node-0-0.<job>`` (rank 0 runs the tracker);
- ``DMLC_TRACKER_PORT`` = 29500;
- ``DMLC_TASK_ID``: the pod's Job completion index (a downward-API fieldRef);
- ``DMLC_NUM_WORKER`` = nodes x workers per node, where a node runs one worker per GPU, or one
  worker when it has no GPU;
- container port 29500.

29500 is the default of ``port``: on a shared host network each job is given its own.
As for torch, kubetrain computes the env even without a ``trainer`` block.

Admission (:func:`validate`, upstream's XGBoost ``Validate``): each reserved variable the
TrainJob's ``trainer.env`` sets is refused at its own index, in upstream's words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain import api
from kubetrain.frameworks.trainjob import node

TRACKER_URI = "DMLC_TRACKER_URI"
TRACKER_PORT = "DMLC_TRACKER_PORT"
TASK_ID = "DMLC_TASK_ID"
NUM_WORKER = "DMLC_NUM_WORKER"
RESERVED_ENV: tuple[str, ...] = (TRACKER_URI, TRACKER_PORT, TASK_ID, NUM_WORKER)
RESERVED_MESSAGE = "{name} is reserved for the XGBoost runtime"


def num_workers(job: api.TrainJob, runtime: api.Runtime) -> int:
    per_node = node.gpus_per_node(job, runtime) or 1
    return node.trainer_count(job, runtime) * per_node


def env(job: api.TrainJob, runtime: api.Runtime, port: int = node.PORT) -> list[dict[str, Any]]:
    return [
        node.value_env(TRACKER_URI, node.master_host(job)),
        node.value_env(TRACKER_PORT, str(port)),
        node.completion_index_env(TASK_ID),
        node.value_env(NUM_WORKER, str(num_workers(job, runtime))),
    ]


def ports(port: int = node.PORT) -> list[dict[str, Any]]:
    return [node.trainer_port(port)]


def validate(
    job: api.TrainJob, runtime: api.Runtime, _: api.PriorityClassLookup | None = None
) -> list[api.FieldError]:
    """The XGBoost plugin's admission checks; none without an XGBoost policy or a trainer."""
    policy = node.ml_policy(runtime)
    trainer = job.spec.trainer if job.spec else None
    if policy is None or policy.xgboost is None or trainer is None:
        return []
    return [
        api.FieldError(
            api.ErrorType.FORBIDDEN,
            str(api.Path("spec").child("trainer", "env").index(i)),
            RESERVED_MESSAGE.format(name=var["name"]),
        )
        for i, var in enumerate(trainer.env or ())
        if isinstance(var, Mapping) and var.get("name") in RESERVED_ENV
    ]
