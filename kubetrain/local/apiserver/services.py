"""Services: cluster IP allocation from the service range, and port and policy defaults; and
the ``kubernetes`` Service of the ``default`` namespace, made at start and made again when
deleted, as kube-apiserver's bootstrap controller keeps it. (The local node does not route its
cluster IP: it tells pods the API server's own address.)"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kubetrain.local.apiserver import errors, resources, store, strategies

Cause = strategies.Cause
R = resources.Resource
Obj = strategies.Obj
_invalid = strategies.invalid
_required = strategies.required


KUBERNETES_SERVICE = "kubernetes"
KUBERNETES_NAMESPACE = "default"


async def ensure_kubernetes_service(reg: Any) -> None:
    """The bootstrap controller's ``kubernetes`` Service: the first address of the service
    range, port 443 named ``https``."""
    if reg.store.get(store.Key("services", KUBERNETES_NAMESPACE, KUBERNETES_SERVICE)) is not None:
        return
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": KUBERNETES_SERVICE,
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "clusterIP": first_service_ip(reg.settings.service_cidr),
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
    }
    r = reg.catalog.find("", "v1", "services")
    try:
        await reg.create(r, KUBERNETES_NAMESPACE, body, reg.system_options("kube-apiserver"))
    except errors.ApiError as exc:
        if exc.code != 409:
            raise


class ServiceStrategy(strategies.Strategy):
    name_rule = staticmethod(strategies.dns1035_label)

    def return_deleted(self, r: resources.Resource) -> bool:
        return True

    async def after_delete(self, r: R, item: store.Item, reg: Any) -> None:
        key = item.key
        if (key.namespace, key.name) == (KUBERNETES_NAMESPACE, KUBERNETES_SERVICE):
            await ensure_kubernetes_service(reg)

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        spec.setdefault("type", "ClusterIP")
        _default(spec)
        if spec["type"] != "ExternalName":
            if spec.get("clusterIP") in (None, ""):
                spec["clusterIP"] = allocate_cluster_ip(reg)
            spec["clusterIPs"] = [spec["clusterIP"]]
            spec.setdefault("ipFamilies", ["IPv4"])  # a headless Service ("None") too
            spec.setdefault("ipFamilyPolicy", "SingleStack")
        obj["status"] = {"loadBalancer": {}}

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        spec = new.get("spec")
        old_spec = old.get("spec") or {}
        if isinstance(spec, dict):
            for kept in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if spec.get(kept) in (None, "") and kept in old_spec:
                    spec[kept] = old_spec[kept]
            spec.setdefault("type", old_spec.get("type", "ClusterIP"))
            _default(spec)

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        spec = obj.get("spec") or {}
        ports = spec.get("ports") or []
        if spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None" and not ports:
            causes.append(_required("spec.ports"))
        for i, port in enumerate(ports):
            value = port.get("port") if isinstance(port, Mapping) else None
            if not isinstance(value, int) or not 1 <= value <= 65535:
                causes.append(
                    _invalid(
                        f"spec.ports[{i}].port", value, "must be between 1 and 65535, inclusive"
                    )
                )
            if len(ports) > 1 and isinstance(port, Mapping) and not port.get("name"):
                causes.append(_required(f"spec.ports[{i}].name"))
        if old is not None:
            old_ip = (old.get("spec") or {}).get("clusterIP")
            if old_ip and spec.get("clusterIP") != old_ip:
                causes.append(
                    _invalid("spec.clusterIPs[0]", spec.get("clusterIP"), "may not change once set")
                )
        return causes


def first_service_ip(cidr: str) -> str:
    """The address of the ``kubernetes`` Service: the first host of the service range."""
    return str(next(ipaddress.ip_network(cidr, strict=False).hosts()))


def allocate_cluster_ip(reg: Any) -> str:
    """The lowest free address in the service range after the first (the API's own)."""
    network = ipaddress.ip_network(reg.settings.service_cidr, strict=False)
    used = {(s.obj.get("spec") or {}).get("clusterIP") for s in reg.store.list("services")}
    for offset, host in enumerate(network.hosts()):
        if offset < 10:
            continue
        if str(host) not in used:
            return str(host)
    raise errors.internal("the service IP range is full")


def _default(spec: dict[str, Any]) -> None:
    """The defaults a Service's spec gets on every write (``SetDefaults_Service``), past its
    type and cluster IPs, which a create and an update choose differently."""
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
