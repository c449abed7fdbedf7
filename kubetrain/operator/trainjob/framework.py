"""The runtime plugin framework: the phase protocols (defined in :mod:`.phases`, re-exported
here), the ordered plugin tuple, and the functions that run each phase.

A TrainJob is turned into Kubernetes objects in this fixed order, each phase running its
plugins in :data:`PLUGINS` order:

1. **EnforceMLPolicy**: node counts and the framework env (PET_*, OMPI_*, JAX_*, DMLC_*),
   ports, volumes; torchtune's command rewriting. First, because everything after reads counts.
2. **EnforcePodGroupPolicy**: gang-scheduling labels/annotations for every pod. After the ML
   policy, before the pod spec phase, as upstream.
3. **EnforcePodSpec**: last edits of pod sets: where the trainer reports its progress
   (upstream: the status-server plugin).
4. **PreBuild**: sync derived values (pod endpoints) and return the field errors that only a
   built Info reveals (torchtune recipes, an MPI implementation). After all edits, so that
   endpoints reflect the final counts; before build, so that nothing is created for a job
   that cannot run.
5. **Build**: the objects to exist (Secrets, ConfigMaps, PodGroups, and the JobSet that the
   workload realises as pods and a headless Service). The JobSet plugin comes last in
   :data:`PLUGINS`, so it copies every other plugin's edits into the pod templates.
6. **Status**: exactly one plugin (the JobSet) turns the observed workload into conditions and
   ``jobsStatus``; :func:`check` enforces the "exactly one" rule at start-up.

Plugins select themselves (a torch plugin does nothing for an MPI runtime) and are pure: they
edit the :class:`RuntimeInfo` they are given and return data. The order of :data:`PLUGINS` is
part of the contract (a unit test pins it): upstream keeps its plugins in a Go map, so its
order within a phase is random; here it is written once.

Must not: do I/O, or know about particular plugins beyond listing them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrain import api
from kubetrain.operator.trainjob import observation, phases, runtime_info
from kubetrain.operator.trainjob.phases import (
    Build,
    BuildContext,
    EnforceMLPolicy,
    EnforcePodGroupPolicy,
    EnforcePodSpec,
    Plugin,
    PluginError,
    PreBuild,
    Status,
    StatusUpdate,
)
from kubetrain.operator.trainjob.plugins import (
    coscheduling,
    jax,
    jobset,
    mpi,
    plainml,
    torch,
    trainerstatus,
    volcano,
    xgboost,
)

RuntimeInfo = runtime_info.RuntimeInfo

__all__ = [
    "PLUGINS",
    "Build",
    "BuildContext",
    "Built",
    "EnforceMLPolicy",
    "EnforcePodGroupPolicy",
    "EnforcePodSpec",
    "Plugin",
    "PluginError",
    "PreBuild",
    "Status",
    "StatusUpdate",
    "check",
    "phases",
    "run",
]

PLUGINS: tuple[Plugin, ...] = (
    plainml.PlainML(),  # node count and trainer env for runtimes without an ML framework
    torch.Torch(),
    mpi.MPI(),
    jax.JAX(),
    xgboost.XGBoost(),
    coscheduling.Coscheduling(),  # after the ML plugins: PodGroups count their pods
    volcano.Volcano(),
    trainerstatus.TrainerStatus(),  # after the ML plugins: its env comes after theirs
    jobset.JobSet(),  # last: copies every other plugin's edits into the pod templates
)


def check(plugins: tuple[Plugin, ...] = PLUGINS) -> None:
    """Rules about the plugin set as a whole; raises ``ValueError`` when broken."""
    status = [p.name for p in plugins if isinstance(p, Status)]
    if len(status) != 1:
        raise ValueError(f"exactly one Status plugin must be registered; found {status}")
    names = [p.name for p in plugins]
    if len(set(names)) != len(names):
        raise ValueError(f"plugin names must be unique: {names}")


def phase_plugins(phase: type, plugins: tuple[Plugin, ...] = PLUGINS) -> list[Any]:
    """The plugins implementing ``phase``, in ``plugins`` order."""
    return [p for p in plugins if isinstance(p, phase)]


def run_enforce_ml_policy(info: RuntimeInfo, plugins: tuple[Plugin, ...] = PLUGINS) -> None:
    for plugin in phase_plugins(EnforceMLPolicy, plugins):
        plugin.enforce_ml_policy(info)


def run_enforce_pod_group_policy(info: RuntimeInfo, plugins: tuple[Plugin, ...] = PLUGINS) -> None:
    for plugin in phase_plugins(EnforcePodGroupPolicy, plugins):
        plugin.enforce_pod_group_policy(info)


def run_enforce_pod_spec(info: RuntimeInfo, plugins: tuple[Plugin, ...] = PLUGINS) -> None:
    for plugin in phase_plugins(EnforcePodSpec, plugins):
        plugin.enforce_pod_spec(info)


def run_pre_build(info: RuntimeInfo, plugins: tuple[Plugin, ...] = PLUGINS) -> list[api.FieldError]:
    """Every plugin's errors, collected rather than stopping at the first."""
    errors: list[api.FieldError] = []
    for plugin in phase_plugins(PreBuild, plugins):
        errors += plugin.pre_build(info)
    return errors


def run_build(
    info: RuntimeInfo, context: BuildContext, plugins: tuple[Plugin, ...] = PLUGINS
) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for plugin in phase_plugins(Build, plugins):
        objects += plugin.build(info, context)
    return objects


def run_status(
    info: RuntimeInfo, observed: observation.Observation, plugins: tuple[Plugin, ...] = PLUGINS
) -> StatusUpdate:
    (plugin,) = phase_plugins(Status, plugins)
    result: StatusUpdate = plugin.status(info, observed)
    return result


@dataclass(frozen=True)
class Built:
    """The outcome of every phase up to build: the Info, and the objects, or the errors."""

    info: RuntimeInfo
    objects: tuple[dict[str, Any], ...]
    errors: tuple[api.FieldError, ...]


def run(
    job: api.TrainJob,
    runtime: api.Runtime,
    context: BuildContext | None = None,
    plugins: tuple[Plugin, ...] = PLUGINS,
) -> Built:
    """All phases up to build, in order, for ``job`` on its (snapshotted, defaulted) runtime.

    Raises :class:`PluginError` when a plugin refuses the job outright.
    """
    context = context or BuildContext()
    info = runtime_info.new_info(job, runtime, context.host_port)
    run_enforce_ml_policy(info, plugins)
    run_enforce_pod_group_policy(info, plugins)
    run_enforce_pod_spec(info, plugins)
    errors = run_pre_build(info, plugins)
    if errors:
        return Built(info, (), tuple(errors))
    return Built(info, tuple(run_build(info, context, plugins)), ())
