"""The namespace controller, as Kubernetes' controller manager runs it ("Namespaces" and
"Namespace deletion" in the Kubernetes documentation), as an ordinary API client.

Deleting a namespace only marks it: the API server sets its deletionTimestamp and phase
Terminating, and keeps it while ``spec.finalizers`` holds ``kubernetes``. This controller does
the rest: it deletes every object of every namespaced resource type the server serves
(discovery, verbs list and delete; ``deletecollection`` where offered), and once none is left
removes ``kubernetes`` from ``spec.finalizers`` through the ``/finalize`` subresource, after
which the API server deletes the namespace. While content remains it re-checks with a growing
delay and reports progress in ``status.conditions`` with kube's condition types and reasons
(NamespaceDeletionDiscoveryFailure, NamespaceDeletionContentFailure,
NamespaceContentRemaining, NamespaceFinalizersRemaining).

Objects with finalizers of their own (a foreground-deleting owner, a pod in its grace period)
keep the namespace until their controllers let them go; that wait is the point.

Must not: finalize a namespace while discovery is incomplete (content of a group that did not
answer could be left behind), touch cluster-scoped objects, or remove any finalizer but its
own ``kubernetes`` entry.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubetrain import kube, timefmt
from kubetrain.kube import tasks, watch
from kubetrain.kube.resource import NAMESPACES

log = logging.getLogger(__name__)

FINALIZER = "kubernetes"
REQUIRED_VERBS = frozenset({"list", "delete"})

DISCOVERY_FAILURE = "NamespaceDeletionDiscoveryFailure"
CONTENT_FAILURE = "NamespaceDeletionContentFailure"
CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"

# type: (reason when fine, message when fine, reason when not), as kube's namespace controller
_CONDITIONS = {
    DISCOVERY_FAILURE: (
        "ResourcesDiscovered",
        "All resources successfully discovered",
        "DiscoveryFailed",
    ),
    CONTENT_FAILURE: (
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
        "ContentDeletionFailed",
    ),
    CONTENT_REMAINING: (
        "ContentRemoved",
        "All content successfully removed",
        "SomeResourcesRemain",
    ),
    FINALIZERS_REMAINING: (
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
        "SomeFinalizersRemain",
    ),
}


@dataclass(frozen=True)
class Settings:
    retry_initial: float = 0.1  # seconds before the first re-check while content remains
    retry_max: float = 10.0
    watch: watch.Settings = field(default_factory=watch.Settings)


@dataclass
class Sweep:
    """What one pass over a namespace's content found."""

    discovery_failed: list[str] = field(default_factory=list)
    delete_failed: list[str] = field(default_factory=list)
    remaining: collections.Counter[str] = field(default_factory=collections.Counter)
    finalizers: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def clean(self) -> bool:
        return not (self.discovery_failed or self.delete_failed or self.remaining)

    def failures(self) -> dict[str, str]:
        """Condition type → message, for the conditions that are not fine."""
        found: dict[str, str] = {}
        if self.discovery_failed:
            groups = ", ".join(sorted(self.discovery_failed))
            found[DISCOVERY_FAILURE] = (
                f"Discovery failed for some groups, {len(self.discovery_failed)} failing: {groups}"
            )
        if self.delete_failed:
            found[CONTENT_FAILURE] = (
                f"Failed to delete all resource types, {len(self.delete_failed)} remaining: "
                + ", ".join(sorted(self.delete_failed))
            )
        if self.remaining:
            found[CONTENT_REMAINING] = "Some resources are remaining: " + ", ".join(
                f"{r} has {n} resource instances" for r, n in sorted(self.remaining.items())
            )
        if self.finalizers:
            found[FINALIZERS_REMAINING] = (
                "Some content in the namespace has finalizers remaining: "
                + ", ".join(
                    f"{f} in {n} resource instances" for f, n in sorted(self.finalizers.items())
                )
            )
        return found


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class NamespaceController:
    def __init__(
        self,
        client: kube.Client,
        settings: Settings | None = None,
        *,
        clock: Callable[[], datetime.datetime] = _utcnow,
    ) -> None:
        self.client = client
        self.settings = settings or Settings()
        self.clock = clock
        self._tasks = tasks.Tasks()
        self._finalizing: dict[str, asyncio.Task[None]] = {}

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Watch namespaces and finalize the deleted ones until cancelled (or ``stop``)."""
        log.info("namespace controller starting")
        async with self._tasks.running(stop, "namespaces"):
            self._tasks.spawn(self._watch(), "namespaces-watch")
        log.info("namespace controller stopped")

    async def _watch(self) -> None:
        failures = 0
        while True:  # a watch ends only on an error retrying cannot fix (e.g. 403): retry slowly
            try:
                w = self.client.watch(NAMESPACES, settings=self.settings.watch)
                async with contextlib.aclosing(aiter(w)) as events:
                    async for event in events:
                        failures = 0
                        items = event.object.get("items") if event.type == watch.SYNC else None
                        for obj in items if items is not None else [event.object]:
                            if event.type != watch.DELETED:
                                self._consider(obj)
            except kube.ApiError as exc:
                delay = min(self.settings.retry_max, self.settings.retry_initial * 2**failures)
                failures += 1
                log.warning("cannot watch namespaces: %s; retrying in %.0fs", exc, delay)
                await asyncio.sleep(delay)

    def _consider(self, namespace: dict[str, Any]) -> None:
        meta = namespace.get("metadata") or {}
        name = meta.get("name")
        if not isinstance(name, str) or not meta.get("deletionTimestamp"):
            return
        if FINALIZER not in ((namespace.get("spec") or {}).get("finalizers") or []):
            return
        if name not in self._finalizing:
            log.info("namespace %s is terminating; deleting its content", name)
            self._finalizing[name] = self._tasks.spawn(self._finalize(name), f"namespace-{name}")

    async def _finalize(self, name: str) -> None:
        """Sweep ``name`` until it is finalized or gone, backing off while content remains."""
        delay = self.settings.retry_initial
        try:
            while True:
                try:
                    if await self.sweep(name):
                        return
                except kube.ApiError as exc:
                    log.warning("namespace %s: %s (will retry)", name, exc)
                except Exception:
                    log.exception("namespace %s: deleting content failed", name)
                await asyncio.sleep(delay)
                delay = min(self.settings.retry_max, delay * 2)
        finally:
            self._finalizing.pop(name, None)

    async def sweep(self, name: str) -> bool:
        """One pass: delete what is left, record progress, finalize if nothing is.
        True when there is nothing more to do for ``name``."""
        try:
            namespace = await self.client.get(NAMESPACES, name)
        except kube.NotFound:
            return True
        meta = namespace.get("metadata") or {}
        finalizers = (namespace.get("spec") or {}).get("finalizers") or []
        if not meta.get("deletionTimestamp") or FINALIZER not in finalizers:
            return True
        result = await self._delete_content(name)
        namespace = await self._record(namespace, result)
        if not result.clean:
            log.debug("namespace %s: %s", name, "; ".join(result.failures().values()))
            return False
        body = {
            **namespace,
            "spec": {
                **namespace.get("spec", {}),
                "finalizers": [f for f in finalizers if f != FINALIZER],
            },
        }
        finalized = await self.client.replace(NAMESPACES, body, subresource="finalize")
        log.info("namespace %s: content deleted; finalized", name)
        if not _finalizers(finalized):
            # kube-apiserver deletes a namespace as its last finalizer goes; a server that only
            # records the update gets the delete kube's namespace controller once sent itself
            with contextlib.suppress(kube.NotFound, kube.Conflict):
                await self.client.delete(NAMESPACES, name)
        return True

    async def _delete_content(self, namespace: str) -> Sweep:
        result = Sweep()
        found = await self.client.discover(refresh=True)
        result.discovery_failed = list(found.failed)
        resources = [r for r in found.preferred() if r.namespaced and r.verbs >= REQUIRED_VERBS]
        outcomes = await asyncio.gather(*(self._delete_all(r, namespace) for r in resources))
        for resource, (remaining, finalizers, error) in zip(resources, outcomes, strict=True):
            if error is not None:
                result.delete_failed.append(f"{resource.group_resource}: {error}")
            if remaining:
                result.remaining[resource.group_resource] = remaining
            result.finalizers.update(finalizers)
        return result

    async def _delete_all(
        self, resource: kube.Resource, namespace: str
    ) -> tuple[int, collections.Counter[str], str | None]:
        """Delete every ``resource`` object in ``namespace``; return how many are left, the
        finalizers holding them, and the error that stopped the deletion, if any."""
        error = None
        try:
            if "deletecollection" in resource.verbs:
                try:  # Background, so that no orphan finalizer holds back what must all go
                    await self.client.delete_collection(
                        resource, namespace=namespace, propagation_policy="Background"
                    )
                except kube.ApiError as exc:
                    if exc.code != 405:  # 405: listed but not allowed after all
                        raise
                    await self._delete_each(resource, namespace)
            else:
                await self._delete_each(resource, namespace)
        except kube.NotFound:
            return 0, collections.Counter(), None  # the type went away meanwhile
        except kube.ApiError as exc:
            error = exc.message
        try:
            left = (await self.client.list_all(resource, namespace=namespace)).get("items") or []
        except kube.NotFound:
            return 0, collections.Counter(), None
        except kube.ApiError as exc:
            return 0, collections.Counter(), error or exc.message
        finalizers: collections.Counter[str] = collections.Counter()
        for obj in left:
            finalizers.update((obj.get("metadata") or {}).get("finalizers") or [])
        return len(left), finalizers, error

    async def _delete_each(self, resource: kube.Resource, namespace: str) -> None:
        listed = await self.client.list_all(resource, namespace=namespace)
        for obj in listed.get("items") or []:
            meta = obj.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                continue
            with contextlib.suppress(kube.NotFound):
                await self.client.delete(
                    resource,
                    meta["name"],
                    namespace=namespace,
                    propagation_policy="Background",
                    preconditions={"uid": meta["uid"]} if meta.get("uid") else None,
                )

    async def _record(self, namespace: dict[str, Any], result: Sweep) -> dict[str, Any]:
        """Write the deletion conditions to the namespace's status if they changed; return
        the namespace as stored afterwards."""
        status = namespace.get("status") or {}
        now = timefmt.seconds(self.clock())
        conditions = deletion_conditions(status.get("conditions") or [], result, now)
        if conditions is None:
            return namespace
        body = {**namespace, "status": {**status, "conditions": conditions}}
        try:
            return await self.client.replace(NAMESPACES, body, subresource="status")
        except (kube.Conflict, kube.NotFound):
            return namespace  # the next pass writes again


def deletion_conditions(
    current: list[dict[str, Any]], result: Sweep, now: str
) -> list[dict[str, Any]] | None:
    """The namespace's conditions after a sweep (kube's four deletion conditions first, any
    others kept), or None when nothing changed. ``lastTransitionTime`` moves only when a
    condition's status does."""
    old = {c.get("type"): c for c in current if isinstance(c, dict)}
    failures = result.failures()
    conditions = []
    changed = False
    for kind, (ok_reason, ok_message, bad_reason) in _CONDITIONS.items():
        wanted = (
            {"type": kind, "status": "True", "reason": bad_reason, "message": failures[kind]}
            if kind in failures
            else {"type": kind, "status": "False", "reason": ok_reason, "message": ok_message}
        )
        before = old.pop(kind, None) or {}
        if all(before.get(k) == v for k, v in wanted.items()):
            conditions.append(before)
            continue
        changed = True
        since = before.get("lastTransitionTime")
        if before.get("status") != wanted["status"] or not since:
            since = now
        conditions.append({**wanted, "lastTransitionTime": since})
    return [*conditions, *old.values()] if changed else None


def _finalizers(namespace: dict[str, Any] | None) -> list[str]:
    """Every finalizer still on a namespace, of both kinds (spec and metadata)."""
    if not namespace or namespace.get("kind") == "Status":
        return []
    spec = (namespace.get("spec") or {}).get("finalizers") or []
    meta = (namespace.get("metadata") or {}).get("finalizers") or []
    return [*spec, *meta]


async def run(
    client: kube.Client, *, stop: asyncio.Event | None = None, settings: Settings | None = None
) -> None:
    """Run the namespace controller until cancelled (or until ``stop`` is set)."""
    await NamespaceController(client, settings).run(stop)
