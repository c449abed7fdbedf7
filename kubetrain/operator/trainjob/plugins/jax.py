"""JAX: ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID`` and ``JAX_COORDINATOR_ADDRESS`` for
``jax.distributed.initialize()``, and the coordinator port (the Info's ``port``), on the
trainer's ``node`` container.

The variables are :mod:`kubetrain.frameworks.trainjob.jax`'s; this plugin applies the node count
and puts them after the TrainJob's own env.
"""

from __future__ import annotations

from kubetrain.frameworks.trainjob import jax as contract
from kubetrain.frameworks.trainjob import node
from kubetrain.operator.trainjob import runtime_info
from kubetrain.operator.trainjob.plugins import trainer


class JAX:
    name = "JAX"

    def enforce_ml_policy(self, info: runtime_info.RuntimeInfo) -> None:
        if info.ml_policy is None or info.ml_policy.jax is None:
            return
        trainer.apply_num_nodes(info, node.trainer_count(info.job, info.runtime))
        trainer.apply_env(info, contract.env(info.job, info.runtime, info.port))
        trainer.apply_ports(info, contract.ports(info.port))
