"""The /etc/hosts text a local pod gets: its own names, host aliases, and every Service and
hostname+subdomain pod of its namespace, all at the node's address."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.local.node import hosts

ADDRESS = "127.0.0.1"


def pod(name: str, ns: str = "team", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def service(name: str, ns: str = "team", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def entries(text: str) -> dict[str, str]:
    """name → address, from the non-comment lines."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        address, *names = line.split()
        for name in names:
            out.setdefault(name, address)
    return out


def test_the_header_and_the_pods_own_hostname() -> None:
    text = hosts.hosts_file(pod("worker-0"), [], [], ADDRESS)
    assert text.startswith(hosts.HEADER)
    assert f"{ADDRESS}\tworker-0\n" in text
    assert entries(text)["localhost"] == "127.0.0.1"


def test_a_subdomain_gives_the_pod_its_fqdn_first() -> None:
    text = hosts.hosts_file(
        pod("p", hostname="trainer-0", subdomain="job"), [], [], "10.0.0.5", "example.local"
    )
    assert "10.0.0.5\ttrainer-0.job.team.svc.example.local\ttrainer-0\n" in text


NAME_CASES = {
    "a service resolves by every form of its name": (
        [service("master")],
        [],
        ["master", "master.team", "master.team.svc", "master.team.svc.cluster.local"],
    ),
    "a hostname+subdomain pod resolves like a headless service's member": (
        [],
        [pod("j-worker-1", hostname="j-worker-1", subdomain="j")],
        [
            "j-worker-1.j",
            "j-worker-1.j.team",
            "j-worker-1.j.team.svc",
            "j-worker-1.j.team.svc.cluster.local",
        ],
    ),
}


@pytest.mark.parametrize(("services", "pods", "names"), NAME_CASES.values(), ids=NAME_CASES.keys())
def test_names_in_the_namespace_map_to_the_node(
    services: list[dict[str, Any]], pods: list[dict[str, Any]], names: list[str]
) -> None:
    found = entries(hosts.hosts_file(pod("me"), services, pods, ADDRESS))
    assert {n: found.get(n) for n in names} == dict.fromkeys(names, ADDRESS)


def test_other_namespaces_external_names_and_half_named_pods_are_left_out() -> None:
    text = hosts.hosts_file(
        pod("me"),
        [service("elsewhere", ns="other"), service("ext", type="ExternalName")],
        [
            pod("a", hostname="a"),
            pod("b", subdomain="s"),
            pod("c", ns="other", hostname="c", subdomain="s"),
        ],
        ADDRESS,
    )
    names = entries(text)
    assert "elsewhere" not in names
    assert "ext" not in names
    assert not any(n.startswith(("a.", "b.", "c.")) for n in names)


def test_host_aliases_are_written_as_the_kubelet_writes_them() -> None:
    text = hosts.hosts_file(
        pod("me", hostAliases=[{"ip": "10.1.2.3", "hostnames": ["foo.local", "bar.local"]}]),
        [],
        [],
        ADDRESS,
    )
    assert "# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n" in text


def test_the_text_is_the_same_whatever_order_the_objects_come_in() -> None:
    services = [service("b"), service("a"), service("c")]
    pods = [pod("x", hostname="h2", subdomain="s"), pod("y", hostname="h1", subdomain="s")]
    one = hosts.hosts_file(pod("me"), services, pods, ADDRESS)
    other = hosts.hosts_file(pod("me"), services[::-1], pods[::-1], ADDRESS)
    assert one == other
    assert one.index("\ta ") < one.index("\tb ") < one.index("\tc ")


def test_a_name_is_listed_once() -> None:
    """A service named like the pod's own hostname adds only its other forms."""
    text = hosts.hosts_file(pod("master"), [service("master")], [], ADDRESS)
    assert sum(line.split().count("master") for line in text.splitlines()) == 1
