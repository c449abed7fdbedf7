"""Namespaces and what every namespace holds.

A namespace is created Active with the ``kubernetes`` finalizer and its name label; deleting
it makes it Terminating until the namespace controller (:mod:`kubetrain.local.namespaces`) has
emptied it. The system namespaces may not be
deleted. Every namespace gets a ``default`` ServiceAccount (recreated if deleted) and the
``kube-root-ca.crt`` ConfigMap, as kube's ServiceAccount and root-CA publisher controllers do.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubetrain.local.apiserver import errors, resources, store, strategies

R = resources.Resource
Obj = strategies.Obj


SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACE_FINALIZER = "kubernetes"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"


class NamespaceStrategy(strategies.Strategy):
    name_rule = staticmethod(strategies.dns1123_label)
    extra_field_labels = frozenset({"status.phase"})

    def return_deleted(self, r: resources.Resource) -> bool:
        return True

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        obj["spec"] = {"finalizers": [NAMESPACE_FINALIZER]}
        obj["status"] = {"phase": "Active"}
        labels = obj["metadata"].setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any, sub: str) -> None:
        if sub != "finalize":
            new["spec"] = copy.deepcopy(old.get("spec") or {})
        labels = new["metadata"].setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = new["metadata"].get("name", "")

    async def after_create(self, r: R, item: store.Item, reg: Any) -> None:
        await ensure_default_service_account(reg, item.key.name)
        await ensure_root_ca(reg, item.key.name)

    def before_delete(self, r: R, obj: Obj, reg: Any) -> None:
        name = obj["metadata"].get("name", "")
        if name in SYSTEM_NAMESPACES:
            raise errors.forbidden("", "namespaces", name, "this namespace may not be deleted")

    def finalizes(self, r: R, obj: Mapping) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))

    def mark_deleting(self, r: R, obj: Obj, reg: Any) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def subresource_create(self, name: str) -> strategies.SubresourceHandler | None:
        return None


async def ensure_default_service_account(reg: Any, namespace: str) -> None:
    """The ServiceAccount controller's job: a ``default`` ServiceAccount in every namespace."""
    key = store.Key("serviceaccounts", namespace, "default")
    ns = reg.store.get(store.Key("namespaces", "", namespace))
    if reg.store.get(key) is not None or ns is None:
        return
    if (ns.obj.get("status") or {}).get("phase") == "Terminating":
        return
    r = reg.catalog.find("", "v1", "serviceaccounts")
    body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    options = reg.system_options("kube-controller-manager")
    try:
        await reg.create(r, namespace, body, options)
    except errors.ApiError as exc:
        if exc.code != 409:
            raise


class ServiceAccountStrategy(strategies.Strategy):
    async def after_delete(self, r: R, item: store.Item, reg: Any) -> None:
        if item.key.name == "default":
            await ensure_default_service_account(reg, item.key.namespace)


async def ensure_root_ca(reg: Any, namespace: str) -> None:
    """The root-CA publisher's job: ``kube-root-ca.crt`` with the API server's CA."""
    if not reg.settings.root_ca:
        return
    ns = reg.store.get(store.Key("namespaces", "", namespace))
    if ns is None or (ns.obj.get("status") or {}).get("phase") == "Terminating":
        return
    if reg.store.get(store.Key("configmaps", namespace, ROOT_CA_CONFIGMAP)) is not None:
        return
    r = reg.catalog.find("", "v1", "configmaps")
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ROOT_CA_CONFIGMAP,
            "annotations": {
                "kubernetes.io/description": (
                    "Contains a CA bundle that can be used to verify the kube-apiserver when "
                    "using internal endpoints such as the internal service IP or "
                    "kubernetes.default.svc. No other usage is guaranteed across distributions "
                    "of Kubernetes clusters."
                )
            },
        },
        "data": {"ca.crt": reg.settings.root_ca},
    }
    try:
        await reg.create(r, namespace, body, reg.system_options("kube-controller-manager"))
    except errors.ApiError as exc:
        if exc.code != 409:
            raise
