"""Defaulting for TrainJob, TrainingRuntime and ClusterTrainingRuntime.

These are the CRD schema defaults (``+kubebuilder:default`` markers) that the API server
applies before validation, plus ``mlPolicy.numNodes`` which upstream defaults in code. The
input is never changed: :func:`set_defaults` returns a deep copy.

Not defaulted here, on purpose:
- ``runtimePatches[].time``: the server stamps it with its clock on create or change
  (:func:`stamp_patch_times`, given the server's time, as upstream's mutating webhook);
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
    RuntimePatch,
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


def stamp_patch_times(job: TrainJob, old: TrainJob | None, now: str) -> TrainJob:
    """A copy of ``job`` with ``runtimePatches[].time`` set as upstream's TrainJob defaulter
    does: on create, ``now`` where a patch has none; on update, a patch whose manager's patch is
    unchanged (its time aside) keeps the old time, a changed one gets ``now``, and a new
    manager's patch gets ``now`` where it has none. So a tool can tell which patch moved."""
    copy = job.model_copy(deep=True)
    patches = copy.spec.runtime_patches if copy.spec is not None else None
    if not patches:
        return copy
    before = {}
    if old is not None and old.spec is not None:
        before = {p.manager: p for p in old.spec.runtime_patches or ()}
    for patch in patches:
        previous = before.get(patch.manager)
        if previous is None:
            patch.time = patch.time or now
        elif _without_time(previous) == _without_time(patch):
            patch.time = previous.time
        else:
            patch.time = now
    return copy


def _without_time(patch: RuntimePatch) -> dict[str, object]:
    wire = patch.to_dict()
    wire.pop("time", None)
    return wire


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
