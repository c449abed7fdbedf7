"""Turning informer events into keys (controller-runtime's handler package): an object's own
key, or the key of its controller owner.

A Pod, Service or PodGroup event matters to the job that controls it, so the job's key is
enqueued; an update that moved the object to another owner enqueues both. Only the
*controller* ownerReference counts, and only when it names the reconciled kind (kind and API
group; any version, since the group's versions are one object), as EnqueueRequestForOwner
with OnlyControllerOwner does.

Owns: those pure mappings. Must not: read the cache, write anything, or filter by content
(reconcilers are level-triggered: an extra key is harmless, a missing one is not).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubetrain import kube
from kubetrain.operator.runtime import controller

Mapper = Callable[[dict[str, Any]], Iterable[controller.Key]]
"""An object → the keys to reconcile (controller-runtime's EnqueueRequestsFromMapFunc)."""


def own_key(obj: Mapping[str, Any]) -> controller.Key | None:
    """The object's own key, or None when it has no name."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = meta.get("namespace")
    return controller.Key(namespace if isinstance(namespace, str) else "", name)


def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` (there is at most one), or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def owner_key(obj: Mapping[str, Any], owner: kube.Resource) -> controller.Key | None:
    """The key of the object's controller owner if it is of ``owner``'s kind and group."""
    ref = controller_ref(obj)
    if ref is None:
        return None
    name, kind, api_version = ref.get("name"), ref.get("kind"), ref.get("apiVersion")
    if not isinstance(name, str) or not name or not isinstance(api_version, str):
        return None
    if kind != owner.kind or kube.split_api_version(api_version)[0] != owner.group:
        return None
    if not owner.namespaced:
        return controller.Key("", name)
    namespace = (obj.get("metadata") or {}).get("namespace")
    if not isinstance(namespace, str) or not namespace:
        return None  # a cluster-scoped object cannot be controlled by a namespaced owner
    return controller.Key(namespace, name)


def owner_keys(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, owner: kube.Resource
) -> set[controller.Key]:
    """The owner keys an event concerns: the object's now, and its old owner's when the
    controller reference changed."""
    keys: set[controller.Key] = set()
    for version in (obj, old):
        if version is not None and (key := owner_key(version, owner)) is not None:
            keys.add(key)
    return keys
