"""The job API: types, defaulting, validation and CRDs for every kind kubetrain serves.

Pure: no network, files, environment, clock or logging. Given an object (a dict decoded from
YAML or JSON), :func:`review` says whether it is valid, with every problem as a field error,
and returns it defaulted. The modules behind this package are private; import from here.
"""

from kubetrain.api._admission import Invalid, Review, RuntimeLookup, admit, review
from kubetrain.api._crds import crd_filename, crds
from kubetrain.api._fielderrors import ErrorType, FieldError, Path
from kubetrain.api._parse import KINDS, Resource, parse, subject
from kubetrain.api._quantity import cpu_count, gpu_count, parse_quantity, whole_value
from kubetrain.api._trainer import (
    ANCESTOR_LABEL,
    LAUNCHER,
    NODE,
    TRAINER_ANCESTOR,
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
    "ANCESTOR_LABEL",
    "KINDS",
    "LAUNCHER",
    "NODE",
    "TRAINER_ANCESTOR",
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
    "cpu_count",
    "crd_filename",
    "crds",
    "gpu_count",
    "parse",
    "parse_quantity",
    "review",
    "subject",
    "whole_value",
]
