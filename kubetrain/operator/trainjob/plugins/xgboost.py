"""XGBoost: the DMLC tracker variables (``DMLC_TRACKER_URI``/``PORT``, ``DMLC_TASK_ID``,
``DMLC_NUM_WORKER``) and the tracker port (the Info's ``port``), on the trainer's ``node``
container.

The variables are :mod:`kubetrain.frameworks.trainjob.xgboost`'s; admission already rejects a
TrainJob that sets them (``<NAME> is reserved for the XGBoost runtime``).
"""

from __future__ import annotations

from kubetrain.frameworks.trainjob import node
from kubetrain.frameworks.trainjob import xgboost as contract
from kubetrain.operator.trainjob import runtime_info
from kubetrain.operator.trainjob.plugins import trainer


class XGBoost:
    name = "XGBoost"

    def enforce_ml_policy(self, info: runtime_info.RuntimeInfo) -> None:
        if info.ml_policy is None or info.ml_policy.xgboost is None:
            return
        trainer.apply_num_nodes(info, node.trainer_count(info.job, info.runtime))
        trainer.apply_env(info, contract.env(info.job, info.runtime, info.port))
        trainer.apply_ports(info, contract.ports(info.port))
