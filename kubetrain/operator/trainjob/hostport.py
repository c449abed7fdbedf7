"""The host port of a TrainJob whose pods share the host's network: one per job, from a range.

Every TrainJob's rank 0 would listen on 29500 (torch's rendezvous, JAX's coordinator, XGBoost's
tracker), so two TrainJobs on one host collide, and so would a TrainJob and a v1 job's pod.
With host networking forced, each TrainJob is given a port from a range instead, which the env
contracts name and rank 0 listens on.

Level-triggered, as the v1 operator does it: the port is recorded on the job's headless Service
(:data:`~kubetrain.operator.hostports.HOST_PORT_ANNOTATION`), which is created before the first
pod and outlives every pod, and is read back from there on each reconcile. A new port is picked
only for a job whose Service records none: starting at a hash of ``<namespace>/<job>``, the
first port in the range that the process's one :class:`~kubetrain.operator.hostports.Book`
holds as free (no Service records it, and neither this controller nor a v1 one just handed
it out).

Pure: the Service, pods and ports already taken come in as arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubetrain.operator import hostports


def of_pods(pods: Iterable[Mapping[str, Any]]) -> int | None:
    """The host port a pod of the job already listens on (when the Service was lost)."""
    for pod in pods:
        spec = pod.get("spec")
        for container in (spec.get("containers") if isinstance(spec, Mapping) else None) or []:
            for port in (container.get("ports") if isinstance(container, Mapping) else None) or []:
                if isinstance(port, Mapping) and (found := hostports.valid(port.get("hostPort"))):
                    return found
    return None


def seed(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def port_for(
    namespace: str,
    name: str,
    *,
    service: Mapping[str, Any] | None,
    remembered: int | None,
    pods: Iterable[Mapping[str, Any]],
    taken: Callable[[], Iterable[int]],
    low: int,
    high: int,
) -> int | None:
    """The port of TrainJob ``namespace/name``, first found of: what its ``service`` records;
    what the caller ``remembered`` handing out to it (its Service not created or not seen
    yet); what one of its ``pods`` listens on (its Service lost); the first port of
    ``low..high`` from the job's seed that is not ``taken``. None when the range is full.
    ``taken`` is asked only when a new port must be picked.
    """
    port = hostports.recorded(service) or remembered or of_pods(pods)
    if port is not None:
        return port
    return hostports.choose(seed(namespace, name), taken(), low, high)
