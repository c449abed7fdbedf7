"""The generic store: create, get, list, update, patch, delete and watch for any resource,
with kube-apiserver's semantics, written once (kube's ``registry/generic/registry/store.go``).

Every write takes one path, as kube's ``GuaranteedUpdate``: read the stored object, decide
what to write (a PUT body, a patch, an apply, a delete's deletionTimestamp or the delete
itself), then compare-and-swap on the resourceVersion that was read (:meth:`Registry._write`).
A lost race is retried when the client did not name a resourceVersion, and is a 409 Conflict
when it did; what the store refuses is answered as kube does (:func:`_storage_error`).

Around it, each in its own module: what a request asks for (:mod:`queryoptions`), request bodies
and patch documents (:mod:`bodies`), the steps before a create or update
(:mod:`prepare`: the server's metadata, the write's strategy, validation, managedFields),
admission (:mod:`admission`), pages of a list (:mod:`pagination`), and the answers
(:mod:`results`). What differs per resource (pods, namespaces, CRDs, ...) is a strategy: the
base one and the simple kinds in :mod:`strategies`, the others in their own modules
(:mod:`namespaces`, :mod:`pods`, :mod:`quotas`, :mod:`services`, :mod:`claims`, :mod:`crds`,
:mod:`rbac`).

At about 800 lines it is one concept, kept whole: the generic store's verbs around its one
write path; what is not that already lives in the modules named above.

What it must not do: parse HTTP (the server hands it decoded options) or touch SQLite.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from kubetrain import patches, timefmt
from kubetrain.local.apiserver import (
    admission,
    bodies,
    claims,
    crds,
    errors,
    namespaces,
    pagination,
    pods,
    prepare,
    queryoptions,
    quotas,
    rbac,
    resources,
    results,
    selectors,
    services,
    store,
    watch,
)
from kubetrain.local.apiserver import apply as ssa
from kubetrain.local.apiserver import strategies as strat

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]

CONFLICT_RETRIES = 16
GENERATE_NAME_RETRIES = 8
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # kube's utilrand alphabet: no vowels


def builtin_strategies() -> dict[str, strat.Strategy]:
    """The strategies of the built-in resources, by store key (others get the base one)."""
    return {
        "namespaces": namespaces.NamespaceStrategy(),
        "serviceaccounts": namespaces.ServiceAccountStrategy(),
        "pods": pods.PodStrategy(),
        "services": services.ServiceStrategy(),
        "persistentvolumeclaims": claims.PersistentVolumeClaimStrategy(),
        "persistentvolumes": claims.PersistentVolumeStrategy(),
        "configmaps": strat.ConfigMapStrategy(),
        "secrets": strat.SecretStrategy(),
        "events": strat.EventStrategy(),
        "nodes": strat.NodeStrategy(),
        "resourcequotas": quotas.ResourceQuotaStrategy(),
        "limitranges": strat.LimitRangeStrategy(),
        "priorityclasses.scheduling.k8s.io": strat.PriorityClassStrategy(),
        "customresourcedefinitions.apiextensions.k8s.io": crds.CRDStrategy(),
        **rbac.STRATEGIES,
    }


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def timestamp(when: datetime) -> str:
    """RFC 3339 with second precision, as metav1.Time serializes."""
    return timefmt.seconds(when)


@dataclass(frozen=True)
class _Step:
    """What one try of a write decided, from the object it read: an ``answer`` with nothing
    to write (a no-op, a dry run), or ``obj`` to store (``delete``: remove the object), and
    how to answer once that is done."""

    answer: results.Result | None = None
    obj: dict[str, Any] | None = None
    delete: bool = False
    done: Callable[[store.Item], results.Result] | None = None


class Registry:
    """Generic REST storage over :mod:`store` for every resource in the catalog."""

    def __init__(
        self,
        db: store.Store,
        catalog: resources.Catalog,
        hub: watch.Hub,
        *,
        clock: Clock = utc_now,
        settings: strat.Settings | None = None,
    ) -> None:
        self.store = db
        self.catalog = catalog
        self.hub = hub
        self.clock = clock
        self.settings = settings or strat.Settings()
        self.strategies = builtin_strategies()
        self._create_locks = admission.CreateLocks()

    # -- helpers -------------------------------------------------------------------------

    def strategy(self, r: resources.Resource) -> strat.Strategy:
        if r.custom:
            return crds.CustomResourceStrategy(r)
        return self.strategies.get(r.key) or strat.DEFAULT

    def key(self, r: resources.Resource, namespace: str | None, name: str) -> store.Key:
        return store.Key(r.key, namespace or "" if r.namespaced else "", name)

    def now(self) -> str:
        return timestamp(self.clock())

    def system_options(self, manager: str) -> queryoptions.Options:
        """Options for a write the control plane makes itself (a controller's, not a user's)."""
        return queryoptions.Options(field_manager=manager)

    def success(self, code: int) -> results.Result:
        return results.success(code)

    def present(self, r: resources.Resource, item: store.Item) -> results.Result:
        """The stored object as the served version ``r`` shows it."""
        if item.decoded is None and not r.custom:  # kept encoded: served as stored?
            stored = self.storage_row(r)
            if (stored.api_version, stored.kind) == (r.api_version, r.kind):
                return results.Result(200, None, item.raw)
        obj = item.obj
        if obj.get("apiVersion") == r.api_version and obj.get("kind") == r.kind:
            return results.Result(200, obj, item.raw)
        return results.Result(200, self.convert(r, obj))

    def _served(self, r: resources.Resource, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` as version ``r`` serves it: itself when stored in that version (then it
        is the store's and must not be edited), else a converted copy."""
        if obj.get("apiVersion") == r.api_version and obj.get("kind") == r.kind:
            return obj
        return self.convert(r, obj)

    def convert(self, r: resources.Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """``obj`` in the shape of served version ``r`` (events.k8s.io, other CRD versions)."""
        converted = strat.convert_out(r, obj)
        converted["apiVersion"] = r.api_version
        converted["kind"] = r.kind
        return converted

    def _storage_form(self, r: resources.Resource, obj: dict[str, Any]) -> dict[str, Any]:
        storage = self.storage_row(r)
        obj = strat.convert_in(r, obj)
        obj["apiVersion"] = storage.api_version
        obj["kind"] = storage.kind
        return obj

    def storage_row(self, r: resources.Resource) -> resources.Resource:
        if r.custom:
            crd = r.extra.get("crd", {})
            for version in crd.get("spec", {}).get("versions", []):
                if version.get("storage"):
                    found = self.catalog.find(r.group, version["name"], r.plural)
                    if found is not None:
                        return found
            return r
        return self.catalog.storage_row(r.key) or r

    def get_item(self, r: resources.Resource, namespace: str | None, name: str) -> store.Item:
        item = self.store.get(self.key(r, namespace, name))
        if item is None:
            raise errors.not_found(r.group, r.plural, name)
        return item

    # -- reads ---------------------------------------------------------------------------

    async def get(
        self, r: resources.Resource, namespace: str | None, name: str, subresource: str = ""
    ) -> results.Result:
        item = self.get_item(r, namespace, name)
        if subresource == "scale":
            return results.Result(200, crds.scale_of(r, item.obj))
        return self.present(r, item)

    def _selectors(
        self, r: resources.Resource, label_text: str, field_text: str
    ) -> watch.Predicate | None:
        try:
            labels = selectors.parse_label_selector(label_text) if label_text else None
            fields = selectors.parse_field_selector(field_text) if field_text else None
        except selectors.SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc
        if fields is not None:
            strategy = self.strategy(r)
            supported = strategy.field_labels(r)
            for name in sorted(fields.fields):
                if name not in supported:
                    raise errors.bad_request(strategy.unsupported_field_label(r, name))
        if labels is None and fields is None:
            return None

        def predicate(obj: Mapping[str, Any]) -> bool:
            if labels is not None:
                meta = obj.get("metadata") or {}
                if not labels.matches(meta.get("labels") or {}):
                    return False
            return fields is None or fields.matches(obj)

        return predicate

    async def list(
        self, r: resources.Resource, namespace: str | None, opts: queryoptions.ListOptions
    ) -> results.Result:
        predicate = self._selectors(r, opts.label_selector, opts.field_selector)
        ns = namespace if r.namespaced else None
        start_after: tuple[str, str] | None = None
        if opts.continue_token:
            snapshot_rv, start_after = pagination.decode(opts.continue_token)
            try:
                items = self.store.snapshot(r.key, ns, snapshot_rv)
            except store.TooOld as exc:
                raise errors.gone(errors.CONTINUE_EXPIRED) from exc
            list_rv = snapshot_rv
        elif opts.resource_version_match == "Exact" and opts.resource_version:
            list_rv = queryoptions.parse_rv(opts.resource_version)
            try:
                items = self.store.snapshot(r.key, ns, list_rv)
            except store.TooOld as exc:
                raise errors.too_old(list_rv, exc.oldest) from exc
        else:
            if opts.resource_version_match and opts.resource_version_match not in (
                "NotOlderThan",
                "Exact",
            ):
                raise errors.bad_request(
                    f'resourceVersionMatch: Unsupported value: "{opts.resource_version_match}": '
                    'supported values: "Exact", "NotOlderThan"'
                )
            if opts.resource_version:
                queryoptions.parse_rv(opts.resource_version)
            list_rv = self.store.resource_version
            items = self.store.list(r.key, ns)
        items, meta = pagination.page(
            items,
            list_rv,
            start_after=start_after,
            predicate=predicate,
            limit=max(opts.limit or 0, 0),
        )
        head = {"kind": r.list_kind, "apiVersion": r.api_version, "metadata": meta}
        parts = [self.present(r, item).body() for item in items]
        return results.Result(200, None, results.list_body(head, parts))

    def watch(
        self, r: resources.Resource, namespace: str | None, opts: queryoptions.WatchOptions
    ) -> watch.Watcher:
        predicate = self._selectors(r, opts.label_selector, opts.field_selector)
        ns = namespace if r.namespaced else None
        rv_text = opts.resource_version
        initial_end = bool(opts.send_initial_events and opts.allow_bookmarks)
        since = (
            None
            if opts.send_initial_events or rv_text in ("", "0")
            else queryoptions.parse_rv(rv_text)
        )
        try:
            return self.hub.open(
                r.key, ns, predicate, since=since, initial_end_bookmark=initial_end
            )
        except store.TooOld as exc:
            raise errors.too_old(exc.requested, exc.oldest) from exc

    # -- create --------------------------------------------------------------------------

    async def create(
        self,
        r: resources.Resource,
        namespace: str | None,
        body: Any,
        opts: queryoptions.Options,
    ) -> results.Result:
        obj = bodies.decode_object(self.catalog, r, body, namespace)
        meta = obj["metadata"]
        if r.namespaced and not meta.get("namespace"):
            raise errors.bad_request("the server could not find the requested resource")
        strategy = self.strategy(r)
        name = meta.get("name") or ""
        if r.namespaced:
            admission.admit_namespace(self.store, r, meta["namespace"], name)
        # Only a generated name can collide and be retried; each retry needs a fresh copy
        # because a try edits the object in place.
        tries = 1 if name or not meta.get("generateName") else GENERATE_NAME_RETRIES
        for attempt in range(tries):
            candidate = copy.deepcopy(obj) if attempt < tries - 1 else obj
            result = await self._create_once(r, strategy, candidate, opts)
            if result is not None:
                return result
        raise errors.already_exists(r.group, r.plural, meta.get("name", ""))

    async def _create_once(
        self,
        r: resources.Resource,
        strategy: strat.Strategy,
        obj: dict[str, Any],
        opts: queryoptions.Options,
    ) -> results.Result | None:
        """One try at creating; None when a generated name collided (try another)."""
        meta = obj["metadata"]
        generated = False
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + _random_suffix()
            generated = True
        obj = self._storage_form(r, prepare.before_create(self, r, strategy, obj, opts))
        meta = obj["metadata"]
        key = self.key(r, meta.get("namespace"), meta["name"])
        # Admission that counts what exists (quota) and the write it admits are one step,
        # so two creates cannot both fit the last slot of a quota.
        async with self._create_locks.for_create(strategy, self, meta.get("namespace") or ""):
            strategy.admit_create(r, obj, self)
            if opts.dry_run:
                if self.store.get(key) is not None:
                    if generated:
                        return None
                    raise errors.already_exists(r.group, r.plural, meta["name"])
                return results.Result(201, self.convert(r, obj))
            try:
                item = await self.store.create(key, obj)
            except store.AlreadyExists as exc:
                if generated:
                    return None
                raise errors.already_exists(r.group, r.plural, meta["name"]) from exc
            except store.StoreError as exc:
                raise _storage_error(r, exc) from exc
        await strategy.after_create(r, item, self)
        result = self.present(r, item)
        result.code = 201
        return result

    # -- update and patch --------------------------------------------------------------

    async def update(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        body: Any,
        opts: queryoptions.Options,
        subresource: str = "",
    ) -> results.Result:
        if subresource == "scale":
            return await self._update_scale(r, namespace, name, lambda _: body, opts)
        obj = bodies.decode_object(self.catalog, r, body, namespace)
        given = obj["metadata"].get("name")
        if not given:
            raise errors.bad_request(
                f"the name of the object ({name} based on URL) was undeterminable: "
                "name must be provided"
            )
        if given != name:
            raise errors.bad_request(
                f"the name of the object ({given}) does not match the name on the URL ({name})"
            )
        rv_text = obj["metadata"].get("resourceVersion") or ""
        expect = queryoptions.parse_rv(rv_text) if rv_text else None
        strategy = self.strategy(r)
        if expect is None and not strategy.allow_unconditional_update(r):
            raise errors.invalid(
                r.group,
                r.kind,
                name,
                [
                    errors.field_error(
                        "Invalid value",
                        "metadata.resourceVersion",
                        "must be specified for an update",
                        0,
                    )
                ],
            )

        def mutate(old: dict[str, Any]) -> dict[str, Any]:
            # A conditional update is tried once, so it may have the body itself; an
            # unconditional one is tried again on a conflict and needs it as it was sent.
            return obj if expect is not None else copy.deepcopy(obj)

        return await self._guaranteed_update(
            r, namespace, name, mutate, opts, subresource, expect, operation="Update"
        )

    async def patch(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        patch_type: str,
        body: bytes,
        opts: queryoptions.Options,
        subresource: str = "",
    ) -> results.Result:
        if patch_type not in bodies.PATCH_TYPES:
            raise errors.unsupported_media_type(patch_type, bodies.PATCH_TYPES)
        if patch_type == bodies.STRATEGIC_PATCH and not patches.supports_strategic(r.kind_key):
            raise errors.unsupported_media_type(
                patch_type, [t for t in bodies.PATCH_TYPES if t != bodies.STRATEGIC_PATCH]
            )
        document = bodies.decode_patch(patch_type, body)
        if subresource == "scale":
            return await self._update_scale(
                r,
                namespace,
                name,
                lambda scale: bodies.patched(r, scale, patch_type, document),
                opts,
            )
        if patch_type == bodies.APPLY_PATCH:
            return await self._apply(r, namespace, name, document, opts, subresource)
        expect = bodies.rv_in_patch(patch_type, document)

        def mutate(old: dict[str, Any]) -> dict[str, Any]:
            return bodies.patched(r, old, patch_type, document)  # every patch works on a copy

        return await self._guaranteed_update(
            r, namespace, name, mutate, opts, subresource, expect, operation="Update"
        )

    async def _apply(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        config: Any,
        opts: queryoptions.Options,
        subresource: str,
    ) -> results.Result:
        if not opts.field_manager:
            raise errors.invalid(
                "meta.k8s.io", "PatchOptions", "", [bodies.apply_needs_a_field_manager()]
            )
        config = bodies.decode_object(self.catalog, r, config, namespace)
        given = config["metadata"].get("name")
        if given and given != name:
            raise errors.bad_request(
                f"the name of the object ({given}) does not match the name on the URL ({name})"
            )
        config["metadata"]["name"] = name
        expect = None
        rv_text = (config.get("metadata") or {}).get("resourceVersion")
        if rv_text:
            expect = queryoptions.parse_rv(str(rv_text))
        config = self.strategy(r).for_subresource(subresource).reset_fields(r, config)
        existing = self.store.get(self.key(r, namespace, name))
        if existing is None and subresource:
            raise errors.not_found(r.group, r.plural, name)
        if existing is None:
            try:
                created = ssa.apply(
                    None,
                    config,
                    opts.field_manager,
                    force=opts.force,
                    now=self.now(),
                    list_keys=self.strategy(r).list_keys(r),
                )
            except ssa.ApplyConflict as exc:
                raise _apply_conflict(exc) from exc
            created.setdefault("apiVersion", r.api_version)
            created.setdefault("kind", r.kind)
            return await self._create_applied(r, namespace, created, opts)

        def mutate(old: dict[str, Any]) -> dict[str, Any]:
            try:
                return ssa.apply(  # reads both, returns an object of its own
                    old,
                    config,
                    opts.field_manager,
                    force=opts.force,
                    now=self.now(),
                    list_keys=self.strategy(r).list_keys(r),
                    subresource=subresource or None,
                )
            except ssa.ApplyConflict as exc:
                raise _apply_conflict(exc) from exc

        return await self._guaranteed_update(
            r, namespace, name, mutate, opts, subresource, expect, operation="Apply"
        )

    async def _create_applied(
        self,
        r: resources.Resource,
        namespace: str | None,
        obj: dict[str, Any],
        opts: queryoptions.Options,
    ) -> results.Result:
        """Create from an apply: like POST, but managedFields come from the apply."""
        obj = bodies.object_of(self.catalog, r, obj, namespace)  # checked as it came
        meta = obj["metadata"]
        if r.namespaced:
            admission.admit_namespace(
                self.store, r, meta.get("namespace") or "", meta.get("name") or ""
            )
        strategy = self.strategy(r)
        applied = dataclasses.replace(opts, applied=True)
        result = await self._create_once(r, strategy, obj, applied)
        if result is None:
            raise errors.already_exists(r.group, r.plural, meta.get("name", ""))
        return result

    async def _update_scale(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        change: Callable[[dict[str, Any]], Any],
        opts: queryoptions.Options,
    ) -> results.Result:
        if r.subresource("scale") is None:
            raise errors.not_found(r.group, r.plural, name)

        def mutate(old: dict[str, Any]) -> dict[str, Any]:
            scale = crds.scale_of(r, old)
            new_scale = change(copy.deepcopy(scale))
            if not isinstance(new_scale, dict):
                raise errors.bad_request(
                    "the object provided is unrecognized (must be of type Scale)"
                )
            rv_text = (new_scale.get("metadata") or {}).get("resourceVersion") or ""
            if rv_text and rv_text != scale["metadata"].get("resourceVersion"):
                raise errors.conflict(r.group, r.plural, name)
            replicas = (new_scale.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise errors.invalid(
                    "autoscaling",
                    "Scale",
                    name,
                    [
                        errors.field_error(
                            "Invalid value",
                            "spec.replicas",
                            "must be greater than or equal to 0",
                            replicas,
                        )
                    ],
                )
            return crds.with_replicas(r, copy.deepcopy(old), replicas)

        result = await self._guaranteed_update(
            r, namespace, name, mutate, opts, "scale", None, operation="Update"
        )
        return results.Result(result.code, crds.scale_of(r, result.obj))

    async def _guaranteed_update(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any]],
        opts: queryoptions.Options,
        subresource: str,
        expect: int | None,
        *,
        operation: str,
    ) -> results.Result:
        """kube's GuaranteedUpdate: ``mutate`` turns the stored object into the one to write,
        without editing what it is given, and is called again when another write got in
        first; with ``expect`` (a resourceVersion precondition) that is a Conflict instead,
        so it is called at most once."""
        main = self.strategy(r)
        write = main.for_subresource(subresource)

        def step(current: store.Item) -> _Step:
            old = self._served(r, current.obj)  # read-only: shared with the store
            new = prepare.before_update(self, r, write, mutate(old), old, opts, operation)
            if prepare.unchanged(new, old):
                return _Step(answer=self.present(r, current))
            stored = self._storage_form(r, new)
            if opts.dry_run:
                return _Step(answer=results.Result(200, self.convert(r, stored)))
            if _finalized(r, main, stored, old):
                return _Step(
                    obj=stored,
                    delete=True,
                    done=lambda _: results.Result(200, self.convert(r, stored)),
                )
            return _Step(obj=stored)

        return await self._write(r, namespace, name, step, expect)

    async def _write(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        step: Callable[[store.Item], _Step],
        expect: int | None = None,
    ) -> results.Result:
        """The one write path: read, decide (``step``), compare-and-swap on the version read.

        A lost race reads again and decides again, unless the client named the version
        (``expect``): then it is a 409, as is a race lost :data:`CONFLICT_RETRIES` times."""
        strategy = self.strategy(r)
        key = self.key(r, namespace, name)
        for _ in range(CONFLICT_RETRIES):
            current = self.store.get(key)
            if current is None:
                raise errors.not_found(r.group, r.plural, name)
            if expect is not None and expect != current.rv:
                raise errors.conflict(r.group, r.plural, name)
            decided = step(current)
            if decided.answer is not None:
                return decided.answer
            try:
                if decided.delete:
                    item = await self.store.delete(key, current.rv)
                else:
                    item = await self.store.update(key, decided.obj, current.rv)
            except store.Conflict as exc:
                if expect is not None:
                    raise errors.conflict(r.group, r.plural, name) from exc
                continue
            except store.NotFound as exc:
                raise errors.not_found(r.group, r.plural, name) from exc
            except store.StoreError as exc:
                raise _storage_error(r, exc) from exc
            if decided.delete:
                await strategy.after_delete(r, item, self)
            else:
                await strategy.after_update(r, item, current, self)
            return decided.done(item) if decided.done else self.present(r, item)
        raise errors.conflict(r.group, r.plural, name)

    # -- delete --------------------------------------------------------------------------

    async def delete(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        delete_options: Mapping[str, Any],
        opts: queryoptions.Options,
    ) -> results.Result:
        strategy = self.strategy(r)

        def step(current: store.Item) -> _Step:
            queryoptions.check_preconditions(r.group, r.plural, name, current, delete_options)
            old = current.obj
            new = copy.deepcopy(old)
            meta = new["metadata"]
            policy = queryoptions.propagation(delete_options)
            grace = strategy.grace_period(r, new, delete_options)
            strategy.before_delete(r, new, self)
            finalizers = queryoptions.deletion_finalizers(policy, meta.get("finalizers") or [])
            pending = bool(finalizers) or grace > 0 or strategy.finalizes(r, new)
            if not pending:
                if opts.dry_run:
                    return _Step(answer=self._deleted_result(r, strategy, current))
                return _Step(delete=True, done=lambda item: self._deleted_result(r, strategy, item))
            if finalizers:
                meta["finalizers"] = finalizers
            else:
                meta.pop("finalizers", None)
            if "deletionTimestamp" not in meta or grace < int(
                meta.get("deletionGracePeriodSeconds") or 0
            ):
                meta["deletionTimestamp"] = (
                    timestamp(self.clock() + timedelta(seconds=grace)) if grace > 0 else self.now()
                )
                meta["deletionGracePeriodSeconds"] = grace
            strategy.mark_deleting(r, new, self)
            if new == old:
                return _Step(answer=self.present(r, current))
            if opts.dry_run:
                return _Step(answer=results.Result(200, self.convert(r, new)))
            return _Step(obj=new)

        return await self._write(r, namespace, name, step)

    def _deleted_result(
        self, r: resources.Resource, strategy: strat.Strategy, item: store.Item
    ) -> results.Result:
        if strategy.return_deleted(r):
            return self.present(r, item)
        meta = item.obj.get("metadata") or {}
        return results.Result(
            200, errors.success(meta.get("name", ""), r.group, r.plural, meta.get("uid"))
        )

    async def delete_collection(
        self,
        r: resources.Resource,
        namespace: str | None,
        list_opts: queryoptions.ListOptions,
        delete_options: Mapping[str, Any],
        opts: queryoptions.Options,
    ) -> results.Result:
        """Delete every matching object, one at a time; answer the list of what was deleted
        as it was listed before (kube's DeleteCollection answers its list).

        The objects are looked at one by one and the answer is spliced from the encodings the
        store holds, which its event log keeps for a while anyway: deleting a namespace whose
        jobs left thousands of Events used to hold all of them decoded twice over (the list,
        then the answer), then a second encoding of each. ``obj`` of the result is the list
        without its items; ``raw`` has them."""
        predicate = self._selectors(r, list_opts.label_selector, list_opts.field_selector)
        ns = namespace if r.namespaced else None
        keys = [
            item.key
            for item in self.store.list(r.key, ns)
            if predicate is None or predicate(item.obj)
        ]
        parts = []
        for key in keys:
            before = self.store.get(key)
            if before is None:
                continue
            try:
                await self.delete(r, key.namespace or namespace, key.name, delete_options, opts)
            except errors.ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            parts.append(self.present(r, before).body())
        head = {
            "kind": r.list_kind,
            "apiVersion": r.api_version,
            "metadata": {"resourceVersion": str(self.store.resource_version)},
        }
        return results.Result(200, {**head, "items": []}, results.list_body(head, parts))

    # -- subresources that create ----------------------------------------------------

    async def create_subresource(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        subresource: str,
        body: Any,
        opts: queryoptions.Options,
    ) -> results.Result:
        handler: Callable[..., Awaitable[results.Result]] | None = self.strategy(
            r
        ).subresource_create(subresource)
        if handler is None:
            raise errors.method_not_allowed(r.group, f"{r.plural}/{subresource}", "create")
        return await handler(self, r, namespace, name, body, opts)


def _finalized(
    r: resources.Resource, strategy: strat.Strategy, new: Mapping[str, Any], old: Mapping[str, Any]
) -> bool:
    """kube's ShouldDeleteDuringUpdate: an update leaves a deleting object (deletionTimestamp
    set, no grace period left) with no finalizers, of metadata or of its strategy's own (a
    namespace's ``spec.finalizers``), so the update deletes it."""
    new_meta = new.get("metadata") or {}
    old_meta = old.get("metadata") or {}
    if new_meta.get("finalizers") or strategy.finalizes(r, new):
        return False
    if not old_meta.get("deletionTimestamp"):
        return False
    return not int(old_meta.get("deletionGracePeriodSeconds") or 0)


def _random_suffix(n: int = 5) -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(n))


def _storage_error(r: resources.Resource, exc: store.StoreError) -> errors.ApiError:
    """What the store refused, as kube answers it: 413 for an object over the size limit,
    503 for a store that cannot write now (a client tries again later), 500 otherwise."""
    if isinstance(exc, store.TooLarge):
        return errors.object_too_large(r.group, r.plural, exc.key.name, exc.size, exc.limit)
    if isinstance(exc, store.Unavailable):
        return errors.unavailable(str(exc))
    return errors.internal(str(exc))


def _apply_conflict(exc: ssa.ApplyConflict) -> errors.ApiError:
    details = {"causes": exc.causes} if exc.causes else None
    return errors.ApiError(409, "Conflict", exc.message, details)
