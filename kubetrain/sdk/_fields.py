"""The user's values for a TrainJob's trainer fields, checked and converted: resources with
Kubeflow's short names, process counts, env, lists of strings.

Shared by every trainer the SDK builds (custom, command, builtin, TRL and the v1 jobs'), so
that one value is refused with the same words whichever trainer it was given to. Errors name
the trainer and field (``where``). Must not: do I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubetrain.sdk._errors import InvalidTrainer

RESOURCE_ALIASES: Final = {"gpu": "nvidia.com/gpu", "storage": "ephemeral-storage"}


def resources(given: Mapping[str, Any], where: str = "CustomTrainer") -> dict[str, Any]:
    """``{"requests": R, "limits": R}`` with Kubeflow's short resource names expanded."""
    if not isinstance(given, Mapping):
        raise InvalidTrainer(
            f"{where}.resources_per_node: {given!r}; accepted: a dict such as "
            '{"cpu": 2, "memory": "4Gi", "gpu": 1}'
        )
    amounts: dict[str, str] = {}
    for key, value in given.items():
        if (
            not isinstance(key, str)
            or isinstance(value, bool)
            or not isinstance(value, int | str | float)
        ):
            raise InvalidTrainer(
                f"{where}.resources_per_node[{key!r}]: {value!r}; accepted: a quantity "
                '(2, "500m", "4Gi")'
            )
        lowered = key.lower()
        if lowered in RESOURCE_ALIASES:
            key = RESOURCE_ALIASES[lowered]
        elif lowered.startswith("mig-"):
            key = f"nvidia.com/{lowered}"
        amounts[key] = str(value)
    return {"requests": dict(amounts), "limits": dict(amounts)}


def env(given: Mapping[str, str] | None, where: str) -> list[dict[str, Any]]:
    if given is None:
        return []
    if not isinstance(given, Mapping):
        raise InvalidTrainer(f"{where}.env: {given!r}; accepted: a dict of names to strings")
    env = []
    for key, value in given.items():
        if not isinstance(key, str) or not key:
            raise InvalidTrainer(f"{where}.env: {key!r} is not a variable name")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidTrainer(f"{where}.env[{key!r}]: {value!r}; accepted: a string")
        env.append({"name": key, "value": str(value)})
    return env


def procs(value: int | str, where: str) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if value in ("auto", "cpu", "gpu"):
        return value
    raise InvalidTrainer(
        f"{where}.num_proc_per_node: {value!r}; accepted: a whole number, 1 or more, or "
        "auto, cpu, gpu"
    )


def strings(values: Sequence[Any] | None, where: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidTrainer(f"{where}: {values!r}; accepted: a list of strings")
    return [string(v, where) for v in values]


def string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidTrainer(f"{where}: {value!r} is not a string")
    return value
