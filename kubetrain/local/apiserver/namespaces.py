"""Namespaces and what every namespace holds.

A namespace is created Active with the ``kubernetes`` finalizer (after any ``spec.finalizers``
the client gave) and its name label; deleting it makes it Terminating until the namespace
controller (:mod:`kubetrain.local.namespaces`) has emptied it. ``spec.finalizers`` changes only
through the ``finalize`` subresource; the update that removes the last one deletes a
Terminating namespace (the registry asks :meth:`NamespaceStrategy.finalizes`). The system
namespaces may not be deleted. Every namespace gets a ``default`` ServiceAccount (recreated if
deleted) and the ``kube-root-ca.crt`` ConfigMap, as kube's ServiceAccount and root-CA publisher
controllers do.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubetrain.local.apiserver import errors, resources, selectors, store, strategies

R = resources.Resource
Obj = strategies.Obj


SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACE_FINALIZER = "kubernetes"
# kube's standard finalizer names: the only ones that need no domain prefix
STANDARD_FINALIZERS = frozenset({NAMESPACE_FINALIZER, "orphan", "foregroundDeletion"})
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"


class NamespaceStrategy(strategies.Strategy):
    name_rule = staticmethod(strategies.dns1123_label)
    own_field_labels = True
    extra_field_labels = frozenset({"status.phase"})

    def return_deleted(self, r: resources.Resource) -> bool:
        return True

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        spec = obj.get("spec")
        given = spec.get("finalizers") if isinstance(spec, dict) else None
        finalizers = list(given) if isinstance(given, list) else []
        if NAMESPACE_FINALIZER not in finalizers:
            finalizers.append(NAMESPACE_FINALIZER)
        obj["spec"] = {"finalizers": finalizers}
        obj["status"] = {"phase": "Active"}
        labels = obj["metadata"].setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        new["spec"] = copy.deepcopy(old.get("spec") or {})  # spec.finalizers: via /finalize
        _label_name(new)

    def prepare_status_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        self.prepare_for_update(r, new, old, reg)

    def for_subresource(self, name: str) -> strategies.WriteStrategy:
        if name == "finalize":  # changes spec.finalizers, and nothing of status
            return strategies.SubresourceStrategy(self, name, _keep_status, _prepare_finalize)
        return super().for_subresource(name)

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[strategies.Cause]:
        causes = super().validate(r, obj, old, reg)
        spec = obj.get("spec")
        finalizers = (spec.get("finalizers") if isinstance(spec, dict) else None) or []
        if not isinstance(finalizers, list):
            return [*causes, strategies.invalid("spec.finalizers", finalizers, "must be a list")]
        for name in finalizers:  # kube's ValidateNamespace names the list, not the item
            causes += [
                strategies.invalid("spec.finalizers", name, problem)
                for problem in _finalizer_name_problems(name)
            ]
        return causes

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


def _keep_status(r: R, new: Obj, old: Mapping[str, Any]) -> Obj:
    new["status"] = copy.deepcopy(old.get("status") or {})
    return new


def _prepare_finalize(r: R, new: Obj, old: Mapping, reg: Any) -> None:
    _label_name(new)


def _label_name(obj: Obj) -> None:
    """The namespace's name as its ``kubernetes.io/metadata.name`` label, which no write
    removes."""
    meta = obj["metadata"]
    labels = meta.get("labels", {})
    if isinstance(labels, dict):  # a new map: a status update shares the stored one
        meta["labels"] = {**labels, "kubernetes.io/metadata.name": meta.get("name", "")}


def _finalizer_name_problems(name: Any) -> list[str]:
    """kube's validateFinalizerName: a qualified name; without a prefix, a standard one."""
    if not isinstance(name, str):
        return ["must be a string"]
    problems = selectors.label_key_errors(name)
    if not problems and "/" not in name and name not in STANDARD_FINALIZERS:
        problems.append("name is neither a standard finalizer name nor is it fully qualified")
    return problems


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
