"""Reading a defaulted v1 job's replicas: pod names, replica counts, the ports pods listen on.

Every framework's env contract is built from these few facts, so they are read one way here.
The job must already be defaulted (``kubetrain.api.admit``): replicas and ports are then set.
A pod's port is its host port when the operator gave it one (``Settings.host_ports``), else
its replica type's named port: contracts ask :func:`port_of` / :func:`require_port` for a
particular pod, never the template, so a host-network pod and its peers agree.
Pure: no I/O, no logging.
"""

from __future__ import annotations

from typing import Any

from kubetrain import api
from kubetrain.frameworks._framework import ContainerEnv, ContractError, EnvVar, Settings


def pod_name(job_name: str, rtype: str, index: int) -> str:
    """``<job>-<rtype lower>-<index>``, upstream's ``GenGeneralName`` (a ``/`` becomes ``-``)."""
    return f"{job_name}-{rtype.lower()}-{index}".replace("/", "-")


def specs(job: api.JobKind) -> dict[str, api.ReplicaSpec]:
    """The replica specs that are set, keyed by CamelCase replica type."""
    return {rt: spec for rt, spec in (job.replica_specs() or {}).items() if spec is not None}


def has(job: api.JobKind, rtype: str) -> bool:
    return rtype in specs(job)


def replicas(job: api.JobKind, rtype: str) -> int:
    """Replicas of one type; 0 when the type is absent."""
    spec = specs(job).get(rtype)
    return (spec.replicas or 0) if spec is not None else 0


def total(job: api.JobKind) -> int:
    """The sum of replicas over every type (upstream's ``totalReplicas``)."""
    return sum(spec.replicas or 0 for spec in specs(job).values())


def namespace(job: api.JobKind) -> str:
    return job.metadata.namespace or ""


def containers(spec: api.ReplicaSpec | None) -> list[dict[str, Any]]:
    """A replica template's containers that are objects, in order."""
    if spec is None or not isinstance(spec.template, dict):
        return []
    pod_spec = spec.template.get("spec")
    items = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def named_port(job: api.JobKind, rtype: str) -> int | None:
    """The framework's named port on its default container, as upstream looks it up.

    Only a container named exactly like the default counts, and the first port with the
    framework's port name wins; None when either is missing.
    """
    for container in containers(specs(job).get(rtype)):
        if container.get("name") != job.DEFAULT_CONTAINER:
            continue
        for port in container.get("ports") or []:
            if isinstance(port, dict) and port.get("name") == job.PORT_NAME:
                number = port.get("containerPort")
                return number if isinstance(number, int) else None
    return None


def port_of(job: api.JobKind, rtype: str, index: int, settings: Settings) -> int | None:
    """The port pod ``index`` of ``rtype`` listens on: its host port, else the named port."""
    assigned = settings.host_ports.get((rtype, index))
    return assigned if assigned is not None else named_port(job, rtype)


def require_port(job: api.JobKind, rtype: str, index: int, settings: Settings) -> int:
    """:func:`port_of`, or :class:`ContractError` saying where the named port was looked for."""
    port = port_of(job, rtype, index, settings)
    if port is not None:
        return port
    raise missing_port(job, rtype)


def missing_port(job: api.JobKind, rtype: str) -> ContractError:
    """Upstream's "failed to find the port", with the job, replica and field named."""
    found = containers(specs(job).get(rtype))
    position = next(
        (i for i, c in enumerate(found) if c.get("name") == job.DEFAULT_CONTAINER), None
    )
    path = f"spec.{job.REPLICA_FIELD}[{rtype}].template.spec.containers"
    if position is None:
        problem = f"failed to find the port: no container named {job.DEFAULT_CONTAINER}"
    else:
        path = f"{path}[{position}].ports"
        problem = f"failed to find the port named {job.PORT_NAME}"
    return ContractError(
        f"{job.KIND} {namespace(job)}/{job.name}: {path}: {problem}; "
        f"accepted: a containerPort named {job.PORT_NAME} on container {job.DEFAULT_CONTAINER}"
    )


def value(name: str, text: str) -> EnvVar:
    """A literal env var."""
    return {"name": name, "value": text}


def pod_ip(name: str) -> EnvVar:
    """An env var holding the pod's own IP (downward API), as Paddle's POD_IP_DUMMY."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def same_for_all(spec: api.ReplicaSpec | None, env: list[EnvVar]) -> ContainerEnv:
    """The same vars for every container of the template, as most frameworks inject them."""
    return {str(c.get("name", "")): tuple(env) for c in containers(spec)}
