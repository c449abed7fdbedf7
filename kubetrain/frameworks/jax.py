"""JAXJob: the ``jax.distributed`` env contract (coordinator address, process count and id).

Upstream: ``pkg/controller.v1/jax/{envvar,jaxjob_controller}.go`` (v1.9.4). Worker 0 is the
coordinator, and master-role, since JAX's rule is simply index 0. COORDINATOR_ADDRESS carries
no port; programs join it with COORDINATOR_PORT. Pure: no I/O, no logging.
"""

from __future__ import annotations

from collections.abc import Collection

from kubetrain import api
from kubetrain.frameworks import _replicas
from kubetrain.frameworks._framework import (
    ContainerEnv,
    Framework,
    Messages,
    Settings,
    StatusRules,
)


def is_master(present: Collection[str], rtype: str, index: int) -> bool:
    return index == 0


def env(job: api.JobKind, rtype: str, index: int, settings: Settings) -> ContainerEnv:
    vars_ = [
        _replicas.value("PYTHONUNBUFFERED", "1"),
        _replicas.value(
            "COORDINATOR_PORT", str(_replicas.require_port(job, "Worker", 0, settings))
        ),
        _replicas.value("COORDINATOR_ADDRESS", _replicas.pod_name(job.name, "Worker", 0)),
        _replicas.value("NUM_PROCESSES", str(_replicas.total(job))),
        _replicas.value("PROCESS_ID", str(index)),
    ]
    return _replicas.same_for_all(_replicas.specs(job).get(rtype), vars_)


FRAMEWORK = Framework(
    job_class=api.JAXJob,
    name="jax",
    controller="jaxjob-controller",
    is_master=is_master,
    env=env,
    reports_selector=True,
    status=StatusRules(
        order=("Worker",),
        fallback="Worker",
        failure_needs_shortfall=True,
        restart_policies=frozenset({"Always", "OnFailure", "ExitCode"}),
        messages=Messages.standard("JAXJob"),
    ),
)
