"""Server-side apply: field ownership in ``metadata.managedFields``, conflicts and force.

Owns what kube-apiserver's field manager does with structured-merge-diff:

- :func:`apply` merges an applied configuration into the live object. The configuration is the
  manager's whole intent: what it applied before and omits now is removed unless another
  manager owns it; a field another manager owns and this one would change is a conflict
  (:class:`ApplyConflict`) unless ``force`` moves the ownership; equal values are shared.
- :func:`record_update` records what an ordinary write (create, update, patch) changed as owned
  by its writer and takes it from the others, so that a later apply conflicts with it.
- managedFields entries: one per manager, operation and subresource (and apiVersion, for
  Update), in kube's order, with FieldsV1 sets; apiVersion, kind and server-set metadata are
  never owned.

``fieldsets`` says what an object sets and what a write changed (and which lists are keyed);
``fieldpaths`` spells paths. Must not: do I/O, read a clock (``now`` is passed in), log,
validate objects, or know about resourceVersion, generation or status strategies. The registry
does those, before (it strips from the applied configuration the fields its strategy resets,
e.g. ``status`` for the main resource) and after. Inputs are never mutated; results share
nothing with them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import errors, gofmt
from kubetrain.local.apiserver import fieldpaths as fp
from kubetrain.local.apiserver import fieldsets as fs

Path = fp.Path
ListKeys = fs.ListKeys
# The list types apply merges by, re-exported for the registry's strategies.
default_list_keys = fs.default_list_keys
list_keys_from_schema = fs.list_keys_from_schema

APPLY: Final = "Apply"
UPDATE: Final = "Update"
CONFLICT_CAUSE: Final = "FieldManagerConflict"

# Server-set or identifying metadata: never owned (kube strips these from every field set).
_UNOWNED_METADATA: Final = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "selfLink",
        "managedFields",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "clusterName",
    }
)
# Taken from the configuration when apply creates the object, from the live object otherwise.
_IDENTITY_METADATA: Final = frozenset({"name", "namespace"})


class ApplyConflict(errors.KubetrainError):
    """An apply would change fields other managers own; kube answers 409 Conflict.

    ``conflicts`` lists (manager, field path) pairs in kube's order, ``causes`` are the
    ``details.causes`` of kube's Status with its JSON keys (``reason``, ``message``,
    ``field``), and the message is kube's word for word.
    """

    def __init__(
        self, message: str, conflicts: list[tuple[str, str]], causes: list[dict[str, str]]
    ) -> None:
        super().__init__(message)
        self.message = message
        self.conflicts = conflicts
        self.causes = causes


def _owned(path: Path) -> bool:
    """Whether a path can be owned: not apiVersion, kind, nor server-set or identity metadata."""
    if not path or path[0] in ("f:apiVersion", "f:kind"):
        return False
    if path[0] == "f:metadata":
        return len(path) > 1 and not (path[1].startswith("f:") and path[1][2:] in _UNOWNED_METADATA)
    return True


def fields_of(obj: Mapping[str, Any], list_keys: ListKeys | None = None) -> set[Path]:
    """The fields an applied object sets that a manager can own (see ``fieldsets.members``)."""
    return {p for p in fs.members(obj, list_keys or fs.default_list_keys) if _owned(p)}


def _changes(old: Any, new: Any, list_keys: ListKeys) -> fs.Diff:
    diff = fs.compare(old, new, list_keys)
    return fs.Diff(
        {p for p in diff.added if _owned(p)},
        {p for p in diff.modified if _owned(p)},
        {p for p in diff.removed if _owned(p)},
    )


def _copy(item: Any) -> Any:
    if isinstance(item, dict):
        return {k: _copy(v) for k, v in item.items()}
    if isinstance(item, list):
        return [_copy(v) for v in item]
    return item


# ---------------------------------------------------------------------------------------------
# Merging and pruning objects


def _merge(live: Any, config: Any, names: tuple[str, ...], lk: ListKeys) -> Any:
    """``config`` over ``live``: maps and keyed lists merge, anything else is replaced."""
    if isinstance(live, dict) and isinstance(config, dict):
        merged = {name: _copy(value) for name, value in live.items()}
        for name, value in config.items():
            merged[name] = (
                _merge(live[name], value, (*names, name), lk) if name in live else _copy(value)
            )
        return merged
    if isinstance(live, list) and isinstance(config, list):
        keys = lk(names)
        live_elements, config_elements = (
            fs.item_elements(live, keys),
            fs.item_elements(config, keys),
        )
        if live_elements is not None and config_elements is not None:
            return _merge_items(live, live_elements, config, config_elements, names, lk)
    return _copy(config)


def _merge_items(
    live: list[Any],
    live_elements: list[str],
    config: list[Any],
    config_elements: list[str],
    names: tuple[str, ...],
    lk: ListKeys,
) -> list[Any]:
    """Merge keyed lists in structured-merge-diff's order.

    Items both lists hold come in the configuration's order, items only in the configuration
    follow their predecessor there, and items only in the live list keep their place.
    """
    live_items = dict(zip(live_elements, live, strict=True))
    config_items = dict(zip(config_elements, config, strict=True))
    shared = iter([e for e in config_elements if e in live_items])
    next_shared = next(shared, None)
    merged: list[Any] = []
    done: set[str] = set()

    def take(element: str) -> None:
        nonlocal next_shared
        if element in live_items and element in config_items:
            merged.append(_merge(live_items[element], config_items[element], names, lk))
        elif element in config_items:
            merged.append(_copy(config_items[element]))
        else:
            merged.append(_copy(live_items[element]))
        done.add(element)
        if element == next_shared:
            next_shared = next(shared, None)

    li = ci = 0
    while li < len(live_elements) or ci < len(config_elements):
        if li < len(live_elements):
            element = live_elements[li]
            if element in done:
                li += 1
                continue
            if ci < len(config_elements) and element == config_elements[ci]:
                take(element)
                li, ci = li + 1, ci + 1
                continue
            if element not in config_items:
                take(element)
                li += 1
                continue
            if next_shared is not None and element != next_shared:
                li += 1  # shared, but another shared item comes first in the configuration
                continue
        if ci < len(config_elements):
            if config_elements[ci] not in done:
                take(config_elements[ci])
            ci += 1
    return merged


def _prune(merged: dict[str, Any], remove: set[Path], keep: set[Path], lk: ListKeys) -> None:
    """Remove, in place, the members of ``merged`` at ``remove`` with everything below them.

    A path is removed only where it is still a member of the merged object (a field that was a
    leaf and is now a map of newly applied fields stays). Key fields of surviving items stay,
    and a map or list that pruning empties goes too, unless someone owns it.
    """
    _prune_map(merged, fp.PathTrie.of(remove), (), (), frozenset(), keep, lk)


def _prune_map(
    node: dict[str, Any],
    trie: fp.PathTrie,
    path: Path,
    names: tuple[str, ...],
    protected: frozenset[str],
    keep: set[Path],
    lk: ListKeys,
) -> None:
    for element, below in trie.children.items():
        name = element[2:]
        if not element.startswith("f:") or name not in node or name in protected:
            continue
        child_path, child_names = (*path, element), (*names, name)
        child = node[name]
        whole = below.member and fs.is_member(child, child_names, lk)
        if whole or _prune_child(child, below, child_path, child_names, keep, lk):
            del node[name]


def _prune_child(
    child: Any,
    trie: fp.PathTrie,
    path: Path,
    names: tuple[str, ...],
    keep: set[Path],
    lk: ListKeys,
) -> bool:
    """Prune inside a map or list; True when that emptied it and nobody owns it."""
    if not trie.children or not child or not isinstance(child, dict | list):
        return False
    if isinstance(child, dict):
        _prune_map(child, trie, path, names, frozenset(), keep, lk)
    else:
        elements = fs.item_elements(child, lk(names))
        if elements is None:
            return False
        kept = []
        for element, item in zip(elements, child, strict=True):
            below = trie.children.get(element)
            if below is None:
                kept.append(item)
            elif below.member:
                continue
            elif isinstance(item, dict):
                protected = frozenset(fp.key_fields(element))
                _prune_map(item, below, (*path, element), names, protected, keep, lk)
                kept.append(item)
            else:
                kept.append(item)
        child[:] = kept
    return not child and path not in keep


# ---------------------------------------------------------------------------------------------
# managedFields


@dataclass(frozen=True)
class _Manager:
    """A managedFields entry's identity, as kube builds its manager identifier.

    Apply entries are one per manager and subresource whatever the version applied; Update
    entries are one per manager, subresource and apiVersion.
    """

    manager: str
    operation: str
    subresource: str
    api_version: str

    def describe(self) -> str:
        """The manager as kube's conflict messages name it."""
        text = gofmt.go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {gofmt.go_quote(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text

    def identifier(self) -> str:
        """Kube's identifier (the entry's JSON without time and fields), its sort order."""
        encoded: dict[str, str] = {"manager": self.manager, "operation": self.operation}
        if self.api_version:
            encoded["apiVersion"] = self.api_version
        if self.subresource:
            encoded["subresource"] = self.subresource
        return json.dumps(encoded, separators=(",", ":"), ensure_ascii=False)


@dataclass
class _Entry:
    api_version: str
    time: str | None
    fields: set[Path]
    raw: dict[str, Any] | None = None  # as stored; written back untouched if unchanged


def _identity(manager: str, operation: str, subresource: str | None, api_version: str) -> _Manager:
    return _Manager(
        manager, operation, subresource or "", api_version if operation != APPLY else ""
    )


def _decode(raw: Any) -> dict[_Manager, _Entry] | None:
    """managedFields as a map from manager to entry; None if any entry is malformed."""
    if not isinstance(raw, list):
        return None
    managers: dict[_Manager, _Entry] = {}
    for item in raw:
        if not isinstance(item, dict):
            return None
        manager, operation = item.get("manager", ""), item.get("operation")
        api_version, subresource = item.get("apiVersion", ""), item.get("subresource", "")
        fields_v1 = item.get("fieldsV1", {})
        if (
            not isinstance(manager, str)
            or operation not in (APPLY, UPDATE)
            or not isinstance(api_version, str)
            or not isinstance(subresource, str)
            or item.get("fieldsType") != "FieldsV1"
            or not isinstance(fields_v1, dict)
        ):
            return None
        time = item.get("time")
        managers[_identity(manager, operation, subresource, api_version)] = _Entry(
            api_version, time if isinstance(time, str) else None, fp.from_fields_v1(fields_v1), item
        )
    return managers


def _is_reset(raw: Any) -> bool:
    """Kube's request to clear managedFields: ``[]`` or ``[{}]``."""
    if raw == []:
        return True
    return (
        isinstance(raw, list)
        and len(raw) == 1
        and isinstance(raw[0], dict)
        and all(v is None or v == "" for v in raw[0].values())
    )


def _encode(managers: Mapping[_Manager, _Entry]) -> list[dict[str, Any]]:
    """Entries with fields, in kube's order: operation, time, manager, apiVersion, subresource."""
    live = [(m, e) for m, e in managers.items() if e.fields]
    live.sort(
        key=lambda me: (
            me[0].operation,
            me[1].time or "",
            me[0].manager,
            me[1].api_version,
            me[0].subresource,
        )
    )
    return [_encode_entry(m, e) for m, e in live]


def _encode_entry(manager: _Manager, entry: _Entry) -> dict[str, Any]:
    if entry.raw is not None:
        return _copy(entry.raw)
    out: dict[str, Any] = {
        "manager": manager.manager,
        "operation": manager.operation,
        "apiVersion": entry.api_version,
    }
    if entry.time is not None:
        out["time"] = entry.time
    out["fieldsType"] = "FieldsV1"
    out["fieldsV1"] = fp.to_fields_v1(entry.fields)
    if manager.subresource:
        out["subresource"] = manager.subresource
    return out


def _take(managers: dict[_Manager, _Entry], manager: _Manager, paths: set[Path]) -> None:
    """Remove ``paths`` from one manager's set, marking the entry for re-encoding."""
    entry = managers[manager]
    if paths & entry.fields:
        entry.fields = entry.fields - paths
        entry.raw = None


def _sets(managers: Mapping[_Manager, _Entry]) -> dict[_Manager, tuple[str, set[Path]]]:
    return {m: (e.api_version, e.fields) for m, e in managers.items() if e.fields}


def _managed_fields(obj: Mapping[str, Any] | None) -> Any:
    metadata = obj.get("metadata") if obj is not None else None
    return metadata.get("managedFields") if isinstance(metadata, dict) else None


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without managedFields: new top-level and metadata maps, every other part
    shared (nothing here edits below metadata, and a diff skips a part both sides share)."""
    out = dict(obj)
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        out["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return out


def _with_managed_fields(obj: dict[str, Any], managers: Mapping[_Manager, _Entry]) -> dict:
    encoded = _encode(managers)
    metadata = obj.get("metadata")
    if encoded:
        if not isinstance(metadata, dict):
            metadata = obj["metadata"] = {}
        metadata["managedFields"] = encoded
    elif isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def _api_version(*objects: Mapping[str, Any] | None) -> str:
    for obj in objects:
        version = obj.get("apiVersion") if obj is not None else None
        if isinstance(version, str) and version:
            return version
    return ""


# ---------------------------------------------------------------------------------------------
# The two operations


def apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    *,
    force: bool,
    now: str,
    list_keys: ListKeys | None = None,
    subresource: str | None = None,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``live`` (None: create it), as an
    object of its own: neither argument is edited.

    Raises :class:`ApplyConflict` when the result would change fields other managers own and
    ``force`` is false; with ``force`` those fields move to this manager. An apply that changes
    nothing returns ``live`` as it was, timestamps included, so the store can skip the write.
    """
    lk = list_keys or fs.default_list_keys
    applied = _applied_config(config, creating=live is None)
    base = _without_managed_fields(live) if live is not None else {}
    managers = _decode(_managed_fields(live)) or {}
    before = _sets(managers)
    me = _identity(manager, APPLY, subresource, "")
    last = managers[me].fields if me in managers else set()
    new_set = fields_of(applied, lk)
    managers[me] = _Entry(_api_version(config, live), now, new_set)
    merged = _merge(base, applied, (), lk)
    if last:
        keep: set[Path] = set()
        for entry in managers.values():
            keep |= entry.fields
        _prune(merged, last - keep, keep, lk)

    diff = _changes(base, merged, lk)
    changed = diff.added | diff.modified
    conflicts = {m: e.fields & changed for m, e in managers.items() if m != me}
    conflicts = {m: paths for m, paths in conflicts.items() if paths}
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for other in managers:
        if other != me:
            _take(managers, other, conflicts.get(other, set()) | diff.removed)

    if live is not None and fs.json_equal(merged, base) and _sets(managers) == before:
        return _copy(live)
    return _with_managed_fields(merged, managers)


def _applied_config(config: Mapping[str, Any], *, creating: bool) -> dict[str, Any]:
    """The configuration without what apply never takes from it.

    managedFields and server-set metadata are the server's; when the object exists, its name,
    namespace, apiVersion and kind are too (the registry checks that the request matches).
    """
    applied = _copy(dict(config))
    dropped = _UNOWNED_METADATA - (_IDENTITY_METADATA if creating else frozenset())
    if not creating:
        applied.pop("apiVersion", None)
        applied.pop("kind", None)
    metadata = applied.get("metadata")
    if not isinstance(metadata, dict):
        applied.pop("metadata", None)
        return applied
    for name in dropped:
        metadata.pop(name, None)
    return applied


def _conflict_error(conflicts: Mapping[_Manager, set[Path]]) -> ApplyConflict:
    """kube-apiserver's conflict error: the message and causes of ``NewConflictError``."""
    ordered = sorted(conflicts, key=_Manager.identifier)
    pairs = [(m, p) for m in ordered for p in fp.iteration_order(conflicts[m])]
    causes = [
        {
            "reason": CONFLICT_CAUSE,
            "message": f"conflict with {m.describe()}",
            "field": fp.path_string(p),
        }
        for m, p in pairs
    ]
    if len(pairs) == 1:
        manager, path = pairs[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {manager.describe()}: "
            f"{fp.path_string(path)}"
        )
    else:
        lines = []
        for m in ordered:
            lines.append(f"conflicts with {m.describe()}:")
            lines.extend(f"- {fp.path_string(p)}" for p in fp.iteration_order(conflicts[m]))
        message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    return ApplyConflict(message, [(m.manager, fp.path_string(p)) for m, p in pairs], causes)


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    *,
    operation: str,
    now: str,
    subresource: str | None = None,
    list_keys: ListKeys | None = None,
) -> dict[str, Any]:
    """``new`` with managedFields recording that ``manager`` made this write (old None: create).

    The fields the write added or changed become the manager's and leave every other set,
    removed fields leave every set; its entry's time moves only if it took something. Call it
    with the object as it will be stored (after the strategy reset status or spec), so that
    only what really changed is recorded.

    As kube does, managedFields sent in ``new`` replace the stored ones (``[]`` or ``[{}]``
    clears them); unreadable ones, and any sent to a subresource, are ignored.
    """
    lk = list_keys or fs.default_list_keys
    managers = _managers_for_update(old, new, subresource)
    result = _without_managed_fields(new)
    if old is None and not managers:
        return _record_create(result, manager, operation, now, subresource, lk)
    diff = _changes(_without_managed_fields(old) if old is not None else {}, result, lk)
    taken = diff.added | diff.modified
    for other in managers:
        _take(managers, other, taken | diff.removed)
    if taken:
        me = _identity(manager, operation, subresource, _api_version(new, old))
        previous = managers[me].fields if me in managers else set()
        managers[me] = _Entry(_api_version(new, old), now, previous | taken)
    return _with_managed_fields(result, managers)


def _record_create(
    obj: dict[str, Any],
    manager: str,
    operation: str,
    now: str,
    subresource: str | None,
    lk: ListKeys,
) -> dict[str, Any]:
    """The common create: no managers yet, so the writer owns everything the object sets.

    The same result as diffing against an empty object and encoding the path set, built in
    one walk: creates are the API server's hottest write, and the general route spent half
    of a create's time building and re-encoding path sets.
    """
    fields_v1: dict[str, Any] = {}
    for name, child in obj.items():
        if name in ("apiVersion", "kind"):
            continue
        if name == "metadata":
            if isinstance(child, dict):
                owned = {
                    fp.field(k): _member_fields_v1(v, ("metadata", k), lk)
                    for k, v in child.items()
                    if k not in _UNOWNED_METADATA
                }
                if owned:
                    fields_v1[fp.field(name)] = _sorted_elements(owned)
            continue
        fields_v1[fp.field(name)] = _member_fields_v1(child, (name,), lk)
    if not fields_v1:
        return obj
    api_version = _api_version(obj)
    entry = _encode_entry(
        _identity(manager, operation, subresource, api_version),
        _Entry(api_version, now, set()),
    )
    entry["fieldsV1"] = _sorted_elements(fields_v1)
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    obj["metadata"]["managedFields"] = [entry]
    return obj


def _member_fields_v1(item: Any, names: tuple[str, ...], lk: ListKeys) -> dict[str, Any]:
    """FieldsV1 of a node that is itself a member, with everything below it (``fieldsets``'
    rules: map fields, and the items of keyed lists and sets; atomic lists have none)."""
    children: dict[str, Any] = {}
    if isinstance(item, dict):
        for name, child in item.items():
            children[fp.field(name)] = _member_fields_v1(child, (*names, name), lk)
    elif isinstance(item, list):
        elements = fs.item_elements(item, lk(names)) or []
        for element, child in zip(elements, item, strict=False):
            children[element] = _member_fields_v1(child, names, lk)
    if not children:
        return {}
    return {fp.SELF: {}, **_sorted_elements(children)}


def _sorted_elements(children: dict[str, Any]) -> dict[str, Any]:
    return {element: children[element] for element in sorted(children, key=fp.element_order)}


def _managers_for_update(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], subresource: str | None
) -> dict[_Manager, _Entry]:
    stored = _decode(_managed_fields(old)) or {}
    if subresource:
        return stored
    sent = _managed_fields(new)
    if _is_reset(sent):
        return {}
    decoded = _decode(sent)
    return decoded if decoded else stored
