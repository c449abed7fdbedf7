"""Strategic merge of pod templates, and upserts of keyed lists (env, ports, volumes, mounts).

TrainJob overrides (v2.1 ``podTemplateOverrides``, later ``runtimePatches``) are applied to a
runtime's pod templates as Kubernetes strategic merge patches of ``PodTemplateSpec``, and the
runtime plugins upsert env vars, ports, volumes and volume mounts into containers. Both need the
same rule: lists of objects that Kubernetes merges by a key are merged item by item, other lists
are replaced, maps merge recursively, and ``null`` in a patch removes a key.

Only the merge keys of the pod template fields that overrides can reach are known here
(``containers``/``initContainers`` by name, ``env`` by name, ``volumes`` by name,
``volumeMounts`` by mountPath, ``ports`` by containerPort, ``imagePullSecrets`` and
``schedulingGates`` by name); ``tolerations`` and ``envFrom`` have no merge key in Kubernetes and
are replaced, as the API server does. Pure; inputs are never changed, results are new objects.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

# field name → merge key, for lists of objects inside a PodTemplateSpec
MERGE_KEYS: Final[Mapping[str, str]] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "hostAliases": "ip",
    "resourceClaims": "name",
}


def merge(base: Any, patch: Any) -> Any:
    """``patch`` merged into ``base`` by the strategic-merge rules above."""
    if not isinstance(patch, Mapping) or not isinstance(base, Mapping):
        return copy.deepcopy(patch)
    result = copy.deepcopy(dict(base))
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif key in MERGE_KEYS and isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, MERGE_KEYS[key])
        elif isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _merge_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    result = [copy.deepcopy(item) for item in base]
    for item in patch:
        if not isinstance(item, Mapping) or key not in item:
            result.append(copy.deepcopy(item))
            continue
        index = _find(result, key, item[key])
        if index is None:
            result.append(copy.deepcopy(dict(item)))
        else:
            result[index] = merge(result[index], item)
    return result


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
