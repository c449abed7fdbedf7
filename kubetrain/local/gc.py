"""The garbage collector for ownerReferences, as Kubernetes' controller manager runs it
("Garbage Collection" in the Kubernetes documentation), as an ordinary API client: it works
against the local control plane and against a real cluster's API alike.

It watches every deletable resource (discovery: verbs list, watch and delete; events
excepted), keeps a graph of owner uid → dependent uids, and acts on it:

- **Background** (and dependents of an owner that is simply gone): a dependent none of whose
  owners exists any more is deleted. Owners are checked with a live GET before a dependent is
  judged — an owner the graph has not seen (a "virtual node") is never taken as absent on the
  graph's word, and an owner whose uid does not match the name's current object is absent.
- **Foreground**: an owner with a deletionTimestamp and the ``foregroundDeletion`` finalizer
  has its dependents deleted (in the foreground themselves when they have dependents, so the
  wait is transitive); once no dependent with ``blockOwnerDeletion: true`` remains, the
  finalizer is removed and the API server lets the owner go.
- **Orphan**: an owner with the ``orphan`` finalizer has its uid removed from every dependent's
  ownerReferences, then the finalizer is removed.
- A dependent with a live owner ("solid") stays; references to absent owners and to owners
  waiting for their dependents are removed from it instead.

Level-triggered and idempotent: each step re-reads the object it is about to change, writes
with a resourceVersion or uid precondition, and a lost race (404, 409) just sends the uid
through the queue again. The graph is rebuilt from the watches' lists after a restart; nothing
is kept elsewhere.

Must not: write any field other than ``metadata.ownerReferences`` and ``metadata.finalizers``,
delete anything whose owner cannot be resolved (an unknown kind is retried, not treated as
gone), or start acting before the first list of every resource is in (an orphaning owner
would otherwise miss dependents not yet seen).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubetrain import _aio, kube
from kubetrain.kube import tasks, watch, workqueue

log = logging.getLogger(__name__)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
IGNORED = frozenset({("", "events"), ("events.k8s.io", "events")})  # as kube's GC ignores them
REQUIRED_VERBS = frozenset({"list", "watch", "delete"})
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
ABSENT_CACHE = 4096  # uids known not to exist; uids are never reused, so this never goes stale
WRITE_ATTEMPTS = 5


@dataclass(frozen=True)
class Settings:
    workers: int = 8
    rediscover_every: float = 30.0  # seconds between looks for new or removed resource types
    retry_initial: float = 0.1
    retry_max: float = 30.0
    watch: watch.Settings = field(default_factory=watch.Settings)


@dataclass(frozen=True)
class OwnerRef:
    uid: str
    api_version: str
    kind: str
    name: str
    block: bool

    @classmethod
    def parse(cls, ref: Any) -> OwnerRef | None:
        if not isinstance(ref, dict) or not all(
            isinstance(ref.get(k), str) and ref.get(k)
            for k in ("uid", "apiVersion", "kind", "name")
        ):
            return None
        return cls(
            ref["uid"],
            ref["apiVersion"],
            ref["kind"],
            ref["name"],
            ref.get("blockOwnerDeletion") is True,
        )


@dataclass(frozen=True)
class Node:
    """What the graph knows of one object."""

    uid: str
    resource: kube.Resource
    namespace: str | None
    name: str
    owners: tuple[OwnerRef, ...]
    deleting: bool
    finalizers: frozenset[str]

    @classmethod
    def of(cls, resource: kube.Resource, obj: dict[str, Any]) -> Node | None:
        meta = obj.get("metadata") or {}
        uid, name = meta.get("uid"), meta.get("name")
        if not isinstance(uid, str) or not isinstance(name, str):
            return None
        owners = tuple(r for r in map(OwnerRef.parse, meta.get("ownerReferences") or []) if r)
        return cls(
            uid=uid,
            resource=resource,
            namespace=meta.get("namespace") if resource.namespaced else None,
            name=name,
            owners=owners,
            deleting=bool(meta.get("deletionTimestamp")),
            finalizers=frozenset(f for f in meta.get("finalizers") or [] if isinstance(f, str)),
        )

    @property
    def deleting_dependents(self) -> bool:
        """Deleted in the foreground: waiting for its blocking dependents to go."""
        return self.deleting and FOREGROUND in self.finalizers

    @property
    def orphaning(self) -> bool:
        return self.deleting and ORPHAN in self.finalizers

    def ref_to(self, owner_uid: str) -> OwnerRef | None:
        return next((r for r in self.owners if r.uid == owner_uid), None)

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.resource.group_resource} {where}{self.name}"


class Graph:
    """Owner uid → dependents, from the watches. Each change returns the uids it puts in
    question, for the queue (kube's processGraphChanges)."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.dependents: dict[str, set[str]] = {}
        self.by_resource: dict[kube.Resource, set[str]] = {}

    def dependents_of(self, uid: str) -> list[Node]:
        return [n for n in map(self.nodes.get, self.dependents.get(uid, ())) if n is not None]

    def upsert(self, node: Node) -> set[str]:
        old = self.nodes.get(node.uid)
        self.nodes[node.uid] = node
        self.by_resource.setdefault(node.resource, set()).add(node.uid)
        before = {r.uid for r in old.owners} if old else set()
        after = {r.uid for r in node.owners}
        for uid in before - after:
            if (deps := self.dependents.get(uid)) is not None:
                deps.discard(node.uid)
        for uid in after:
            self.dependents.setdefault(uid, set()).add(node.uid)
        todo = self._waiting_owners(node.owners if old is None else node.owners + old.owners)
        if node.owners and (old is None or old.owners != node.owners) and self._unsettled(node):
            todo.add(node.uid)
        was = (old.deleting, old.finalizers) if old else (False, frozenset())
        if (node.deleting, node.finalizers) != was:
            if node.orphaning:
                todo.add(node.uid)
            if node.deleting_dependents:
                todo.add(node.uid)
                todo.update(self.dependents.get(node.uid, ()))
        return todo

    def remove(self, uid: str) -> set[str]:
        node = self.nodes.pop(uid, None)
        if node is None:
            return set()
        self.by_resource.get(node.resource, set()).discard(uid)
        for ref in node.owners:
            if (deps := self.dependents.get(ref.uid)) is not None:
                deps.discard(uid)
                if not deps:
                    del self.dependents[ref.uid]
        return self._waiting_owners(node.owners) | self.dependents.pop(uid, set())

    def _unsettled(self, node: Node) -> bool:
        """Whether some owner of ``node`` is not in the graph as the reference describes it
        (not seen, or seen under another name or namespace: kube's "virtual node"), or is
        waiting for its dependents; only then does the dependent need a look."""
        for ref in node.owners:
            owner = self.nodes.get(ref.uid)
            if owner is None or owner.deleting_dependents or owner.name != ref.name:
                return True
            if owner.namespace is not None and owner.namespace != node.namespace:
                return True
        return False

    def _waiting_owners(self, refs: Iterable[OwnerRef]) -> set[str]:
        return {r.uid for r in refs if (o := self.nodes.get(r.uid)) and o.deleting_dependents}


def work_queue(settings: Settings) -> workqueue.WorkQueue[str]:
    """The uids to look at: each queued once however often it is added, never processed by
    two workers at once, and a failing uid retried after a per-uid delay doubling from
    ``retry_initial`` to ``retry_max`` (no overall bucket: the collector's own pace)."""
    limiter = workqueue.ItemExponentialFailure[str](settings.retry_initial, settings.retry_max)
    return workqueue.WorkQueue("garbage-collector", rate_limiter=limiter)


class GarbageCollector:
    def __init__(self, client: kube.Client, settings: Settings | None = None) -> None:
        self.client = client
        self.settings = settings or Settings()
        self.graph = Graph()
        self.queue = work_queue(self.settings)
        self._absent: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._monitors: dict[kube.Resource, asyncio.Task[None]] = {}
        self._unsynced: set[kube.Resource] = set()
        self._ready = asyncio.Event()
        self._crd_changed = asyncio.Event()
        self._tasks = tasks.Tasks()

    # -- running ---------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Watch and collect until cancelled, or until ``stop`` is set."""
        log.info("garbage collector starting")
        async with self._tasks.running(stop, "gc"):
            self._tasks.spawn(self._start(), "gc-start")
        log.info("garbage collector stopped")

    async def _start(self) -> None:
        await self._first_discovery()
        self._tasks.spawn(self._rediscover(), "gc-discovery")
        for i in range(self.settings.workers):
            self._tasks.spawn(self._worker(), f"gc-worker-{i}")

    async def _first_discovery(self) -> None:
        """Discover until it works: collecting needs the watches of every resource type."""
        failures = 0
        while True:
            try:
                await self._discover()
                return
            except kube.ApiError as exc:
                delay = min(self.settings.retry_max, self.settings.retry_initial * 2**failures)
                failures += 1
                log.warning("gc: discovery failed: %s; retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)

    async def _discover(self) -> None:
        """Start a watch for each deletable resource type not yet watched, and stop those of
        types no longer served."""
        found = await self.client.discover(refresh=True)
        failed_groups = {kube.split_api_version(gv)[0] for gv in found.failed}
        wanted = {
            r
            for r in found.preferred()
            if r.verbs >= REQUIRED_VERBS and (r.group, r.plural) not in IGNORED
        }
        for resource in wanted - self._monitors.keys():
            log.debug("gc: watching %s", resource.group_resource)
            if not self._ready.is_set():
                self._unsynced.add(resource)
            self._monitors[resource] = self._tasks.spawn(
                self._monitor(resource), f"gc-watch-{resource.group_resource}"
            )
        for resource in [r for r in self._monitors if r not in wanted]:
            if resource.group in failed_groups:
                continue  # not answering now is not the same as gone
            log.info("gc: %s is no longer served; forgetting it", resource.group_resource)
            self._monitors.pop(resource).cancel()
            for uid in list(self.graph.by_resource.get(resource, ())):
                self._enqueue(self.graph.remove(uid))
        self._mark_synced(())

    async def _rediscover(self) -> None:
        """Look again every ``rediscover_every`` seconds, and soon after a CRD changes, so
        objects of a new custom resource are watched (and collected) without a long wait."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with _aio.timeout(self.settings.rediscover_every):
                    await self._crd_changed.wait()
            self._crd_changed.clear()
            for resource, task in list(self._monitors.items()):
                if task.done():  # ended by an error retrying cannot fix; try again
                    del self._monitors[resource]
            try:
                await self._discover()
            except kube.ApiError as exc:
                log.warning("gc: discovery failed: %s", exc)

    async def _monitor(self, resource: kube.Resource) -> None:
        w = self.client.watch(resource, settings=self.settings.watch)
        try:
            async with contextlib.aclosing(aiter(w)) as events:
                async for event in events:
                    self._observe(resource, event)
        except kube.ApiError as exc:
            log.warning("gc: cannot watch %s: %s", resource.group_resource, exc)
        finally:
            self._mark_synced((resource,))

    def _observe(self, resource: kube.Resource, event: kube.Event) -> None:
        if (resource.group, resource.plural) == CRDS and event.type != watch.SYNC:
            self._crd_changed.set()
        if event.type == watch.SYNC:
            items = event.object.get("items") or []
            seen: set[str] = set()
            for obj in items:
                if (node := Node.of(resource, obj)) is not None:
                    seen.add(node.uid)
                    self._enqueue(self.graph.upsert(node))
            for uid in self.graph.by_resource.get(resource, set()) - seen:
                self._enqueue(self.graph.remove(uid))
            self._mark_synced((resource,))
        elif event.type == watch.DELETED:
            uid = (event.object.get("metadata") or {}).get("uid")
            if isinstance(uid, str):
                self._remember_absent(uid)
                self._enqueue(self.graph.remove(uid))
        elif (node := Node.of(resource, event.object)) is not None:
            log.debug("gc: %s %s", event.type, node)
            self._enqueue(self.graph.upsert(node))

    def _mark_synced(self, resources: Iterable[kube.Resource]) -> None:
        self._unsynced.difference_update(resources)
        if not self._unsynced and not self._ready.is_set():
            log.info("gc: graph built from %d resources; collecting", len(self._monitors))
            self._ready.set()

    def _enqueue(self, uids: Iterable[str]) -> None:
        for uid in uids:
            self.queue.add(uid)

    async def _worker(self) -> None:
        await self._ready.wait()
        while True:
            uid = await self.queue.get()
            failed = True
            try:
                await self.process(uid)
                failed = False
            except kube.ApiError as exc:
                node = self.graph.nodes.get(uid)
                log.warning("gc: %s: %s (will retry)", node or uid, exc)
            except Exception:
                log.exception("gc: processing %s failed", self.graph.nodes.get(uid) or uid)
            finally:
                if failed:
                    self.queue.add_rate_limited(uid)
                else:
                    self.queue.forget(uid)
                self.queue.done(uid)

    # -- one uid ---------------------------------------------------------------------------

    async def process(self, uid: str) -> None:
        """Bring one object's ownership in line with its owners' state."""
        node = self.graph.nodes.get(uid)
        if node is None:
            return
        if node.orphaning:
            await self._orphan_dependents(node)
        if node.deleting_dependents:
            await self._delete_dependents(node)
            return
        if node.owners and not node.deleting:
            await self._attempt_to_delete(node)

    async def _orphan_dependents(self, owner: Node) -> None:
        for dependent in self.graph.dependents_of(owner.uid):
            log.info("gc: orphaning %s from %s", dependent, owner)
            await self._edit_metadata(dependent, lambda meta: _without_owners(meta, {owner.uid}))
        await self._remove_finalizer(owner, ORPHAN)

    async def _delete_dependents(self, owner: Node) -> None:
        blocking = [
            d for d in self.graph.dependents_of(owner.uid) if (r := d.ref_to(owner.uid)) and r.block
        ]
        if not blocking:
            await self._remove_finalizer(owner, FOREGROUND)
            return
        for dependent in blocking:
            if not dependent.deleting_dependents:
                self.queue.add(dependent.uid)

    async def _attempt_to_delete(self, node: Node) -> None:
        latest = await self._get(node)
        if latest is None:
            self._remember_absent(node.uid)
            self._enqueue(self.graph.remove(node.uid))
            return
        current = Node.of(node.resource, latest)
        if current is None or not current.owners or current.deleting:
            return
        solid: list[OwnerRef] = []
        dangling: list[OwnerRef] = []
        waiting: list[OwnerRef] = []
        for ref in current.owners:
            owner = await self._owner(ref, current)
            if owner is _ABSENT:
                dangling.append(ref)
            elif owner is _UNRESOLVED:
                solid.append(ref)  # never delete on a reference we cannot check
            elif _is_deleting_dependents(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        if solid:
            if dangling or waiting:
                drop = {r.uid for r in dangling + waiting}
                log.info(
                    "gc: removing references to %d absent or deleting owners from %s",
                    len(drop),
                    current,
                )
                await self._edit_metadata(current, lambda meta: _without_owners(meta, drop))
            return
        if waiting and self.graph.dependents.get(current.uid):
            if any(d.deleting_dependents for d in self.graph.dependents_of(current.uid)):
                # a dependent waits for this object while its owner waits for it: break the cycle
                await self._edit_metadata(current, _unblocked)
            await self._delete(current, "Foreground", "its owner deletes its dependents")
            return
        policy: kube.PropagationPolicy
        if ORPHAN in current.finalizers:
            policy = "Orphan"
        elif FOREGROUND in current.finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        why = "its owner deletes its dependents" if waiting else "none of its owners exists"
        await self._delete(current, policy, why)

    async def _owner(self, ref: OwnerRef, dependent: Node) -> Any:
        """The owner's live object, _ABSENT, or _UNRESOLVED (unknown kind, invalid scope)."""
        if ref.uid in self._absent:
            return _ABSENT
        found = await self.client.discover()
        resource = found.find_kind(ref.api_version, ref.kind)
        if resource is None:
            resource = (await self.client.discover(refresh=True)).find_kind(
                ref.api_version, ref.kind
            )
        if resource is None:  # retried: during an upgrade a kind may be briefly unserved
            raise kube.NotFound(f"owner kind {ref.kind} in {ref.api_version} is not served")
        if resource.namespaced and dependent.namespace is None:
            log.warning(
                "gc: %s: a cluster-scoped object cannot have a namespaced owner (%s %s)",
                dependent,
                ref.kind,
                ref.name,
            )
            return _UNRESOLVED
        try:
            owner = await self.client.get(
                resource, ref.name, namespace=dependent.namespace if resource.namespaced else None
            )
        except kube.NotFound:
            self._remember_absent(ref.uid)
            return _ABSENT
        if (owner.get("metadata") or {}).get("uid") != ref.uid:
            self._remember_absent(ref.uid)
            return _ABSENT
        return owner

    # -- writes ----------------------------------------------------------------------------

    async def _get(self, node: Node) -> dict[str, Any] | None:
        """The object as stored now, or None if it is gone (or replaced under its name)."""
        try:
            obj = await self.client.get(node.resource, node.name, namespace=node.namespace)
        except kube.NotFound:
            return None
        return obj if (obj.get("metadata") or {}).get("uid") == node.uid else None

    async def _edit_metadata(
        self, node: Node, change: Callable[[dict[str, Any]], dict[str, Any] | None]
    ) -> None:
        """Apply ``change`` (live metadata → fields to set, or None for nothing to do) with a
        JSON merge patch carrying the resourceVersion read, so a concurrent write is never
        overwritten; on a conflict, read again."""
        for _ in range(WRITE_ATTEMPTS):
            latest = await self._get(node)
            if latest is None:
                return
            meta = latest.get("metadata") or {}
            fields = change(meta)
            if fields is None:
                return
            patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"), **fields}}
            try:
                await self.client.patch(node.resource, node.name, patch, namespace=node.namespace)
                return
            except kube.NotFound:
                return
            except kube.Conflict:
                continue
        raise kube.Conflict(f"{node}: still changing after {WRITE_ATTEMPTS} attempts")

    async def _remove_finalizer(self, node: Node, finalizer: str) -> None:
        def without(meta: dict[str, Any]) -> dict[str, Any] | None:
            finalizers = meta.get("finalizers") or []
            if finalizer not in finalizers:
                return None
            rest = [f for f in finalizers if f != finalizer]
            return {"finalizers": rest or None}

        log.info("gc: removing finalizer %s from %s", finalizer, node)
        await self._edit_metadata(node, without)

    async def _delete(self, node: Node, policy: kube.PropagationPolicy, why: str) -> None:
        log.info("gc: deleting %s (propagation %s): %s", node, policy, why)
        # NotFound: gone already; Conflict: the name now holds another object
        with contextlib.suppress(kube.NotFound, kube.Conflict):
            await self.client.delete(
                node.resource,
                node.name,
                namespace=node.namespace,
                propagation_policy=policy,
                preconditions={"uid": node.uid},
            )

    def _remember_absent(self, uid: str) -> None:
        self._absent[uid] = None
        self._absent.move_to_end(uid)
        while len(self._absent) > ABSENT_CACHE:
            self._absent.popitem(last=False)


_ABSENT = object()
_UNRESOLVED = object()


def _is_deleting_dependents(obj: dict[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and FOREGROUND in (meta.get("finalizers") or [])


def _without_owners(meta: dict[str, Any], uids: set[str]) -> dict[str, Any] | None:
    refs = meta.get("ownerReferences") or []
    kept = [r for r in refs if not (isinstance(r, dict) and r.get("uid") in uids)]
    if len(kept) == len(refs):
        return None
    return {"ownerReferences": kept or None}


def _unblocked(meta: dict[str, Any]) -> dict[str, Any] | None:
    """Every blocking reference made non-blocking (kube's unblockOwnerReferences)."""
    refs = meta.get("ownerReferences") or []
    if not any(_blocking(r) for r in refs):
        return None
    return {
        "ownerReferences": [{**r, "blockOwnerDeletion": False} if _blocking(r) else r for r in refs]
    }


def _blocking(ref: Any) -> bool:
    return isinstance(ref, dict) and ref.get("blockOwnerDeletion") is True


async def run(
    client: kube.Client, *, stop: asyncio.Event | None = None, settings: Settings | None = None
) -> None:
    """Run the garbage collector until cancelled (or until ``stop`` is set)."""
    await GarbageCollector(client, settings).run(stop)
