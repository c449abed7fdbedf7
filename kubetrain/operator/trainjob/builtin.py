"""The built-in ClusterTrainingRuntimes (``torch-distributed``, ``mpi-distributed``,
``jax-distributed``, ``xgboost-distributed``; for fine-tuning, upstream's TorchTune ones
``torchtune-llama3.2-1b``, ``torchtune-llama3.2-3b``, ``torchtune-qwen2.5-1.5b`` and
``torchtune-llama3.3-70b``, and kubetrain's ``trl-sft`` with TRL), shipped as YAML inside the
package.

The files here are the source; ``deploy/runtimes/`` holds copies for ``kubectl apply -k``
(``make manifests`` refreshes them, and a unit test fails when they drift). The local control
plane installs them at start; on a cluster they come with the kustomize manifests.

Must not: talk to an API server (whoever installs them does).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

PACKAGE = "kubetrain.operator.trainjob"
DIRECTORY = "runtimes"


def files() -> dict[str, str]:
    """File name → YAML text of every built-in runtime, by name."""
    folder = resources.files(PACKAGE).joinpath(DIRECTORY)
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".yaml")
    }


def runtimes() -> list[dict[str, Any]]:
    """The built-in runtimes as objects, ready to create."""
    return [yaml.safe_load(text) for text in files().values()]
