"""The job API: types, defaulting, validation and CRDs for every kind kubetrain serves.

Pure: no network, files, environment, clock or logging. Given an object (a dict decoded from
YAML or JSON), :func:`review` says whether it is valid, with every problem as a field error,
and returns it defaulted. The modules behind this package are private; import from here.
"""

from kubetrain.api._admission import Invalid, Review, RuntimeLookup, admit, review
from kubetrain.api._crds import crd, crd_filename, crds
from kubetrain.api._fielderrors import ErrorType, FieldError, Path
from kubetrain.api._parse import KINDS, Resource, parse, subject
from kubetrain.api._runtime_validation import MPI_LAUNCHER_AS_NODE_MESSAGE
from kubetrain.api._trainer import (
    ANCESTOR_LABEL,
    LAUNCHER,
    NODE,
    TRAINER_ANCESTOR,
    VOLCANO_QUEUE_ANNOTATION,
    ClusterTrainingRuntime,
    MLPolicy,
    Runtime,
    TrainerKind,
    TrainingRuntime,
    TrainingRuntimeSpec,
    TrainJob,
    TrainJobSpec,
)
from kubetrain.api._trainer import GROUP as TRAINER_GROUP
from kubetrain.api._trainer_plugins import PluginCheck as TrainJobPluginCheck
from kubetrain.api._trainer_plugins import PriorityClassLookup
from kubetrain.api._trainer_plugins import register as register_trainjob_plugin_checks
from kubetrain.api._v1 import (
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    OPERATOR_NAME_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
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
from kubetrain.quantity import cpu_count, gpu_count, parse_quantity, whole_value

__all__ = [
    "ANCESTOR_LABEL",
    "JOB_NAME_LABEL",
    "JOB_ROLE_LABEL",
    "KINDS",
    "LAUNCHER",
    "MPI_LAUNCHER_AS_NODE_MESSAGE",
    "NODE",
    "OPERATOR_NAME_LABEL",
    "REPLICA_INDEX_LABEL",
    "REPLICA_TYPE_LABEL",
    "TRAINER_ANCESTOR",
    "TRAINER_GROUP",
    "V1_KINDS",
    "VOLCANO_QUEUE_ANNOTATION",
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
    "PriorityClassLookup",
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
    "TrainJobPluginCheck",
    "TrainJobSpec",
    "TrainerKind",
    "TrainingRuntime",
    "TrainingRuntimeSpec",
    "XGBoostJob",
    "admit",
    "cpu_count",
    "crd",
    "crd_filename",
    "crds",
    "gpu_count",
    "parse",
    "parse_quantity",
    "register_trainjob_plugin_checks",
    "review",
    "subject",
    "whole_value",
]
