"""PlainML: runtimes without an ML framework policy (no torch, MPI, JAX or XGBoost).

The trainer job gets the TrainJob's ``numNodes`` and ``env`` and nothing else: the script finds
its peers itself, through the JobSet DNS names. First in ``PLUGINS`` only because it is the
simplest; it never acts on a runtime another ML plugin acts on.
"""

from __future__ import annotations

from kubetrain.operator.trainjob import runtime_info
from kubetrain.operator.trainjob.plugins import trainer

FRAMEWORKS = ("torch", "mpi", "jax", "xgboost")


class PlainML:
    name = "PlainML"

    def enforce_ml_policy(self, info: runtime_info.RuntimeInfo) -> None:
        policy = info.ml_policy
        if policy is not None and any(getattr(policy, f) is not None for f in FRAMEWORKS):
            return
        trainer.apply_num_nodes(info)
        trainer.apply_env(info)
