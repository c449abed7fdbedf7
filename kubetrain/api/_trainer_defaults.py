"""Defaulting for TrainJob, TrainingRuntime and ClusterTrainingRuntime (CRD + webhook defaults)."""

from __future__ import annotations

from kubetrain.api._trainer import TrainerKind


def set_defaults(obj: TrainerKind) -> TrainerKind:
    return obj.model_copy(deep=True)
