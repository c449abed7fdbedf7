"""The values users build and get back: trainers, initializers, runtimes, jobs, steps, events,
and the backend configurations, with the Kubeflow SDK's names and fields.

Field names and defaults follow ``kubeflow.trainer`` (0.5) so that code moves over unchanged;
kubetrain's additions come last in each class, with defaults, and say so. ``pip_index_urls``
defaults to ``None`` (pip's own configuration) rather than PyPI, so offline and mirrored
setups work without configuration.

Must not: do I/O or validate against a server; checks that need no server are in
:mod:`kubetrain.sdk._functions` and :mod:`kubetrain.sdk._trainjobs`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# --- what a job runs ------------------------------------------------------------------------


@dataclass
class CustomTrainer:
    """Run ``func(**func_args)`` on every process of every node.

    ``func`` must be self-contained: it imports what it uses inside its body and takes its
    data from ``func_args``, whose values are Python literals (they are written into the
    script). ``train()`` checks both before anything is submitted.
    """

    func: Callable[..., Any]
    func_args: dict[str, Any] | None = None
    image: str | None = None
    packages_to_install: list[str] | None = None
    pip_index_urls: list[str] | None = None  # None: pip's own configuration
    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None  # {"cpu": 2, "memory": "4Gi", "gpu": 1}
    env: dict[str, str] | None = None
    # kubetrain: processes per node (the TrainJob's trainer.numProcPerNode); None: the
    # runtime's (torch's ``auto``: one per GPU, else the node's CPU request)
    num_proc_per_node: int | str | None = None


@dataclass
class CommandTrainer:
    """kubetrain: run a command (and its args) on every node, as ``trainer.command``/``args``."""

    command: list[str]
    args: list[str] | None = None
    image: str | None = None
    packages_to_install: list[str] | None = None
    pip_index_urls: list[str] | None = None
    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None
    env: dict[str, str] | None = None
    num_proc_per_node: int | str | None = None


Trainer = CustomTrainer | CommandTrainer


# --- what is fetched before training -----------------------------------------------------------


@dataclass
class HuggingFaceDatasetInitializer:
    storage_uri: str  # hf://<repo>
    ignore_patterns: list[str] | None = None
    access_token: str | None = None


@dataclass
class HuggingFaceModelInitializer:
    storage_uri: str  # hf://<repo>
    ignore_patterns: list[str] | None = field(
        default_factory=lambda: ["*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth"]
    )
    access_token: str | None = None


@dataclass
class S3DatasetInitializer:
    storage_uri: str  # s3://<bucket>/<path>
    ignore_patterns: list[str] | None = None
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None


@dataclass
class S3ModelInitializer:
    storage_uri: str  # s3://<bucket>/<path>
    ignore_patterns: list[str] | None = None
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None


DatasetInitializer = HuggingFaceDatasetInitializer | S3DatasetInitializer
ModelInitializer = HuggingFaceModelInitializer | S3ModelInitializer


@dataclass
class Initializer:
    dataset: DatasetInitializer | None = None
    model: ModelInitializer | None = None


# --- runtimes ----------------------------------------------------------------------------------


class RuntimeKind(str, enum.Enum):
    CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
    TRAINING_RUNTIME = "TrainingRuntime"


class TrainerType(str, enum.Enum):
    CUSTOM_TRAINER = "CustomTrainer"
    BUILTIN_TRAINER = "BuiltinTrainer"


@dataclass
class RuntimeTrainer:
    trainer_type: TrainerType
    framework: str
    image: str | None = None
    num_nodes: int = 1
    device: str = "Unknown"
    device_count: str = "Unknown"
    command: tuple[str, ...] = ()  # the trainer container's command in the runtime


@dataclass
class Runtime:
    name: str
    trainer: RuntimeTrainer
    kind: RuntimeKind = RuntimeKind.CLUSTER_TRAINING_RUNTIME
    pretrained_model: str | None = None


# --- jobs --------------------------------------------------------------------------------------


@dataclass
class Step:
    """One pod of a job: ``node-0``, ``node-1``, ..., ``dataset-initializer``,
    ``model-initializer``."""

    name: str
    status: str | None  # the pod's phase
    pod_name: str
    device: str = "Unknown"
    device_count: str = "Unknown"
    # kubetrain: where it runs, and how its container last ended
    node: str | None = None
    exit_code: int | None = None
    restarts: int = 0


@dataclass
class TrainJob:
    """A TrainJob as the SDK reports it; ``status`` is Created, Running, Complete or Failed."""

    name: str
    runtime: Runtime
    steps: list[Step]
    num_nodes: int
    creation_timestamp: datetime | None
    status: str = "Unknown"
    # kubetrain: where it lives, and why it failed (the Failed condition's reason: message)
    namespace: str = "default"
    message: str = ""


@dataclass
class Event:
    involved_object_kind: str
    involved_object_name: str
    message: str
    reason: str
    event_time: datetime | None


# --- where jobs go -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalBackendConfig:
    """kubetrain's local control plane (the default): the one of ``home`` (default
    ``$KUBETRAIN_HOME``, else ``~/.kubetrain``), started in the background when it is not
    running and ``start`` is true."""

    home: str | None = None
    namespace: str | None = None
    start: bool = True


@dataclass(frozen=True)
class KubernetesBackendConfig:
    """A cluster: ``context`` (default: the current one) of the kubeconfig ``config_file``
    (default: ``$KUBECONFIG``'s first file, else ``~/.kube/config``); ``namespace`` defaults
    to the context's, else ``default``."""

    namespace: str | None = None
    config_file: str | None = None
    context: str | None = None


BackendConfig = LocalBackendConfig | KubernetesBackendConfig


# --- options of train() ------------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """``train(options=[Name("my-job")])``: the TrainJob's name instead of a generated one."""

    name: str

    def __call__(self, job: dict[str, Any]) -> None:
        job["metadata"]["name"] = self.name


@dataclass(frozen=True)
class Labels:
    """Labels on the TrainJob object."""

    labels: Mapping[str, str]

    def __call__(self, job: dict[str, Any]) -> None:
        job["metadata"].setdefault("labels", {}).update(self.labels)


@dataclass(frozen=True)
class Annotations:
    """Annotations on the TrainJob object."""

    annotations: Mapping[str, str]

    def __call__(self, job: dict[str, Any]) -> None:
        job["metadata"].setdefault("annotations", {}).update(self.annotations)


Option = Callable[[dict[str, Any]], None]
Options = Sequence[Option]
