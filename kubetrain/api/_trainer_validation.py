"""Validation of TrainJob, TrainingRuntime and ClusterTrainingRuntime (CEL + webhook rules)."""

from __future__ import annotations

from typing import Any

from kubetrain.api._fielderrors import FieldError
from kubetrain.api._trainer import TrainerKind


def validate(
    obj: TrainerKind, old: TrainerKind | None = None, *, find_runtime: Any = None
) -> list[FieldError]:
    return []


def warnings(obj: TrainerKind, *, find_runtime: Any = None) -> list[str]:
    return []
