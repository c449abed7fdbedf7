"""PersistentVolumeClaims, bound at once: a claim that names a PersistentVolume
(``spec.volumeName``) binds to it as kube's volume binder binds it, and one that does not gets
a fresh volume backed by a directory on this host (there is no provisioner to wait for). When
the claim goes, its volume's reclaim policy says what follows, as in kube: ``Delete`` (what
this host's volumes carry) deletes it, ``Retain`` (kube's default) leaves it Released."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kubetrain.local.apiserver import errors, resources, store, strategies

Cause = strategies.Cause
R = resources.Resource
Obj = strategies.Obj
_required = strategies.required


class PersistentVolumeStrategy(strategies.Strategy):
    """A volume is deleted as kube deletes it: the answer is the object, not a Status."""

    def return_deleted(self, r: resources.Resource) -> bool:
        return True


class PersistentVolumeClaimStrategy(strategies.Strategy):
    """A claim is bound at once to the volume it names, or to a fresh one in a local
    directory (no provisioner to wait for)."""

    def return_deleted(self, r: resources.Resource) -> bool:
        return True

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("volumeMode", "Filesystem")
        annotations = obj["metadata"].setdefault("annotations", {})
        if not spec.get("volumeName"):  # the binder chose the volume, not the user
            spec["volumeName"] = f"pvc-{obj['metadata']['uid']}"
            annotations.setdefault("pv.kubernetes.io/bound-by-controller", "yes")
        annotations.setdefault("pv.kubernetes.io/bind-completed", "yes")
        requests = (spec.get("resources") or {}).get("requests") or {}
        obj["status"] = {
            "phase": "Bound",
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "capacity": {"storage": requests.get("storage", "1Gi")},
        }

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        spec = obj.get("spec") or {}
        if not spec.get("accessModes"):
            causes.append(_required("spec.accessModes"))
        if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
            causes.append(_required("spec.resources[storage]"))
        return causes

    async def after_create(self, r: R, item: store.Item, reg: Any) -> None:
        """Bind the volume the claim names, or create one: a directory on this host."""

        spec = item.obj.get("spec") or {}
        volume_name = spec.get("volumeName")
        pv_r = reg.catalog.find("", "v1", "persistentvolumes")
        if not volume_name or pv_r is None:
            return
        existing = reg.store.get(store.Key("persistentvolumes", "", volume_name))
        if existing is not None:
            await _bind(reg, pv_r, existing.obj, item)
            return
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": volume_name,
                "annotations": {"pv.kubernetes.io/provisioned-by": "kubetrain.local"},
            },
            "spec": {
                "capacity": (item.obj.get("status") or {}).get("capacity", {}),
                "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Delete",
                "volumeMode": "Filesystem",
                "hostPath": {
                    "path": os.path.join(reg.settings.volume_dir, volume_name),
                    "type": "DirectoryOrCreate",
                },
                "claimRef": _claim_ref(item),
            },
        }
        options = reg.system_options("kube-controller-manager")
        try:
            created = await reg.create(pv_r, None, body, options)
            await reg.update(
                pv_r,
                None,
                volume_name,
                {**created.obj, "status": {"phase": "Bound"}},
                options,
                "status",
            )
        except errors.ApiError as exc:
            if exc.code != 409:
                raise

    async def after_delete(self, r: R, item: store.Item, reg: Any) -> None:
        volume_name = (item.obj.get("spec") or {}).get("volumeName")
        pv_r = reg.catalog.find("", "v1", "persistentvolumes")
        if not volume_name or pv_r is None:
            return
        volume = reg.store.get(store.Key("persistentvolumes", "", volume_name))
        if volume is None or not _bound_to(volume.obj, item):
            return
        options = reg.system_options("kube-controller-manager")
        try:
            policy = (volume.obj.get("spec") or {}).get("persistentVolumeReclaimPolicy")
            if policy == "Delete":
                await reg.delete(pv_r, None, volume_name, {}, options)
            else:  # Retain, kube's default: the data stays for an administrator
                released = {**volume.obj, "status": {"phase": "Released"}}
                await reg.update(pv_r, None, volume_name, released, options, "status")
        except errors.ApiError as exc:
            if exc.code not in (404, 409):
                raise


def _claim_ref(claim: store.Item) -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": claim.key.namespace,
        "name": claim.key.name,
        "uid": claim.obj["metadata"]["uid"],
        "resourceVersion": claim.obj["metadata"]["resourceVersion"],
    }


def _bound_to(volume: Mapping[str, Any], claim: store.Item) -> bool:
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    return ref.get("uid") == claim.obj["metadata"]["uid"]


async def _bind(reg: Any, pv_r: R, volume: dict[str, Any], claim: store.Item) -> None:
    """What kube's volume binder does for a claim that names a volume: the volume's claimRef
    points at the claim, and it is Bound. One that is bound to another claim stays so."""
    ref = (volume.get("spec") or {}).get("claimRef")
    if ref and ref.get("uid") not in (None, claim.obj["metadata"]["uid"]):
        return
    options = reg.system_options("kube-controller-manager")
    name = volume["metadata"]["name"]
    try:
        if not ref or not ref.get("uid"):
            body = {**volume, "spec": {**volume.get("spec", {}), "claimRef": _claim_ref(claim)}}
            volume = (await reg.update(pv_r, None, name, body, options)).obj
        await reg.update(
            pv_r, None, name, {**volume, "status": {"phase": "Bound"}}, options, "status"
        )
    except errors.ApiError as exc:
        if exc.code not in (404, 409):
            raise
