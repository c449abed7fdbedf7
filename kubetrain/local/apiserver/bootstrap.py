"""What the control plane holds before anyone writes to it, made true at every start.

- the system namespaces (``default``, ``kube-system``, ``kube-public``, ``kube-node-lease``),
  each with its ``default`` ServiceAccount, and the ``kubernetes`` Service;
- the CustomResourceDefinitions of every kind kubetrain serves (from :func:`kubetrain.api.crds`)
  and the PodGroup CRDs of Volcano and scheduler-plugins coscheduling, which the operator
  creates on clusters that run those schedulers;
- Volcano's Queue CRD and its ``default`` Queue (weight 1, reclaimable), which Volcano keeps
  on a cluster and the local scheduler honours;
- the served custom resources of every stored CRD (after a restart the catalog starts empty).

Idempotent: what exists is left alone, except that kubetrain's own CRDs are updated when the
API models changed. What it must not do: write anything a user could not write through the API
(every object goes through the registry).
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain import api
from kubetrain.local.apiserver import (
    crdvalidation,
    errors,
    namespaces,
    queryoptions,
    registry,
    resources,
    services,
    store,
)

MANAGER = "kubetrain-bootstrap"


def _int32() -> dict[str, Any]:
    return {"type": "integer", "format": "int32"}


def _quantities() -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
        },
    }


def _crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    short_names: list[str],
    spec: dict[str, Any],
    status: dict[str, Any],
    columns: list[dict[str, Any]],
    *,
    status_subresource: bool,
    scope: str = "Namespaced",
) -> dict[str, Any]:
    version_doc: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "spec": {"type": "object", "properties": spec},
                    "status": {"type": "object", "properties": status},
                },
            }
        },
        "additionalPrinterColumns": columns,
    }
    if status_subresource:
        version_doc["subresources"] = {"status": {}}
    namespaced = scope == "Namespaced"
    return api.crd(kind, plural, group, namespaced, [version_doc], short_names=short_names)


_CONDITIONS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "transitionID": {"type": "string"},
        },
    },
}


def podgroup_crds() -> list[dict[str, Any]]:
    """The PodGroup CRDs of Volcano (v1beta1) and scheduler-plugins (v1alpha1)."""
    volcano = _crd(
        "scheduling.volcano.sh",
        "v1beta1",
        "PodGroup",
        "podgroups",
        ["pg", "podgroup-v1beta1"],
        {
            "minMember": _int32(),
            "minResources": _quantities(),
            "minTaskMember": {"type": "object", "additionalProperties": _int32()},
            "priorityClassName": {"type": "string"},
            "queue": {"type": "string", "default": "default"},
            "networkTopology": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        {
            "conditions": _CONDITIONS,
            "phase": {"type": "string"},
            "running": _int32(),
            "succeeded": _int32(),
            "failed": _int32(),
        },
        [
            {"jsonPath": ".status.phase", "name": "STATUS", "type": "string"},
            {"jsonPath": ".spec.minMember", "name": "minMember", "type": "integer"},
            {"jsonPath": ".status.running", "name": "RUNNINGS", "type": "integer"},
            {"jsonPath": ".metadata.creationTimestamp", "name": "AGE", "type": "date"},
            {"jsonPath": ".spec.queue", "name": "QUEUE", "priority": 1, "type": "string"},
        ],
        status_subresource=False,
    )
    coscheduling = _crd(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "PodGroup",
        "podgroups",
        ["pg", "pgs"],
        {
            "minMember": _int32(),
            "minResources": _quantities(),
            "scheduleTimeoutSeconds": _int32(),
        },
        {
            "phase": {"type": "string"},
            "occupiedBy": {"type": "string"},
            "running": _int32(),
            "succeeded": _int32(),
            "failed": _int32(),
            "scheduleStartTime": {"type": "string", "format": "date-time"},
        },
        [],
        status_subresource=True,
    )
    return [volcano, coscheduling]


QUEUE_GROUP = "scheduling.volcano.sh"
DEFAULT_QUEUE = "default"


def queue_crd() -> dict[str, Any]:
    """Volcano's Queue CRD (cluster-scoped). ``weight`` and ``reclaimable`` default as
    Volcano's admission webhook defaults them (1, true)."""
    preserved = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return _crd(
        QUEUE_GROUP,
        "v1beta1",
        "Queue",
        "queues",
        ["q", "queue-v1beta1"],
        {
            "weight": {**_int32(), "default": 1, "minimum": 1, "maximum": 65535},
            "capability": _quantities(),
            "reclaimable": {"type": "boolean", "default": True},
            "deserved": _quantities(),
            "guarantee": {"type": "object", "properties": {"resource": _quantities()}},
            "priority": _int32(),
            "parent": {"type": "string"},
            "type": {"type": "string"},
            "affinity": preserved,
            "extendClusters": {"type": "array", "items": preserved},
        },
        {
            "state": {"type": "string"},
            "pending": _int32(),
            "running": _int32(),
            "inqueue": _int32(),
            "completed": _int32(),
            "unknown": _int32(),
            "allocated": _quantities(),
            "reservation": preserved,
            # kubetrain's scheduler: what the queue held lately on average (Kueue's names)
            "fairSharing": {
                "type": "object",
                "properties": {
                    "consumedResources": _quantities(),
                    "lastUpdate": {"type": "string", "format": "date-time"},
                },
            },
        },
        [
            {"jsonPath": ".spec.parent", "name": "PARENT", "type": "string"},
            {"jsonPath": ".spec.weight", "name": "WEIGHT", "priority": 1, "type": "integer"},
            {"jsonPath": ".status.state", "name": "STATE", "priority": 1, "type": "string"},
        ],
        status_subresource=True,
        scope="Cluster",
    )


def _options() -> queryoptions.Options:
    return queryoptions.Options(field_manager=MANAGER)


async def install(reg: registry.Registry) -> None:
    """Make the start-up state true (see the module docstring)."""
    crd_r = reg.catalog.find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert crd_r is not None
    for item in reg.store.list(crd_r.key):
        reg.catalog.set_crd(item.key.name, resources.from_crd(item.obj))
    ns_r = reg.catalog.find("", "v1", "namespaces")
    assert ns_r is not None
    for name in namespaces.SYSTEM_NAMESPACES:
        if reg.store.get(store.Key("namespaces", "", name)) is None:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            await _create(reg, ns_r, None, body)
        await namespaces.ensure_default_service_account(reg, name)
        await namespaces.ensure_root_ca(reg, name)
    await services.ensure_kubernetes_service(reg)
    for crd in [*api.crds(), *podgroup_crds(), queue_crd()]:
        await _ensure_crd(reg, crd_r, crd)
    queue_r = reg.catalog.find(QUEUE_GROUP, "v1beta1", "queues")
    if queue_r is not None and reg.store.get(store.Key(queue_r.key, "", DEFAULT_QUEUE)) is None:
        body = {
            "apiVersion": f"{QUEUE_GROUP}/v1beta1",
            "kind": "Queue",
            "metadata": {"name": DEFAULT_QUEUE},
            "spec": {"weight": 1, "reclaimable": True},
        }
        await _create(reg, queue_r, None, body)


async def _create(
    reg: registry.Registry, r: resources.Resource, namespace: str | None, body: dict[str, Any]
) -> None:
    try:
        await reg.create(r, namespace, copy.deepcopy(body), _options())
    except errors.ApiError as exc:
        if exc.code != 409:
            raise


async def _ensure_crd(reg: registry.Registry, crd_r: resources.Resource, crd: dict) -> None:
    name = crd["metadata"]["name"]
    existing = reg.store.get(store.Key(crd_r.key, "", name))
    if existing is None:
        await _create(reg, crd_r, None, crd)
        return
    if existing.obj.get("spec") == _defaulted_spec(crd):
        return
    body = copy.deepcopy(crd)
    body["metadata"] = copy.deepcopy(existing.obj["metadata"])
    await reg.update(crd_r, None, name, body, _options())


def _defaulted_spec(crd: dict[str, Any]) -> Any:
    doc = copy.deepcopy(crd)
    doc.setdefault("spec", {}).setdefault("scope", "Namespaced")
    crdvalidation.apply_crd_defaults(doc)
    return doc["spec"]
