"""kubetrain's Python SDK: submit and follow training jobs from a notebook or a script.

- :class:`TrainerClient`: Kubeflow Trainer v2 TrainJobs with the Kubeflow SDK's names
  (``train``, ``list_runtimes``, ``get_job``, ``get_job_logs``, ``wait_for_job_status``, ...);
- :class:`TrainingClient`: the ``kubeflow.org/v1`` kinds with kubeflow-training's names
  (``create_job``, ``get_job_conditions``, ``wait_for_job_conditions``, ...).

Both talk to kubetrain's local control plane by default (started when not running) or to a
cluster (``KubernetesBackendConfig``, or ``TrainingClient(config_file=...)``). Calls are
synchronous; each client runs its own event loop in a background thread.

    from kubetrain import TrainerClient, CustomTrainer

    def train(epochs: int) -> None:
        import torch.distributed as dist
        ...

    client = TrainerClient()
    job = client.train(trainer=CustomTrainer(func=train, func_args={"epochs": 2}, num_nodes=2))
    for line in client.get_job_logs(job, follow=True):
        print(line)

:data:`HOST_IMAGE` names "this machine's Python environment" as an image: the local node runs
every pod on this machine, and the CLI gives pods of this image the directory it was typed in.

The modules behind this package are private; import from here (or from ``kubetrain``).
"""

from kubetrain.frameworks.hostimage import HOST_IMAGE
from kubetrain.sdk._builtin import (
    BuiltinTrainer,
    DataFormat,
    DataType,
    LoraConfig,
    Loss,
    TorchTuneConfig,
    TorchTuneInstructDataset,
)
from kubetrain.sdk._errors import (
    InvalidTrainer,
    JobFailedError,
    NotFoundError,
    SdkError,
    WaitTimeout,
)
from kubetrain.sdk._trainer_client import TrainerClient
from kubetrain.sdk._training_client import TrainingClient
from kubetrain.sdk._trl import TRLConfig
from kubetrain.sdk._types import (
    Annotations,
    CommandTrainer,
    CustomTrainer,
    Event,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    KubernetesBackendConfig,
    Labels,
    LocalBackendConfig,
    Name,
    Runtime,
    RuntimeKind,
    RuntimeTrainer,
    S3DatasetInitializer,
    S3ModelInitializer,
    Step,
    TrainerType,
    TrainJob,
)

__all__ = [
    "HOST_IMAGE",
    "Annotations",
    "BuiltinTrainer",
    "CommandTrainer",
    "CustomTrainer",
    "DataFormat",
    "DataType",
    "Event",
    "HuggingFaceDatasetInitializer",
    "HuggingFaceModelInitializer",
    "Initializer",
    "InvalidTrainer",
    "JobFailedError",
    "KubernetesBackendConfig",
    "Labels",
    "LocalBackendConfig",
    "LoraConfig",
    "Loss",
    "Name",
    "NotFoundError",
    "Runtime",
    "RuntimeKind",
    "RuntimeTrainer",
    "S3DatasetInitializer",
    "S3ModelInitializer",
    "SdkError",
    "Step",
    "TRLConfig",
    "TorchTuneConfig",
    "TorchTuneInstructDataset",
    "TrainJob",
    "TrainerClient",
    "TrainerType",
    "TrainingClient",
    "WaitTimeout",
]
