"""PersistentVolumeClaims: bound at once to a PersistentVolume backed by a directory on this
host (there is no provisioner to wait for); deleting the claim deletes its volume."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kubetrain.local.apiserver import errors, resources, store, strategies

Cause = strategies.Cause
R = resources.Resource
Obj = strategies.Obj
_required = strategies.required


class PersistentVolumeClaimStrategy(strategies.Strategy):
    """A claim is bound at once to a volume in a local directory (no provisioner to wait for)."""

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("volumeMode", "Filesystem")
        uid = obj["metadata"]["uid"]
        spec.setdefault("volumeName", f"pvc-{uid}")
        requests = (spec.get("resources") or {}).get("requests") or {}
        annotations = obj["metadata"].setdefault("annotations", {})
        annotations.setdefault("pv.kubernetes.io/bind-completed", "yes")
        annotations.setdefault("pv.kubernetes.io/bound-by-controller", "yes")
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
        """Create the PersistentVolume the claim is bound to: a directory on this host."""

        spec = item.obj.get("spec") or {}
        volume_name = spec.get("volumeName")
        pv_r = reg.catalog.find("", "v1", "persistentvolumes")
        if (
            not volume_name
            or pv_r is None
            or reg.store.get(store.Key("persistentvolumes", "", volume_name))
        ):
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
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "apiVersion": "v1",
                    "namespace": item.key.namespace,
                    "name": item.key.name,
                    "uid": item.obj["metadata"]["uid"],
                    "resourceVersion": item.obj["metadata"]["resourceVersion"],
                },
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
        if volume_name and pv_r is not None:
            try:
                await reg.delete(
                    pv_r, None, volume_name, {}, reg.system_options("kube-controller-manager")
                )
            except errors.ApiError as exc:
                if exc.code != 404:
                    raise
