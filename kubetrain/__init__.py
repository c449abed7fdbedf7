"""kubetrain: Kubeflow training jobs on any Kubernetes API, or on one machine.

The package is layered (lowest first): ``api`` (job types, defaulting, validation, CRDs),
``frameworks`` (per-framework env contracts), ``kube`` (the client), ``operator`` and
``local``, then the Python SDK in ``sdk`` and the command line in ``cli``. Lower layers never
import higher ones; ``lint-imports`` enforces it.

The SDK's names are importable from here (``from kubetrain import TrainerClient``); they are
loaded on first use, so ``import kubetrain`` stays light.
"""

import importlib
from typing import Any

__version__ = "0.1.0"

_SDK_NAMES = frozenset(
    {
        "Annotations",
        "CommandTrainer",
        "CustomTrainer",
        "Event",
        "HuggingFaceDatasetInitializer",
        "HuggingFaceModelInitializer",
        "Initializer",
        "InvalidTrainer",
        "JobFailedError",
        "KubernetesBackendConfig",
        "Labels",
        "LocalBackendConfig",
        "Name",
        "NotFoundError",
        "Runtime",
        "RuntimeKind",
        "RuntimeTrainer",
        "S3DatasetInitializer",
        "S3ModelInitializer",
        "SdkError",
        "Step",
        "TrainJob",
        "TrainerClient",
        "TrainerType",
        "TrainingClient",
        "WaitTimeout",
    }
)


def __getattr__(name: str) -> Any:
    if name == "report":  # kubetrain.report(progress=..., metrics=...), from a training process
        return importlib.import_module("kubetrain.progress").report
    if name in _SDK_NAMES:  # imported by name at run time: lower layers import this package
        return getattr(importlib.import_module("kubetrain.sdk"), name)
    raise AttributeError(f"module 'kubetrain' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SDK_NAMES, "report"})
