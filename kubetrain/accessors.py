"""Accessors of Kubernetes objects as decoded JSON: the value under a path, an object's metadata,
name, namespace, uid, labels and annotations, and a pod's phase.

Every layer reads objects it did not build (from the cache, the API, a runtime's free-form
templates), where any step may be missing or of another type; these accessors answer ``None``
or empty instead of raising, the same way everywhere.

Pure: imports nothing of kubetrain, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def dig(obj: Any, *keys: str) -> Any:
    """The value under ``keys``, or None where a step is missing or not an object."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object's ``metadata``; empty when it has none."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("uid") or "")


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = metadata(obj).get("labels")
    return labels if isinstance(labels, dict) else {}


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    annotations = metadata(obj).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def phase(pod: Mapping[str, Any]) -> str:
    """The pod's ``status.phase`` as written; empty when it has none."""
    status = pod.get("status")
    return str(status.get("phase") or "") if isinstance(status, Mapping) else ""
