"""Defaulting for TrainJob, TrainingRuntime and ClusterTrainingRuntime.

These are the CRD schema defaults (``+kubebuilder:default`` markers) that the API server
applies before validation, plus ``mlPolicy.numNodes`` which upstream defaults in code. The
input is never changed: :func:`set_defaults` returns a deep copy.

Not defaulted here, on purpose:
- ``runtimePatches[].time``: the server stamps it with its clock on create or change;
- the runtime's JobSet template (``replicas``, ``network``, ...): it is JobSet's object, and
  JobSet defaults it when the JobSet is created. Readers treat a missing ``replicas`` as 1;
- ``mlPolicy.numNodes`` when ``torch.elasticPolicy`` is set: upstream forbids setting both, so
  a default there would turn every elastic runtime invalid.
"""

from __future__ import annotations

from typing import TypeVar

from kubetrain.api._trainer import (
    GROUP,
    TRAINJOB_CONTROLLER,
    ClusterTrainingRuntime,
    MLPolicy,
    PodGroupPolicy,
    TrainerKind,
    TrainingRuntime,
    TrainJob,
)

DEFAULT_RUNTIME_KIND = ClusterTrainingRuntime.KIND
DEFAULT_TORCH_NUM_PROC = "auto"
DEFAULT_MPI_IMPLEMENTATION = "OpenMPI"
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
DEFAULT_SCHEDULE_TIMEOUT_SECONDS = 60

Obj = TypeVar("Obj", bound=TrainerKind)


def set_defaults(obj: Obj) -> Obj:
    """A defaulted deep copy of ``obj``; applying it twice changes nothing more."""
    copy = obj.model_copy(deep=True)
    if isinstance(copy, TrainJob):
        _default_trainjob(copy)
    elif isinstance(copy, TrainingRuntime | ClusterTrainingRuntime) and copy.spec is not None:
        if copy.spec.ml_policy is not None:
            _default_ml_policy(copy.spec.ml_policy)
        if copy.spec.pod_group_policy is not None:
            _default_pod_group_policy(copy.spec.pod_group_policy)
    return copy


def _default_trainjob(job: TrainJob) -> None:
    spec = job.spec
    if spec is None:
        return  # nothing to hang defaults on; validation reports the missing runtimeRef
    if spec.runtime_ref is not None:
        if spec.runtime_ref.api_group is None:
            spec.runtime_ref.api_group = GROUP
        if spec.runtime_ref.kind is None:
            spec.runtime_ref.kind = DEFAULT_RUNTIME_KIND
    if spec.suspend is None:
        spec.suspend = False
    if spec.managed_by is None:
        spec.managed_by = TRAINJOB_CONTROLLER


def _default_ml_policy(policy: MLPolicy) -> None:
    elastic = policy.torch is not None and policy.torch.elastic_policy is not None
    if policy.num_nodes is None and not elastic:
        policy.num_nodes = 1
    if policy.torch is not None and policy.torch.num_proc_per_node is None:
        policy.torch.num_proc_per_node = DEFAULT_TORCH_NUM_PROC
    if policy.mpi is not None:
        mpi = policy.mpi
        if mpi.num_proc_per_node is None:
            mpi.num_proc_per_node = 1
        if mpi.mpi_implementation is None:
            mpi.mpi_implementation = DEFAULT_MPI_IMPLEMENTATION
        if mpi.ssh_auth_mount_path is None:
            mpi.ssh_auth_mount_path = DEFAULT_SSH_AUTH_MOUNT_PATH
        if mpi.run_launcher_as_node is None:
            mpi.run_launcher_as_node = False
    if policy.flux is not None and policy.flux.num_proc_per_node is None:
        policy.flux.num_proc_per_node = 1


def _default_pod_group_policy(policy: PodGroupPolicy) -> None:
    coscheduling = policy.coscheduling
    if coscheduling is not None and coscheduling.schedule_timeout_seconds is None:
        coscheduling.schedule_timeout_seconds = DEFAULT_SCHEDULE_TIMEOUT_SECONDS
