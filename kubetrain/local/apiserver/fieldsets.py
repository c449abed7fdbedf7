"""What an object sets and what a write changed, as sets of field paths.

Owns the two walks server-side apply is built on, as structured-merge-diff defines them:
:func:`members` (kube's ``ToFieldSet``: the fields an applied configuration sets) and
:func:`compare` (kube's ``Compare``: what was added, modified and removed between two objects),
and the list types both depend on: which lists are associative (merged item by item on key
fields), which are sets of scalars, and which are atomic. :func:`default_list_keys` knows the
built-in kinds kubetrain serves; :func:`list_keys_from_schema` reads a CRD's markers.

Must not decide ownership, merge objects or touch managedFields (``apply`` does), and does no
I/O, clock or logging. Inputs are never mutated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubetrain.local.apiserver import fieldpaths as fp

ListKeys = Callable[[tuple[str, ...]], tuple[str, ...] | None]
"""Key fields of the list at a path of field names (list items not counted).

``None``: an atomic list. ``()``: a set of scalars (list-type set). Otherwise the key fields
of an associative list (list-type map).
"""

MISSING: Final = object()
"""Stands for an absent value, which differs from ``None`` (a JSON null)."""

# Key fields an item may omit, with the value the Kubernetes types default them to.
_KEY_DEFAULTS: Final = {"protocol": "TCP"}

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_LIST_KEYS_BY_SUFFIX: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
    ("metadata", "finalizers"): (),
    ("metadata", "ownerReferences"): ("uid",),
    ("conditions",): ("type",),
    ("spec", "volumes"): ("name",),
    ("spec", "imagePullSecrets"): ("name",),
    ("spec", "hostAliases"): ("ip",),
    ("spec", "topologySpreadConstraints"): ("topologyKey", "whenUnsatisfiable"),
    ("spec", "schedulingGates"): ("name",),
    ("spec", "resourceClaims"): ("name",),
    ("spec", "ports"): ("port", "protocol"),  # a Service's
    ("status", "podIPs"): ("ip",),
    ("status", "hostIPs"): ("ip",),
    ("status", "addresses"): ("type",),  # a Node's
    **{(c,): ("name",) for c in _CONTAINER_LISTS},
    **{(c, "ports"): ("containerPort", "protocol") for c in _CONTAINER_LISTS},
    **{(c, "env"): ("name",) for c in _CONTAINER_LISTS},
    **{(c, "volumeMounts"): ("mountPath",) for c in _CONTAINER_LISTS},
    **{(c, "volumeDevices"): ("devicePath",) for c in _CONTAINER_LISTS},
}
_LONGEST_SUFFIX = max(len(s) for s in _LIST_KEYS_BY_SUFFIX)


def default_list_keys(path: tuple[str, ...]) -> tuple[str, ...] | None:
    """List types of the built-in kinds, from the ``+listType`` markers of the Kubernetes types.

    Matched on the end of the path, so a pod template inside any object gets its pod's lists.
    Lists not named here are atomic, as kube treats lists without a marker.
    """
    for size in range(min(len(path), _LONGEST_SUFFIX), 0, -1):
        keys = _LIST_KEYS_BY_SUFFIX.get(path[-size:])
        if keys is not None:
            return keys
    return None


def list_keys_from_schema(schema: Mapping[str, Any]) -> ListKeys:
    """List types read from a structural schema (a CRD version's ``openAPIV3Schema``).

    Lists without ``x-kubernetes-list-type`` are atomic, as kube treats them in CRDs.
    """

    def list_keys(path: tuple[str, ...]) -> tuple[str, ...] | None:
        node: Any = schema
        for name in path:
            while isinstance(node, Mapping) and node.get("type") == "array":
                node = node.get("items")
            if not isinstance(node, Mapping):
                return None
            properties = node.get("properties")
            if isinstance(properties, Mapping) and name in properties:
                node = properties[name]
            else:
                node = node.get("additionalProperties")
        if not isinstance(node, Mapping):
            return None
        kind, keys = node.get("x-kubernetes-list-type"), node.get("x-kubernetes-list-map-keys")
        if kind == "set":
            return ()
        if kind == "map" and isinstance(keys, list) and keys:
            return tuple(str(k) for k in keys)
        return None

    return list_keys


def item_elements(items: list[Any], keys: tuple[str, ...] | None) -> list[str] | None:
    """The path elements naming a list's items, or None when the list is handled atomically.

    Kube rejects a keyed list it cannot key (an item that is not an object, a key field
    missing without a default, a duplicate); apply must not fail on one, so it is atomic here.
    """
    if keys is None:
        return None
    elements = []
    for item in items:
        if not keys:
            if isinstance(item, dict | list):
                return None
            elements.append(fp.value(item))
            continue
        if not isinstance(item, dict):
            return None
        fields = {}
        for name in keys:
            if name in item:
                fields[name] = item[name]
            elif name in _KEY_DEFAULTS:
                fields[name] = _KEY_DEFAULTS[name]
            else:
                return None
        elements.append(fp.key(fields))
    if len(set(elements)) != len(elements):
        return None
    return elements


def json_equal(left: Any, right: Any) -> bool:
    """Equality of JSON values: ``1 == 1.0`` but ``True != 1``, as kube compares them."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict | list) or isinstance(right, dict | list):
        return False
    return left == right and (
        type(left) is type(right) or {type(left), type(right)} == {int, float}
    )


def is_member(item: Any, names: tuple[str, ...], list_keys: ListKeys) -> bool:
    """Whether a value is itself a member of field sets, rather than only what it holds."""
    if isinstance(item, dict):
        return not item
    if isinstance(item, list):
        return item_elements(item, list_keys(names)) is None
    return True


def members(obj: Mapping[str, Any], list_keys: ListKeys) -> set[fp.Path]:
    """The fields an object sets, as kube's ``ToFieldSet`` counts them.

    Members are leaves (scalars, nulls, empty maps, atomic lists) and every item of a keyed
    list or set; a non-empty map is not itself a member, only what it holds, and neither is
    an empty keyed list.
    """
    out: set[fp.Path] = set()
    _members(obj, (), (), list_keys, out)
    return out


def _members(
    node: Mapping[str, Any],
    path: fp.Path,
    names: tuple[str, ...],
    list_keys: ListKeys,
    out: set[fp.Path],
) -> None:
    for name, child in node.items():
        child_path, child_names = (*path, fp.field(name)), (*names, name)
        if isinstance(child, dict) and child:
            _members(child, child_path, child_names, list_keys, out)
            continue
        elements = item_elements(child, list_keys(child_names)) if isinstance(child, list) else None
        if elements is None:
            out.add(child_path)
            continue
        for element, item in zip(elements, child, strict=True):
            out.add((*child_path, element))
            if isinstance(item, dict):
                _members(item, (*child_path, element), child_names, list_keys, out)


@dataclass
class Diff:
    """What changed between two objects, as kube's ``Compare`` reports it."""

    added: set[fp.Path] = field(default_factory=set)
    modified: set[fp.Path] = field(default_factory=set)
    removed: set[fp.Path] = field(default_factory=set)


def compare(old: Any, new: Any, list_keys: ListKeys) -> Diff:
    """Leaves that changed, and every node (map, list, item) that appeared or disappeared.

    A container that appears whole is itself Added (kube's post-item hook), which is why an
    Update that creates ``labels`` owns ``f:labels`` with ``"."`` while an Apply does not. A
    value that changes kind (a map becoming a string) is Modified, its old contents Removed.
    """
    diff = Diff()
    _compare(old, new, (), (), list_keys, diff)
    return diff


def _compare(
    old: Any, new: Any, path: fp.Path, names: tuple[str, ...], list_keys: ListKeys, diff: Diff
) -> None:
    if old is MISSING:
        _subtree(new, path, names, list_keys, diff.added)
        return
    if new is MISSING:
        _subtree(old, path, names, list_keys, diff.removed)
        return
    if old is new:  # one object on both sides (a status update shares the stored spec)
        return
    if isinstance(old, dict) and isinstance(new, dict) and (old or new):
        for name in {**old, **new}:
            _compare(
                old.get(name, MISSING),
                new.get(name, MISSING),
                (*path, fp.field(name)),
                (*names, name),
                list_keys,
                diff,
            )
        return
    if isinstance(old, list) and isinstance(new, list) and (old or new):
        keys = list_keys(names)
        old_elements, new_elements = item_elements(old, keys), item_elements(new, keys)
        if old_elements is not None and new_elements is not None:
            old_items = dict(zip(old_elements, old, strict=True))
            new_items = dict(zip(new_elements, new, strict=True))
            for element in {**old_items, **new_items}:
                old_item, new_item = (
                    old_items.get(element, MISSING),
                    new_items.get(element, MISSING),
                )
                _compare(old_item, new_item, (*path, element), names, list_keys, diff)
            return
    if not json_equal(old, new):
        if path:
            diff.modified.add(path)
        _below(old, path, names, list_keys, diff.removed)
        _below(new, path, names, list_keys, diff.added)


def _subtree(
    item: Any, path: fp.Path, names: tuple[str, ...], list_keys: ListKeys, out: set[fp.Path]
) -> None:
    if path:
        out.add(path)
    _below(item, path, names, list_keys, out)


def _below(
    item: Any, path: fp.Path, names: tuple[str, ...], list_keys: ListKeys, out: set[fp.Path]
) -> None:
    if isinstance(item, dict):
        for name, child in item.items():
            _subtree(child, (*path, fp.field(name)), (*names, name), list_keys, out)
    elif isinstance(item, list):
        elements = item_elements(item, list_keys(names)) or []
        for element, child in zip(elements, item[: len(elements)], strict=True):
            _subtree(child, (*path, element), names, list_keys, out)
