"""The three PATCH formats of kube-apiserver, applied to JSON values.

- JSON merge patch (RFC 7386, ``application/merge-patch+json``): :func:`merge_patch`.
- JSON patch (RFC 6902, ``application/json-patch+json``): :func:`json_patch`.
- Strategic merge patch (``application/strategic-merge-patch+json``) for the built-in kinds
  this server serves: :func:`strategic_merge_patch`, :func:`supports_strategic`. The merge
  follows ``k8s.io/apimachinery/pkg/util/strategicpatch`` (server side, ``mergeMap``), and which
  lists merge, and on which key, comes from the ``patchStrategy`` / ``patchMergeKey`` tags of
  the Kubernetes API types, copied into :data:`LIST_STRATEGIES`.

Every function is pure: inputs are never mutated, and results share no mutable part with them,
so a caller may edit a result freely. Failures raise :class:`PatchError` (the patch cannot be
applied to this document: kube answers 422) or its subclass :class:`PatchFormatError` (the
patch document is malformed: kube answers 400); choosing the HTTP answer is the server's job.
This module does no I/O and knows nothing of resources beyond the table of list strategies.
At about 850 lines it is one concept, kept whole: the PATCH formats share their error types,
their copying rules and the pointer walk, and a reader of one format's rules needs the others'.
It sits below every layer because the API server is not its only user: the TrainJob
controller applies a TrainJob's pod-template overrides, which are strategic merge patches of
a ``PodTemplateSpec`` and an ``ObjectMeta``, by the same rules, through :data:`POD_TEMPLATE`
and :data:`OBJECT_META`, the tables of those two fragments.

Error tree::

    ValueError
    └── PatchError
        └── PatchFormatError
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kubetrain import gofmt


class PatchError(ValueError):
    """The patch cannot be applied to the document (a failed test, a missing path, ...)."""


class PatchFormatError(PatchError):
    """The patch document is not of the form its patch type requires."""


_F = TypeVar("_F", bound=Callable[..., Any])


def _bounded(function: _F) -> _F:
    # Pathologically deep documents exhaust Python's stack; that is the patch's fault.
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except RecursionError:
            raise PatchError("the document or patch is nested too deeply") from None

    return wrapper  # type: ignore[return-value]


def _clone(value: Any) -> Any:
    """A deep copy of a JSON value (faster than ``copy.deepcopy`` for plain JSON)."""
    if isinstance(value, dict):
        return {key: _clone(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clone(item) for item in value]
    return value


def _json_equal(left: Any, right: Any) -> bool:
    """JSON equality as RFC 6902 ``test`` defines it: numbers by value, true is not 1."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_json_equal, left, right))
    return type(left) is type(right) and left == right


# --------------------------------------------------------------------------------------------
# JSON merge patch (RFC 7386).


@_bounded
def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch: objects merge key by key, null deletes a key, and any
    other patch value (a list, a string, null itself) replaces the target outright."""
    return _merge(_clone(target), patch)


def _merge(target: Any, patch: Any) -> Any:
    # ``target`` is owned (already a copy); ``patch`` is only read.
    if not isinstance(patch, dict):
        return _clone(patch)
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value)
    return target


# --------------------------------------------------------------------------------------------
# JSON patch (RFC 6902) with JSON pointers (RFC 6901).

_MISSING: Final = object()


@_bounded
def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 patch: a list of add, remove, replace, move, copy and test operations,
    in order, all or nothing. Paths are JSON pointers (``~1`` is "/", ``~0`` is "~"; "-" after
    a list's path appends to it)."""
    if not isinstance(operations, list):
        raise PatchFormatError("a JSON patch must be a list of operations")
    document = _clone(target)
    for operation in operations:
        if not isinstance(operation, dict):
            shown = _go(operation)
            raise PatchFormatError(f"a JSON patch operation must be an object, not {shown}")
        document = _apply_operation(document, operation)
    return document


def _apply_operation(document: Any, operation: dict[str, Any]) -> Any:
    op = operation.get("op")
    if op == "add":
        path = _pointer(operation, "path")
        return _add(document, path, _value(operation), op)
    if op == "remove":
        path = _pointer(operation, "path")
        if not path:
            raise PatchError("remove operation does not apply: cannot remove the whole document")
        parent, token = _parent(document, path, op)
        _remove(parent, token, path, op)
        return document
    if op == "replace":
        path = _pointer(operation, "path")
        value = _value(operation)
        if not path:
            return value
        parent, token = _parent(document, path, op)
        if isinstance(parent, dict):
            parent[token] = value  # a missing key reads as null: kube sets it (see _get_value)
        else:
            parent[_index(parent, token, path, op, allow_end=False)] = value
        return document
    if op in ("move", "copy"):
        source = _pointer(operation, "from")
        path = _pointer(operation, "path")
        value = _get_value(document, source)
        if value is _MISSING:
            shown = _show(source)
            raise PatchError(f"{op} operation does not apply: doc is missing from path: {shown}")
        if op == "move":
            if path[: len(source)] == source and len(path) > len(source):
                raise PatchError(
                    f"move operation does not apply: {_show(path)} is inside {_show(source)}"
                )
            if path == source:
                return document
            parent, token = _parent(document, source, op)
            _remove(parent, token, source, op)
        else:
            value = _clone(value)  # the copy must not alias its source
        return _add(document, path, value, op)
    if op == "test":
        path = _pointer(operation, "path")
        expected = _value(operation)
        actual = _get_value(document, path)
        if actual is _MISSING:
            raise PatchError(f"test operation does not apply: is missing path: {_show(path)}")
        if not _json_equal(actual, expected):
            raise PatchError(f"testing value {_show(path)} failed: test failed")
        return document
    raise PatchError(f"Unexpected kind: {op if isinstance(op, str) else 'unknown'}")


def _value(operation: dict[str, Any]) -> Any:
    if "value" not in operation:
        raise PatchError(f"{operation['op']} operation: missing value field")
    return _clone(operation["value"])


def _pointer(operation: dict[str, Any], member: str) -> list[str]:
    """Split a JSON pointer member into unescaped reference tokens ("" is the whole doc)."""
    text = operation.get(member)
    if not isinstance(text, str):
        raise PatchError(f"{operation['op']} operation: missing {member} field")
    if text == "":
        return []
    if not text.startswith("/"):
        raise PatchError(f'invalid JSON pointer "{text}": it must be empty or start with "/"')
    tokens = text[1:].split("/")
    for token in tokens:
        rest = token.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise PatchError(f'invalid JSON pointer "{text}": "~" must be followed by 0 or 1')
    return [token.replace("~1", "/").replace("~0", "~") for token in tokens]


def _show(tokens: list[str]) -> str:
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens)


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")  # RFC 6901: no sign, no leading zero


def _index(array: list[Any], token: str, path: list[str], op: str, *, allow_end: bool) -> int:
    """A list index from a reference token, in range ("-" is the end, where allowed)."""
    if token == "-" and allow_end:
        return len(array)
    if not _ARRAY_INDEX.fullmatch(token):
        shown = _show(path)
        raise PatchError(f"{op} operation does not apply: {shown}: {token!r} is not a list index")
    index = int(token)
    if index > len(array) or (index == len(array) and not allow_end):
        raise PatchError(
            f"{op} operation does not apply: {_show(path)}: "
            f"Unable to access invalid index: {index}: invalid index referenced"
        )
    return index


def _get(document: Any, path: list[str]) -> Any:
    node = document
    for token in path:
        if isinstance(node, dict):
            if token not in node:
                return _MISSING
            node = node[token]
        elif isinstance(node, list):
            if not _ARRAY_INDEX.fullmatch(token) or int(token) >= len(node):
                return _MISSING
            node = node[int(token)]
        else:
            return _MISSING
    return node


def _get_value(document: Any, path: list[str]) -> Any:
    """The value an operation reads at ``path``, as kube's JSON patch library reads it: a key
    missing from an object that exists is null (so ``replace`` adds it, ``copy`` copies null
    and ``test`` against null passes), while a missing object or list item is missing."""
    if not path:
        return document
    parent = _get(document, path[:-1])
    if isinstance(parent, dict):
        return parent.get(path[-1])
    return _get(parent, path[-1:]) if isinstance(parent, list) else _MISSING


def _missing_path(op: str, path: list[str]) -> PatchError:
    return PatchError(
        f'{op} operation does not apply: doc is missing path: "{_show(path)}": missing value'
    )


def _parent(document: Any, path: list[str], op: str) -> tuple[Any, str]:
    parent = _get(document, path[:-1])
    if not isinstance(parent, dict | list):
        raise _missing_path(op, path)
    return parent, path[-1]


def _add(document: Any, path: list[str], value: Any, op: str) -> Any:
    if not path:
        return value
    parent, token = _parent(document, path, op)
    if isinstance(parent, dict):
        parent[token] = value
    else:
        parent.insert(_index(parent, token, path, op, allow_end=True), value)
    return document


def _remove(parent: Any, token: str, path: list[str], op: str) -> None:
    if isinstance(parent, dict):
        if token not in parent:
            raise _missing_path(op, path)
        del parent[token]
    else:
        del parent[_index(parent, token, path, op, allow_end=False)]


# --------------------------------------------------------------------------------------------
# Strategic merge patch: the table.


@dataclass(frozen=True)
class ListStrategy:
    """A list field's ``patchStrategy`` tag as written in Go ("merge", "merge,retainKeys")
    and its ``patchMergeKey`` (None for a list of scalars merged as a set)."""

    patch_strategy: str
    merge_key: str | None = None

    @property
    def merges(self) -> bool:
        return "merge" in self.patch_strategy.split(",")


def _by(merge_key: str, patch_strategy: str = "merge") -> ListStrategy:
    return ListStrategy(patch_strategy, merge_key)


_SET = ListStrategy("merge")  # a list of strings merged as a set (finalizers, podCIDRs)


def _under(prefix: str, fields: Mapping[str, ListStrategy]) -> dict[str, ListStrategy]:
    return {f"{prefix}.{path}": strategy for path, strategy in fields.items()}


# Paths are dotted field names from the object's root; a list's items add no segment, so
# "spec.containers.env" is the env list of every container. Lists not named here have no
# patch strategy and are replaced whole; maps always merge key by key.
_OBJECT_META = {
    "metadata.finalizers": _SET,
    "metadata.ownerReferences": _by("uid"),
}
_CONTAINER = {  # Container and EphemeralContainerCommon carry the same tags
    "ports": _by("containerPort"),
    "env": _by("name"),
    "volumeMounts": _by("mountPath"),
    "volumeDevices": _by("devicePath"),
}
_POD_SPEC = {
    "volumes": _by("name", "merge,retainKeys"),
    "initContainers": _by("name"),
    "containers": _by("name"),
    "ephemeralContainers": _by("name"),
    "imagePullSecrets": _by("name"),
    "hostAliases": _by("ip"),
    "topologySpreadConstraints": _by("topologyKey"),
    "schedulingGates": _by("name"),
    "resourceClaims": _by("name", "merge,retainKeys"),
    **_under("initContainers", _CONTAINER),
    **_under("containers", _CONTAINER),
    **_under("ephemeralContainers", _CONTAINER),
}
_POD_STATUS = {
    "conditions": _by("type"),
    "podIPs": _by("ip"),
    "hostIPs": _by("ip"),
    "resourceClaimStatuses": _by("name", "merge,retainKeys"),
}
_CONDITIONS_BY_TYPE = {"status.conditions": _by("type")}


def _kind(*tables: Mapping[str, ListStrategy]) -> dict[tuple[str, ...], ListStrategy]:
    merged: dict[str, ListStrategy] = {}
    for table in (_OBJECT_META, *tables):
        merged.update(table)
    return {tuple(path.split(".")): strategy for path, strategy in merged.items()}


LIST_STRATEGIES: Final[Mapping[str, Mapping[tuple[str, ...], ListStrategy]]] = {
    "v1/Pod": _kind(_under("spec", _POD_SPEC), _under("status", _POD_STATUS)),
    "v1/Service": _kind({"spec.ports": _by("port")}, _CONDITIONS_BY_TYPE),
    "v1/ConfigMap": _kind(),
    "v1/Secret": _kind(),
    "v1/Namespace": _kind(_CONDITIONS_BY_TYPE),
    "v1/Node": _kind({"spec.podCIDRs": _SET, "status.addresses": _by("type")}, _CONDITIONS_BY_TYPE),
    "v1/ServiceAccount": _kind({"secrets": _by("name")}),
    "v1/Event": _kind(),
    "v1/PersistentVolumeClaim": _kind(_CONDITIONS_BY_TYPE),
    "v1/ResourceQuota": _kind(),
    "v1/LimitRange": _kind(),
    "coordination.k8s.io/v1/Lease": _kind(),
    "scheduling.k8s.io/v1/PriorityClass": _kind(),
    "autoscaling/v2/HorizontalPodAutoscaler": _kind(_CONDITIONS_BY_TYPE),
    "events.k8s.io/v1/Event": _kind(),
    "rbac.authorization.k8s.io/v1/Role": _kind(),
    "rbac.authorization.k8s.io/v1/ClusterRole": _kind(),
    "rbac.authorization.k8s.io/v1/RoleBinding": _kind(),
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": _kind(),
    "apiextensions.k8s.io/v1/CustomResourceDefinition": _kind(),
}
"""List strategies per kind (``<group>/<version>/<Kind>``, core kinds as ``v1/<Kind>``)."""


POD_TEMPLATE: Final = "v1/PodTemplateSpec"
OBJECT_META: Final = "meta/v1/ObjectMeta"
_FRAGMENTS: Final[Mapping[str, Mapping[tuple[str, ...], ListStrategy]]] = {
    POD_TEMPLATE: _kind(_under("spec", _POD_SPEC)),
    OBJECT_META: {tuple(path.split("."))[1:]: s for path, s in _OBJECT_META.items()},
}
"""Parts of objects patched on their own (no kind of the server: :func:`supports_strategic`
says no to them)."""


def supports_strategic(kind_key: str) -> bool:
    """Whether strategic merge patch applies to this kind: only built-in kinds carry the
    tags it needs, so kube answers 415 for custom resources, and so should the server."""
    return kind_key in LIST_STRATEGIES


# --------------------------------------------------------------------------------------------
# Strategic merge patch: the merge.

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM = "$deleteFromPrimitiveList"
_SET_ORDER = "$setElementOrder"

_MAP = gofmt.GO_MAP
_go = gofmt.go_v  # values and types in messages, as Go prints them
_go_type = gofmt.go_type

_ERR_RETAIN_KEYS = "invalid patch format of retainKeys"
_ERR_PRIMITIVE_LIST = "invalid patch format of primitive list"
_ERR_SET_ORDER = "invalid patch format of setElementOrder list"


@_bounded
def strategic_merge_patch(
    target: dict[str, Any], patch: dict[str, Any], kind_key: str, *, new_items_last: bool = False
) -> dict[str, Any]:
    """Apply a strategic merge patch to an object of a built-in kind.

    Like a merge patch, but lists tagged ``patchStrategy: merge`` merge item by item on their
    merge key (or as a set, for lists of strings), and the patch may carry directives:
    ``$patch: replace | delete`` in a map or as a list item, ``$retainKeys``,
    ``$deleteFromPrimitiveList/<list>`` and ``$setElementOrder/<list>``. Raises
    :class:`PatchError` for an unsupported kind: check :func:`supports_strategic` first.

    ``new_items_last``: a merged list keeps the live order and gets the items new to it at its
    end, in the patch's order (how a TrainJob's overrides have always added env vars and
    containers, so that an added variable may refer to the runtime's), instead of kube's
    server order, which puts new items first and the patch's items in the patch's order.
    """
    table = LIST_STRATEGIES.get(kind_key) or _FRAGMENTS.get(kind_key)
    if table is None:
        raise PatchError(f"strategic merge patch is not supported for {kind_key}")
    if not isinstance(target, dict):
        raise PatchError(f"the object to patch must be a JSON object, not {_go(target)}")
    if not isinstance(patch, dict):
        raise PatchFormatError("a strategic merge patch must be a JSON object")
    merger = _StrategicMerge(table, new_items_last=new_items_last)
    return merger.merge_map(_clone(target), _clone(patch), ())


def _expected(expected: str, value: Any) -> PatchError:
    return PatchError(f"expected a {expected}, but received a {_go_type(value)}")


def _no_merge_key(item: Mapping[str, Any], merge_key: str) -> PatchError:
    return PatchError(f"map: {_go(dict(item))} does not contain declared merge key: {merge_key}")


def _same(left: Any, right: Any) -> bool:
    """Go's ``==`` on decoded JSON: same type and value (1 and 1.0 and true all differ)."""
    return type(left) is type(right) and _json_equal(left, right)


def _strip(value: Any) -> Any:
    """Drop directives from patch content stored as is (kube decodes such content into typed
    structs, which have no ``$`` fields), and null map entries, which unset nothing."""
    if isinstance(value, dict):
        if value.get(_DIRECTIVE) == "delete":
            return {}
        return {
            key: _strip(item)
            for key, item in value.items()
            if item is not None and not _is_directive(key)
        }
    if isinstance(value, list):
        return [
            _strip(item) for item in value if not (isinstance(item, dict) and _DIRECTIVE in item)
        ]
    return value


def _is_directive(key: str) -> bool:
    return key in (_DIRECTIVE, _RETAIN_KEYS) or key.startswith((_DELETE_FROM, _SET_ORDER))


def _extract_key(key: str, prefix: str, error: str) -> str:
    head, slash, rest = key.partition("/")
    if not slash or head != prefix:
        raise PatchFormatError(error)
    return rest


def _find_map(items: list[Any], merge_key: str, value: Any) -> int | None:
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PatchError(f"value for key {i} is not a map.")
        if merge_key in item and _same(item[merge_key], value):
            return i
    return None


def _element_kind(*lists: list[Any]) -> str | None:
    """The one Go type shared by every item of the lists, as kube's ``sliceElementType``."""
    kind: str | None = None
    for item in (item for items in lists for item in items):
        item_kind = _go_type(item)
        if kind is None:
            if isinstance(item, list):
                raise PatchError("lists of lists are not supported")
            kind = item_kind
        elif item_kind != kind:
            raise PatchError(f"list element types are not identical: {_go(list(lists))}")
    return kind


class _StrategicMerge:
    """kube's server-side ``mergeMap`` over one kind's table; works on owned copies."""

    def __init__(
        self, table: Mapping[tuple[str, ...], ListStrategy], *, new_items_last: bool = False
    ) -> None:
        self.table = table
        self.new_items_last = new_items_last

    def strategy(self, path: tuple[str, ...]) -> ListStrategy | None:
        return self.table.get(path)

    def merge_map(
        self, original: dict[str, Any], patch: dict[str, Any], path: tuple[str, ...]
    ) -> dict[str, Any]:
        if _DIRECTIVE in patch:
            directive = patch[_DIRECTIVE]
            if directive == "replace":  # the map is the patch, literally
                return _strip({k: v for k, v in patch.items() if k != _DIRECTIVE})
            if directive == "delete":  # the map becomes empty
                return {}
            raise PatchError(f"unknown patch type: {_go(directive)} in map: {_go(patch)}")
        self.apply_retain_keys(original, patch)
        self.apply_element_order(original, patch, path)
        for key, patch_value in list(patch.items()):
            is_delete_list = key.startswith(_DELETE_FROM)
            if is_delete_list:
                key = _extract_key(key, _DELETE_FROM, _ERR_PRIMITIVE_LIST)
                if patch_value is not None and not isinstance(patch_value, list):
                    raise PatchFormatError(_ERR_PRIMITIVE_LIST)
            if patch_value is None:  # null deletes the key
                original.pop(key, None)
                continue
            current = original.get(key)
            child = (*path, key)
            if is_delete_list:  # nothing to delete from an absent list
                if isinstance(current, list):
                    original[key] = self.merge_list_field(current, patch_value, child, True)
            elif key not in original or type(current) is not type(patch_value):
                original[key] = _strip(patch_value)
            elif isinstance(current, dict):
                original[key] = self.merge_map(current, patch_value, child)
            elif isinstance(current, list):
                original[key] = self.merge_list_field(current, patch_value, child, False)
            else:
                original[key] = patch_value
        return original

    def merge_list_field(
        self, original: list[Any], patch: list[Any], path: tuple[str, ...], is_delete_list: bool
    ) -> list[Any]:
        strategy = self.strategy(path)
        if strategy is not None and strategy.merges:
            return self.merge_list(original, patch, strategy.merge_key or "", path, is_delete_list)
        if is_delete_list:  # deletion from an atomic list still only deletes
            return [item for item in original if not any(_same(item, d) for d in patch)]
        return _strip(patch)  # no strategy: the list is replaced whole

    def apply_retain_keys(self, original: dict[str, Any], patch: dict[str, Any]) -> None:
        """``$retainKeys: [a, b]``: keys of the map not listed are cleared."""
        if _RETAIN_KEYS not in patch:
            return
        retain = patch.pop(_RETAIN_KEYS)
        if not isinstance(retain, list):
            raise PatchFormatError(_ERR_RETAIN_KEYS)
        keep = {item for item in retain if isinstance(item, str)}
        for key, value in patch.items():
            if value is None or key.startswith((_DELETE_FROM, _SET_ORDER)):
                continue
            if key not in keep:  # the patch sets a key it asks to clear
                raise PatchFormatError(_ERR_RETAIN_KEYS)
        for key in [key for key in original if key not in keep]:
            del original[key]

    def apply_element_order(
        self, original: dict[str, Any], patch: dict[str, Any], path: tuple[str, ...]
    ) -> None:
        """``$setElementOrder/<list>``: merge that list, then order it as the directive says;
        items only the server has keep their place relative to the live list."""
        for directive in [key for key in patch if key.startswith(_SET_ORDER)]:
            order = patch.pop(directive)
            if not isinstance(order, list):
                raise _expected("[]interface {}", order)
            key = _extract_key(directive, _SET_ORDER, _ERR_SET_ORDER)
            found_original, found_patch = key in original, key in patch
            original_list = original.get(key) if found_original else []
            patch_list = patch.get(key) if found_patch else []
            if not isinstance(original_list, list):
                raise _expected("[]interface {}", original_list)
            if not isinstance(patch_list, list):
                raise _expected("[]interface {}", patch_list)
            child = (*path, key)
            strategy = self.strategy(child)
            merge_key = (strategy.merge_key or "") if strategy is not None else ""
            _check_order(patch_list, order, merge_key)
            if found_original and found_patch:
                merged = self.merge_list_field(original_list, patch_list, child, False)
            elif found_patch:
                merged = self.merge_list_field([], patch_list, child, False)
            elif found_original:
                merged = original_list
            else:
                continue
            kind = _element_kind(original_list, merged)
            if kind is not None:
                if merge_key:
                    patch_items, server_only = _partition_maps(merged, order, merge_key)
                else:
                    patch_items, server_only = _partition_scalars(merged, order)
                merged = _normalize_order(
                    patch_items,
                    server_only,
                    order,
                    original_list,
                    merge_key,
                    kind,
                    new_items_last=self.new_items_last,
                )
            original[key] = merged
            patch.pop(key, None)

    def merge_list(
        self,
        original: list[Any],
        patch: list[Any],
        merge_key: str,
        path: tuple[str, ...],
        is_delete_list: bool,
    ) -> list[Any]:
        """kube's ``mergeSlice``: scalars as a set, maps by merge key, then ordered: patch
        items in patch order, server-only items where the live list had them."""
        if not original and not patch:
            return original
        kind = _element_kind(original, patch)
        if kind != _MAP:
            if is_delete_list:
                return [item for item in original if not any(_same(item, d) for d in patch)]
            merged: list[Any] = []
            for item in [*original, *patch]:
                if not any(_same(item, seen) for seen in merged):
                    merged.append(item)
        else:
            if not merge_key:
                raise PatchError(f"cannot merge lists without merge key for {'.'.join(path)}")
            original, patch = self.apply_list_directives(original, patch, merge_key)
            merged = list(original)  # ``original`` stays the live order
            for item in patch:
                if merge_key not in item:
                    raise _no_merge_key(item, merge_key)
                at = _find_map(merged, merge_key, item[merge_key])
                if at is None:
                    merged.append(_strip(item))
                else:
                    merged[at] = self.merge_map(merged[at], item, path)
        if merge_key:
            patch_items, server_only = _partition_maps(merged, patch, merge_key)
        else:
            patch_items, server_only = _partition_scalars(merged, patch)
        return _normalize_order(
            patch_items,
            server_only,
            patch,
            original,
            merge_key,
            kind,
            new_items_last=self.new_items_last,
        )

    def apply_list_directives(
        self, original: list[Any], patch: list[Any], merge_key: str
    ) -> tuple[list[Any], list[Any]]:
        """List items ``{$patch: delete, <key>: v}`` remove matching items; an item
        ``{$patch: replace}`` makes the list exactly the patch's other items."""
        plain: list[Any] = []
        replace = False
        for item in patch:
            if _DIRECTIVE not in item:
                plain.append(item)
                continue
            directive = item[_DIRECTIVE]
            if directive == "delete":
                if merge_key not in item:
                    raise _no_merge_key(item, merge_key)
                original = [
                    kept
                    for kept in original
                    if not (merge_key in kept and _same(kept[merge_key], item[merge_key]))
                ]
            elif directive == "replace":
                replace = True
            elif directive == "merge":
                raise PatchError("merging lists cannot yet be specified in the patch")
            else:
                raise PatchError(f"unknown patch type: {_go(directive)} in map: {_go(item)}")
        if replace:
            return [_strip(item) for item in plain], []
        return original, plain


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list's items must appear in ``$setElementOrder`` and in the same order."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise _expected(_MAP, item)
        items = [item for item in patch_list if item.get(_DIRECTIVE) != "delete"]
    patch_index = order_index = 0
    while patch_index < len(items) and order_index < len(order):
        item = items[patch_index]
        if isinstance(item, dict) and _DIRECTIVE in item:
            patch_index += 1
            continue
        if _merge_key_equal(item, order[order_index], merge_key):
            patch_index += 1
        order_index += 1
    if patch_index < len(items):
        raise PatchError(
            f"The order in patch list:\n{_go(patch_list)}\n doesn't match "
            f"{_SET_ORDER} list:\n{_go(order)}\n"
        )


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise _expected(_MAP, item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
    return _same(left[merge_key], right[merge_key])


def _partition_maps(
    merged: list[Any], by: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    present: list[Any] = []
    absent: list[Any] = []
    for item in merged:
        if not isinstance(item, dict):
            raise _expected(_MAP, item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        found = _find_map(by, merge_key, item[merge_key]) is not None
        (present if found else absent).append(item)
    return present, absent


def _partition_scalars(merged: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    present = [item for item in merged if any(_same(item, other) for other in by)]
    absent = [item for item in merged if not any(_same(item, other) for other in by)]
    return present, absent


def _index_in(items: list[Any], value: Any, merge_key: str, kind: str) -> int:
    def key_of(item: Any) -> Any:
        if kind == _MAP:
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    wanted = key_of(value)
    for i, item in enumerate(items):
        if _same(key_of(item), wanted):
            return i
    return -1


def _sort_by(items: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """Stable sort of ``items`` by their position in ``order``; map items marked
    ``$patch: delete`` go last. Every map in both lists must carry the merge key."""
    to_delete: list[Any] = []
    if kind == _MAP:
        for item in [*items, *order]:
            if not isinstance(item, dict):
                raise _expected(_MAP, item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
        to_delete = [item for item in items if item.get(_DIRECTIVE) == "delete"]
        items = [item for item in items if item.get(_DIRECTIVE) != "delete"]

    def position(item: Any) -> int:
        found = _index_in(order, item, merge_key, kind)
        return found if found >= 0 else len(order)

    return [*sorted(items, key=position), *to_delete]


def _normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
    *,
    new_items_last: bool = False,
) -> list[Any]:
    """Interleave patch items (in patch order) with server-only items (in live order); or,
    ``new_items_last``, the live list's items in live order, then the new ones in patch order.

    kube's ``mergeSortedSlice``: a server-only item goes before a patch item only when both
    are in the live list and it came first there, so items new to the list go before the
    server-only items that follow them (adding a container puts it first).
    """
    right = _sort_by(patch_items, patch_order, merge_key, kind)
    left = _sort_by(server_only, server_order, merge_key, kind)
    if new_items_last:

        def live_at(item: Any) -> int:
            return _index_in(server_order, item, merge_key, kind)

        live = sorted([*left, *(item for item in right if live_at(item) >= 0)], key=live_at)
        return live + [item for item in right if live_at(item) < 0]
    merged: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            merged.append(left[i])
            i += 1
        elif i >= len(left):
            merged.append(right[j])
            j += 1
        else:
            left_at = _index_in(server_order, left[i], merge_key, kind)
            right_at = _index_in(server_order, right[j], merge_key, kind)
            if left_at >= 0 and right_at >= 0 and left_at < right_at:
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[j])
                j += 1
    return merged
