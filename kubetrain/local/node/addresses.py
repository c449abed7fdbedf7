"""Which addresses the Node reports, so that the API server reaches the node's endpoint.

kube-apiserver dials a kubelet at the first of the Node's ``status.addresses`` whose type comes
first in its ``--kubelet-preferred-address-types`` (by default :data:`PREFERRED`: ``Hostname``
before ``InternalIP``), on ``status.daemonEndpoints.kubeletEndpoint.Port``, and checks the
serving certificate against that host (``--kubelet-certificate-authority``). The node listens
on one address (``--address``) and reports it as ``InternalIP``. It reports its ``Hostname``
too only when that name resolves, here, to the address it listens on and its certificate
covers the name: otherwise an API server with the default preference would dial the name and
reach another address, or refuse the certificate. (virtual-kubelet reports only
``InternalIP`` for the same reason.)

Owns: that choice, and reading which hosts a certificate covers. Must not: serve, or talk to
the API server.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from cryptography import x509

PREFERRED: Final = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")


def resolves_to(name: str, address: str) -> bool:
    """Whether ``name`` resolves, on this host, to ``address`` (among its answers). Blocking:
    it asks the resolver."""
    try:
        wanted = ipaddress.ip_address(address)
    except ValueError:
        return False
    try:
        answers = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    for *_, sockaddr in answers:
        try:
            if ipaddress.ip_address(sockaddr[0]) == wanted:
                return True
        except ValueError:
            continue
    return False


@dataclass(frozen=True)
class Covered:
    """The hosts a serving certificate is good for: its DNS names (``*.`` wildcards of one
    label included) and IP addresses, from its subjectAltName as TLS clients read it (Go and
    OpenSSL ignore the common name)."""

    names: frozenset[str]
    ips: frozenset[ipaddress.IPv4Address | ipaddress.IPv6Address]

    @classmethod
    def of(cls, pem: bytes) -> Covered:
        """The first certificate of a PEM file (the leaf of a chain)."""
        cert = x509.load_pem_x509_certificate(pem)
        try:
            alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            return cls(frozenset(), frozenset())
        names = frozenset(n.lower().rstrip(".") for n in alt.get_values_for_type(x509.DNSName))
        return cls(names, frozenset(alt.get_values_for_type(x509.IPAddress)))

    def __call__(self, host: str) -> bool:
        try:
            return ipaddress.ip_address(host) in self.ips
        except ValueError:
            pass
        host = host.lower().rstrip(".")
        if host in self.names:
            return True
        _, dot, parent = host.partition(".")
        return bool(dot) and f"*.{parent}" in self.names


def node_addresses(
    name: str, address: str, *, resolves: bool, covered: Callable[[str], bool]
) -> list[dict[str, str]]:
    """The Node's ``status.addresses``: ``InternalIP`` (the listening address), then
    ``Hostname`` when the name ``resolves`` to it and the certificate ``covered`` it."""
    out = [{"type": "InternalIP", "address": address}]
    if resolves and covered(name):
        out.append({"type": "Hostname", "address": name})
    return out


def dialed(
    addresses: Sequence[Mapping[str, str]], preferred: Sequence[str] = PREFERRED
) -> str | None:
    """The address an API server with ``preferred`` dials (kube's ``GetPreferredNodeAddress``),
    or None when it finds none."""
    for kind in preferred:
        for entry in addresses:
            if entry.get("type") == kind and entry.get("address"):
                return str(entry["address"])
    return None
