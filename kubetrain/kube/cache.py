"""The shared cache of one resource's objects, as an informer sees them (client-go's indexer
and controller-runtime's cache reader).

Reconcilers read from here, not from the API server: ``get`` and ``list`` by namespace and
labels, and ``owned_by(uid)`` from an index of controller ownerReferences, so finding a job's
pods does not scan every pod. Objects are shared, not copied: callers must not change what
they get (deep-copy before editing). ``managedFields`` is dropped on the way in: reconcilers
never need it and it is often most of an object's size.

Every change the informer applies is passed to the handlers, synchronously and in order:
first those of :meth:`Store.subscribe` (expectations tick off names there), then those that
enqueue keys, so a reconcile started by an event always sees that event's effect.

Owns: the objects, the indexes, the ``synced`` flag and the handler lists. Must not: do I/O
(the informer feeds it) or let a failing handler stop the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kubetrain import kube

log = logging.getLogger(__name__)

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"

Handler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]
"""``(type, obj, old)``: ADDED, MODIFIED or DELETED; ``old`` is what the cache held before
(None for ADDED); for DELETED, ``obj`` is the object's last state."""


class Store:
    """One resource's objects (see the module docstring)."""

    def __init__(self, resource: kube.Resource) -> None:
        self.resource = resource
        self.synced = asyncio.Event()
        self._by_namespace: dict[str, dict[str, dict[str, Any]]] = {}
        self._owned: dict[str, set[tuple[str, str]]] = {}
        self._subscribers: list[Handler] = []
        self._enqueuers: list[Handler] = []

    def __len__(self) -> int:
        return sum(len(objects) for objects in self._by_namespace.values())

    # -- reading -------------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None (``namespace`` is ``""`` for cluster-scoped resources)."""
        return self._by_namespace.get(namespace, {}).get(name)

    def list(
        self, namespace: str | None = None, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """Objects in ``namespace`` (every namespace when None) carrying all of ``labels``."""
        if namespace is None:
            found: Iterable[dict[str, Any]] = (
                obj for objects in self._by_namespace.values() for obj in objects.values()
            )
        else:
            found = self._by_namespace.get(namespace, {}).values()
        if not labels:
            return list(found)
        wanted = labels.items()
        return [obj for obj in found if wanted <= _labels(obj).items()]

    def owned_by(self, uid: str) -> list[dict[str, Any]]:
        """Objects whose controller ownerReference has ``uid``."""
        return [
            obj
            for namespace, name in sorted(self._owned.get(uid, ()))
            if (obj := self.get(namespace, name)) is not None
        ]

    # -- handlers ------------------------------------------------------------------------------

    def subscribe(self, handler: Handler) -> None:
        """Call ``handler(type, obj, old)`` on every change, before keys are enqueued."""
        self._subscribers.append(handler)

    def add_enqueuer(self, handler: Handler) -> None:
        """For the manager: a handler that enqueues keys, called after every subscriber."""
        self._enqueuers.append(handler)

    # -- fed by the informer -------------------------------------------------------------------

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        """A (re-)list: the objects now are ``items``. What is new is ADDED, what changed
        (another resourceVersion) MODIFIED, and what is gone DELETED, as client-go's
        DeltaFIFO Replace does; then the store counts as synced."""
        seen: set[tuple[str, str]] = set()
        for item in items:
            obj = _trimmed(item)
            where = _where(obj)
            if where is None:
                continue
            seen.add(where)
            old = self.get(*where)
            if old is None:
                self._put(where, obj, None)
                self._dispatch(ADDED, obj, None)
            elif _version(old) != _version(obj):
                self._put(where, obj, old)
                self._dispatch(MODIFIED, obj, old)
        gone = [
            (namespace, name)
            for namespace, objects in self._by_namespace.items()
            for name in objects
            if (namespace, name) not in seen
        ]
        for where in gone:
            old = self._remove(where)
            if old is not None:
                self._dispatch(DELETED, old, old)
        if not self.synced.is_set():
            log.debug("cache of %s synced: %d objects", self.resource.group_resource, len(self))
            self.synced.set()

    def apply(self, type: str, item: dict[str, Any]) -> None:
        """One watch event."""
        obj = _trimmed(item)
        where = _where(obj)
        if where is None:
            return
        if type == DELETED:
            old = self._remove(where)
            self._dispatch(DELETED, obj, old)
            return
        if type not in (ADDED, MODIFIED):
            return
        old = self.get(*where)
        self._put(where, obj, old)
        self._dispatch(ADDED if old is None else MODIFIED, obj, old)

    def _put(self, where: tuple[str, str], obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        namespace, name = where
        self._by_namespace.setdefault(namespace, {})[name] = obj
        before, after = _controller_uid(old), _controller_uid(obj)
        if before != after and before is not None:
            self._unindex(before, where)
        if after is not None:
            self._owned.setdefault(after, set()).add(where)

    def _remove(self, where: tuple[str, str]) -> dict[str, Any] | None:
        namespace, name = where
        objects = self._by_namespace.get(namespace)
        if objects is None or (old := objects.pop(name, None)) is None:
            return None
        if not objects:
            del self._by_namespace[namespace]
        if (uid := _controller_uid(old)) is not None:
            self._unindex(uid, where)
        return old

    def _unindex(self, uid: str, where: tuple[str, str]) -> None:
        owned = self._owned.get(uid)
        if owned is not None:
            owned.discard(where)
            if not owned:
                del self._owned[uid]

    def _dispatch(self, type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        for handler in (*self._subscribers, *self._enqueuers):
            try:
                handler(type, obj, old)
            except Exception:
                log.exception(
                    "a handler of %s failed on %s %s",
                    self.resource.group_resource,
                    type,
                    _where(obj),
                )


def _where(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = meta.get("namespace")
    return (namespace if isinstance(namespace, str) else "", name)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _version(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


def _controller_uid(obj: Mapping[str, Any] | None) -> str | None:
    if obj is None:
        return None
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            uid = ref.get("uid")
            return uid if isinstance(uid, str) and uid else None
    return None


def _trimmed(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj
