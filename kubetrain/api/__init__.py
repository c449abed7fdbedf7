"""The job API: types, defaulting, validation and CRDs for every kind kubetrain serves.

Pure: no network, files, environment, clock or logging. Given an object (a dict decoded from
YAML or JSON), :func:`review` says whether it is valid, with every problem as a field error,
and returns it defaulted. The modules behind this package are private; import from here.
"""

from kubetrain.api._admission import Invalid, Review, RuntimeLookup, admit, review
from kubetrain.api._fielderrors import ErrorType, FieldError, Path
from kubetrain.api._parse import KINDS, Resource, parse, subject
from kubetrain.api._trainer import (
    ClusterTrainingRuntime,
    MLPolicy,
    Runtime,
    TrainerKind,
    TrainingRuntime,
    TrainingRuntimeSpec,
    TrainJob,
    TrainJobSpec,
)
from kubetrain.api._v1 import (
    V1_KINDS,
    JAXJob,
    JobKind,
    JobStatus,
    MPIJob,
    MXJob,
    PaddleJob,
    PyTorchJob,
    ReplicaSpec,
    RunPolicy,
    SchedulingPolicy,
    TFJob,
    XGBoostJob,
)

__all__ = [
    "KINDS",
    "V1_KINDS",
    "ClusterTrainingRuntime",
    "ErrorType",
    "FieldError",
    "Invalid",
    "JAXJob",
    "JobKind",
    "JobStatus",
    "MLPolicy",
    "MPIJob",
    "MXJob",
    "PaddleJob",
    "Path",
    "PyTorchJob",
    "ReplicaSpec",
    "Resource",
    "Review",
    "RunPolicy",
    "Runtime",
    "RuntimeLookup",
    "SchedulingPolicy",
    "TFJob",
    "TrainJob",
    "TrainJobSpec",
    "TrainerKind",
    "TrainingRuntime",
    "TrainingRuntimeSpec",
    "XGBoostJob",
    "admit",
    "parse",
    "review",
    "subject",
]
