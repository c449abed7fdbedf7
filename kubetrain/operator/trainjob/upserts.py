"""Upserts of keyed lists (env, ports, volumes, mounts) into the containers plugins build.

The runtime plugins set env vars, ports, volumes and volume mounts on containers: an item with
the same key (``name``, ``containerPort``, ``mountPath``) is replaced where it stands, others
are appended. TrainJob overrides (``podTemplateOverrides``, ``runtimePatches``) are strategic
merge patches instead, applied by :mod:`kubetrain.patches`, the API server's own
implementation. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any


def _find(items: list[Any], key: str, value: Any) -> int | None:
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and item.get(key) == value:
            return i
    return None


def upsert(items: list[dict[str, Any]], new: Iterable[Mapping[str, Any]], key: str) -> None:
    """Replace the item with the same ``key`` value in place, else append (in ``new``'s order).

    This mutates ``items``: it is for the working copies plugins edit, never for inputs.
    """
    for item in new:
        index = _find(items, key, item.get(key))
        if index is None:
            items.append(copy.deepcopy(dict(item)))
        else:
            items[index] = copy.deepcopy(dict(item))


def upsert_env(env: list[dict[str, Any]], new: Iterable[Mapping[str, Any]]) -> None:
    upsert(env, new, "name")


def upsert_ports(ports: list[dict[str, Any]], new: Iterable[Mapping[str, Any]]) -> None:
    upsert(ports, new, "containerPort")


def upsert_volumes(volumes: list[dict[str, Any]], new: Iterable[Mapping[str, Any]]) -> None:
    upsert(volumes, new, "name")


def upsert_mounts(mounts: list[dict[str, Any]], new: Iterable[Mapping[str, Any]]) -> None:
    upsert(mounts, new, "mountPath")
