"""The JAX env contract: what ``jax.distributed.initialize()`` reads in a TrainJob's pods.

Injected into container ``node`` of the trainer-ancestor job, after ``trainer.env``:

- ``JAX_NUM_PROCESSES``: the trainer job's node count (one JAX process per node);
- ``JAX_PROCESS_ID``: the pod's Job completion index (a downward-API fieldRef);
- ``JAX_COORDINATOR_ADDRESS`` = ``<job>-node-0-0.<job>:29500``;
- container port 29500.

29500 is the default of ``port``: on a shared host network each job is given its own.

These are the v2 names; v1's JAXJob used ``COORDINATOR_ADDRESS``, ``NUM_PROCESSES`` and
``PROCESS_ID``. As for torch, kubetrain computes the env even without a ``trainer`` block.
"""

from __future__ import annotations

from typing import Any

from kubetrain import api
from kubetrain.frameworks.trainjob import node

NUM_PROCESSES = "JAX_NUM_PROCESSES"
PROCESS_ID = "JAX_PROCESS_ID"
COORDINATOR_ADDRESS = "JAX_COORDINATOR_ADDRESS"
ENV_NAMES: tuple[str, ...] = (NUM_PROCESSES, PROCESS_ID, COORDINATOR_ADDRESS)


def env(job: api.TrainJob, runtime: api.Runtime, port: int = node.PORT) -> list[dict[str, Any]]:
    return [
        node.value_env(NUM_PROCESSES, str(node.trainer_count(job, runtime))),
        node.completion_index_env(PROCESS_ID),
        node.value_env(COORDINATOR_ADDRESS, f"{node.master_host(job)}:{port}"),
    ]


def ports(port: int = node.PORT) -> list[dict[str, Any]]:
    return [node.trainer_port(port)]
