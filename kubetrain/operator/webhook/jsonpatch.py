"""The JSON patch (RFC 6902) that turns one JSON document into another: what a mutating
webhook answers with, since kube-apiserver takes its changes only as a patch.

Objects are compared key by key, so the patch touches only what changed and reads well in an
audit log; a list that differs is replaced whole (a list-map merge is the API server's business,
not a webhook's). Keys are escaped as JSON pointers (``~`` → ``~0``, ``/`` → ``~1``), so label
keys such as ``trainer.kubeflow.org/framework`` address the right field.

Owns: the diff. Must not: apply patches (kube-apiserver does).
"""

from __future__ import annotations

from typing import Any


def diff(before: Any, after: Any) -> list[dict[str, Any]]:
    """The operations that turn ``before`` into ``after``, in order."""
    return _diff(before, after, "")


def pointer(*keys: str | int) -> str:
    """The JSON pointer of ``keys``: ``pointer("metadata", "a/b")`` → ``/metadata/a~1b``."""
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in keys)


def _diff(before: Any, after: Any, path: str) -> list[dict[str, Any]]:
    if isinstance(before, dict) and isinstance(after, dict):
        ops: list[dict[str, Any]] = []
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": path + pointer(key)})
        for key, value in after.items():
            if key not in before:
                ops.append({"op": "add", "path": path + pointer(key), "value": value})
            else:
                ops += _diff(before[key], value, path + pointer(key))
        return ops
    if _same(before, after):
        return []
    return [{"op": "replace", "path": path, "value": after}]


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: ``1`` is not ``true``, and ``1`` is not ``1.0`` once written out."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)
