"""The kubelet's HTTP API as both sides of the local control plane speak it: the paths the
node's server answers on and the API server's node proxy calls, and the order in which a
pod's containers are named (kube's ``VisitContainers``). The contract itself (trust, options,
streams) is in :mod:`kubetrain.local.apiserver.nodeproxy`'s docstring; the options are read
by :mod:`.podoptions` and streamed with :mod:`.channels`.

Must not: do I/O, or import either side (the node's server or the API server).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

LOG_PATH: Final = "/containerLogs/{namespace}/{pod}/{container}"
EXEC_PATH: Final = "/exec/{namespace}/{pod}/{container}"
STATS_PATH: Final = "/stats/summary"
PORT_FORWARD_PATH: Final = "/portForward/{namespace}/{pod}"


def container_names(pod: Mapping[str, Any]) -> list[str]:
    """Init containers, containers, then ephemeral containers: kube's ``VisitContainers``."""
    spec = pod.get("spec") or {}
    return [
        str(c.get("name", ""))
        for field in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(field) or []
        if isinstance(c, Mapping)
    ]
