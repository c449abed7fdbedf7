"""The /etc/hosts text of a pod: how Service and pod DNS names resolve on a single node.

A cluster answers these names from its DNS; on one machine every pod shares the host network,
so every name a pod may look up in its namespace means the node's address, and a per-pod
hosts file (the runtime binds it over /etc/hosts) says so. Each pod gets:

- the kubelet's header (localhost and the IPv6 names) and its own hostname, with
  ``hostname.subdomain.<ns>.svc.<domain>`` when ``spec.subdomain`` is set;
- ``spec.hostAliases``, as the kubelet writes them;
- for every Service of the namespace (ExternalName ones aside): ``name``, ``name.ns``,
  ``name.ns.svc``, ``name.ns.svc.<domain>``;
- for every pod of the namespace with both ``hostname`` and ``subdomain``: ``h.s``, ``h.s.ns``,
  ``h.s.ns.svc``, ``h.s.ns.svc.<domain>`` (what a headless Service gives such pods).

Owns: that text, deterministic for the same inputs (sorted), so the agent can compare it and
rewrite only when it changed. Must not: do I/O or decide when to rewrite.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubetrain import accessors

HEADER: Final = (
    "# Kubernetes-managed hosts file (kubetrain: every pod shares this node's address).\n"
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "fe00::0\tip6-localnet\n"
    "fe00::0\tip6-mcastprefix\n"
    "fe00::1\tip6-allnodes\n"
    "fe00::2\tip6-allrouters\n"
)


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def own_names(pod: Mapping[str, Any], domain: str) -> list[str]:
    """The pod's own names: its FQDN (with a subdomain) first, then its hostname."""
    spec = _spec(pod)
    namespace = str(accessors.metadata(pod).get("namespace") or "")
    host = str(spec.get("hostname") or accessors.metadata(pod).get("name") or "")[:63].rstrip("-.")
    subdomain = str(spec.get("subdomain") or "")
    if subdomain:
        return [f"{host}.{subdomain}.{namespace}.svc.{domain}", host]
    return [host]


def qualified(name: str, namespace: str, domain: str) -> list[str]:
    """``name``, ``name.ns``, ``name.ns.svc``, ``name.ns.svc.<domain>``."""
    return [
        name,
        f"{name}.{namespace}",
        f"{name}.{namespace}.svc",
        f"{name}.{namespace}.svc.{domain}",
    ]


def hosts_file(
    pod: Mapping[str, Any],
    services: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    address: str,
    domain: str = "cluster.local",
) -> str:
    """The full /etc/hosts text for ``pod``; ``services`` and ``pods`` are its namespace's
    (others are ignored)."""
    namespace = str(accessors.metadata(pod).get("namespace") or "")
    lines = [HEADER, f"{address}\t" + "\t".join(own_names(pod, domain)) + "\n"]
    aliases = [a for a in _spec(pod).get("hostAliases") or [] if isinstance(a, Mapping)]
    if aliases:
        lines.append("\n# Entries added by HostAliases.\n")
        for alias in aliases:
            names = [str(h) for h in alias.get("hostnames") or []]
            if alias.get("ip") and names:
                lines.append(f"{alias['ip']}\t" + "\t".join(names) + "\n")
    seen = set(own_names(pod, domain))
    service_names = sorted(
        str(accessors.metadata(s).get("name") or "")
        for s in services
        if accessors.metadata(s).get("namespace") == namespace
        and accessors.metadata(s).get("name")
        and _spec(s).get("type") != "ExternalName"
    )
    pod_names = sorted(
        {
            f"{_spec(p).get('hostname')}.{_spec(p).get('subdomain')}"
            for p in pods
            if accessors.metadata(p).get("namespace") == namespace
            and _spec(p).get("hostname")
            and _spec(p).get("subdomain")
        }
    )
    body = []
    for name in [*service_names, *pod_names]:
        names = [n for n in qualified(name, namespace, domain) if n not in seen]
        seen.update(names)
        if names:
            body.append(f"{address}\t" + " ".join(names) + "\n")
    if body:
        lines.append(f"\n# Services and pods of namespace {namespace}.\n")
        lines += body
    return "".join(lines)
