"""What every ML plugin does to the trainer first: apply the TrainJob's node count and env.

Shared by the plainml, torch, jax and xgboost plugins (upstream repeats it in each): the
trainer-ancestor pod set gets ``trainer.numNodes`` when the TrainJob sets it, and its ``node``
container gets ``trainer.env`` before the framework's own variables, so those win. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubetrain import api
from kubetrain.operator.trainjob import runtime_info, upserts


def apply_num_nodes(info: runtime_info.RuntimeInfo, count: int | None = None) -> None:
    """The trainer pod set's count: ``count`` if given, else the TrainJob's, if set."""
    pod_set = info.pod_set_by_ancestor(api.TRAINER_ANCESTOR)
    if pod_set is None:
        return
    if count is not None:
        pod_set.count = count
    elif info.trainer is not None and info.trainer.num_nodes is not None:
        pod_set.count = info.trainer.num_nodes


def apply_env(info: runtime_info.RuntimeInfo, env: Iterable[Mapping[str, Any]] = ()) -> None:
    """``trainer.env``, then ``env`` (a framework's variables), upserted into the trainer's
    ``node`` container."""
    container = info.trainer_container()
    if container is None:
        return
    if info.trainer is not None and info.trainer.env:
        upserts.upsert_env(container.env, info.trainer.env)
    upserts.upsert_env(container.env, env)


def apply_ports(info: runtime_info.RuntimeInfo, ports: Iterable[Mapping[str, Any]]) -> None:
    container = info.trainer_container()
    if container is not None:
        upserts.upsert_ports(container.ports, ports)
