"""PaddleJob: the PADDLE_* env contract (collective and parameter-server modes).

Upstream: ``pkg/controller.v1/paddlepaddle/{envvar,paddlepaddle_controller}.go`` (v1.9.4).
The rendezvous pod (Master-0, or Worker-0 without a Master) advertises its own IP through
POD_IP_DUMMY, a downward-API var that PADDLE_MASTER expands; the others dial its service name.
Paddle's elasticPolicy adds no env and no autoscaler. Pure: no I/O, no logging.
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

POD_IP_DUMMY = "POD_IP_DUMMY"


def is_master(present: Collection[str], rtype: str, index: int) -> bool:
    return rtype == "Master"


def port(job: api.JobKind, rtype: str, index: int = 0, settings: Settings | None = None) -> int:
    """The port of pod ``index``: its host port, else the port named ``master`` on the
    ``paddle`` container, else 36543."""
    found = _replicas.port_of(job, rtype, index, settings or Settings())
    return job.DEFAULT_PORT if found is None else found


def env(job: api.JobKind, rtype: str, index: int, settings: Settings) -> ContainerEnv:
    vars_: list[EnvVar] = [
        _replicas.value("PYTHONUNBUFFERED", "1"),
        _replicas.value("PADDLE_JOB_ID", job.name),
        _replicas.value("PADDLE_NNODES", str(_replicas.total(job))),
    ]
    with_master = _replicas.has(job, "Master")
    host_type = "Master" if with_master else "Worker"
    host_port = port(job, host_type, 0, settings)
    # Without a Master only Workers exist, so index 0 alone picks the host.
    if index == 0 and (rtype == "Master" or not with_master):
        vars_ += [
            _replicas.pod_ip(POD_IP_DUMMY),
            _replicas.value("PADDLE_MASTER", f"$({POD_IP_DUMMY}):{host_port}"),
        ]
    else:
        address = _replicas.pod_name(job.name, host_type, 0)
        vars_.append(_replicas.value("PADDLE_MASTER", f"{address}:{host_port}"))
    if with_master:
        role = "PADDLE_SERVER_NUM" if rtype == "Master" else "PADDLE_TRAINER_NUM"
        vars_.append(_replicas.value(role, "1"))
    return _replicas.same_for_all(_replicas.specs(job).get(rtype), vars_)


FRAMEWORK = Framework(
    job_class=api.PaddleJob,
    name="paddle",
    controller="paddlejob-controller",
    is_master=is_master,
    env=env,
    reports_selector=True,
    status=StatusRules(
        order=("Master", "Worker"),
        leaders=("Master",),
        fallback="Worker",
        failure_needs_shortfall=True,
        restart_policies=frozenset({"Always", "OnFailure", "ExitCode"}),
        messages=Messages.standard("PaddleJob"),
    ),
)
