"""How the admission webhook is served: where, with which certificate, registered how.

In the cluster (the Deployment of ``deploy/``), kube-apiserver reaches the webhook through
the Service ``service_name`` in ``namespace`` (port 443 → ``port``), and the webhook
configurations of ``deploy/`` name that Service. Out of the cluster, ``url`` is where the
webhook listens and what the configurations it registers name.

Certificates: ``internal`` (upstream's default) makes a CA and a serving certificate, keeps
them in the Secret ``secret_name`` in ``namespace``, renews them before they expire and writes
the CA into the configurations' ``caBundle``; ``none`` serves whatever the Secret holds (the
cert-manager overlay: cert-manager issues it and injects the CA) and writes nothing.

Owns: those settings and the facts derived from them. Must not: do I/O.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

INTERNAL: Final = "internal"
NONE: Final = "none"
CERT_MANAGEMENT: Final = (INTERNAL, NONE)
PORT: Final = 9443  # upstream's --webhook-server-port
SERVICE_NAME: Final = "kubetrain-operator"
SECRET_NAME: Final = "kubetrain-operator-webhook-cert"
NAMESPACE: Final = "kubeflow"


@dataclass(frozen=True)
class Validity:
    """How long certificates live and how early they are renewed (upstream's cert-controller:
    a ten-year CA, certificates renewed well before they expire)."""

    ca: datetime.timedelta = datetime.timedelta(days=3650)
    serving: datetime.timedelta = datetime.timedelta(days=365)
    renew_ca_before: datetime.timedelta = datetime.timedelta(days=365)
    renew_serving_before: datetime.timedelta = datetime.timedelta(days=90)


@dataclass(frozen=True)
class Settings:
    port: int = PORT
    service_name: str = SERVICE_NAME
    secret_name: str = SECRET_NAME
    namespace: str = NAMESPACE  # of the Service and the Secret: the operator's own
    url: str = ""  # out of the cluster: https://HOST:PORT, served here and registered
    cert_management: str = INTERNAL
    validity: Validity = Validity()
    refresh: float = 60.0  # seconds between checks of the certificate and the caBundle

    @property
    def out_of_cluster(self) -> bool:
        return bool(self.url)

    @property
    def address(self) -> str:
        """The bind address: every interface on ``port`` in the cluster; out of it, the URL's
        host when it is an IP address (else every interface) and the URL's port."""
        if not self.url:
            return f":{self.port}"
        host, port = url_host_port(self.url)
        return f"{host if _is_ip(host) else ''}:{port}"

    def serving_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The DNS names and IP addresses the serving certificate must name: the Service's
        names in the cluster, the URL's host out of it."""
        if self.url:
            host, _ = url_host_port(self.url)
            return ((), (host,)) if _is_ip(host) else ((host,), ())
        svc, ns = self.service_name, self.namespace
        return ((svc, f"{svc}.{ns}", f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"), ())


def url_host_port(url: str) -> tuple[str, int]:
    """The host and port of ``--webhook-url``; ValueError names the flag and what it takes."""
    accepted = "accepted: https://HOST:PORT (no path), e.g. https://127.0.0.1:9443"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        port, parts = None, None
    if (
        parts is None
        or parts.scheme != "https"
        or not parts.hostname
        or port is None
        or port == 0
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise ValueError(f"--webhook-url: {url!r}; {accepted}")
    return parts.hostname, port


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
