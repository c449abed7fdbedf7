"""kubetrain: Kubeflow training jobs on any Kubernetes API, or on one machine.

The package is layered (lowest first): ``api`` (job types, defaulting, validation, CRDs),
``frameworks`` (per-framework env contracts), ``kube`` (the client), ``operator`` and
``local``, then the Python SDK in ``sdk`` and the command line in ``cli``. Lower layers never
import higher ones; ``lint-imports`` enforces it.

The SDK's names are importable from here (``from kubetrain import TrainerClient``); they are
loaded on first use, so ``import kubetrain`` stays light.
"""

import importlib
import importlib.util
from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # ``from kubetrain import kube`` asks for the attribute before it imports the submodule: a
    # submodule's name must not load the SDK (and with it every layer below), or each command
    # would pay for the whole package.
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "report":  # kubetrain.report(progress=..., metrics=...), from a training process
        return importlib.import_module("kubetrain.progress").report
    if not name.startswith("_"):  # the SDK's public names, whose list is kubetrain.sdk.__all__
        sdk = importlib.import_module("kubetrain.sdk")  # by name: lower layers import this one
        if name in sdk.__all__:
            return getattr(sdk, name)
    raise AttributeError(f"module 'kubetrain' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *importlib.import_module("kubetrain.sdk").__all__, "report"})
