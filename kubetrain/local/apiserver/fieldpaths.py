"""Field paths of server-side apply, and their two spellings: FieldsV1 and kube's dotted form.

A field path names one node of an object: a field, an item of an associative list, or a value
of a set. It is a tuple of path elements, each spelt as in kube's FieldsV1 encoding::

    ("f:spec", "f:containers", 'k:{"name":"app"}', "f:image")   # a field of a keyed item
    ("f:metadata", "f:finalizers", 'v:"example.com/x"')          # a value of a set

so paths are hashable, read and written in managedFields without a schema, and equal when kube's
are equal: key and value elements are canonical JSON (sorted keys, integral numbers without a
fraction, Go's escaping), the form kube writes. A set of paths is what one manager owns.

This module owns that representation: building elements, :func:`to_fields_v1` and
:func:`from_fields_v1`, the human form used in conflict messages (:func:`path_string`,
``.spec.containers[name="app"].image``) and the order structured-merge-diff gives paths
(:func:`element_order`, :func:`iteration_order`), which managedFields and messages follow.
It must not know what objects mean (which lists are keyed, who owns what): ``apply`` does.
Pure: no I/O, no clock, no logging; inputs are never mutated.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kubetrain import gofmt

Path = tuple[str, ...]
"""A field path: FieldsV1 path elements from the object's root, the root itself excluded."""

SELF = "."
"""The FieldsV1 key marking that a node with children is itself a member of the set."""

# Go's encoding/json escapes these inside strings; kube writes keys and values through it.
_GO_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)
# Go prints a float64 without a fraction below this magnitude (strconv 'f' format).
_GO_PLAIN_FLOAT_LIMIT = 1e21


def field(name: str) -> str:
    """The element for a field of a map (``f:name``)."""
    return "f:" + name


def key(fields: Mapping[str, Any]) -> str:
    """The element for an associative-list item with these key fields (``k:{...}``)."""
    return "k:" + canonical_json(dict(fields))


def value(item: Any) -> str:
    """The element for an item of a set (``v:...``)."""
    return "v:" + canonical_json(item)


def key_fields(element: str) -> dict[str, Any]:
    """The key fields of a ``k:`` element; empty for any other element."""
    if not element.startswith("k:"):
        return {}
    parsed = _loads(element[2:])
    return parsed if isinstance(parsed, dict) else {}


def canonical_json(item: Any) -> str:
    """JSON as kube writes it in path elements, so equal values give equal elements.

    Integral floats lose their fraction (kube decodes ``80.0`` and ``80`` to the same number),
    map keys are sorted, and ``<``, ``>``, ``&`` are escaped as Go's encoder does.
    """
    text = json.dumps(_normal(item), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.translate(_GO_JSON_ESCAPES)


def _normal(item: Any) -> Any:
    if isinstance(item, float) and item.is_integer() and abs(item) < _GO_PLAIN_FLOAT_LIMIT:
        return int(item)
    if isinstance(item, dict):
        return {k: _normal(v) for k, v in item.items()}
    if isinstance(item, list):
        return [_normal(v) for v in item]
    return item


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _INVALID


_INVALID = object()


def parse_element(element: Any) -> str | None:
    """The canonical spelling of a FieldsV1 key read from a stored object, None if invalid."""
    if not isinstance(element, str):
        return None
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return element
    if kind in ("k:", "v:"):
        parsed = _loads(body)
        if parsed is _INVALID or (kind == "k:" and not isinstance(parsed, dict)):
            return None
        return kind + canonical_json(parsed)
    if kind == "i:" and body.isascii() and body.isdigit():
        return f"i:{int(body)}"
    return None


def from_fields_v1(tree: Any) -> set[Path]:
    """The paths a FieldsV1 tree holds: leaves (``{}``) and nodes marked with ``"."``.

    Lenient on purpose: managedFields come from stored objects and from clients, and an
    unreadable element drops only its own subtree, never the whole entry.
    """
    paths: set[Path] = set()
    _collect_fields_v1(tree, (), paths)
    return paths


def _collect_fields_v1(node: Any, prefix: Path, paths: set[Path]) -> None:
    if not isinstance(node, Mapping):
        return
    if not node and prefix:
        paths.add(prefix)
    for name, child in node.items():
        if name == SELF:
            if prefix:
                paths.add(prefix)
            continue
        element = parse_element(name)
        if element is not None:
            _collect_fields_v1(child, (*prefix, element), paths)


class PathTrie:
    """A set of paths as a tree, walked level by level as kube walks its ``fieldpath.Set``.

    ``member`` tells whether the path ending at a node is in the set; a node may also only
    lead to members below it.
    """

    __slots__ = ("children", "member")

    def __init__(self) -> None:
        self.member = False
        self.children: dict[str, PathTrie] = {}

    @classmethod
    def of(cls, paths: Iterable[Path]) -> PathTrie:
        root = cls()
        for path in paths:
            node = root
            for element in path:
                node = node.children.setdefault(element, cls())
            node.member = bool(path)
        return root


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 tree of a set of paths, keys in kube's order (``"."`` first)."""
    return _emit_fields_v1(PathTrie.of(paths))


def _emit_fields_v1(node: PathTrie) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if node.member and node.children:
        out[SELF] = {}
    for element in sorted(node.children, key=element_order):
        out[element] = _emit_fields_v1(node.children[element])
    return out


# Field names and the common keys (a container's name, an env var's) recur in every object and
# stay in the cache; keys by uid (ownerReferences) are unique to one object and pass through.
# Sorting 100 elements is as fast with 1,024 entries as with 8,192, and a full cache of 8,192
# held about 4 MiB for as long as the API server ran.
@functools.lru_cache(maxsize=1024)
def element_order(element: str) -> tuple[Any, ...]:
    """Sort key giving structured-merge-diff's order of path elements.

    Fields come first (by name), then keyed items (key fields compared in order), then set
    values, then indexes; values compare numbers < strings < booleans < lists < maps < null.
    """
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return (0, body)
    if kind == "k:":
        fields = key_fields(element)
        return (1, tuple((name, _value_order(fields[name])) for name in sorted(fields)))
    if kind == "v:":
        return (2, _value_order(_loads(body)))
    return (3, int(body) if body.isdigit() else -1)


def _value_order(item: Any) -> tuple[int, Any]:
    if isinstance(item, bool):
        return (2, item)
    if isinstance(item, int | float):
        return (0, item)
    if isinstance(item, str):
        return (1, item)
    if isinstance(item, list):
        return (3, canonical_json(item))
    if isinstance(item, dict):
        return (4, canonical_json(item))
    return (5, 0)


def iteration_order(paths: Iterable[Path]) -> list[Path]:
    """Paths in the order kube's ``fieldpath.Set.Iterate`` yields them, as conflict lists show.

    At each level the members come first, then the subtrees below, each group sorted.
    """
    out: list[Path] = []
    _iterate(PathTrie.of(paths), (), out)
    return out


def _iterate(node: PathTrie, prefix: Path, out: list[Path]) -> None:
    ordered = sorted(node.children, key=element_order)
    out.extend((*prefix, element) for element in ordered if node.children[element].member)
    for element in ordered:
        child = node.children[element]
        if child.children:
            _iterate(child, (*prefix, element), out)


def path_string(path: Path) -> str:
    """Kube's human form of a path: ``.spec.containers[name="app"].image``, ``[="x"]``."""
    return "".join(_element_string(element) for element in path)


def _element_string(element: str) -> str:
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return "." + body
    if kind == "k:":
        fields = key_fields(element)
        return "[" + ",".join(f"{n}={_go_value(fields[n])}" for n in sorted(fields)) + "]"
    if kind == "v:":
        return f"[={_go_value(_loads(body))}]"
    return f"[{body}]"


def _go_value(item: Any) -> str:
    """A value as structured-merge-diff's ``value.ToString`` prints it."""
    if item is None:
        return "null"
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item)
    if isinstance(item, float):
        return gofmt.go_float(item)
    if isinstance(item, str):
        return gofmt.go_quote(item)
    if isinstance(item, list):
        return "[" + ",".join(_go_value(v) for v in item) + "]"
    if isinstance(item, dict):
        return "".join(f"{k}={_go_value(item[k])}" for k in sorted(item))
    return str(item)
