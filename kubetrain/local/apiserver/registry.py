"""The generic registry: create, get, list, update, patch, delete and watch for any resource,
with kube-apiserver's semantics, written once.

Every write takes one path, as kube's ``GuaranteedUpdate``: read the stored object, compute the
new one (a PUT body, a patch, an apply), run the resource's strategy (prepare, validate),
admission, then compare-and-swap on the resourceVersion that was read. A lost race is retried
when the client did not name a resourceVersion, and is a 409 Conflict when it did.

What is common to every resource lives here: names and generateName, uid and
creationTimestamp, generation, status-subresource isolation, deletionTimestamp and
finalizers, propagation policies, dryRun, selectors, pagination, field validation, managed
fields, kubetrain admission. What differs per resource (pods, namespaces, CRDs, ...) is a
strategy: the base one and the simple kinds in :mod:`strategies`, the others in their own
modules (:mod:`namespaces`, :mod:`pods`, :mod:`quotas`, :mod:`services`, :mod:`claims`,
:mod:`crds`, :mod:`rbac`).

What it must not do: parse HTTP (the server hands it decoded options) or touch SQLite.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bisect
import contextlib
import copy
import dataclasses
import itertools
import json
import logging
import math
import secrets
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from kubetrain import api
from kubetrain.kube import status as kube_status
from kubetrain.local.apiserver import apply as ssa
from kubetrain.local.apiserver import (
    builtin_schemas,
    claims,
    crds,
    errors,
    namespaces,
    patches,
    pods,
    quotas,
    rbac,
    resources,
    schema,
    selectors,
    services,
    store,
    watch,
)
from kubetrain.local.apiserver import strategies as strat

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]

KUBETRAIN_GROUPS = ("kubeflow.org", "trainer.kubeflow.org")
CONFLICT_RETRIES = 16
GENERATE_NAME_RETRIES = 8
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # kube's utilrand alphabet: no vowels

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
PATCH_NOT_APPLIED = "the server rejected our request due to an error in our request"

# How deeply a request body may nest objects and arrays. kube-apiserver's decoders stop at
# 10000; here everything that reads a body recurses (server-side apply, field sets, CRD schema
# defaulting and validation, patches, admission models, deepcopy, encoding), some with a few
# Python frames per level on top of the server's own, against Python's limit of 1000 frames.
# 100 levels keep all of them well inside it and are far beyond real objects: the deepest
# kubetrain serves, its CRDs' schemas, nest about 35 levels. (The CLI's limit is the same.)
MAX_DEPTH = 100
# managedFields describe the object's fields this much deeper (metadata.managedFields[i].fieldsV1),
# so an object the server stored may nest this much deeper than the body it came from.
MANAGED_FIELDS_NESTING = 4
# More objects and arrays than a body of the server's size limit can spell out: only YAML
# aliases (one object referred to many times) reach it, and copying or encoding such a body
# would expand every reference.
MAX_CONTAINERS = 2_000_000


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
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Options:
    """What a write request asked for besides its body."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = ""  # Strict | Warn | Ignore; "" is kube's default, Warn
    force: bool = False
    user_agent: str = ""
    warnings: list[str] = field(default_factory=list)
    applied: bool = False  # the object came from an apply, which recorded managedFields

    def manager(self, default: str = "unknown") -> str:
        """The field manager: as given, else from the user agent, as kube derives it."""
        if self.field_manager:
            return self.field_manager
        agent = self.user_agent.split("/", 1)[0].strip()
        return agent[:128] if agent else default


@dataclass
class ListOptions:
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass
class WatchOptions:
    label_selector: str = ""
    field_selector: str = ""
    resource_version: str = ""
    allow_bookmarks: bool = False
    send_initial_events: bool | None = None


LIST_CHUNK = 64 * 1024  # bytes of a list's items sent at a time


@dataclass(frozen=True, slots=True)
class ListBody:
    """A list's JSON kept as the parts it is spliced from: the head's encoding, up to the
    items' opening bracket, and each item's encoding (the store's own bytes, where the
    served version is the stored one).

    A long list is sent part by part (:meth:`chunks`), not copied into one body first:
    deleting a namespace whose jobs left 9,000 Events answered about 9 MB, copied whole
    twice over before a byte went out and again into the connection's buffer, and the
    heap those copies grew held on to the freed room (docs/reliability.md)."""

    head: bytes
    items: Sequence[bytes]

    def __bytes__(self) -> bytes:
        return self.head + b",".join(self.items) + b"]}"

    def chunks(self, size: int = LIST_CHUNK) -> Iterator[bytes]:
        batch = [self.head]
        length = len(self.head)
        for number, item in enumerate(self.items):
            if number:
                batch.append(b",")
            batch.append(item)
            length += len(item) + 1
            if length >= size:
                yield b"".join(batch)
                batch, length = [], 0
        batch.append(b"]}")
        yield b"".join(batch)


@dataclass
class Result:
    """A response object: ``decoded``, ``raw`` (exactly the stored encoding, or a list's
    :class:`ListBody` spliced from the items' encodings), or both (a deletecollection's
    head alone is ``decoded``).

    ``obj`` decodes ``raw`` when only that is given, on first use: a list of objects the
    store keeps encoded (Events) is answered from their encodings without decoding them all,
    unless the caller reads it (a Table)."""

    code: int
    decoded: dict[str, Any] | None = None
    raw: bytes | ListBody | None = None

    @property
    def obj(self) -> dict[str, Any]:
        if self.decoded is None:
            if self.raw is None:
                raise ValueError("a result holds an object or its encoding")
            self.decoded = json.loads(self.body())
        return self.decoded

    def body(self) -> bytes:
        if self.raw is None:
            return store.encode(self.obj)
        return bytes(self.raw)


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
        self._locks: dict[str, asyncio.Lock] = {}

    # -- helpers -------------------------------------------------------------------------

    def strategy(self, r: resources.Resource) -> strat.Strategy:
        if r.custom:
            return crds.CustomResourceStrategy(r)
        return self.strategies.get(r.key) or strat.DEFAULT

    def key(self, r: resources.Resource, namespace: str | None, name: str) -> store.Key:
        return store.Key(r.key, namespace or "" if r.namespaced else "", name)

    def now(self) -> str:
        return timestamp(self.clock())

    def system_options(self, manager: str) -> Options:
        """Options for a write the control plane makes itself (a controller's, not a user's)."""
        return Options(field_manager=manager)

    def success(self, code: int) -> Result:
        return Result(
            code,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "code": code,
            },
        )

    def present(self, r: resources.Resource, item: store.Item) -> Result:
        """The stored object as the served version ``r`` shows it."""
        if item.decoded is None and not r.custom:  # kept encoded: served as stored?
            stored = self.storage_row(r)
            if (stored.api_version, stored.kind) == (r.api_version, r.kind):
                return Result(200, None, item.raw)
        obj = item.obj
        if obj.get("apiVersion") == r.api_version and obj.get("kind") == r.kind:
            return Result(200, obj, item.raw)
        return Result(200, self.convert(r, obj))

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
    ) -> Result:
        item = self.get_item(r, namespace, name)
        if subresource == "scale":
            return Result(200, crds.scale_of(r, item.obj))
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

    async def list(self, r: resources.Resource, namespace: str | None, opts: ListOptions) -> Result:
        predicate = self._selectors(r, opts.label_selector, opts.field_selector)
        ns = namespace if r.namespaced else None
        start_after: tuple[str, str] | None = None
        if opts.continue_token:
            snapshot_rv, start_after = _decode_continue(opts.continue_token)
            try:
                items = self.store.snapshot(r.key, ns, snapshot_rv)
            except store.TooOld as exc:
                raise errors.gone(errors.CONTINUE_EXPIRED) from exc
            list_rv = snapshot_rv
        elif opts.resource_version_match == "Exact" and opts.resource_version:
            list_rv = _parse_rv(opts.resource_version)
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
                _parse_rv(opts.resource_version)
            list_rv = self.store.resource_version
            items = self.store.list(r.key, ns)
        if start_after is not None:  # items are in key order: the page starts after it
            items = items[bisect.bisect_right(items, start_after, key=_namespace_name) :]
        if predicate is not None:
            matching = (i for i in items if predicate(i.obj))
            if opts.limit and opts.limit > 0:  # one more than the page tells if there is more
                items = list(itertools.islice(matching, opts.limit + 1))
            else:
                items = list(matching)
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if opts.limit and opts.limit > 0 and len(items) > opts.limit:
            rest = len(items) - opts.limit
            items = items[: opts.limit]
            last = items[-1].key
            meta["continue"] = _encode_continue(list_rv, (last.namespace, last.name))
            if predicate is None:
                meta["remainingItemCount"] = rest
        return self._list_result(r, items, meta)

    def _list_result(
        self, r: resources.Resource, items: list[store.Item], meta: dict[str, Any]
    ) -> Result:
        head = {"kind": r.list_kind, "apiVersion": r.api_version, "metadata": meta}
        parts = [self.present(r, item).body() for item in items]
        return Result(200, None, _list_body(head, parts))

    def watch(
        self, r: resources.Resource, namespace: str | None, opts: WatchOptions
    ) -> watch.Watcher:
        predicate = self._selectors(r, opts.label_selector, opts.field_selector)
        ns = namespace if r.namespaced else None
        rv_text = opts.resource_version
        initial_end = bool(opts.send_initial_events and opts.allow_bookmarks)
        since = None if opts.send_initial_events or rv_text in ("", "0") else _parse_rv(rv_text)
        try:
            return self.hub.open(
                r.key, ns, predicate, since=since, initial_end_bookmark=initial_end
            )
        except store.TooOld as exc:
            raise errors.too_old(exc.requested, exc.oldest) from exc

    # -- create --------------------------------------------------------------------------

    def decode_object(
        self, r: resources.Resource, body: Any, namespace: str | None, *, kind: str = ""
    ) -> dict[str, Any]:
        """The request body as an object of ``r``: apiVersion and kind checked (filled in
        when absent, as kube's decoder does), namespace matched to the URL, nesting bounded
        (:func:`check_depth`)."""
        check_depth(body)
        return self._object_of(r, body, namespace, kind=kind)

    def _object_of(
        self, r: resources.Resource, body: Any, namespace: str | None, *, kind: str = ""
    ) -> dict[str, Any]:
        kind = kind or r.kind
        if body is None and not r.custom:
            body = {}  # kube's typed decoders read null as an empty object (unstructured: no)
        if not isinstance(body, dict):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): "
                f"expected an object, got {_json_kind(body)}"
            )
        obj = body
        api_version = obj.get("apiVersion")
        obj_kind = obj.get("kind")
        if api_version in (None, "") and obj_kind in (None, ""):
            obj["apiVersion"], obj["kind"] = r.api_version, kind
        elif not isinstance(api_version, str) or not isinstance(obj_kind, str):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): "
                "apiVersion and kind must be strings"
            )
        elif obj_kind != kind:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): "
                f"kind is {json.dumps(obj_kind)}"
            )
        elif api_version != r.api_version:
            served = self.catalog.find(r.group, api_version.rpartition("/")[2], r.plural)
            if api_version.rpartition("/")[0] != r.group or served is None:
                raise errors.bad_request(
                    f"the API version in the data ({api_version}) does not match the expected "
                    f"API version ({r.api_version})"
                )
            obj["apiVersion"] = r.api_version
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request(
                f"{kind} in version {json.dumps(r.version)} cannot be handled as a {kind}: "
                "metadata must be an object"
            )
        bad = [
            k
            for k in ("name", "namespace", "generateName", "resourceVersion", "uid")
            if meta.get(k) is not None and not isinstance(meta.get(k), str)
        ]
        if bad:
            raise errors.bad_request(
                f"{kind} in version {json.dumps(r.version)} cannot be handled as a {kind}: "
                f"metadata.{bad[0]} must be a string"
            )
        if r.namespaced:
            given = meta.get("namespace") or ""
            if namespace and given and given != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            if namespace:
                meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        return obj

    async def create(
        self,
        r: resources.Resource,
        namespace: str | None,
        body: Any,
        opts: Options,
    ) -> Result:
        obj = self.decode_object(r, body, namespace)
        meta = obj["metadata"]
        if r.namespaced and not meta.get("namespace"):
            raise errors.bad_request("the server could not find the requested resource")
        strategy = self.strategy(r)
        name = meta.get("name") or ""
        if r.namespaced:
            self._admit_namespace(r, meta["namespace"], name)
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
        opts: Options,
    ) -> Result | None:
        """One try at creating; None when a generated name collided (try another)."""
        meta = obj["metadata"]
        generated = False
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + _random_suffix()
            generated = True
        now = self.now()
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now
        for transient in (
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(transient, None)
        if strategy.uses_generation(r):
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if r.has_status() and strategy.status_reset_on_create:
            obj.pop("status", None)
        self._prune(r, strategy, obj, opts)
        strategy.prepare_for_create(r, obj, self)
        self._validate(r, strategy, obj, None)
        obj = self._admit(r, obj, None, opts)
        if not opts.applied:
            obj = self._record(r, obj, None, opts, "Update", "")
        obj = self._storage_form(r, obj)
        key = self.key(r, meta.get("namespace"), meta["name"])
        # Admission that counts what exists (quota) and the write it admits are one step,
        # so two creates cannot both fit the last slot of a quota.
        async with self._admission_lock(strategy, meta.get("namespace") or ""):
            strategy.admit_create(r, obj, self)
            if opts.dry_run:
                if self.store.get(key) is not None:
                    if generated:
                        return None
                    raise errors.already_exists(r.group, r.plural, meta["name"])
                return Result(201, self.convert(r, obj))
            try:
                item = await self.store.create(key, obj)
            except store.AlreadyExists as exc:
                if generated:
                    return None
                raise errors.already_exists(r.group, r.plural, meta["name"]) from exc
            except store.TooLarge as exc:
                raise _too_large(r, exc) from exc
            except store.Unavailable as exc:
                raise errors.internal(str(exc)) from exc
        await strategy.after_create(r, item, self)
        result = self.present(r, item)
        result.code = 201
        return result

    def _admission_lock(
        self, strategy: strat.Strategy, namespace: str
    ) -> contextlib.AbstractAsyncContextManager[Any]:
        if not strategy.serializes_creates(self, namespace):
            return contextlib.nullcontext()
        lock = self._locks.get(namespace)
        if lock is None:
            lock = self._locks[namespace] = asyncio.Lock()
        return lock

    def _admit_namespace(self, r: resources.Resource, namespace: str, name: str) -> None:
        """NamespaceLifecycle: no content in a missing or terminating namespace."""
        ns = self.store.get(store.Key("namespaces", "", namespace))
        if ns is None:
            raise errors.not_found("", "namespaces", namespace)
        if (ns.obj.get("status") or {}).get("phase") == "Terminating":
            raise errors.forbidden(
                r.group,
                r.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
            )

    # -- validation, pruning, admission ------------------------------------------------

    def _prune(
        self, r: resources.Resource, strategy: strat.Strategy, obj: dict[str, Any], opts: Options
    ) -> None:
        """Drop unknown fields (kube's decoding and CRD pruning); Strict refuses them."""
        unknown = strategy.prune(r, obj)
        if not unknown:
            return
        mode = opts.field_validation or "Warn"
        if mode == "Strict":
            listed = ", ".join(f'unknown field "{p}"' for p in unknown)
            raise errors.bad_request(
                f"{r.kind} in version {json.dumps(r.version)} cannot be handled as a {r.kind}: "
                f"strict decoding error: {listed}"
            )
        if mode == "Warn":
            opts.warnings.extend(f'unknown field "{p}"' for p in unknown)

    def _validate(
        self,
        r: resources.Resource,
        strategy: strat.Strategy,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> None:
        causes = strategy.validate(r, obj, old, self)
        if not r.custom:  # a custom resource's schema checks types (crds.py)
            shape = builtin_schemas.schema_for(r.group, r.version, r.kind)
            causes += schema.shape_causes(obj, shape)
        if causes:
            name = (obj.get("metadata") or {}).get("name") or ""
            raise errors.invalid(r.group, r.kind, name, causes)

    def _admit(
        self,
        r: resources.Resource,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        opts: Options,
    ) -> dict[str, Any]:
        """kubetrain's own admission for its kinds: 422 with every field error, or the object
        to store (as sent for kubeflow.org/v1; defaulted for trainer.kubeflow.org)."""
        if r.group not in KUBETRAIN_GROUPS or (r.group, r.kind) not in api.KINDS:
            return obj
        verdict = api.review(
            obj,
            old,
            find_runtime=self._find_runtime,
            now=self.now(),
            find_priority_class=self._has_priority_class,
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

    def _find_runtime(self, kind: str, namespace: str | None, name: str) -> Any:
        plural = "clustertrainingruntimes" if namespace is None else "trainingruntimes"
        item = self.store.get(store.Key(f"{plural}.trainer.kubeflow.org", namespace or "", name))
        if item is None or item.obj.get("kind") != kind:
            return None
        parsed, _ = api.parse(item.obj)
        return parsed

    def _has_priority_class(self, name: str) -> bool:
        return self.store.get(store.Key("priorityclasses.scheduling.k8s.io", "", name)) is not None

    def _record(
        self,
        r: resources.Resource,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        opts: Options,
        operation: str,
        subresource: str,
    ) -> dict[str, Any]:
        """managedFields for an ordinary write (server-side apply records its own)."""
        return ssa.record_update(
            old,
            obj,
            opts.manager(),
            operation=operation,
            now=self.now(),
            subresource=subresource or None,
            list_keys=self.strategy(r).list_keys(r),
        )

    # -- update and patch --------------------------------------------------------------

    async def update(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        body: Any,
        opts: Options,
        subresource: str = "",
    ) -> Result:
        if subresource == "scale":
            return await self._update_scale(r, namespace, name, lambda _: body, opts)
        obj = self.decode_object(r, body, namespace)
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
        expect = _parse_rv(rv_text) if rv_text else None
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
        opts: Options,
        subresource: str = "",
    ) -> Result:
        if patch_type not in PATCH_TYPES:
            raise errors.unsupported_media_type(patch_type, PATCH_TYPES)
        if patch_type == STRATEGIC_PATCH and not patches.supports_strategic(r.kind_key):
            raise errors.unsupported_media_type(
                patch_type, [t for t in PATCH_TYPES if t != STRATEGIC_PATCH]
            )
        document = _decode_patch(patch_type, body)
        if subresource == "scale":
            return await self._update_scale(
                r, namespace, name, lambda scale: _patched(r, scale, patch_type, document), opts
            )
        if patch_type == APPLY_PATCH:
            return await self._apply(r, namespace, name, document, opts, subresource)
        expect = _rv_in_patch(patch_type, document, r, name)

        def mutate(old: dict[str, Any]) -> dict[str, Any]:
            return _patched(r, old, patch_type, document)  # every patch works on a copy

        return await self._guaranteed_update(
            r, namespace, name, mutate, opts, subresource, expect, operation="Update"
        )

    async def _apply(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        config: Any,
        opts: Options,
        subresource: str,
    ) -> Result:
        if not opts.field_manager:
            raise errors.invalid("meta.k8s.io", "PatchOptions", "", [apply_needs_a_field_manager()])
        config = self.decode_object(r, config, namespace)
        given = config["metadata"].get("name")
        if given and given != name:
            raise errors.bad_request(
                f"the name of the object ({given}) does not match the name on the URL ({name})"
            )
        config["metadata"]["name"] = name
        expect = None
        rv_text = (config.get("metadata") or {}).get("resourceVersion")
        if rv_text:
            expect = _parse_rv(str(rv_text))
        config = _without_reset_fields(r, config, subresource)
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
        self, r: resources.Resource, namespace: str | None, obj: dict[str, Any], opts: Options
    ) -> Result:
        """Create from an apply: like POST, but managedFields come from the apply."""
        obj = self._object_of(r, obj, namespace)  # the configuration was checked as it came
        meta = obj["metadata"]
        if r.namespaced:
            self._admit_namespace(r, meta.get("namespace") or "", meta.get("name") or "")
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
        opts: Options,
    ) -> Result:
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
        return Result(result.code, crds.scale_of(r, result.obj))

    async def _guaranteed_update(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any]],
        opts: Options,
        subresource: str,
        expect: int | None,
        *,
        operation: str,
    ) -> Result:
        """kube's GuaranteedUpdate: ``mutate`` turns the stored object into the one to write,
        without editing what it is given, and is called again when another write got in
        first; with ``expect`` (a resourceVersion precondition) that is a Conflict instead,
        so it is called at most once."""
        strategy = self.strategy(r)
        key = self.key(r, namespace, name)
        for _ in range(CONFLICT_RETRIES):
            current = self.store.get(key)
            if current is None:
                raise errors.not_found(r.group, r.plural, name)
            if expect is not None and expect != current.rv:
                raise errors.conflict(r.group, r.plural, name)
            old = self._served(r, current.obj)  # read-only: shared with the store
            new = mutate(old)
            new = self._prepare_update(r, strategy, new, old, opts, subresource, operation)
            if _same(new, old):
                return self.present(r, current)
            stored = self._storage_form(r, new)
            if opts.dry_run:
                return Result(200, self.convert(r, stored))
            if _finalized(r, strategy, stored, old):
                try:
                    item = await self.store.delete(key, current.rv)
                except store.Conflict as exc:
                    if expect is not None:
                        raise errors.conflict(r.group, r.plural, name) from exc
                    continue
                except store.NotFound as exc:
                    raise errors.not_found(r.group, r.plural, name) from exc
                await strategy.after_delete(r, item, self)
                return Result(200, self.convert(r, stored))
            try:
                item = await self.store.update(key, stored, current.rv)
            except store.Conflict as exc:
                if expect is not None:
                    raise errors.conflict(r.group, r.plural, name) from exc
                continue
            except store.NotFound as exc:
                raise errors.not_found(r.group, r.plural, name) from exc
            except store.TooLarge as exc:
                raise _too_large(r, exc) from exc
            except store.Unavailable as exc:
                raise errors.internal(str(exc)) from exc
            await strategy.after_update(r, item, current, self)
            return self.present(r, item)
        raise errors.conflict(r.group, r.plural, name)

    def _prepare_update(
        self,
        r: resources.Resource,
        strategy: strat.Strategy,
        new: Any,
        old: dict[str, Any],
        opts: Options,
        subresource: str,
        operation: str,
    ) -> dict[str, Any]:
        """BeforeUpdate: keep what a client may not change, isolate status, validate."""
        if not isinstance(new, dict):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {r.kind})"
            )
        new_meta = new.get("metadata")
        if not isinstance(new_meta, dict):
            new_meta = new["metadata"] = {}
        old_meta = old["metadata"]
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        causes = []
        for field_name in ("name", "namespace"):
            if new_meta.get(field_name, old_meta.get(field_name)) != old_meta.get(field_name):
                causes.append(
                    errors.field_error(
                        "Invalid value",
                        f"metadata.{field_name}",
                        "field is immutable",
                        new_meta.get(field_name),
                    )
                )
        if new_meta.get("uid") and new_meta["uid"] != old_meta.get("uid"):
            causes.append(
                errors.field_error(
                    "Invalid value", "metadata.uid", "field is immutable", new_meta["uid"]
                )
            )
        if causes:
            raise errors.invalid(r.group, r.kind, old_meta.get("name", ""), causes)
        for kept in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            if kept in old_meta:
                new_meta[kept] = old_meta[kept]
            else:
                new_meta.pop(kept, None)
        new_meta.pop("selfLink", None)
        new_meta["resourceVersion"] = old_meta.get("resourceVersion")
        if subresource == "status":
            # Everything but status is the stored object's. Its parts are shared with ``old``
            # rather than copied: nothing below edits them but metadata, copied here, and the
            # managedFields diff skips a part that is ``old``'s own.
            status = new.get("status")
            new = dict(old)
            new["metadata"] = dict(old_meta)
            if status is not None:
                new["status"] = status
            else:
                new.pop("status", None)
            if "managedFields" in new_meta:
                new["metadata"]["managedFields"] = new_meta["managedFields"]
        elif subresource in ("", "scale"):
            if r.has_status():
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            if strategy.uses_generation(r) and strategy.spec_changed(r, new, old):
                new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if subresource != "status":
            self._prune(r, strategy, new, opts)
        strategy.prepare_for_update(r, new, old, self, subresource)
        self._validate(r, strategy, new, old)
        if subresource == "":
            new = self._admit(r, new, old, opts)
        if operation != "Apply":
            new = self._record(r, new, old, opts, operation, subresource)
        return new

    # -- delete --------------------------------------------------------------------------

    async def delete(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        options: Mapping[str, Any],
        opts: Options,
    ) -> Result:
        strategy = self.strategy(r)
        key = self.key(r, namespace, name)
        for _ in range(CONFLICT_RETRIES):
            current = self.store.get(key)
            if current is None:
                raise errors.not_found(r.group, r.plural, name)
            _check_preconditions(r, name, current, options)
            old = current.obj
            new = copy.deepcopy(old)
            meta = new["metadata"]
            policy = _propagation(options)
            grace = strategy.grace_period(r, new, options)
            strategy.before_delete(r, new, self)
            finalizers = list(meta.get("finalizers") or [])
            if policy == "Foreground" and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
                if "orphan" in finalizers:
                    finalizers.remove("orphan")
            elif policy == "Orphan" and "orphan" not in finalizers:
                finalizers.append("orphan")
                if "foregroundDeletion" in finalizers:
                    finalizers.remove("foregroundDeletion")
            elif policy == "Background":
                finalizers = [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
            pending = bool(finalizers) or grace > 0 or strategy.finalizes(r, new)
            if not pending:
                if opts.dry_run:
                    return self._deleted_result(r, strategy, current)
                try:
                    item = await self.store.delete(key, current.rv)
                except store.Conflict:
                    continue
                except store.NotFound as exc:
                    raise errors.not_found(r.group, r.plural, name) from exc
                await strategy.after_delete(r, item, self)
                return self._deleted_result(r, strategy, item)
            if finalizers:
                meta["finalizers"] = finalizers
            else:
                meta.pop("finalizers", None)
            if "deletionTimestamp" not in meta or grace < int(
                meta.get("deletionGracePeriodSeconds") or 0
            ):
                meta["deletionTimestamp"] = (
                    timestamp(self.clock() + _seconds(grace)) if grace > 0 else self.now()
                )
                meta["deletionGracePeriodSeconds"] = grace
            strategy.mark_deleting(r, new, self)
            if new == old:
                return self.present(r, current)
            if opts.dry_run:
                return Result(200, self.convert(r, new))
            try:
                item = await self.store.update(key, new, current.rv)
            except store.Conflict:
                continue
            except store.NotFound as exc:
                raise errors.not_found(r.group, r.plural, name) from exc
            except store.TooLarge as exc:
                raise _too_large(r, exc) from exc
            await strategy.after_update(r, item, current, self)
            return self.present(r, item)
        raise errors.conflict(r.group, r.plural, name)

    def _deleted_result(
        self, r: resources.Resource, strategy: strat.Strategy, item: store.Item
    ) -> Result:
        if strategy.return_deleted(r):
            return self.present(r, item)
        meta = item.obj.get("metadata") or {}
        return Result(200, errors.success(meta.get("name", ""), r.group, r.plural, meta.get("uid")))

    async def delete_collection(
        self,
        r: resources.Resource,
        namespace: str | None,
        list_opts: ListOptions,
        options: Mapping[str, Any],
        opts: Options,
    ) -> Result:
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
                await self.delete(r, key.namespace or namespace, key.name, options, opts)
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
        return Result(200, {**head, "items": []}, _list_body(head, parts))

    # -- subresources that create ----------------------------------------------------

    async def create_subresource(
        self,
        r: resources.Resource,
        namespace: str | None,
        name: str,
        subresource: str,
        body: Any,
        opts: Options,
    ) -> Result:
        handler = self.strategy(r).subresource_create(subresource)
        if handler is None:
            raise errors.method_not_allowed(r.group, f"{r.plural}/{subresource}", "create")
        return await handler(self, r, namespace, name, body, opts)


def _list_body(head: Mapping[str, Any], items: Sequence[bytes]) -> ListBody:
    """A list's JSON from its head and its items' encodings, spliced rather than re-encoded:
    the items' bytes are what the store already holds."""
    return ListBody(store.encode(head)[:-1] + b',"items":[', items)


def _seconds(n: int) -> timedelta:
    return timedelta(seconds=n)


def _same(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """A no-op write: equal but for managedFields timestamps (kube skips the write)."""
    if new == old:
        return True
    a = {**new, "metadata": _without_times(new.get("metadata") or {})}
    b = {**old, "metadata": _without_times(old.get("metadata") or {})}
    return a == b


def _without_times(meta: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(meta)
    managed = out.get("managedFields")
    if isinstance(managed, list):
        out["managedFields"] = [
            {k: v for k, v in m.items() if k != "time"} if isinstance(m, dict) else m
            for m in managed
        ]
    return out


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


def _propagation(options: Mapping[str, Any]) -> str:
    policy = options.get("propagationPolicy")
    if policy in ("Foreground", "Background", "Orphan"):
        return policy
    if policy is not None:
        raise errors.invalid(
            "",
            "DeleteOptions",
            "",
            [
                errors.field_error(
                    "Unsupported value",
                    "propagationPolicy",
                    'supported values: "Foreground", "Background", "Orphan", "nil"',
                    policy,
                )
            ],
        )
    orphan = options.get("orphanDependents")
    if orphan is True:
        return "Orphan"
    if orphan is False:
        return "Background"
    return ""


def _check_preconditions(
    r: resources.Resource, name: str, current: store.Item, options: Mapping[str, Any]
) -> None:
    pre = options.get("preconditions") or {}
    if not isinstance(pre, Mapping):
        return
    meta = current.obj.get("metadata") or {}
    uid = pre.get("uid")
    if uid and uid != meta.get("uid"):
        raise errors.conflict(
            r.group,
            r.plural,
            name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{meta.get('uid')}",
        )
    rv = pre.get("resourceVersion")
    if rv and str(rv) != meta.get("resourceVersion"):
        raise errors.conflict(
            r.group,
            r.plural,
            name,
            f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in "
            f"object meta: {meta.get('resourceVersion')}",
        )


def _random_suffix(n: int = 5) -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(n))


def _parse_rv(text: str) -> int:
    """A resourceVersion as kube writes them here: a non-negative decimal integer."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0 or str(value) != text.strip():
        raise errors.bad_request(
            f'invalid resource version "{text}": resource version is not well formed'
        )
    return value


def _namespace_name(item: store.Item) -> tuple[str, str]:
    return (item.key.namespace, item.key.name)


def _encode_continue(rv: int, start: tuple[str, str]) -> str:
    payload = {"v": "meta.k8s.io/v1", "rv": rv, "start": f"{start[0]}/{start[1]}\u0000"}
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        payload = json.loads(base64.urlsafe_b64decode(padded.encode()))
        rv = int(payload["rv"])
        start = str(payload["start"]).rstrip("\u0000")
        namespace, _, name = start.partition("/")
        if payload.get("v") != "meta.k8s.io/v1" or rv < 0:
            raise ValueError(token)
        return rv, (namespace, name)
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise errors.bad_request(
            "continue key is not valid: continue key must be a valid base64 encoded JSON"
        ) from exc


def _too_large(r: resources.Resource, exc: store.TooLarge) -> errors.ApiError:
    return errors.object_too_large(r.group, r.plural, exc.key.name, exc.size, exc.limit)


def apply_needs_a_field_manager() -> dict[str, str]:
    """The cause of kube's 422 for an apply without ``fieldManager`` (PatchOptions)."""
    return errors.field_error("Required value", "fieldManager", "is required for apply patch")


def too_deep(what: str = "the request body", limit: int = MAX_DEPTH) -> errors.ApiError:
    """The answer to a body nested deeper than ``limit``."""
    return errors.bad_request(
        f"{what} is nested too deeply: at most {limit} levels of objects and arrays are accepted"
    )


def check_depth(body: Any, *, limit: int = MAX_DEPTH, what: str = "the request body") -> None:
    """A 400 for a body nested deeper than ``limit`` (or holding more than
    :data:`MAX_CONTAINERS` objects and arrays), before any recursive code reads it.

    Objects pass here in :meth:`Registry.decode_object`, patch documents as they are decoded,
    and what a JSON patch makes of the stored object (with its managedFields, hence the larger
    limit); other bodies (delete options, bindings, evictions) are only looked into, never
    walked. The walk does not recurse, and ends on bodies that contain themselves (recursive
    YAML aliases), since those nest without end.

    It also refuses what no stored object (UTF-8 JSON) can hold: text that is not Unicode
    (JSON's ``\\ud800`` and YAML's escapes spell lone UTF-16 surrogates) and numbers that are
    not finite (``1e400`` overflows to infinity; YAML has ``.inf`` and ``.nan``), which would
    be written out as ``Infinity``, breaking every client that reads the object.
    """
    level = [body] if isinstance(body, dict | list) else []
    depth = seen = 0
    read: set[int] = set()  # nodes whose values were checked (YAML aliases repeat nodes)
    while level:
        depth += 1
        if depth > limit:
            raise too_deep(what, limit)
        seen += len(level)
        below: list[Any] = []
        for node in level:
            if id(node) not in read:
                read.add(id(node))
                _check_values(node, what)
            below.extend(
                child
                for child in (node.values() if isinstance(node, dict) else node)
                if isinstance(child, dict | list)
            )
            if seen + len(below) > MAX_CONTAINERS:
                raise errors.bad_request(
                    f"the request body holds more than {MAX_CONTAINERS} objects and arrays"
                )
        level = below


def _check_values(node: dict[Any, Any] | list[Any], what: str) -> None:
    values = [*node.keys(), *node.values()] if isinstance(node, dict) else node
    for value in values:
        if isinstance(value, str):
            try:
                value.encode()
            except UnicodeEncodeError as exc:
                bad = value[exc.start : exc.end].encode("unicode_escape").decode()
                raise errors.bad_request(
                    f"{what} holds text that is not valid Unicode: {exc.reason} ({bad})"
                ) from exc
        elif isinstance(value, float) and not math.isfinite(value):
            raise errors.bad_request(f"{what} holds a number out of range: {value}")


def _check_patched_depth(obj: Any) -> None:
    """What a JSON patch made of an object nests no deeper than a body may, but for
    managedFields, which describe the object's fields :data:`MANAGED_FIELDS_NESTING` deeper."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict) and "managedFields" in meta:
        without = {k: v for k, v in meta.items() if k != "managedFields"}
        check_depth({**obj, "metadata": without}, what="the patched object")
        check_depth(
            obj, limit=MAX_DEPTH + MANAGED_FIELDS_NESTING, what="the patched object's metadata"
        )
    else:
        check_depth(obj, what="the patched object")


def _decode_apply(body: bytes) -> Any:
    """An apply configuration: YAML, which kubectl and client-go send as JSON. JSON is read as
    JSON, since a CRD's configuration is megabytes, which the YAML parser takes seconds over;
    anything else as YAML (PyYAML's Python parser: it stops at Python's recursion limit, where
    libyaml's would overflow the C stack on a deep enough document)."""
    import yaml

    try:
        return json.loads(body)
    except RecursionError as exc:
        raise too_deep() from exc
    except ValueError:
        pass  # not JSON: YAML
    try:
        return yaml.safe_load(body.decode("utf-8"))
    except RecursionError as exc:
        raise too_deep() from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from exc


def _decode_patch(patch_type: str, body: bytes) -> Any:
    if patch_type == APPLY_PATCH:
        document = _decode_apply(body)
        check_depth(document)
        return document
    try:
        document = json.loads(body)
    except RecursionError as exc:
        raise too_deep() from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from exc
    check_depth(document)
    if patch_type == JSON_PATCH and not isinstance(document, list):
        raise errors.bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    if patch_type in (MERGE_PATCH, STRATEGIC_PATCH) and not isinstance(document, dict):
        raise errors.bad_request(
            f"json: cannot unmarshal {_json_kind(document)} into Go value of type "
            "map[string]interface {}"
        )
    return document


def _patched(r: resources.Resource, target: dict[str, Any], patch_type: str, document: Any) -> Any:
    try:
        if patch_type == MERGE_PATCH:
            return patches.merge_patch(target, document)
        if patch_type == JSON_PATCH:
            # the one patch that can nest deeper than its inputs (add or copy at a deep path)
            result = patches.json_patch(target, document)
            _check_patched_depth(result)
            return result
        return patches.strategic_merge_patch(target, document, r.kind_key)
    except patches.PatchFormatError as exc:  # the patch is malformed: kube's NewBadRequest
        raise errors.bad_request(str(exc)) from exc
    except patches.PatchError as exc:  # well formed, but it does not apply to this object
        # kube's NewGenericServerResponse(422): its message, which we follow with the reason
        raise errors.ApiError(422, "Invalid", f"{PATCH_NOT_APPLIED}: {exc}") from exc


def _rv_in_patch(patch_type: str, document: Any, r: resources.Resource, name: str) -> int | None:
    """A resourceVersion a merge or strategic patch sets makes the patch conditional."""
    if patch_type in (MERGE_PATCH, STRATEGIC_PATCH) and isinstance(document, dict):
        meta = document.get("metadata")
        if isinstance(meta, dict) and meta.get("resourceVersion"):
            return _parse_rv(str(meta["resourceVersion"]))
    return None


def _without_reset_fields(
    r: resources.Resource, config: dict[str, Any], subresource: str
) -> dict[str, Any]:
    """An applied configuration without the fields the write's strategy resets.

    kube's field manager removes them before it computes ownership and conflicts, so they
    are neither owned nor compared: an apply to the main resource ignores ``status`` when
    status is a subresource, and an apply to ``/status`` ignores everything but ``status``
    (``metadata`` keeps only the name, which the request has already checked).
    """
    if subresource == "status":
        kept = {k: v for k, v in config.items() if k in ("apiVersion", "kind", "status")}
        kept["metadata"] = {"name": config["metadata"]["name"]}
        return kept
    if subresource == "" and r.has_status() and "status" in config:
        return {k: v for k, v in config.items() if k != "status"}
    return config


def _apply_conflict(exc: ssa.ApplyConflict) -> errors.ApiError:
    details = {"causes": exc.causes} if exc.causes else None
    return errors.ApiError(409, "Conflict", exc.message, details)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
