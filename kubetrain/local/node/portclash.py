"""Why a container died of "Address already in use", told where its pod's status is read.

On a cluster each pod has a network of its own, so every replica of a job may listen on the
framework's fixed port (2222 for TensorFlow, 23456 for PyTorch ...). On a kubetrain node every
pod shares the one host network, and the second pod to bind such a port fails with EADDRINUSE,
which alone says nothing of the cause. The operator avoids it when told its pods share a host:
``kubetrain operator --host-network`` gives each pod a port of its own (the local control plane
always runs it so). A node that sees a container exit with an error whose log says the address
was in use therefore gives the attempt a termination message that names the port, the running
pod of this node that declares it too, and the operator flag; the operator's abnormal-pod event
and ``kubectl describe pod`` show it.

Owns: recognising the failure in a log's tail, and the message. Must not: decide when to look
(the worker does), or change anything but an attempt's message.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from kubetrain.local.node import podspec, runtime

TAIL_BYTES: Final = 16_384  # how much of the end of a log is searched
# Python's OSError, libc's strerror, torch's c10d and gRPC (TensorFlow) all say one of these.
IN_USE: Final = re.compile(r"address already in use|EADDRINUSE|errno 98\b", re.IGNORECASE)
OPERATOR_FLAG: Final = "--host-network"

Pod = Mapping[str, Any]


def in_use(text: str) -> bool:
    """Whether a log says that binding an address failed because it was taken."""
    return IN_USE.search(text) is not None


def declared_ports(pod: Pod) -> list[int]:
    """The containerPorts of the pod's containers, in order, each once."""
    found: list[int] = []
    for container in podspec.all_containers(pod):
        for port in container.get("ports") or []:
            number = port.get("containerPort") if isinstance(port, Mapping) else None
            if isinstance(number, int) and not isinstance(number, bool) and number not in found:
                found.append(number)
    return found


def _name(pod: Pod) -> str:
    meta = podspec.meta_of(pod)
    return f"{meta.get('namespace')}/{meta.get('name')}"


def message(pod: Pod, others: Iterable[Pod]) -> str:
    """The termination message of a container of ``pod`` that failed because an address was
    in use, given the other pods running on this node."""
    ports = declared_ports(pod)
    holders = []
    for port in ports:
        for other in others:
            if port in declared_ports(other):
                holders.append(f"port {port} is also declared by pod {_name(other)}")
                break
    listed = ", ".join(map(str, ports))
    what = "; ".join(holders) or (
        f"a port this pod declares ({listed}) is taken on this host"
        if ports
        else "a port this pod listens on is taken on this host"
    )
    if podspec.spec_of(pod).get("hostNetwork") is True:
        return (
            f"address already in use: {what}. Host-network pods share the host's ports: give "
            "the operator a host port range that nothing else on this host uses (kubetrain "
            "operator --host-port-range LOW-HIGH)."
        )
    return (
        f"address already in use: {what}. Every pod on a kubetrain node shares this host's "
        "network, so pods that listen on one fixed port (as each replica of a job does on a "
        f"cluster) collide. Run the operator with {OPERATOR_FLAG} (kubetrain operator "
        f"{OPERATOR_FLAG}), which gives each pod a port of its own."
    )


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _unexplained(state: runtime.ContainerState | None) -> bool:
    return state is not None and not state.running and bool(state.exit_code) and not state.message


def worth_a_look(attempts: Mapping[str, Sequence[runtime.ContainerState]]) -> bool:
    """Whether some latest attempt exited with an error and no message (cheap: no I/O)."""
    return any(_unexplained(tries[-1]) for tries in attempts.values() if tries)


def explain(
    pod: Pod,
    attempts: Mapping[str, Sequence[runtime.ContainerState]],
    node_runtime: runtime.Runtime,
    pod_of: Callable[[str], Pod | None],
) -> dict[str, list[runtime.ContainerState]]:
    """``attempts`` with a message on each latest attempt that exited with an error, said
    nothing, and whose log says an address was in use. Reads logs and the runtime's disk: run
    it in a thread."""
    out = {name: list(tries) for name, tries in attempts.items()}
    others: list[Pod] | None = None
    uid = str(podspec.meta_of(pod).get("uid") or "")
    for tries in out.values():
        latest = tries[-1] if tries else None
        if latest is None or not _unexplained(latest):
            continue
        if not in_use(_tail(node_runtime.log_path(latest.id))):
            continue
        if others is None:
            running = {s.id.pod_uid for s in node_runtime.containers() if s.running}
            others = [p for u in sorted(running - {uid}) if (p := pod_of(u)) is not None]
        tries[-1] = dataclasses.replace(latest, message=message(pod, others))
    return out
