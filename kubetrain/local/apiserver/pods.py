"""Pods: kube-apiserver's pod defaults and rules, and the admission that applies to them.

Defaults (restart policy, grace period, DNS policy, scheduler, service account, container
defaults, projected volume defaults, priority from the PriorityClass, QoS class and a Pending
status); the ServiceAccount admission's token volume (:mod:`serviceaccounts`); an immutable
spec but for images and a few fields; graceful deletion for pods bound to a node; the
``binding`` and ``eviction`` subresources; LimitRange defaults (LimitRanger) and ResourceQuota
enforcement on create.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubetrain.local.apiserver import (
    errors,
    quotas,
    resources,
    serviceaccounts,
    store,
    strategies,
)

Cause = strategies.Cause
R = resources.Resource
Obj = strategies.Obj
_invalid = strategies.invalid
_required = strategies.required
_forbidden = strategies.forbidden


POD_FIELD_LABELS = frozenset(
    {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    }
)
_POD_MUTABLE_SPEC = (
    "activeDeadlineSeconds",
    "tolerations",
    "terminationGracePeriodSeconds",
    "schedulingGates",
)


def _default_container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = str(c.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in c:
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        value_from = env.get("valueFrom") if isinstance(env, dict) else None
        if isinstance(value_from, dict) and isinstance(value_from.get("fieldRef"), dict):
            value_from["fieldRef"].setdefault("apiVersion", "v1")
    resources_ = c.get("resources")
    if isinstance(resources_, dict):
        limits = resources_.get("limits")
        if isinstance(limits, dict) and limits:
            requests = resources_.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, value in limits.items():
                    requests.setdefault(name, value)


def default_pod_spec(spec: dict[str, Any]) -> None:
    """The defaults kube-apiserver fills into a pod spec (SetDefaults_PodSpec and friends)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for field_name in ("containers", "initContainers"):
        for c in spec.get(field_name) or []:
            if isinstance(c, dict):
                _default_container(c)
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        for source in ("configMap", "secret", "projected"):
            if isinstance(volume.get(source), dict):
                volume[source].setdefault("defaultMode", 420)
        projected = volume.get("projected")
        for part in (projected.get("sources") if isinstance(projected, dict) else None) or []:
            token = part.get("serviceAccountToken") if isinstance(part, dict) else None
            if isinstance(token, dict):
                token.setdefault("expirationSeconds", serviceaccounts.DEFAULT_TOKEN_SECONDS)
        if isinstance(volume.get("hostPath"), dict):
            volume["hostPath"].setdefault("type", "")


def _qos_class(spec: Mapping[str, Any]) -> str:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    requests_any = limits_any = False
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        requests = res.get("requests") or {}
        limits = res.get("limits") or {}
        requests_any |= bool(requests)
        limits_any |= bool(limits)
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits.get(name)) != limits.get(name):
                guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if requests_any or limits_any else "BestEffort"


class PodStrategy(strategies.Strategy):
    own_field_labels = True
    extra_field_labels = POD_FIELD_LABELS

    def serializes_creates(self, reg: Any, namespace: str) -> bool:
        return bool(reg.store.list("resourcequotas", namespace))

    def return_deleted(self, r: resources.Resource) -> bool:
        return True

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        default_pod_spec(spec)
        sa = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = spec["serviceAccount"] = sa
        # kube runs its mutating admission before validation; the token volume is the
        # ServiceAccount plugin's.
        serviceaccounts.admit_pod(reg, str(obj["metadata"].get("namespace") or ""), spec)
        priority_class = spec.get("priorityClassName")
        if priority_class:
            pc = reg.store.get(store.Key("priorityclasses.scheduling.k8s.io", "", priority_class))
            if pc is None:
                raise errors.forbidden(
                    "",
                    "pods",
                    obj["metadata"].get("name", ""),
                    f"no PriorityClass with name {priority_class} was found",
                )
            spec["priority"] = int(pc.obj.get("value", 0))
            spec.setdefault(
                "preemptionPolicy", pc.obj.get("preemptionPolicy", "PreemptLowerPriority")
            )
        else:
            spec.setdefault("priority", 0)
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        spec = new.get("spec")
        if isinstance(spec, dict):
            default_pod_spec(spec)

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        spec = obj.get("spec")
        if not isinstance(spec, Mapping):
            return [*causes, _required("spec.containers")]
        containers = spec.get("containers")
        if not isinstance(containers, list) or not containers:
            causes.append(_required("spec.containers"))
            containers = []
        seen: set[str] = set()
        for field_name in ("initContainers", "containers"):
            for i, c in enumerate(spec.get(field_name) or []):
                path = f"spec.{field_name}[{i}]"
                if not isinstance(c, Mapping):
                    causes.append(_invalid(path, c, "must be an object"))
                    continue
                cname = c.get("name")
                if not cname:
                    causes.append(_required(f"{path}.name"))
                else:
                    causes += [
                        _invalid(f"{path}.name", cname, p) for p in strategies.dns1123_label(cname)
                    ]
                    if cname in seen:
                        causes.append(
                            errors.field_error("Duplicate value", f"{path}.name", "", cname)
                        )
                    seen.add(cname)
                if not c.get("image") and old is None:
                    causes.append(_required(f"{path}.image"))
        restart = spec.get("restartPolicy")
        if restart not in (None, "Always", "OnFailure", "Never"):
            causes.append(
                errors.field_error(
                    "Unsupported value",
                    "spec.restartPolicy",
                    'supported values: "Always", "OnFailure", "Never"',
                    restart,
                )
            )
        if old is not None and old.get("spec") != obj.get("spec"):
            causes += _pod_update_causes(obj.get("spec") or {}, old.get("spec") or {})
        return causes

    def grace_period(self, r: R, obj: Mapping, options: Mapping) -> int:
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        given = options.get("gracePeriodSeconds")
        if isinstance(given, int) and not isinstance(given, bool):
            return max(0, given)
        meta_grace = (obj.get("metadata") or {}).get("deletionGracePeriodSeconds")
        if isinstance(meta_grace, int):
            return meta_grace
        grace = spec.get("terminationGracePeriodSeconds", 30)
        return grace if isinstance(grace, int) and grace > 0 else 0

    def admit_create(self, r: R, obj: Obj, reg: Any) -> None:
        spec = obj.get("spec") or {}
        namespace = obj["metadata"].get("namespace", "")
        name = obj["metadata"].get("name", "")
        sa = spec.get("serviceAccountName")
        if sa and reg.store.get(store.Key("serviceaccounts", namespace, sa)) is None:
            raise errors.forbidden(
                "",
                "pods",
                name,
                f'error looking up service account {namespace}/{sa}: serviceaccount "{sa}" '
                "not found",
            )
        apply_limit_ranges(reg, namespace, obj)
        if isinstance(spec, dict) and isinstance(obj.get("status"), dict):
            obj["status"]["qosClass"] = _qos_class(spec)
        quotas.enforce(reg, namespace, name, obj)

    async def after_create(self, r: R, item: store.Item, reg: Any) -> None:
        await quotas.refresh(reg, item.key.namespace)

    async def after_update(self, r: R, item: store.Item, prev: store.Item, reg: Any) -> None:
        if _counts(item.obj) != _counts(prev.obj):
            await quotas.refresh(reg, item.key.namespace)

    async def after_delete(self, r: R, item: store.Item, reg: Any) -> None:
        await quotas.refresh(reg, item.key.namespace)

    def subresource_create(self, name: str) -> strategies.SubresourceHandler | None:
        return {"binding": bind_pod, "eviction": evict_pod}.get(name)


def _pod_update_causes(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    def comparable(spec: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in spec.items() if k not in _POD_MUTABLE_SPEC}
        for field_name in ("containers", "initContainers"):
            if isinstance(out.get(field_name), list):
                out[field_name] = [
                    {k: v for k, v in c.items() if k != "image"} if isinstance(c, Mapping) else c
                    for c in out[field_name]
                ]
        return out

    if comparable(new) == comparable(old):
        return []
    if (
        old.get("nodeName") is None
        and new.get("nodeName")
        and (comparable({**new, "nodeName": None}) == comparable({**old, "nodeName": None}))
    ):
        return []
    return [
        _forbidden(
            "spec",
            "pod updates may not change fields other than `spec.containers[*].image`,"
            "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
            "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
            "(allow it to be set to 1 if it was previously negative)",
        )
    ]


async def bind_pod(
    reg: Any, r: resources.Resource, namespace: str | None, name: str, body: Any, opts: Any
) -> Any:
    """pods/binding: set spec.nodeName once, and the PodScheduled condition."""
    if not isinstance(body, Mapping):
        raise errors.bad_request("the object provided is unrecognized (must be of type Binding)")
    target = body.get("target") or {}
    node = target.get("name") if isinstance(target, Mapping) else None
    if not node:
        raise errors.invalid("", "Binding", name, [_required("target.name")])
    item = reg.get_item(r, namespace, name)
    if (item.obj.get("spec") or {}).get("nodeName"):
        raise errors.conflict(
            "",
            "pods",
            name,
            f'pod {name} is already assigned to node "{item.obj["spec"]["nodeName"]}"',
        )
    if item.obj["metadata"].get("deletionTimestamp"):
        raise errors.conflict(
            "", "pods", name, f"pod {name} is being deleted, cannot be assigned to a host"
        )
    now = reg.now()

    def mutate(old: dict[str, Any]) -> dict[str, Any]:
        if (old.get("spec") or {}).get("nodeName"):
            raise errors.conflict(
                "",
                "pods",
                name,
                f'pod {name} is already assigned to node "{old["spec"]["nodeName"]}"',
            )
        new = copy.deepcopy(old)
        new.setdefault("spec", {})["nodeName"] = node
        status = new.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now,
            }
        )
        status["conditions"] = conditions
        return new

    # The binding writes spec and status together, as kube's BindingREST does.
    result = await reg._guaranteed_update(
        r, namespace, name, mutate, opts, "binding", None, operation="Update"
    )
    del result
    return reg.success(201)


async def evict_pod(
    reg: Any, r: resources.Resource, namespace: str | None, name: str, body: Any, opts: Any
) -> Any:
    """pods/eviction: with no PodDisruptionBudgets, an eviction is a delete."""
    options = (body.get("deleteOptions") or {}) if isinstance(body, Mapping) else {}
    await reg.delete(r, namespace, name, options, opts)
    return reg.success(201)


def apply_limit_ranges(reg: Any, namespace: str, pod: Obj) -> None:
    """LimitRanger admission: containers without a limit or request for a resource get the
    namespace's LimitRange defaults (``default`` and ``defaultRequest`` of Container items)."""
    ranges = reg.store.list("limitranges", namespace)
    if not ranges:
        return
    spec = pod.get("spec") or {}
    containers = [
        c
        for field_name in ("initContainers", "containers")
        for c in spec.get(field_name) or []
        if isinstance(c, dict)
    ]
    for limit_range in ranges:
        for item in (limit_range.obj.get("spec") or {}).get("limits") or []:
            if not isinstance(item, Mapping) or item.get("type") != "Container":
                continue
            for c in containers:
                res = c.get("resources")
                if not isinstance(res, dict):
                    res = c["resources"] = {}
                for section, defaults in (
                    ("limits", item.get("default")),
                    ("requests", item.get("defaultRequest")),
                ):
                    if not defaults:
                        continue
                    current = res.setdefault(section, {})
                    if isinstance(current, dict):
                        for resource_name, value in defaults.items():
                            current.setdefault(resource_name, value)


def _counts(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What decides a pod's quota usage: whether it is live, and its resources."""
    spec = pod.get("spec") or {}
    return (
        (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"),
        bool((pod.get("metadata") or {}).get("deletionTimestamp")),
        [c.get("resources") for c in spec.get("containers") or [] if isinstance(c, Mapping)],
    )
