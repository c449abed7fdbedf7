"""Kubeflow Trainer v2 (``trainer.kubeflow.org``): TrainJob and the two runtime kinds.

One schema covers both API generations users write: the v2.1 fields (``labels``,
``annotations``, ``podTemplateOverrides``, torch ``numProcPerNode`` as int-or-string and
``elasticPolicy``) and the later ones (``runtimePatches``, ``activeDeadlineSeconds``,
``envInjection``, jax/xgboost/flux policies). It is served as ``v1alpha1`` and accepted as
``v2alpha1`` too, which is how much of the documentation writes TrainJob. The JobSet template
of a runtime stays a free-form Kubernetes object.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, StrictBool, StrictStr

from kubetrain.api._meta import ObjectMeta
from kubetrain.api._model import Int32, Int64, IntOrString, KubeObject, Model

GROUP = "trainer.kubeflow.org"
VERSIONS: tuple[str, ...] = ("v1alpha1", "v2alpha1")  # first is the storage version
API_VERSION = f"{GROUP}/{VERSIONS[0]}"
ApiVersion = Literal["trainer.kubeflow.org/v1alpha1", "trainer.kubeflow.org/v2alpha1"]

TRAINJOB_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES: tuple[str, ...] = (TRAINJOB_CONTROLLER, MULTIKUEUE_CONTROLLER)

# Conventions a runtime's JobSet template must follow.
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
TRAINER_ANCESTOR = "trainer"
ANCESTORS: tuple[str, ...] = (DATASET_INITIALIZER, MODEL_INITIALIZER, TRAINER_ANCESTOR)
NODE = "node"  # the trainer replicatedJob and container name
LAUNCHER = "launcher"  # the MPI launcher replicatedJob name
SUPPORT_LABEL = "trainer.kubeflow.org/support"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"

MPIImplementation = Literal["OpenMPI", "Intel", "MPICH", ""]


# --- TrainJob -----------------------------------------------------------------------------


class RuntimeRef(Model):
    name: StrictStr | None = None
    api_group: StrictStr | None = None
    kind: StrictStr | None = None


class SecretRef(Model):
    name: StrictStr | None = None


class InitializerSource(Model):
    """Where a dataset or model comes from (``hf://``, ``s3://``, ...), fetched once per job."""

    storage_uri: StrictStr | None = None
    env: list[KubeObject] | None = None
    secret_ref: SecretRef | None = None


class Initializer(Model):
    dataset: InitializerSource | None = None
    model: InitializerSource | None = None


class Trainer(Model):
    image: StrictStr | None = None
    command: list[StrictStr] | None = None
    args: list[StrictStr] | None = None
    env: list[KubeObject] | None = None
    num_nodes: Int32 | None = None
    resources_per_node: KubeObject | None = None
    # v2.1: int or auto/cpu/gpu; later versions: int only. Both are accepted.
    num_proc_per_node: IntOrString | None = None


class TargetJob(Model):
    name: StrictStr | None = None


class ContainerOverride(Model):
    name: StrictStr | None = None
    env: list[KubeObject] | None = None
    volume_mounts: list[KubeObject] | None = None
    security_context: KubeObject | None = None


class PodSpecOverride(Model):
    service_account_name: StrictStr | None = None
    node_selector: dict[str, StrictStr] | None = None
    affinity: KubeObject | None = None
    tolerations: list[KubeObject] | None = None
    volumes: list[KubeObject] | None = None
    init_containers: list[ContainerOverride] | None = None
    containers: list[ContainerOverride] | None = None
    scheduling_gates: list[KubeObject] | None = None
    image_pull_secrets: list[KubeObject] | None = None
    security_context: KubeObject | None = None
    termination_grace_period_seconds: Int64 | None = None


class MetadataOverride(Model):
    labels: dict[str, StrictStr] | None = None
    annotations: dict[str, StrictStr] | None = None


class PodTemplateOverride(Model):
    """v2.1: a strategic-merge patch onto the pod template of each target replicatedJob."""

    target_jobs: list[TargetJob] | None = None
    metadata: MetadataOverride | None = None
    spec: PodSpecOverride | None = None


class PodTemplatePatch(Model):
    metadata: MetadataOverride | None = None
    spec: PodSpecOverride | None = None


class JobSpecPatch(Model):
    template: PodTemplatePatch | None = None


class JobTemplatePatch(Model):
    metadata: MetadataOverride | None = None
    spec: JobSpecPatch | None = None


class ReplicatedJobPatch(Model):
    name: StrictStr | None = None
    template: JobTemplatePatch | None = None


class JobSetSpecPatch(Model):
    replicated_jobs: list[ReplicatedJobPatch] | None = None


class JobSetTemplatePatch(Model):
    metadata: MetadataOverride | None = None
    spec: JobSetSpecPatch | None = None


class TrainingRuntimeSpecPatch(Model):
    template: JobSetTemplatePatch | None = None


class RuntimePatch(Model):
    """v2.2+: a patch owned by one manager (a controller or a user tool), keyed by manager."""

    manager: StrictStr | None = None
    time: StrictStr | None = None
    training_runtime_spec: TrainingRuntimeSpecPatch | None = None


class TrainJobSpec(Model):
    runtime_ref: RuntimeRef | None = None
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    labels: dict[str, StrictStr] | None = None
    annotations: dict[str, StrictStr] | None = None
    pod_template_overrides: list[PodTemplateOverride] | None = None
    runtime_patches: list[RuntimePatch] | None = None
    suspend: StrictBool | None = None
    active_deadline_seconds: Int64 | None = None
    managed_by: StrictStr | None = None


class Condition(Model):
    """``metav1.Condition``."""

    type: StrictStr
    status: Literal["True", "False", "Unknown"]
    reason: StrictStr | None = None
    message: StrictStr | None = None
    last_transition_time: StrictStr | None = None
    observed_generation: Int64 | None = None


class ReplicatedJobStatus(Model):
    name: StrictStr | None = None
    ready: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    active: Int32 | None = None
    suspended: Int32 | None = None


class Metric(Model):
    name: StrictStr | None = None
    value: StrictStr | None = None


class TrainerStatus(Model):
    progress_percentage: Int32 | None = None
    estimated_remaining_seconds: Int32 | None = None
    metrics: list[Metric] | None = None
    last_updated_time: StrictStr | None = None


class TrainJobStatus(Model):
    conditions: list[Condition] | None = None
    jobs_status: list[ReplicatedJobStatus] | None = None
    trainer_status: TrainerStatus | None = None


# --- runtimes -----------------------------------------------------------------------------


class TorchElasticPolicy(Model):
    max_restarts: Int32 | None = None
    min_nodes: Int32 | None = None
    max_nodes: Int32 | None = None
    metrics: list[KubeObject] | None = None


class EnvInjectionTarget(Model):
    job_name: StrictStr | None = None
    container_names: list[StrictStr] | None = None


class EnvInjection(Model):
    targets: list[EnvInjectionTarget] | None = None


class TorchPolicy(Model):
    num_proc_per_node: IntOrString | None = None
    elastic_policy: TorchElasticPolicy | None = None
    env_injection: EnvInjection | None = None


class MPIPolicy(Model):
    num_proc_per_node: Int32 | None = None
    mpi_implementation: MPIImplementation | None = None
    ssh_auth_mount_path: StrictStr | None = None
    run_launcher_as_node: StrictBool | None = None


class EmptyPolicy(Model):
    """jax and xgboost policies carry no fields; their presence selects the plugin."""


class FluxPolicy(Model):
    num_proc_per_node: Int32 | None = None


class MLPolicy(Model):
    num_nodes: Int32 | None = None
    torch: TorchPolicy | None = None
    mpi: MPIPolicy | None = None
    jax: EmptyPolicy | None = None
    xgboost: EmptyPolicy | None = None
    flux: FluxPolicy | None = None

    POLICY_FIELDS: ClassVar[tuple[str, ...]] = ("torch", "mpi", "jax", "xgboost", "flux")

    def sources(self) -> list[str]:
        """Names of the framework policies that are set (valid runtimes have at most one)."""
        return [name for name in self.POLICY_FIELDS if getattr(self, name) is not None]


class CoschedulingPolicy(Model):
    schedule_timeout_seconds: Int32 | None = None


class NetworkTopology(Model):
    mode: Literal["hard", "soft"] | None = None
    highest_tier_allowed: Int32 | None = None


class VolcanoPolicy(Model):
    network_topology: NetworkTopology | None = None


class PodGroupPolicy(Model):
    coscheduling: CoschedulingPolicy | None = None
    volcano: VolcanoPolicy | None = None


class JobSetTemplate(Model):
    metadata: MetadataOverride | None = None
    spec: KubeObject | None = None  # a JobSet spec (jobset.x-k8s.io/v1alpha2), free-form


class TrainingRuntimeSpec(Model):
    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    template: JobSetTemplate | None = None


# --- kinds --------------------------------------------------------------------------------


class TrainerKind(Model):
    KIND: ClassVar[str]
    PLURAL: ClassVar[str]
    NAMESPACED: ClassVar[bool] = True

    api_version: ApiVersion = Field(alias="apiVersion")
    kind: StrictStr
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name or ""


class TrainJob(TrainerKind):
    KIND = "TrainJob"
    PLURAL = "trainjobs"

    kind: Literal["TrainJob"]
    spec: TrainJobSpec | None = None
    status: TrainJobStatus | None = None


class TrainingRuntime(TrainerKind):
    KIND = "TrainingRuntime"
    PLURAL = "trainingruntimes"

    kind: Literal["TrainingRuntime"]
    spec: TrainingRuntimeSpec | None = None


class ClusterTrainingRuntime(TrainerKind):
    KIND = "ClusterTrainingRuntime"
    PLURAL = "clustertrainingruntimes"
    NAMESPACED = False

    kind: Literal["ClusterTrainingRuntime"]
    spec: TrainingRuntimeSpec | None = None


TRAINER_KINDS: tuple[type[TrainerKind], ...] = (TrainJob, TrainingRuntime, ClusterTrainingRuntime)
Runtime = TrainingRuntime | ClusterTrainingRuntime
