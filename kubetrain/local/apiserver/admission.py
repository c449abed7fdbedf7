"""Admission: the checks between a write's validation and its store, that look beyond the
object itself.

- NamespaceLifecycle: no new content in a missing or terminating namespace.
- kubetrain's own admission for its kinds (``kubeflow.org``, ``trainer.kubeflow.org``): the
  same review the operator's admission webhook gives on a real cluster (:func:`api.review`),
  with every field error at once; trainer objects are stored defaulted.
- The lock that makes admission which counts what exists (quota) and the create it admits
  one step, per namespace.

Per-resource admission (quota, LimitRanger, ServiceAccount) is a strategy hook
(``admit_create``, ``prepare_for_create``); this module holds what is not one resource's.

What it must not do: write. It reads the store and answers, or raises an ApiError.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kubetrain import api
from kubetrain.kube import status as kube_status
from kubetrain.local.apiserver import errors, queryoptions, resources, store
from kubetrain.local.apiserver import strategies as strat

KUBETRAIN_GROUPS = ("kubeflow.org", "trainer.kubeflow.org")


def admit_namespace(db: store.Store, r: resources.Resource, namespace: str, name: str) -> None:
    """NamespaceLifecycle: no content in a missing or terminating namespace."""
    ns = db.get(store.Key("namespaces", "", namespace))
    if ns is None:
        raise errors.not_found("", "namespaces", namespace)
    if (ns.obj.get("status") or {}).get("phase") == "Terminating":
        raise errors.forbidden(
            r.group,
            r.plural,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
        )


def admit_kubetrain(
    db: store.Store,
    r: resources.Resource,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    opts: queryoptions.Options,
    now: str,
) -> dict[str, Any]:
    """kubetrain's own admission for its kinds: 422 with every field error, or the object
    to store (as sent for kubeflow.org/v1; defaulted for trainer.kubeflow.org)."""
    if r.group not in KUBETRAIN_GROUPS or (r.group, r.kind) not in api.KINDS:
        return obj

    def find_runtime(kind: str, namespace: str | None, name: str) -> Any:
        plural = "clustertrainingruntimes" if namespace is None else "trainingruntimes"
        item = db.get(store.Key(f"{plural}.trainer.kubeflow.org", namespace or "", name))
        if item is None or item.obj.get("kind") != kind:
            return None
        parsed, _ = api.parse(item.obj)
        return parsed

    def has_priority_class(name: str) -> bool:
        return db.get(store.Key("priorityclasses.scheduling.k8s.io", "", name)) is not None

    verdict = api.review(
        obj, old, find_runtime=find_runtime, now=now, find_priority_class=has_priority_class
    )
    opts.warnings.extend(verdict.warnings)
    if not verdict.ok or verdict.obj is None:
        causes = [kube_status.field_error_cause(e) for e in verdict.errors]
        name = (obj.get("metadata") or {}).get("name") or ""
        raise errors.invalid(r.group, r.kind, name, causes)
    if r.group == "trainer.kubeflow.org":
        defaulted = verdict.obj.to_dict()
        defaulted["metadata"] = obj["metadata"]  # the server owns metadata
        if "status" in obj:
            defaulted["status"] = obj["status"]
        return defaulted
    return obj


class CreateLocks:
    """One lock per namespace, held by a create whose admission counts what exists, so two
    creates cannot both fit the last slot of a quota."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def for_create(
        self, strategy: strat.Strategy, reg: Any, namespace: str
    ) -> contextlib.AbstractAsyncContextManager[Any]:
        if not strategy.serializes_creates(reg, namespace):
            return contextlib.nullcontext()
        lock = self._locks.get(namespace)
        if lock is None:
            lock = self._locks[namespace] = asyncio.Lock()
        return lock
