"""What every create and update does to an object between its request and the store, in
kube's order (``rest.BeforeCreate``, ``rest.BeforeUpdate``): metadata the server owns, the
write's strategy (reset, prune, prepare, validate), admission, and managedFields.

The order is the contract: the server's metadata first, so a strategy sees it; pruning before
the strategy's prepare, so defaults are not taken for unknown fields; validation of the
prepared object; admission of the valid one; managedFields of what will be stored.

What it must not do: read or write the store itself (admission reads it), or retry: the
registry's write loop calls :func:`before_update` again after a lost race.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from kubetrain.local.apiserver import (
    admission,
    builtin_schemas,
    errors,
    queryoptions,
    resources,
    schemavalidation,
)
from kubetrain.local.apiserver import apply as ssa
from kubetrain.local.apiserver import strategies as strat

# Metadata a client may send but the server sets: a create drops them.
_TRANSIENT = ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")
# Metadata an update keeps from the stored object, whatever the body says.
_KEPT = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def before_create(
    reg: Any,
    r: resources.Resource,
    strategy: strat.Strategy,
    obj: dict[str, Any],
    opts: queryoptions.Options,
) -> dict[str, Any]:
    """``obj`` (named) made ready to store: uid, creationTimestamp, generation, status reset,
    pruned, prepared, validated, admitted, with managedFields unless an apply recorded them."""
    meta = obj["metadata"]
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = reg.now()
    for transient in _TRANSIENT:
        meta.pop(transient, None)
    if strategy.uses_generation(r):
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    if r.has_status() and strategy.status_reset_on_create:
        obj.pop("status", None)
    prune(r, strategy, obj, opts)
    strategy.prepare_for_create(r, obj, reg)
    validate(reg, r, strategy, obj, None)
    obj = admission.admit_kubetrain(reg.store, r, obj, None, opts, reg.now())
    if not opts.applied:
        obj = record(reg, r, obj, None, opts, "Update", "")
    return obj


def before_update(
    reg: Any,
    r: resources.Resource,
    write: strat.WriteStrategy,
    new: Any,
    old: dict[str, Any],
    opts: queryoptions.Options,
    operation: str,
) -> dict[str, Any]:
    """BeforeUpdate: keep what a client may not change, reset what the write's strategy
    resets (status, or all but status), prepare, validate, admit, record managedFields."""
    if not isinstance(new, dict):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {r.kind})")
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
    for kept in _KEPT:
        if kept in old_meta:
            new_meta[kept] = old_meta[kept]
        else:
            new_meta.pop(kept, None)
    new_meta.pop("selfLink", None)
    new_meta["resourceVersion"] = old_meta.get("resourceVersion")
    new = write.reset_for_update(r, new, old)
    main = reg.strategy(r)
    if write.prunes:
        prune(r, main, new, opts)
    write.prepare_for_update(r, new, old, reg)
    validate(reg, r, write, new, old)
    if write.admitted:
        new = admission.admit_kubetrain(reg.store, r, new, old, opts, reg.now())
    if operation != "Apply":
        new = record(reg, r, new, old, opts, operation, write.subresource)
    return new


def prune(
    r: resources.Resource, strategy: strat.Strategy, obj: dict[str, Any], opts: queryoptions.Options
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


def validate(
    reg: Any,
    r: resources.Resource,
    strategy: strat.WriteStrategy,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
) -> None:
    """A 422 with every cause: the strategy's, and the built-in kind's shape (a custom
    resource's schema checks types in its strategy)."""
    causes = strategy.validate(r, obj, old, reg)
    if not r.custom:
        shape = builtin_schemas.schema_for(r.group, r.version, r.kind)
        causes += schemavalidation.shape_causes(obj, shape)
    if causes:
        name = (obj.get("metadata") or {}).get("name") or ""
        raise errors.invalid(r.group, r.kind, name, causes)


def record(
    reg: Any,
    r: resources.Resource,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    opts: queryoptions.Options,
    operation: str,
    subresource: str,
) -> dict[str, Any]:
    """managedFields for an ordinary write (server-side apply records its own)."""
    return ssa.record_update(
        old,
        obj,
        opts.manager(),
        operation=operation,
        now=reg.now(),
        subresource=subresource or None,
        list_keys=reg.strategy(r).list_keys(r),
    )


def unchanged(new: dict[str, Any], old: dict[str, Any]) -> bool:
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
