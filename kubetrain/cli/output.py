"""Objects printed for scripts: ``-o json`` (one object, or a kubectl-style ``List``),
``-o yaml`` (one document per object) and ``-o name`` (``pytorchjob.kubeflow.org/NAME``).

Owns: those three renderings, identical for every command that offers them. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

FORMATS = ("json", "yaml", "name")


def render(objects: Sequence[Mapping[str, Any]], fmt: str, *, single: bool = False) -> str:
    """``objects`` in ``fmt``; ``single`` prints the one object itself rather than a List."""
    if fmt == "name":
        return "".join(f"{qualified_name(obj)}\n" for obj in objects)
    if single and len(objects) == 1:
        body: Any = objects[0]
    else:
        body = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": list(objects)}
    if fmt == "json":
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
    raise ValueError(f"output format {fmt!r}; accepted: {', '.join(FORMATS)}")


def qualified_name(obj: Mapping[str, Any]) -> str:
    """``kind.group/name``, as ``kubectl get -o name`` prints it (``pod/NAME`` for core)."""
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    kind = str(obj.get("kind") or "").lower()
    name = (obj.get("metadata") or {}).get("name") or ""
    return f"{kind}.{group}/{name}" if group else f"{kind}/{name}"
