"""The node's Node object and its Lease, kept as the kubelet keeps them, so that the
node-lifecycle controller of kube-controller-manager finds the node healthy.

- **Registration** (the kubelet's ``registerWithAPIServer``): the Node is created with its
  labels and whole status, and no taints: kube-apiserver's ``TaintNodesByCondition``
  admission adds ``node.kubernetes.io/not-ready:NoSchedule`` to every new Node, and the
  node-lifecycle controller lifts it once it reads ``Ready`` True. A Node of that name that
  exists already is taken over: its labels are set and its status posted.
- **The Lease** ``kube-node-lease/<node>``: ``holderIdentity`` the node, ``leaseDurationSeconds``
  (40), ``renewTime`` renewed every ``lease_renew`` (10 s, a quarter of the duration), owned
  by the Node so that it goes with it. The controller counts a node alive while this Lease
  is renewed; it marks a node whose Lease and status both went quiet for its
  ``--node-monitor-grace-period`` ``Unknown``, taints it ``unreachable`` and evicts its pods.
- **The status**: computed every ``status_interval`` (the kubelet's
  ``nodeStatusUpdateFrequency``, 10 s) from the Node as the API server has it, and posted when
  it changed, heartbeat times aside, or when ``status_report`` (``nodeStatusReportFrequency``,
  5 min) has passed since the last post. A condition keeps its ``lastTransitionTime`` while its
  status holds, so ``Ready`` after the controller's ``Unknown`` is a transition, as with the
  kubelet. Conditions of other types (written by others) are kept.

The local control plane has no node-lifecycle controller; its node keeps the same Node and
Lease, so that anything reading them (``kubectl get nodes``, ``kubetrain top``) reads what a
cluster's kubelet would write.

Owns: the Node's labels, status and Lease, and the loops that keep them. Must not: know pods
or the endpoint's protocol; the agent gives it what the node is (:class:`Identity`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Final

from kubetrain import __version__, _aio, api, kube, timefmt
from kubetrain.local.node import settings as node_settings

log = logging.getLogger(__name__)

NODES: Final = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")
LEASES: Final = kube.Resource("coordination.k8s.io", "v1", "leases", kind="Lease")
LEASE_NAMESPACE: Final = "kube-node-lease"
READY: Final = "Ready"
# The kubelet's own conditions, in its order: (type, reason, message) when healthy.
CONDITIONS: Final = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    (READY, "KubeletReady", "kubelet is posting ready status"),
)
OWN_TYPES: Final = frozenset(kind for kind, _, _ in CONDITIONS)


def now() -> datetime:
    return datetime.now(timezone.utc)


def stamp(when: datetime) -> str:
    """``metav1.Time``: RFC 3339 in whole seconds."""
    return timefmt.seconds(when)


def micro_time(when: datetime) -> str:
    """``metav1.MicroTime``: RFC 3339 with microseconds."""
    return timefmt.micro(when)


# -- what the node is ---------------------------------------------------------------------


def _read_first(*paths: str) -> str:
    for path in paths:
        with contextlib.suppress(OSError), open(path, encoding="ascii") as f:
            return f.read().strip()
    return ""


def _os_image() -> str:
    with contextlib.suppress(OSError), open("/etc/os-release", encoding="utf-8") as f:
        for line in f:
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return platform.platform()


def labels(name: str, extra: Mapping[str, str]) -> dict[str, str]:
    """The Node's labels: the kubelet's well-known ones, kubetrain's mark, then ``extra``."""
    arch = node_settings.architecture(platform.machine())
    system = node_settings.operating_system()
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": system,
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": system,
        "beta.kubernetes.io/arch": arch,
        "node.kubetrain.io/local": "true",
        **dict(extra),
    }


def node_info(kubelet_version: str) -> dict[str, str]:
    """``status.nodeInfo`` of this machine. Blocking: reads a few files."""
    return {
        "machineID": _read_first("/etc/machine-id", "/var/lib/dbus/machine-id"),
        "systemUUID": _read_first("/sys/class/dmi/id/product_uuid"),
        "bootID": _read_first("/proc/sys/kernel/random/boot_id"),
        "kernelVersion": platform.release(),
        "osImage": _os_image(),
        "containerRuntimeVersion": f"kubetrain://{__version__}",
        "kubeletVersion": kubelet_version,
        "kubeProxyVersion": "",
        "operatingSystem": node_settings.operating_system(),
        "architecture": node_settings.architecture(platform.machine()),
    }


@dataclass(frozen=True)
class Identity:
    """What the Node says about this node, fixed while the agent runs."""

    name: str
    labels: Mapping[str, str]
    addresses: Sequence[Mapping[str, str]]
    port: int  # the endpoint's: status.daemonEndpoints.kubeletEndpoint.Port
    capacity: Mapping[str, str]
    info: Mapping[str, str] = field(default_factory=dict)  # status.nodeInfo


# -- the status ---------------------------------------------------------------------------


def conditions(old: Sequence[Mapping[str, Any]], heartbeat: str) -> list[dict[str, Any]]:
    """The conditions to post over ``old`` (the Node's now): the others' first, as they are,
    then the kubelet's four, healthy, each keeping its ``lastTransitionTime`` while its status
    holds."""
    before = {str(c.get("type")): c for c in old if isinstance(c, Mapping)}
    out = [dict(c) for kind, c in before.items() if kind not in OWN_TYPES]
    for kind, reason, message in CONDITIONS:
        status = "True" if kind == READY else "False"
        previous = before.get(kind) or {}
        transition = heartbeat
        if previous.get("status") == status and previous.get("lastTransitionTime"):
            transition = str(previous["lastTransitionTime"])
        out.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": heartbeat,
                "lastTransitionTime": transition,
            }
        )
    return out


def node_status(identity: Identity, old: Mapping[str, Any], heartbeat: str) -> dict[str, Any]:
    """The status to post, given the Node's status ``old`` (``{}`` for a new Node)."""
    return {
        "capacity": dict(identity.capacity),
        "allocatable": dict(identity.capacity),
        "conditions": conditions(old.get("conditions") or [], heartbeat),
        "addresses": [dict(a) for a in identity.addresses],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": identity.port}},
        "nodeInfo": dict(identity.info),
    }


def _without_heartbeats(conditions_: Any) -> list[Any]:
    out = []
    for c in conditions_ or []:
        if isinstance(c, Mapping):
            c = {k: v for k, v in c.items() if k != "lastHeartbeatTime"}
        out.append(c)
    return sorted(out, key=lambda c: str(c.get("type")) if isinstance(c, Mapping) else "")


def _amounts(resources: Any) -> dict[str, Any]:
    """Resource quantities by value: the API server writes ``1024Ki`` back as ``1Mi``."""
    out: dict[str, Any] = {}
    for name, quantity in (resources or {}).items():
        try:
            out[name] = api.parse_quantity(quantity)
        except ValueError:
            out[name] = quantity
    return out


def changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether posting ``new`` over ``old`` changes anything but heartbeat times (the
    kubelet's ``nodeStatusHasChanged``); only the fields the node writes are compared."""
    if _without_heartbeats(old.get("conditions")) != _without_heartbeats(new.get("conditions")):
        return True
    for key in ("capacity", "allocatable"):
        if _amounts(old.get(key)) != _amounts(new.get(key)):
            return True
    for key in ("addresses", "daemonEndpoints"):
        if old.get(key) != new.get(key):
            return True
    info = old.get("nodeInfo") or {}
    return any(info.get(k) != v for k, v in (new.get("nodeInfo") or {}).items())


# -- the loops ----------------------------------------------------------------------------


class Heartbeat:
    """Registers one Node and keeps it and its Lease fresh (:meth:`run`, until cancelled)."""

    def __init__(
        self,
        client: kube.Client,
        identity: Identity,
        config: node_settings.Settings,
        *,
        clock: Callable[[], datetime] = now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.identity = identity
        self.settings = config
        self.clock = clock
        self.monotonic = monotonic
        self.node_uid = ""
        self.last_report = float("-inf")  # monotonic time of the last status post
        self._lease: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.identity.name

    async def register(self) -> None:
        """Create the Node with its status, as the kubelet registers (so no reader sees a Node
        without one), or take over the one of that name and post its status."""
        labels = dict(self.identity.labels)
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels},
            "status": node_status(self.identity, {}, stamp(self.clock())),
        }
        try:
            node = await self.client.create(NODES, body)
        except kube.AlreadyExists:
            node = await self.client.patch(NODES, self.name, {"metadata": {"labels": labels}})
            self.node_uid = _uid(node)
            await self._post(node, force=True)
            return
        self.node_uid = _uid(node)
        self.last_report = self.monotonic()
        if not (node.get("status") or {}).get("conditions"):  # a server that dropped it
            await self._post(node, force=True)

    async def register_until_done(self) -> None:
        """Register, waiting out an API server that is not up (yet): a node may start first."""
        delay = self.settings.retry_initial
        while True:
            try:
                await self.register()
                return
            except (kube.Unavailable, kube.ServerError, kube.TooManyRequests) as exc:
                log.warning(
                    "node %s: cannot register yet: %s; retrying in %.1fs", self.name, exc, delay
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.retry_max)

    async def run(self) -> None:
        """Renew the Lease and keep the status fresh until cancelled."""
        async with _aio.TaskGroup() as group:
            group.create_task(self._lease_loop(), name="node lease")
            group.create_task(self._status_loop(), name="node status")

    # -- status -------------------------------------------------------------------------

    async def update_status(self) -> bool:
        """One round of the kubelet's status update: read the Node, post its status if it
        changed or the report is due. True when it posted."""
        node = await self.client.get(NODES, self.name)
        self.node_uid = _uid(node) or self.node_uid
        return await self._post(node)

    async def _post(self, node: Mapping[str, Any], *, force: bool = False) -> bool:
        old = node.get("status") or {}
        new = node_status(self.identity, old, stamp(self.clock()))
        due = self.monotonic() - self.last_report >= self.settings.status_report
        if not (force or due or changed(old, new)):
            return False
        await self.client.patch(NODES, self.name, {"status": new}, subresource="status")
        self.last_report = self.monotonic()
        return True

    async def _status_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.status_interval)
            try:
                await self.update_status()
            except kube.NotFound:
                log.warning("node %s was deleted; registering it again", self.name)
                with contextlib.suppress(kube.ApiError):
                    await self.register()
            except kube.ApiError as exc:
                log.warning("node %s: status update failed: %s", self.name, exc)

    # -- lease --------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        while True:
            try:
                await self.renew_lease()
            except kube.ApiError as exc:
                log.warning("node %s: lease renewal failed: %s", self.name, exc)
            await asyncio.sleep(self.settings.lease_renew)

    async def renew_lease(self) -> None:
        """Renew the Lease from the copy last written (the kubelet's way: no read unless that
        copy is stale or gone), creating it when there is none."""
        spec = {
            "holderIdentity": self.name,
            "leaseDurationSeconds": self.settings.lease_duration,
            "renewTime": micro_time(self.clock()),
        }
        for attempt in (1, 2):  # the copy may be stale: then once more, from a fresh read
            lease = self._lease
            if lease is None:
                try:
                    lease = await self.client.get(LEASES, self.name, namespace=LEASE_NAMESPACE)
                except kube.NotFound:
                    self._lease = await self.client.create(
                        LEASES, self._new_lease(spec), namespace=LEASE_NAMESPACE
                    )
                    return
            lease = {**lease, "spec": {**(lease.get("spec") or {}), **spec}}
            try:
                self._lease = await self.client.replace(LEASES, lease, namespace=LEASE_NAMESPACE)
                return
            except (kube.Conflict, kube.NotFound):
                self._lease = None
                if attempt == 2:
                    raise

    def _new_lease(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": LEASE_NAMESPACE}
        if self.node_uid:
            meta["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Node", "name": self.name, "uid": self.node_uid}
            ]
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": dict(spec),
        }


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")
