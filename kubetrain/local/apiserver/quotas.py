"""ResourceQuotas: enforced for pods on create (kube's ResourceQuota admission), and their
``status.used`` kept current as pods come and go (kube's resource quota controller).

Pods count against ``pods`` / ``count/pods`` and against ``requests.<resource>`` and
``limits.<resource>`` (``cpu``, ``memory`` and extended resources such as
``nvidia.com/gpu``; a bare ``cpu`` means ``requests.cpu``). Pods that have finished or are
being deleted do not count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain import api
from kubetrain.local.apiserver import errors, resources, store, strategies

MANAGER = "resourcequota-controller"
R = resources.Resource
Obj = strategies.Obj
Cause = strategies.Cause


class ResourceQuotaStrategy(strategies.Strategy):
    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        hard = (obj.get("spec") or {}).get("hard") or {}
        obj["status"] = {"hard": dict(hard), "used": {k: "0" for k in hard}}

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        hard = (new.get("spec") or {}).get("hard") or {}
        status = new.setdefault("status", {})
        status["hard"] = dict(hard)

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        for name, value in ((obj.get("spec") or {}).get("hard") or {}).items():
            try:
                api.parse_quantity(str(value))
            except (ValueError, TypeError):
                causes.append(
                    strategies.invalid(
                        f"spec.hard[{name}]", value, "must be a valid resource quantity"
                    )
                )
        return causes

    async def after_create(self, r: resources.Resource, item: store.Item, reg: Any) -> None:
        await refresh(reg, item.key.namespace)

    async def after_update(
        self, r: resources.Resource, item: store.Item, prev: store.Item, reg: Any
    ) -> None:
        if item.obj.get("spec") != prev.obj.get("spec"):
            await refresh(reg, item.key.namespace)


def live_pods(reg: Any, namespace: str) -> list[Mapping[str, Any]]:
    return [
        p.obj
        for p in reg.store.list("pods", namespace)
        if (p.obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and not (p.obj.get("metadata") or {}).get("deletionTimestamp")
    ]


async def refresh(reg: Any, namespace: str) -> None:
    """Write each quota's ``status.used`` (and ``hard``) if it changed."""
    items = reg.store.list("resourcequotas", namespace)
    if not items:
        return
    used = _sum_usage(pod_usage(p) for p in live_pods(reg, namespace))
    r = reg.catalog.find("", "v1", "resourcequotas")
    for quota in items:
        hard = dict(((quota.obj.get("spec") or {}).get("hard")) or {})
        status = {
            "hard": hard,
            "used": {k: _format_quantity(used.get(_canonical_quota_name(k), 0)) for k in hard},
        }
        if quota.obj.get("status") == status:
            continue
        body = {**quota.obj, "status": status}
        try:
            await reg.update(
                r, namespace, quota.key.name, body, reg.system_options(MANAGER), "status"
            )
        except errors.ApiError as exc:
            if exc.code not in (404, 409):
                raise


def enforce(reg: Any, namespace: str, name: str, pod: Mapping[str, Any]) -> None:
    """ResourceQuota admission for a new pod: refuse it if any quota's hard limit would be
    exceeded (counting pods and cpu, memory and extended-resource requests and limits)."""
    quotas = reg.store.list("resourcequotas", namespace)
    if not quotas:
        return
    live = live_pods(reg, namespace)
    wanted = pod_usage(pod)
    used = _sum_usage(pod_usage(p) for p in live)
    for quota in quotas:
        hard = ((quota.obj.get("spec") or {}).get("hard")) or {}
        exceeded = []
        for resource_name, limit in hard.items():
            need = wanted.get(_canonical_quota_name(resource_name))
            if need is None:
                continue
            try:
                limit_value = api.parse_quantity(str(limit))
            except (ValueError, TypeError):
                continue
            have = used.get(_canonical_quota_name(resource_name), 0)
            if have + need > limit_value:
                exceeded.append((resource_name, need, have, limit_value))
        if exceeded:

            def fmt(v: Any) -> str:
                return _format_quantity(v)

            requested = ",".join(f"{n}={fmt(need)}" for n, need, _, _ in exceeded)
            usage = ",".join(f"{n}={fmt(have)}" for n, _, have, _ in exceeded)
            limited = ",".join(f"{n}={fmt(lim)}" for n, _, _, lim in exceeded)
            raise errors.forbidden(
                "",
                "pods",
                name,
                f"exceeded quota: {quota.key.name}, requested: {requested}, used: {usage}, "
                f"limited: {limited}",
            )


def _canonical_quota_name(name: str) -> str:
    if name in ("cpu", "memory", "ephemeral-storage"):
        return f"requests.{name}"
    if name == "count/pods":
        return "pods"
    return name


def pod_usage(pod: Mapping[str, Any]) -> dict[str, Any]:
    """What a pod counts against a quota: ``pods`` and requests/limits per resource name."""
    spec = pod.get("spec") or {}
    usage: dict[str, Any] = {"pods": 1}
    totals: dict[str, Any] = {}
    for c in spec.get("containers") or []:
        res = (c.get("resources") or {}) if isinstance(c, Mapping) else {}
        for section in ("requests", "limits"):
            for resource_name, value in (res.get(section) or {}).items():
                try:
                    quantity = api.parse_quantity(str(value))
                except (ValueError, TypeError):
                    continue
                key = f"{section}.{resource_name}"
                totals[key] = totals.get(key, 0) + quantity
    usage.update(totals)
    return usage


def _sum_usage(usages: Any) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for usage in usages:
        for key, value in usage.items():
            total[key] = total.get(key, 0) + value
    return total


def _format_quantity(value: Any) -> str:
    if value == int(value):
        return str(int(value))
    milli = value * 1000
    if milli == int(milli):
        return f"{int(milli)}m"
    return str(value)
