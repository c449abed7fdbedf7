"""Torch: torchrun's ``PET_*`` env and port 29500 on the trainer (the Info's ``port``: the job's
own on a shared host network), ``envInjection`` targets, and torchtune's command rewriting;
elastic runtimes get the c10d rendezvous.

The env contract, node counts (including elastic ``minNodes..maxNodes``: the job starts at the
TrainJob's ``numNodes``, else ``maxNodes``, and ``PET_NNODES`` is ``min:max``) and
``numProcPerNode`` resolution are :mod:`kubetrain.frameworks.trainjob.torch`'s; this plugin
puts them on the trainer's ``node`` container after the TrainJob's own env. A running elastic
job that changes size keeps its pods' env: ``min:max`` and the rendezvous endpoint do not
depend on the size, so torchrun's rendezvous admits the new nodes and drops the removed ones.
An elastic trainer also gets ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`` unless the TrainJob sets
it: torchrun otherwise serves the training processes' store from the rendezvous store and
publishes its address only from an agent that becomes rank 0 for the first time, so a node
joining a running job waits for it until its agent times out (60 s) and exits.

Pre-build, a torchtune TrainJob's recipe choice is checked when its command was exactly
``tune run`` (see :mod:`~kubetrain.operator.trainjob.plugins.torchtune`).
"""

from __future__ import annotations

from kubetrain import api
from kubetrain.frameworks.trainjob import torch as contract
from kubetrain.operator.trainjob import runtime_info, upserts
from kubetrain.operator.trainjob.plugins import torchtune, trainer

SHARE_STORE_ENV = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"


class Torch:
    name = "Torch"

    def enforce_ml_policy(self, info: runtime_info.RuntimeInfo) -> None:
        if info.ml_policy is None or info.ml_policy.torch is None:
            return
        trainer.apply_num_nodes(info, contract.node_count(info.job, info.runtime))
        trainer.apply_env(info, contract.env(info.job, info.runtime, info.port))
        trainer.apply_ports(info, contract.ports(info.port))
        own_env = {e.get("name") for e in (info.trainer.env or [])} if info.trainer else set()
        if contract.is_elastic(info.runtime) and SHARE_STORE_ENV not in own_env:
            trainer.apply_env(info, [{"name": SHARE_STORE_ENV, "value": "1"}])
        for job_name, container_name in contract.injection_targets(info.runtime):
            pod_set = info.pod_set(job_name)
            container = pod_set.container(container_name) if pod_set is not None else None
            if container is not None:
                upserts.upsert_env(
                    container.env, contract.injected_env(info.job, info.runtime, info.port)
                )
        if contract.is_torchtune(info.job):
            torchtune.rewrite_command(info)

    def pre_build(self, info: runtime_info.RuntimeInfo) -> list[api.FieldError]:
        if info.ml_policy is None or info.ml_policy.torch is None:
            return []
        command = list((info.trainer.command or ()) if info.trainer is not None else ())
        if not torchtune.rewritten(info, command):
            return []  # not `tune run` as such: the TrainJob chose its recipe and config itself
        return torchtune.validate(info)
