"""What the v1 operator adds to each pod and headless service it creates for a job.

Given a defaulted job, a replica type and an index, :func:`pod_contract` says the pod's name,
the operator's labels, the env vars appended to each container (after the user's own, never
deduplicated, as upstream does), init containers, volumes, the pod restartPolicy and, for a
pod given a host port, the port it listens on; :meth:`PodContract.apply` lays that over the
replica's template. :func:`service_contract` does the same for the one headless service per
pod. Pure: no I/O, no logging, no clock.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain import api
from kubetrain.frameworks import _registry, _replicas
from kubetrain.frameworks._framework import ContractError, EnvVar, Settings

OPERATOR_NAME_LABEL = api.OPERATOR_NAME_LABEL
JOB_NAME_LABEL = api.JOB_NAME_LABEL
REPLICA_TYPE_LABEL = api.REPLICA_TYPE_LABEL
REPLICA_INDEX_LABEL = api.REPLICA_INDEX_LABEL
JOB_ROLE_LABEL = api.JOB_ROLE_LABEL


@dataclass(frozen=True)
class HostPort:
    """The port a host-network pod was given, for the named port of one of its containers."""

    container: str
    name: str
    port: int


@dataclass(frozen=True)
class PodContract:
    """The operator's additions to one pod; ``env`` and mounts are keyed by container name.

    ``host_port``: the pod listens on the host's ``port``, which its env already names; its
    named port becomes that container port and host port, so that what the scheduler checks
    for conflicts is what the process binds.
    """

    name: str
    labels: Mapping[str, str]
    env: Mapping[str, tuple[EnvVar, ...]]
    restart_policy: str
    init_containers: tuple[dict[str, Any], ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()
    volume_mounts: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    service_account_name: str | None = None
    idle_command: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    host_port: HostPort | None = None

    def apply(self, template: Mapping[str, Any] | None) -> dict[str, Any]:
        """A new pod template: ``template`` (not modified) with this contract laid over it.

        Operator labels win over template labels of the same key; env vars, init containers,
        mounts and volumes are appended; the restartPolicy is replaced; a host port replaces
        the named port's number (or is added as that port when the container lacks it).
        """
        pod = _copy(dict(template or {}))
        metadata = pod.setdefault("metadata", {})
        metadata["name"] = self.name
        metadata["labels"] = {**(metadata.get("labels") or {}), **self.labels}
        spec = pod.setdefault("spec", {})
        containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
        if self.idle_command is not None and containers and not containers[0].get("command"):
            command, args = self.idle_command
            containers[0]["command"] = list(command)
            containers[0]["args"] = list(args)
        for container in containers:
            name = container.get("name")
            added_env = self.env.get(name, ())
            if added_env:
                container["env"] = [*(container.get("env") or []), *map(_copy, added_env)]
            mounts = self.volume_mounts.get(name, ())
            if mounts:
                container["volumeMounts"] = [
                    *(container.get("volumeMounts") or []),
                    *map(_copy, mounts),
                ]
        if self.host_port is not None:
            _set_host_port(containers, self.host_port)
        if self.init_containers:
            spec["initContainers"] = [
                *(spec.get("initContainers") or []),
                *map(_copy, self.init_containers),
            ]
        if self.volumes:
            spec["volumes"] = [*(spec.get("volumes") or []), *map(_copy, self.volumes)]
        if self.service_account_name and not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = self.service_account_name
        spec["restartPolicy"] = self.restart_policy
        return pod


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists and scalars), several times faster than
    ``copy.deepcopy``, which keeps a memo of every object for the sake of shared and cyclic
    references that JSON cannot have; copying each pod's template was most of the time
    spent planning a job's pods. Anything else is handed to ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


def _set_host_port(containers: list[dict[str, Any]], host_port: HostPort) -> None:
    container = next((c for c in containers if c.get("name") == host_port.container), None)
    if container is None:
        return
    ports = container.get("ports")
    if not isinstance(ports, list):
        ports = container["ports"] = []
    named = next(
        (p for p in ports if isinstance(p, dict) and p.get("name") == host_port.name), None
    )
    if named is None:
        named = {"name": host_port.name}
        ports.append(named)
    named["containerPort"] = host_port.port
    named["hostPort"] = host_port.port


@dataclass(frozen=True)
class ServiceContract:
    """One headless service, named like its pod and selecting it by type and index."""

    name: str
    labels: Mapping[str, str]
    ports: tuple[dict[str, Any], ...]

    def manifest(self, namespace: str) -> dict[str, Any]:
        """The Service body without ownerReferences (the reconciler adds those)."""
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": self.name, "namespace": namespace, "labels": dict(self.labels)},
            "spec": {
                "clusterIP": "None",
                "selector": dict(self.labels),
                "ports": [dict(port) for port in self.ports],
            },
        }


def job_labels(job: api.JobKind) -> dict[str, str]:
    """The two labels that find every pod and service of a job."""
    framework = _registry.for_kind(job.KIND)
    return {
        OPERATOR_NAME_LABEL: framework.controller,
        JOB_NAME_LABEL: job.name.replace("/", "-"),
    }


def replica_labels(job: api.JobKind, rtype: str, index: int | None) -> dict[str, str]:
    """Job labels plus the lower-cased replica type and, for indexed types, the index."""
    labels = {**job_labels(job), REPLICA_TYPE_LABEL: rtype.lower()}
    if index is not None:
        labels[REPLICA_INDEX_LABEL] = str(index)
    return labels


def replica_selector(job: api.JobKind, rtype: str) -> str:
    """``status.replicaStatuses[rt].selector``: job labels and type, keys sorted, comma-joined."""
    labels = {**job_labels(job), REPLICA_TYPE_LABEL: rtype.lower()}
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def pod_restart_policy(spec: api.ReplicaSpec) -> str:
    """The replica restartPolicy, except ExitCode: the pod gets Never and the operator decides."""
    policy = spec.restart_policy or ""
    return "Never" if policy == "ExitCode" else policy


def pod_contract(
    job: api.JobKind, rtype: str, index: int, settings: Settings | None = None
) -> PodContract:
    """What the operator adds to pod ``index`` of ``rtype`` (CamelCase) of a defaulted job.

    Raises :class:`ContractError` where upstream's reconcile errors (a required port missing).
    """
    settings = settings or Settings()
    framework = _registry.for_kind(job.KIND)
    specs = _replicas.specs(job)
    spec = specs.get(rtype)
    if spec is None:
        raise ContractError(
            f"{job.KIND} {_replicas.namespace(job)}/{job.name}: spec.{job.REPLICA_FIELD}: "
            f"no replica type {rtype}; accepted: {', '.join(specs) or 'none (the map is empty)'}"
        )
    unindexed = rtype in framework.unindexed
    name = (
        f"{job.name}-{rtype.lower()}" if unindexed else _replicas.pod_name(job.name, rtype, index)
    )
    labels = replica_labels(job, rtype, None if unindexed else index)
    if framework.is_master(specs.keys(), rtype, index):
        labels[JOB_ROLE_LABEL] = "master"
    env = framework.env(job, rtype, index, settings)
    extras = framework.extras(job, rtype, index, settings) if framework.extras else None
    assigned = None if unindexed else settings.host_ports.get((rtype, index))
    return PodContract(
        name=name,
        labels=labels,
        env={container: vars_ for container, vars_ in env.items() if vars_},
        restart_policy=pod_restart_policy(spec),
        init_containers=extras.init_containers if extras else (),
        volumes=extras.volumes if extras else (),
        volume_mounts=dict(extras.volume_mounts) if extras else {},
        service_account_name=extras.service_account_name if extras else None,
        idle_command=extras.idle_command if extras else None,
        host_port=(
            HostPort(job.DEFAULT_CONTAINER, job.PORT_NAME, assigned)
            if assigned is not None
            else None
        ),
    )


def service_contract(job: api.JobKind, rtype: str, index: int) -> ServiceContract:
    """The headless service for pod ``index`` of ``rtype``: every port of the default container.

    The default container has no ports → a service with no ports; no container named like the
    default → :class:`ContractError` (upstream's "failed to find the port"). MPIJob creates no
    services, so asking for one is a :class:`ContractError` too.
    """
    framework = _registry.for_kind(job.KIND)
    if not framework.creates_services:
        raise ContractError(
            f"{job.KIND} {_replicas.namespace(job)}/{job.name}: spec.{job.REPLICA_FIELD}"
            f"[{rtype}]: {job.KIND} creates no services; accepted: pods only"
        )
    spec = _replicas.specs(job).get(rtype)
    default = next(
        (c for c in _replicas.containers(spec) if c.get("name") == job.DEFAULT_CONTAINER), None
    )
    if default is None:
        raise _replicas.missing_port(job, rtype)
    # Upstream collects ports into a map by name, so a repeated name keeps the last number.
    by_name: dict[str, int] = {}
    for port in default.get("ports") or []:
        if isinstance(port, dict):
            by_name[str(port.get("name") or "")] = port.get("containerPort", 0)
    return ServiceContract(
        name=_replicas.pod_name(job.name, rtype, index),
        labels=replica_labels(job, rtype, index),
        ports=tuple(
            {"name": name, "port": number} if name else {"port": number}
            for name, number in by_name.items()
        ),
    )
