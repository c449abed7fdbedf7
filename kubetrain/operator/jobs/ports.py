"""Ports for host-network pods: one per pod from a range, stable, and told to every peer.

A pod on the host network listens on the host's own ports, so two replicas that both listen on
"their" 23456 collide when they share a host, and so do two jobs. The operator therefore gives
each host-network pod its own port for the framework's named port (``pytorchjob-port``,
``tfjob-port``, ...): the service port becomes it here, and the pod contract
(``frameworks.Settings.host_ports``) makes it the container and host port and names it in the
env of every pod (MASTER_PORT, TF_CONFIG, MX_CONFIG, COORDINATOR_PORT, PADDLE_MASTER, ...),
one port per pod, so the peers of a replica type with several pods find each of them.

Level-triggered: the port is recorded on the replica's headless Service (annotation
:data:`~kubetrain.operator.hostports.HOST_PORT_ANNOTATION`), which is created before its pod
and outlives pod restarts, and is read back from there on every reconcile; a new one is picked
only for a replica without a Service. The pick starts at a hash of
``<ns>/<job>/<rtype>/<index>`` and walks the range to the first port no other Service records
nor any controller of the process just handed out (the one
:class:`~kubetrain.operator.hostports.Book`, which the TrainJob controller shares).

Pure: the ports already taken and the range come in as arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain import api
from kubetrain.operator import hostports


def template_spec(job: api.JobKind, rtype: str) -> dict[str, Any]:
    spec = (job.replica_specs() or {}).get(rtype)
    template = spec.template if spec is not None else None
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    return pod_spec if isinstance(pod_spec, dict) else {}


def host_network(job: api.JobKind, rtype: str, force: bool) -> bool:
    """Whether pods of ``rtype`` run on the host network (by their template, or forced)."""
    return force or template_spec(job, rtype).get("hostNetwork") is True


def _named_port(container: Mapping[str, Any], port_name: str) -> dict[str, Any] | None:
    for port in container.get("ports") or []:
        if isinstance(port, dict) and port.get("name") == port_name:
            return port
    return None


def _default_container(pod_spec: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for container in pod_spec.get("containers") or []:
        if isinstance(container, dict) and container.get("name") == name:
            return container
    return None


def listens(job: api.JobKind, rtype: str) -> bool:
    """The default container declares the framework's named port (MPIJob declares none)."""
    container = _default_container(template_spec(job, rtype), job.DEFAULT_CONTAINER)
    return container is not None and _named_port(container, job.PORT_NAME) is not None


def seed(namespace: str, job: str, rtype: str, index: int) -> str:
    return f"{namespace}/{job}/{rtype.lower()}/{index}"


def set_service_port(service: dict[str, Any], job: api.JobKind, port: int) -> None:
    """The Service exposes the pod's host port under the framework's port name, and records it."""
    for entry in service.get("spec", {}).get("ports") or []:
        if entry.get("name") == job.PORT_NAME:
            entry["port"] = port
    metadata = service.setdefault("metadata", {})
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        hostports.HOST_PORT_ANNOTATION: str(port),
    }
