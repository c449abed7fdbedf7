"""The host port of a TrainJob whose pods share the host's network: one per job, from a range.

Every TrainJob's rank 0 would listen on 29500 (torch's rendezvous, JAX's coordinator, XGBoost's
tracker), so two TrainJobs on one host collide, and so would a TrainJob and a v1 job's pod.
With host networking forced, each TrainJob is given a port from a range instead, which the env
contracts name and rank 0 listens on.

Level-triggered, as the v1 operator does it: the port is recorded on the job's headless Service
(:data:`HOST_PORT_ANNOTATION`, the key the v1 operator records its pods' ports under, so the
two never hand out the same port), which is created before the first pod and outlives every
pod, and is read back from there on each reconcile. A new port is picked only for a job whose
Service records none: starting at a hash of ``<namespace>/<job>``, the first port in the range
that no Service records and that was not just handed out.

Pure: the Services, pods and ports already taken come in as arguments.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

HOST_PORT_ANNOTATION: Final = "kubetrain.io/host-port"
DEFAULT_RANGE: Final = (20000, 29999)


def _port(value: Any) -> int | None:
    try:
        port = int(str(value))
    except ValueError:
        return None
    return port if 0 < port <= 65535 else None


def recorded(obj: Mapping[str, Any] | None) -> int | None:
    """The host port an object (a Service, the JobSet) records, if it records a valid one."""
    metadata = obj.get("metadata") if obj is not None else None
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return None
    return _port(annotations.get(HOST_PORT_ANNOTATION))


def taken(services: Iterable[Mapping[str, Any]]) -> set[int]:
    """Every port any Service records."""
    return {port for service in services if (port := recorded(service)) is not None}


def of_pods(pods: Iterable[Mapping[str, Any]]) -> int | None:
    """The host port a pod of the job already listens on (when the Service was lost)."""
    for pod in pods:
        spec = pod.get("spec")
        for container in (spec.get("containers") if isinstance(spec, Mapping) else None) or []:
            for port in (container.get("ports") if isinstance(container, Mapping) else None) or []:
                if isinstance(port, Mapping) and (found := _port(port.get("hostPort"))):
                    return found
    return None


def seed(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def choose(seed_: str, used: set[int], low: int, high: int) -> int | None:
    """The first free port walking the range from a point fixed by ``seed_``; None if full."""
    size = high - low + 1
    start = zlib.crc32(seed_.encode()) % size
    for step in range(size):
        port = low + (start + step) % size
        if port not in used:
            return port
    return None


def port_for(
    namespace: str,
    name: str,
    *,
    service: Mapping[str, Any] | None,
    remembered: int | None,
    pods: Iterable[Mapping[str, Any]],
    services: Callable[[], Iterable[Mapping[str, Any]]],
    handed_out: Iterable[int],
    low: int,
    high: int,
) -> int | None:
    """The port of TrainJob ``namespace/name``, first found of: what its ``service`` records;
    what the caller ``remembered`` handing out to it (its Service not created or not seen
    yet); what one of its ``pods`` listens on (its Service lost); the first port of
    ``low..high`` from the job's seed that no Service records and that is not among the ports
    just ``handed_out`` to other jobs. None when the range is full. ``services`` lists every
    Service, asked for only when a new port must be picked.
    """
    port = recorded(service) or remembered or of_pods(pods)
    if port is not None:
        return port
    return choose(seed(namespace, name), taken(services()) | set(handed_out), low, high)


def check_range(low: int, high: int) -> None:
    """ValueError unless ``low..high`` is a range of ports."""
    if not 0 < low <= high <= 65535:
        raise ValueError(
            f"host_port_range: {low}-{high} is not a port range; accepted: 1 <= low <= high"
            " <= 65535"
        )
