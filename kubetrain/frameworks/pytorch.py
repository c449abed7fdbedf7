"""PyTorchJob: the torchrun env contract (MASTER_*, PET_*), elastic rendezvous, init-pytorch.

Upstream: ``pkg/controller.v1/pytorch/{envvar,master,elastic,initcontainer}.go`` (v1.9.4).
Without a Master, no MASTER_*/WORLD_SIZE/RANK is set: worker-only jobs rely on torchrun's
rendezvous. The init container waits for the master's DNS name on workers only.
Pure: no I/O, no logging.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from kubetrain import api
from kubetrain.frameworks import _replicas
from kubetrain.frameworks._framework import (
    ContainerEnv,
    ContractError,
    EnvVar,
    Framework,
    Messages,
    PodExtras,
    Settings,
    StatusRules,
)

INIT_CONTAINER_NAME = "init-pytorch"
_GO_ATOI = re.compile(r"^[+-]?[0-9]+$")


def is_master(present: Collection[str], rtype: str, index: int) -> bool:
    """The Master when there is one; otherwise worker 0."""
    if "Master" in present:
        return rtype == "Master"
    return rtype == "Worker" and index == 0


def nproc_per_node(job: api.JobKind) -> int:
    """``spec.nprocPerNode`` as a number for WORLD_SIZE; 1 for auto/cpu/gpu or unset."""
    text = job.spec.nproc_per_node
    if text is None or not _GO_ATOI.match(text):
        return 1
    return int(text)


def master_addr(job: api.JobKind) -> str:
    return _replicas.pod_name(job.name, "Master", 0)


def elastic_env(job: api.JobKind, settings: Settings | None = None) -> list[EnvVar]:
    """The PET_* rendezvous vars of ``spec.elasticPolicy``, in upstream's order; [] without it.

    Without ``rdzvPort`` the rendezvous is on worker 0's port (its host port, when it has one);
    a ``rdzvPort`` the job sets is used as written.
    """
    elastic = job.spec.elastic_policy
    if elastic is None:
        return []
    host = elastic.rdzv_host if elastic.rdzv_host is not None else f"{job.name}-worker-0"
    rdzv_port = elastic.rdzv_port
    if rdzv_port is None:
        rdzv_port = _replicas.require_port(job, "Worker", 0, settings or Settings())
    env = [
        _replicas.value("PET_RDZV_ENDPOINT", f"{host}:{rdzv_port}"),
        _replicas.value("PET_RDZV_BACKEND", elastic.rdzv_backend or "c10d"),
        _replicas.value("PET_NNODES", _nnodes(job)),
    ]
    if elastic.max_restarts is not None:
        env.append(_replicas.value("PET_MAX_RESTARTS", str(elastic.max_restarts)))
    if elastic.n_proc_per_node is not None:
        env.append(_replicas.value("PET_NPROC_PER_NODE", str(elastic.n_proc_per_node)))
    if elastic.rdzv_id is not None:
        env.append(_replicas.value("PET_RDZV_ID", elastic.rdzv_id))
    if elastic.rdzv_conf:  # upstream crashes on an empty list; kubetrain sets nothing
        pairs = ",".join(f"{c.key or ''}={c.value or ''}" for c in elastic.rdzv_conf)
        env.append(_replicas.value("PET_RDZV_CONF", pairs))
    if elastic.standalone:
        env.append(_replicas.value("PET_STANDALONE", ""))
    return env


def _nnodes(job: api.JobKind) -> str:
    """``min:max``; the Worker count when neither bound is set (defaulting normally sets both)."""
    elastic = job.spec.elastic_policy
    low, high = elastic.min_replicas, elastic.max_replicas
    if low is None and high is None:
        if not _replicas.has(job, "Worker"):
            raise ContractError(
                f"{job.KIND} {_replicas.namespace(job)}/{job.name}: "
                f"spec.{job.REPLICA_FIELD}[Worker]: cannot find the worker spec; "
                "accepted: a Worker replica spec when elasticPolicy is set"
            )
        return str(_replicas.replicas(job, "Worker"))
    low = high if low is None else low
    high = low if high is None else high
    return f"{low}:{high}"


def env(job: api.JobKind, rtype: str, index: int, settings: Settings) -> ContainerEnv:
    total = _replicas.total(job)
    vars_: list[EnvVar] = [_replicas.value("PYTHONUNBUFFERED", "1")]
    if _replicas.has(job, "Master"):
        port = str(_replicas.require_port(job, "Master", 0, settings))
        rank = str(index + 1 if rtype == "Worker" else index)
        vars_ += [
            _replicas.value("MASTER_PORT", port),
            _replicas.value("PET_MASTER_PORT", port),
            _replicas.value("MASTER_ADDR", master_addr(job)),
            _replicas.value("PET_MASTER_ADDR", master_addr(job)),
            _replicas.value("WORLD_SIZE", str(total * nproc_per_node(job))),
            _replicas.value("RANK", rank),
            _replicas.value("PET_NODE_RANK", rank),
        ]
    if job.spec.nproc_per_node is not None:
        vars_.append(_replicas.value("PET_NPROC_PER_NODE", job.spec.nproc_per_node))
    if job.spec.elastic_policy is not None:
        vars_ += elastic_env(job, settings)
    else:
        vars_.append(_replicas.value("PET_NNODES", str(total)))
    return _replicas.same_for_all(_replicas.specs(job).get(rtype), vars_)


def init_container(job: api.JobKind, settings: Settings) -> dict[str, object]:
    """init-pytorch: wait until the master's name resolves, up to ``max_tries`` × 2 s."""
    command = (
        f"err=1;for i in $(seq {settings.init_container_max_tries}); "
        f"do if nslookup {master_addr(job)}; then err=0 && break; fi;"
        "echo waiting for master; sleep 2; done; exit $err"
    )
    return {
        "name": INIT_CONTAINER_NAME,
        "image": settings.init_container_image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "100m", "memory": "20Mi"},
            "requests": {"cpu": "50m", "memory": "10Mi"},
        },
        "command": ["sh", "-c", command],
    }


def extras(job: api.JobKind, rtype: str, index: int, settings: Settings) -> PodExtras:
    if rtype != "Worker" or not _replicas.has(job, "Master"):
        return PodExtras()
    return PodExtras(init_containers=(init_container(job, settings),))


FRAMEWORK = Framework(
    job_class=api.PyTorchJob,
    name="pytorch",
    controller="pytorchjob-controller",
    is_master=is_master,
    env=env,
    extras=extras,
    reports_selector=True,
    status=StatusRules(
        order=("Master", "Worker"),
        leaders=("Master",),
        fallback="Worker",
        failure_needs_shortfall=True,
        restart_policies=frozenset({"Always", "OnFailure", "ExitCode"}),
        elastic_success=True,
        messages=Messages.standard("PyTorchJob"),
    ),
)
