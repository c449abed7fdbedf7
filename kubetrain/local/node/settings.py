"""What a node agent is told: its name, where it keeps state, where it serves, and its timings.

One frozen value, built by the entry point (the ``kubetrain node`` verb, or the daemon) and
passed down explicitly; tests shrink the timings (back-off of 0.2 s instead of 10 s).

Must not: read argv, the environment or files. :func:`default_name` and :func:`token_of` are
helpers for entry points, which decide when to call them.
"""

from __future__ import annotations

import re
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from kubetrain.kube import watch

KUBELET_VERSION: Final = "v1.32.0-kubetrain"
DEFAULT_ADDRESS: Final = "127.0.0.1"
DEFAULT_PODS: Final = 110  # the kubelet's default maxPods
DEFAULT_STATS_INTERVAL: Final = 10.0  # seconds; the kubelet's housekeeping is 10 s too
CLUSTER_DOMAIN: Final = "cluster.local"


@dataclass(frozen=True)
class Settings:
    """A node agent's configuration. ``root`` is required; everything else has the kubelet's
    defaults (or this machine's)."""

    root: str  # state dir: the runtime keeps pods under <root>/pods/, the agent <root>/agent/
    name: str = ""  # the Node's name; "" = default_name()
    address: str = DEFAULT_ADDRESS  # InternalIP, the pods' IP (all share the host network)
    port: int = 0  # the HTTPS endpoint; 0 = any free port (registered in the Node's status)
    ca_cert: str = ""  # the control plane's CA: the endpoint's certificate is issued by it
    ca_key: str = ""  # (both empty: a self-signed certificate; tell the API server to trust it)
    # the kubelet's --tls-cert-file/--tls-private-key-file: a serving certificate of one's own
    # (issued by the CA of kube-apiserver's --kubelet-certificate-authority); when given, no
    # certificate is issued and ca_cert/ca_key are not used
    tls_cert_file: str = ""
    tls_key_file: str = ""
    # the kubelet's --client-ca-file: a caller whose client certificate this CA issued is
    # authenticated (kube-apiserver shows its --kubelet-client-certificate); "" = none is
    client_ca_file: str = ""
    token: str = ""  # a bearer token callers may show instead (the local API server's)
    kubelet_version: str = KUBELET_VERSION
    cluster_domain: str = CLUSTER_DOMAIN
    max_pods: int = DEFAULT_PODS
    gpus: int | None = None  # None: ask `nvidia-smi -L`; a number: that many devices, 0..n-1
    labels: Mapping[str, str] = field(default_factory=dict)  # extra Node labels
    # what an image's ENV would give every container (PATH...; the pod's env overrides it);
    # empty: PATH as containerd's default
    environment: tuple[tuple[str, str], ...] = ()
    # timings, in seconds (the kubelet's defaults)
    lease_duration: int = 40  # leaseDurationSeconds of the node's Lease (nodeLeaseDurationSeconds)
    lease_renew: float = 10.0  # how often the Lease is renewed (a quarter of its duration)
    status_interval: float = 10.0  # how often the Node's status is computed, and posted when
    # it changed (nodeStatusUpdateFrequency) ...
    status_report: float = 300.0  # ... and posted anyway (nodeStatusReportFrequency)
    backoff_initial: float = 10.0  # crash back-off: the second restart waits this long ...
    backoff_max: float = 300.0  # ... doubling up to this
    backoff_reset: float = 600.0  # a container that ran this long starts the count afresh
    resync: float = 10.0  # a pod's worker looks again at least this often
    retry_initial: float = 0.5  # API and start failures are retried with this back-off ...
    retry_max: float = 10.0  # ... up to this
    orphan_grace: float = 2.0  # grace for processes of a pod that vanished from the API
    # how often every running container's CPU and memory are sampled (/stats/summary)
    stats_interval: float = DEFAULT_STATS_INTERVAL
    # resources.limits.cpu: "auto" = a cgroup v2 cpu.max where the node may write one, else not
    # enforced; "throttle" = the stop/continue throttler (see cpulimit); "off" = not enforced
    cpu_limits: Literal["auto", "throttle", "off"] = "auto"
    cpu_limit_period: float = 0.1  # the throttler's look at a limited container: this often
    watch: watch.Settings = field(default_factory=watch.Settings)
    # passed to the runtime
    path_prefix: tuple[str, ...] | None = None  # None: the runtime's default (this Python's bin)
    log_max_bytes: int | None = None
    isolation: Literal["auto", "namespace", "none"] = "auto"
    # images other than the host image run in this engine (Docker Engine API); "none": every
    # pod runs as host processes
    container_runtime: Literal["none", "docker", "podman"] = "none"
    container_host: str = ""  # the engine's address; "": where its own clients look

    @property
    def node_name(self) -> str:
        return self.name or default_name()


_LABEL_BAD = re.compile(r"[^a-z0-9-]+")


def default_name(hostname: str | None = None) -> str:
    """The host name, lowercased and made a DNS label (as the kubelet's ``--hostname-override``
    would have to be): the first dot-separated part, other characters as ``-``."""
    host = (hostname if hostname is not None else socket.gethostname()).lower()
    label = _LABEL_BAD.sub("-", host.split(".")[0]).strip("-")[:63].strip("-")
    return label or "localhost"


def token_of(configuration: Any) -> str:
    """The bearer token a ``kubernetes`` client Configuration authenticates with, or ``""``.
    The local control plane sends that same token to its node (see ``nodeproxy``)."""
    keys = getattr(configuration, "api_key", None) or {}
    value = str(keys.get("authorization") or keys.get("BearerToken") or "")
    prefix = (getattr(configuration, "api_key_prefix", None) or {}).get("authorization")
    if prefix and not value.startswith(prefix):
        value = f"{prefix} {value}"
    return value.removeprefix("Bearer ").strip()


def architecture(machine: str) -> str:
    """Go's GOARCH for ``platform.machine()``: what Node labels and nodeInfo say."""
    table = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
    return table.get(machine.lower(), machine.lower())


def operating_system() -> str:
    return "darwin" if sys.platform == "darwin" else sys.platform.rstrip("0123456789")
