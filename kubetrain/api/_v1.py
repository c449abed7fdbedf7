"""The ``kubeflow.org/v1`` job kinds and the types they share.

Field names, nesting and meaning follow the Training Operator v1.9 API (MXJob: v1.8). Pod
templates stay free-form Kubernetes objects. Each job class also carries the facts about
its framework that defaulting and validation need (replica field, replica types, default
container and port), so that one table says what a kind is.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictStr

from kubetrain.api._meta import ObjectMeta
from kubetrain.api._model import Int32, Int64, KubeObject, Model

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
RESTART_POLICIES: tuple[str, ...] = ("Always", "OnFailure", "Never", "ExitCode")
CleanPodPolicy = Literal["All", "Running", "None"]
CLEAN_POD_POLICIES: tuple[str, ...] = ("All", "Running", "None")

# runPolicy.managedBy values the built-in controller and MultiKueue use.
KUBEFLOW_JOBS_CONTROLLER = "kubeflow.org/training-operator"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES: tuple[str, ...] = (KUBEFLOW_JOBS_CONTROLLER, MULTIKUEUE_CONTROLLER)

# Labels the operator puts on every pod and service it creates.
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"

JobConditionType = Literal["Created", "Running", "Restarting", "Succeeded", "Suspended", "Failed"]


class SchedulingPolicy(Model):
    """Gang-scheduling hints; ``queue`` is immutable once set (CRD rule)."""

    min_available: Int32 | None = None
    queue: StrictStr | None = None
    min_resources: dict[str, Any] | None = None
    priority_class: StrictStr | None = None
    schedule_timeout_seconds: Int32 | None = None


class RunPolicy(Model):
    clean_pod_policy: CleanPodPolicy | None = None
    ttl_seconds_after_finished: Int32 | None = None
    active_deadline_seconds: Int64 | None = None
    backoff_limit: Int32 | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: StrictBool | None = None
    managed_by: StrictStr | None = None


class ReplicaSpec(Model):
    """One role of a job: how many pods, their template, and how failures restart."""

    replicas: Int32 | None = None
    template: KubeObject | None = None
    restart_policy: RestartPolicy | None = None


class JobCondition(Model):
    type: JobConditionType
    status: Literal["True", "False", "Unknown"]
    reason: StrictStr | None = None
    message: StrictStr | None = None
    last_update_time: StrictStr | None = None
    last_transition_time: StrictStr | None = None


class ReplicaStatus(Model):
    active: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    label_selector: KubeObject | None = None
    selector: StrictStr | None = None


class JobStatus(Model):
    conditions: list[JobCondition] | None = None
    replica_statuses: dict[str, ReplicaStatus] | None = None
    start_time: StrictStr | None = None
    completion_time: StrictStr | None = None
    last_reconcile_time: StrictStr | None = None


class RDZVConf(Model):
    key: StrictStr | None = None
    value: StrictStr | None = None


class ElasticPolicy(Model):
    """PyTorchJob elastic training (torchrun rendezvous); min/max default from each other."""

    min_replicas: Int32 | None = None
    max_replicas: Int32 | None = None
    rdzv_backend: Literal["c10d", "etcd", "etcd-v2"] | None = None
    rdzv_port: Int32 | None = None
    rdzv_host: StrictStr | None = None
    rdzv_id: StrictStr | None = None
    rdzv_conf: list[RDZVConf] | None = None
    standalone: StrictBool | None = None
    n_proc_per_node: Int32 | None = Field(default=None, alias="nProcPerNode")
    max_restarts: Int32 | None = None
    metrics: list[KubeObject] | None = None


class PaddleElasticPolicy(Model):
    min_replicas: Int32 | None = None
    max_replicas: Int32 | None = None
    max_restarts: Int32 | None = None
    metrics: list[KubeObject] | None = None


class JobKind(Model):
    """A ``kubeflow.org/v1`` job: what every kind has, and the facts about its framework."""

    KIND: ClassVar[str]
    PLURAL: ClassVar[str]
    REPLICA_FIELD: ClassVar[str]  # wire name of the replica-spec map, e.g. pytorchReplicaSpecs
    REPLICA_TYPES: ClassVar[tuple[str, ...]]  # CamelCase, in upstream's order
    DEFAULT_CONTAINER: ClassVar[str]
    PORT_NAME: ClassVar[str]
    DEFAULT_PORT: ClassVar[int]
    DEFAULT_RESTART_POLICY: ClassVar[str] = "Never"
    ADDS_DEFAULT_PORT: ClassVar[bool] = True
    SCALE_REPLICA: ClassVar[str | None] = None  # replica type behind the scale subresource
    DEPRECATION: ClassVar[str | None] = None

    api_version: Literal["kubeflow.org/v1"] = Field(alias="apiVersion")
    kind: StrictStr
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: Any
    status: JobStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def run_policy_or_empty(self) -> RunPolicy:
        return getattr(self.spec, "run_policy", None) or RunPolicy()

    def replica_specs(self) -> dict[str, ReplicaSpec | None] | None:
        """The replica-spec map, whatever the kind calls it."""
        return getattr(self.spec, _python_name(self.REPLICA_FIELD))

    def set_replica_specs(self, specs: dict[str, ReplicaSpec | None]) -> None:
        setattr(self.spec, _python_name(self.REPLICA_FIELD), specs)


@functools.cache  # seven kinds, asked for on every pass of every job
def _python_name(wire: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in wire)


ReplicaSpecs = dict[str, ReplicaSpec | None]


class TFJobSpec(Model):
    run_policy: RunPolicy | None = None
    success_policy: Literal["", "AllWorkers"] | None = None
    tf_replica_specs: ReplicaSpecs | None = None
    enable_dynamic_worker: StrictBool | None = None


class TFJob(JobKind):
    KIND = "TFJob"
    PLURAL = "tfjobs"
    REPLICA_FIELD = "tfReplicaSpecs"
    REPLICA_TYPES = ("Chief", "Evaluator", "Master", "PS", "Worker")
    DEFAULT_CONTAINER = "tensorflow"
    PORT_NAME = "tfjob-port"
    DEFAULT_PORT = 2222

    kind: Literal["TFJob"]
    spec: TFJobSpec


class PyTorchJobSpec(Model):
    run_policy: RunPolicy | None = None
    elastic_policy: ElasticPolicy | None = None
    nproc_per_node: StrictStr | None = None
    pytorch_replica_specs: ReplicaSpecs | None = None


class PyTorchJob(JobKind):
    KIND = "PyTorchJob"
    PLURAL = "pytorchjobs"
    REPLICA_FIELD = "pytorchReplicaSpecs"
    REPLICA_TYPES = ("Master", "Worker")
    DEFAULT_CONTAINER = "pytorch"
    PORT_NAME = "pytorchjob-port"
    DEFAULT_PORT = 23456
    DEFAULT_RESTART_POLICY = "OnFailure"
    SCALE_REPLICA = "Worker"

    kind: Literal["PyTorchJob"]
    spec: PyTorchJobSpec


class XGBoostJobSpec(Model):
    run_policy: RunPolicy | None = None
    xgb_replica_specs: ReplicaSpecs | None = None


class XGBoostJob(JobKind):
    KIND = "XGBoostJob"
    PLURAL = "xgboostjobs"
    REPLICA_FIELD = "xgbReplicaSpecs"
    REPLICA_TYPES = ("Master", "Worker")
    DEFAULT_CONTAINER = "xgboost"
    PORT_NAME = "xgboostjob-port"
    DEFAULT_PORT = 9999

    kind: Literal["XGBoostJob"]
    spec: XGBoostJobSpec


class PaddleJobSpec(Model):
    run_policy: RunPolicy | None = None
    elastic_policy: PaddleElasticPolicy | None = None
    paddle_replica_specs: ReplicaSpecs | None = None


class PaddleJob(JobKind):
    KIND = "PaddleJob"
    PLURAL = "paddlejobs"
    REPLICA_FIELD = "paddleReplicaSpecs"
    REPLICA_TYPES = ("Master", "Worker")
    DEFAULT_CONTAINER = "paddle"
    PORT_NAME = "master"
    DEFAULT_PORT = 36543
    DEFAULT_RESTART_POLICY = "OnFailure"
    SCALE_REPLICA = "Worker"

    kind: Literal["PaddleJob"]
    spec: PaddleJobSpec


class JAXJobSpec(Model):
    run_policy: RunPolicy | None = None
    jax_replica_specs: ReplicaSpecs | None = None


class JAXJob(JobKind):
    KIND = "JAXJob"
    PLURAL = "jaxjobs"
    REPLICA_FIELD = "jaxReplicaSpecs"
    REPLICA_TYPES = ("Worker",)
    DEFAULT_CONTAINER = "jax"
    PORT_NAME = "jaxjob-port"
    DEFAULT_PORT = 6666
    SCALE_REPLICA = "Worker"

    kind: Literal["JAXJob"]
    spec: JAXJobSpec


class MPIJobSpec(Model):
    slots_per_worker: Int32 | None = None
    clean_pod_policy: CleanPodPolicy | None = None  # deprecated copy of runPolicy's
    mpi_replica_specs: ReplicaSpecs | None = None
    main_container: StrictStr | None = None
    run_policy: RunPolicy | None = None


class MPIJob(JobKind):
    """v1 MPIJob: a launcher that reaches workers with ``kubectl exec``; no services."""

    KIND = "MPIJob"
    PLURAL = "mpijobs"
    REPLICA_FIELD = "mpiReplicaSpecs"
    REPLICA_TYPES = ("Launcher", "Worker")
    DEFAULT_CONTAINER = "mpi"
    PORT_NAME = "mpi-port"
    DEFAULT_PORT = 9999
    ADDS_DEFAULT_PORT = False

    kind: Literal["MPIJob"]
    spec: MPIJobSpec


class MXJobSpec(Model):
    run_policy: RunPolicy | None = None
    job_mode: Literal["MXTrain", "MXTune"] | None = None
    mx_replica_specs: ReplicaSpecs | None = None


class MXJob(JobKind):
    """Legacy: accepted and run, with a deprecation warning on every admission."""

    KIND = "MXJob"
    PLURAL = "mxjobs"
    REPLICA_FIELD = "mxReplicaSpecs"
    REPLICA_TYPES = ("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner")
    DEFAULT_CONTAINER = "mxnet"
    PORT_NAME = "mxjob-port"
    DEFAULT_PORT = 9091
    DEPRECATION = (
        "MXJob is deprecated: MXNet is retired upstream and the Kubeflow Training Operator "
        "dropped MXJob in v1.9.0; kubetrain still runs it"
    )

    kind: Literal["MXJob"]
    spec: MXJobSpec


V1_KINDS: tuple[type[JobKind], ...] = (
    TFJob,
    PyTorchJob,
    XGBoostJob,
    PaddleJob,
    JAXJob,
    MPIJob,
    MXJob,
)
