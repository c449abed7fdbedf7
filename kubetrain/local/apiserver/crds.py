"""CustomResourceDefinitions and the custom resources they define.

A CRD is checked (:func:`crdvalidation.crd_problems`), gets the cleanup finalizer, and once
stored is established: its versions are served (the catalog gains their rows) and its status
says NamesAccepted and Established. A custom resource is pruned, defaulted and validated by its
version's structural schema (:mod:`schema`), keeps ``generation``, may have status and scale
subresources, and needs a resourceVersion on update, as kube's customresource registry has it.
Deleting a CRD deletes its custom resources first (:class:`Cleanup`).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from kubetrain import gofmt
from kubetrain.local.apiserver import apply as ssa
from kubetrain.local.apiserver import (
    crdvalidation,
    errors,
    resources,
    schema,
    schemavalidation,
    store,
    strategies,
)

Cause = strategies.Cause
R = resources.Resource
Obj = strategies.Obj
_invalid = strategies.invalid


def _path(text: str) -> list[str]:
    return [p for p in text.strip().lstrip(".").split(".") if p]


def _get_path(obj: Mapping[str, Any], path: list[str]) -> Any:
    cur: Any = obj
    for part in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _scale_paths(r: resources.Resource) -> Mapping[str, str]:
    version = r.extra.get("version") or {}
    return ((version.get("subresources") or {}).get("scale")) or {}


def scale_causes(r: resources.Resource, obj: Mapping[str, Any]) -> list[Cause]:
    """apiextensions' ValidateScaleSpec and ValidateScaleStatus: what the scale subresource's
    paths hold must be an int32 replica count that is not negative, and a string selector."""
    paths = _scale_paths(r)
    causes: list[Cause] = []
    for key in ("specReplicasPath", "statusReplicasPath"):
        text = paths.get(key)
        found, value = _lookup(obj, _path(text or ""))
        if not text or not found:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            causes.append(_invalid(text, 0, _accessor_error(text, value, "int64")))
        elif value < 0:
            causes.append(_invalid(text, value, "should be a non-negative integer"))
        elif value > _MAX_INT32:
            causes.append(_invalid(text, value, f"should be less than or equal to {_MAX_INT32}"))
    selector = paths.get("labelSelectorPath")
    found, value = _lookup(obj, _path(selector or ""))
    if selector and found and not isinstance(value, str):
        causes.append(_invalid(selector, "", _accessor_error(selector, value, "string")))
    return causes


_MAX_INT32 = 2**31 - 1


def _lookup(obj: Mapping[str, Any], path: list[str]) -> tuple[bool, Any]:
    """(found, value) at ``path``, as ``unstructured.NestedFieldNoCopy``: null is found."""
    cur: Any = obj
    for part in path:
        if not isinstance(cur, Mapping) or part not in cur:
            return False, None
        cur = cur[part]
    return bool(path), cur


def _accessor_error(path: str, value: Any, expected: str) -> str:
    shown, kind = gofmt.go_v(value), gofmt.go_type(value)
    return f"{path} accessor error: {shown} is of the type {kind}, expected {expected}"


def scale_of(r: resources.Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale of an object with a scale subresource."""
    paths = _scale_paths(r)
    meta = obj.get("metadata") or {}
    spec_replicas = _get_path(obj, _path(paths.get("specReplicasPath", ".spec.replicas")))
    status_replicas = _get_path(obj, _path(paths.get("statusReplicasPath", ".status.replicas")))
    scale: dict[str, Any] = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": spec_replicas if isinstance(spec_replicas, int) else 0},
        "status": {"replicas": status_replicas if isinstance(status_replicas, int) else 0},
    }
    selector_path = paths.get("labelSelectorPath")
    if selector_path:
        selector = _get_path(obj, _path(selector_path))
        if isinstance(selector, str):
            scale["status"]["selector"] = selector
    return scale


def with_replicas(r: resources.Resource, obj: dict[str, Any], replicas: int) -> dict[str, Any]:
    path = _path(_scale_paths(r).get("specReplicasPath", ".spec.replicas"))
    cur = obj
    for part in path[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[path[-1]] = replicas
    return obj


# --- CRDs and custom resources ------------------------------------------------------------


log = logging.getLogger(__name__)

CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"


class CRDStrategy(strategies.Strategy):
    generation = True

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        obj.pop("status", None)
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if isinstance(finalizers, list) and CRD_FINALIZER not in finalizers:
            finalizers.append(CRD_FINALIZER)
        if isinstance(obj.get("spec"), dict):
            obj["spec"].setdefault("scope", "Namespaced")
        crdvalidation.apply_crd_defaults(obj)

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        crdvalidation.apply_crd_defaults(new)

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = strategies.validate_metadata(
            obj.get("metadata") or {}, strategies.dns1123_subdomain, False
        )
        causes += [dict(c) for c in crdvalidation.crd_problems(obj)]
        spec = obj.get("spec") or {}
        if old is not None and isinstance(spec, Mapping):
            old_spec = old.get("spec") or {}
            if old_spec.get("group") != spec.get("group"):
                causes.append(_invalid("spec.group", spec.get("group"), "field is immutable"))
            if old_spec.get("scope") != spec.get("scope"):
                causes.append(_invalid("spec.scope", spec.get("scope"), "field is immutable"))
        return causes

    def return_deleted(self, r: resources.Resource) -> bool:
        return True

    async def after_create(self, r: R, item: store.Item, reg: Any) -> None:
        await establish(reg, item)

    async def after_update(self, r: R, item: store.Item, prev: store.Item, reg: Any) -> None:
        if item.obj.get("spec") != prev.obj.get("spec") or not _established(item.obj):
            await establish(reg, item)

    async def after_delete(self, r: R, item: store.Item, reg: Any) -> None:
        reg.catalog.remove_crd(item.key.name)

    def mark_deleting(self, r: R, obj: Obj, reg: Any) -> None:
        status = obj.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Terminating"]
        conditions.append(
            {
                "type": "Terminating",
                "status": "True",
                "lastTransitionTime": reg.now(),
                "reason": "InstanceDeletionPending",
                "message": "CustomResourceDefinition marked for deletion; "
                "CustomResource deletion will begin soon",
            }
        )
        status["conditions"] = conditions


def _established(crd: Mapping[str, Any]) -> bool:
    for c in (crd.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Established" and c.get("status") == "True":
            return True
    return False


async def establish(reg: Any, item: store.Item) -> None:
    """Accept the CRD's names, serve its versions, and say so in its status conditions."""
    crd = item.obj
    if (crd.get("metadata") or {}).get("deletionTimestamp"):
        reg.catalog.set_crd(item.key.name, resources.from_crd(crd))
        return
    reg.catalog.set_crd(item.key.name, resources.from_crd(crd))
    now = reg.now()
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    old_status = crd.get("status") or {}
    stored_versions = list(old_status.get("storedVersions") or [])
    for v in storage:
        if v not in stored_versions:
            stored_versions.append(v)
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "NoConflicts",
            "message": "no conflicts found",
        },
        {
            "type": "Established",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        },
    ]
    previous = {c.get("type"): c for c in old_status.get("conditions") or []}
    for c in conditions:
        before = previous.get(c["type"])
        if before and before.get("status") == c["status"]:
            c["lastTransitionTime"] = before.get("lastTransitionTime", now)
    status = {"conditions": conditions, "acceptedNames": names, "storedVersions": stored_versions}
    if old_status == status:
        return
    r = reg.catalog.find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    options = reg.system_options("kube-apiserver")
    body = copy.deepcopy(crd)
    body["status"] = status
    try:
        await reg.update(r, None, item.key.name, body, options, "status")
    except errors.ApiError as exc:
        if exc.code not in (404, 409):
            raise


class CustomResourceStrategy(strategies.Strategy):
    """Custom resources: the CRD version's structural schema defaults, prunes and validates."""

    # apiextensions' validator: ValidateObjectMetaAccessor with NameIsDNSSubdomain
    name_rule = staticmethod(strategies.dns1123_subdomain)
    own_field_labels = True  # a cluster-scoped one refuses metadata.namespace, as in kube

    def __init__(self, r: resources.Resource) -> None:
        self.resource = r
        version = r.extra.get("version") or {}
        self.schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
        crd_spec = (r.extra.get("crd") or {}).get("spec") or {}
        self.extra_field_labels = frozenset(
            str(f.get("jsonPath", "")).lstrip(".")
            for f in version.get("selectableFields") or crd_spec.get("selectableFields") or []
            if isinstance(f, Mapping)
        )

    def uses_generation(self, r: resources.Resource) -> bool:
        return True

    def spec_changed(self, r: R, new: Mapping, old: Mapping) -> bool:
        ignored = {"metadata", "status"} if r.has_status() else {"metadata"}
        return {k: v for k, v in new.items() if k not in ignored} != {
            k: v for k, v in old.items() if k not in ignored
        }

    def allow_unconditional_update(self, r: resources.Resource) -> bool:
        return False

    def return_deleted(self, r: resources.Resource) -> bool:
        return True

    def prune(self, r: R, obj: Obj) -> list[str]:
        removed = schema.prune_metadata(obj)
        if self.schema:
            removed += schema.prune(obj, self.schema)
            schema.apply_defaults(obj, self.schema)
        return removed

    def list_keys(self, r: R) -> Any:
        return ssa.list_keys_from_schema(self.schema) if self.schema else None

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        if causes:
            return causes
        if self.schema:
            causes = [dict(c) for c in schemavalidation.validate(obj, self.schema)]
        return causes + scale_causes(r, obj)


class Cleanup:
    """apiextensions' finalizer controller: a deleted CRD first loses every custom resource it
    defines, then its ``customresourcecleanup.apiextensions.k8s.io`` finalizer, and then it
    goes (and stops being served).

    It runs inside the API server, as in kube-apiserver; its writes go through the registry.
    Woken by every committed change to a CRD or to a resource a deleting CRD defines.
    """

    RETRY_SECONDS = 0.5
    MANAGER = "apiextensions-finalizer"

    def __init__(self, reg: Any) -> None:
        self.registry = reg
        self._deleting: set[str] = set()
        self._wakeup = asyncio.Event()
        for item in reg.store.list(CRD_KEY):
            if (item.obj.get("metadata") or {}).get("deletionTimestamp"):
                self._deleting.add(item.key.name)
        self._wakeup.set()
        reg.store.subscribe(self._on_commit)

    def _on_commit(self, events: Sequence[store.Event]) -> None:
        for event in events:
            resource = event.key.resource
            if resource == CRD_KEY:
                if (event.item.obj.get("metadata") or {}).get("deletionTimestamp"):
                    self._deleting.add(event.key.name)
                self._wakeup.set()
            elif resource in self._deleting:
                self._wakeup.set()

    async def run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            try:
                busy = await self.step()
            except errors.ApiError as exc:
                log.warning("crd cleanup: %s (retrying)", exc.message)
                busy = True
            if busy:
                await asyncio.sleep(self.RETRY_SECONDS)
                self._wakeup.set()

    async def step(self) -> bool:
        """One pass; True while custom resources are still going (e.g. held by finalizers)."""
        reg = self.registry
        crd_r = reg.catalog.find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        busy = False
        for name in sorted(self._deleting):
            item = reg.store.get(store.Key(CRD_KEY, "", name))
            meta = (item.obj.get("metadata") or {}) if item is not None else {}
            finalizers = meta.get("finalizers") or []
            if item is None or CRD_FINALIZER not in finalizers:
                self._deleting.discard(name)
                continue
            rows = reg.catalog.by_key(name)
            remaining = reg.store.list(name)
            if remaining:
                busy = True
                for content in remaining if rows else ():
                    if not (content.obj.get("metadata") or {}).get("deletionTimestamp"):
                        await _quietly(
                            reg.delete(
                                rows[0],
                                content.key.namespace or None,
                                content.key.name,
                                {},
                                reg.system_options(self.MANAGER),
                            )
                        )
                continue
            body = dict(item.obj)
            body["metadata"] = {**meta, "finalizers": [f for f in finalizers if f != CRD_FINALIZER]}
            await _quietly(reg.update(crd_r, None, name, body, reg.system_options(self.MANAGER)))
        return busy


async def _quietly(write: Awaitable[Any]) -> None:
    """A write that may lose to another writer; the next pass sees the new state."""
    try:
        await write
    except errors.ApiError as exc:
        if exc.code not in (404, 409):
            raise
