"""XGBoostJob: the Rabit tracker / LightGBM env contract and XGBoost's status rules.

Upstream: ``pkg/controller.v1/xgboost/{xgboost,xgboostjob_controller}.go`` (v1.9.4). Every
container gets the master's address and port, the world size and its rank (workers rank after
the master); with more than one replica, also the worker port and addresses LightGBM reads.
On the host network each worker's WORKER_PORT is its own port, so WORKER_PORT no longer tells
the master every worker's port: LightGBM's machine list needs one port for all of them.
Pure: no I/O, no logging.
"""

from __future__ import annotations

from collections.abc import Collection

from kubetrain import api
from kubetrain.frameworks import _replicas
from kubetrain.frameworks._framework import (
    ContainerEnv,
    EnvVar,
    Framework,
    Messages,
    Settings,
    StatusRules,
)


def is_master(present: Collection[str], rtype: str, index: int) -> bool:
    return rtype == "Master"


def env(job: api.JobKind, rtype: str, index: int, settings: Settings) -> ContainerEnv:
    rank = index + _replicas.replicas(job, "Master") if rtype == "Worker" else index
    master_port = _replicas.require_port(job, "Master", 0, settings)
    total = _replicas.total(job)
    vars_: list[EnvVar] = [
        _replicas.value("MASTER_PORT", str(master_port)),
        _replicas.value("MASTER_ADDR", _replicas.pod_name(job.name, "Master", 0)),
        _replicas.value("WORLD_SIZE", str(total)),
        _replicas.value("RANK", str(rank)),
        _replicas.value("PYTHONUNBUFFERED", "1"),
    ]
    if total > 1:
        # One name per non-master replica, which upstream counts as total - 1.
        addrs = [_replicas.pod_name(job.name, "Worker", i) for i in range(total - 1)]
        # A worker's WORKER_PORT is the port it listens on, its own one on the host network;
        # the master is told worker 0's.
        own = index if rtype == "Worker" else 0
        worker_port = _replicas.require_port(job, "Worker", own, settings)
        vars_ += [
            _replicas.value("WORKER_PORT", str(worker_port)),
            _replicas.value("WORKER_ADDRS", ",".join(addrs)),
        ]
    return _replicas.same_for_all(_replicas.specs(job).get(rtype), vars_)


FRAMEWORK = Framework(
    job_class=api.XGBoostJob,
    name="xgboost",
    controller="xgboostjob-controller",
    is_master=is_master,
    env=env,
    status=StatusRules(
        order=("Master", "Worker"),
        leaders=("Master",),
        running_before_outcome=True,
        restart_policies=frozenset({"ExitCode"}),
        messages=Messages.standard("XGBoostJob"),
    ),
)
