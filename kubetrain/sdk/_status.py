"""What the SDK reports about TrainJobs and runtimes, read from the objects the server returns.

- a runtime becomes a :class:`~kubetrain.sdk.Runtime` (framework from its
  ``trainer.kubeflow.org/framework`` label, else its ML policy; image, command and device of
  its trainer container);
- a TrainJob's pods become steps, as the Kubeflow SDK names them: ``dataset-initializer``,
  ``model-initializer``, and ``node-<i>`` with ``i`` the pod's completion index (under MPI the
  launcher is ``node-0`` and the nodes count from 1). Of several pods for one step (a restart
  recreates them) the newest is shown;
- the job's status is ``Complete`` or ``Failed`` from a True condition of that type, else
  ``Running`` when its Running condition (kubetrain's) is True or every ``node-*`` step runs
  or has succeeded, else ``Created``;
- a failure: the Failed condition's reason and message, and the step that failed, with its
  container's exit code. A step whose container exited non-zero counts as failed at once,
  even while the runtime's restart policy restarts it in place (JobSet's default restarts a
  node up to six times, with back-off, before the TrainJob is marked Failed).

Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from kubetrain import accessors, api, timefmt
from kubetrain.sdk import _runtimes, _types

JOBSET_NAME: Final = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB: Final = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX: Final = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
INITIALIZERS: Final = ("dataset-initializer", "model-initializer")
NODE: Final = "node"
LAUNCHER: Final = "launcher"
NPROC_ENV: Final = "PET_NPROC_PER_NODE"

CREATED: Final = "Created"
RUNNING: Final = "Running"
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
STATUSES: Final = (CREATED, RUNNING, COMPLETE, FAILED)
UNKNOWN: Final = "Unknown"


dig = accessors.dig  # one home: kubetrain.accessors


name_of = accessors.name_of


def parse_time(text: Any) -> datetime | None:
    """An API time (``2024-05-01T12:00:00Z``, with or without microseconds) in UTC."""
    return timefmt.parse(text)


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for item in dig(obj, "status", "conditions") or []:
        if isinstance(item, Mapping) and item.get("type") == type_:
            return item
    return None


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    found = condition(obj, type_)
    return found is not None and found.get("status") == "True"


# --- runtimes ----------------------------------------------------------------------------------


def runtime_of(obj: Mapping[str, Any]) -> _types.Runtime:
    labels = dig(obj, "metadata", "labels") or {}
    framework = str(labels.get(_runtimes.FRAMEWORK_LABEL) or _runtimes.policy_of(obj) or "plainml")
    container = _runtimes.trainer_container(obj) or {}
    device, count = device_of(container)
    num_nodes = dig(obj, "spec", "mlPolicy", "numNodes")
    kind = (
        _types.RuntimeKind.TRAINING_RUNTIME
        if obj.get("kind") == _types.RuntimeKind.TRAINING_RUNTIME.value
        else _types.RuntimeKind.CLUSTER_TRAINING_RUNTIME
    )
    trainer_type = (
        _types.TrainerType.BUILTIN_TRAINER
        if framework in ("torchtune", "trl")
        else _types.TrainerType.CUSTOM_TRAINER
    )
    return _types.Runtime(
        name=name_of(obj),
        trainer=_types.RuntimeTrainer(
            trainer_type=trainer_type,
            framework=framework,
            image=container.get("image") if isinstance(container.get("image"), str) else None,
            num_nodes=num_nodes if isinstance(num_nodes, int) and num_nodes > 0 else 1,
            device=device,
            device_count=count,
            command=tuple(str(c) for c in container.get("command") or ()),
        ),
        kind=kind,
    )


def missing_runtime(name: str, kind: str | None = None) -> _types.Runtime:
    """What a job reports when the runtime it names is gone."""
    runtime_kind = (
        _types.RuntimeKind.TRAINING_RUNTIME
        if kind == _types.RuntimeKind.TRAINING_RUNTIME.value
        else _types.RuntimeKind.CLUSTER_TRAINING_RUNTIME
    )
    trainer = _types.RuntimeTrainer(_types.TrainerType.CUSTOM_TRAINER, framework=UNKNOWN)
    return _types.Runtime(name=name, trainer=trainer, kind=runtime_kind)


def merge_runtimes(
    namespaced: Iterable[Mapping[str, Any]], cluster: Iterable[Mapping[str, Any]]
) -> list[_types.Runtime]:
    """Every runtime a TrainJob of the namespace may name; a TrainingRuntime hides a
    ClusterTrainingRuntime of the same name, as the controller resolves names. By name."""
    found = {name_of(o): runtime_of(o) for o in cluster}
    found.update({name_of(o): runtime_of(o) for o in namespaced})
    return [found[n] for n in sorted(found)]


def device_of(container: Mapping[str, Any]) -> tuple[str, str]:
    """``(device, count per node)``: GPUs when the container asks for any, else CPUs; the
    count is torch's processes per node when set to a number."""
    resources = container.get("resources")
    gpus = api.gpu_count(resources)
    device, count = ("gpu", gpus) if gpus else ("cpu", api.cpu_count(resources))
    for item in container.get("env") or []:
        if isinstance(item, Mapping) and item.get("name") == NPROC_ENV:
            value = item.get("value")
            if isinstance(value, str) and value.isdigit():
                count = int(value)
    return device, str(count) if count else UNKNOWN


# --- steps and jobs ----------------------------------------------------------------------------


def main_container(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    containers = [c for c in dig(pod, "spec", "containers") or [] if isinstance(c, Mapping)]
    for container in containers:
        if container.get("name") == NODE:
            return container
    return containers[0] if containers else {}


def container_status(pod: Mapping[str, Any], container: str) -> Mapping[str, Any] | None:
    for item in dig(pod, "status", "containerStatuses") or []:
        if isinstance(item, Mapping) and item.get("name") == container:
            return item
    return None


def exit_code(pod: Mapping[str, Any]) -> int | None:
    """How the main container last ended: its current state if terminated, else the last."""
    status = container_status(pod, str(main_container(pod).get("name") or ""))
    if status is None:
        return None
    for state in ("state", "lastState"):
        code = dig(status, state, "terminated", "exitCode")
        if isinstance(code, int):
            return code
    return None


def _index(pod: Mapping[str, Any]) -> int:
    labels = dig(pod, "metadata", "labels") or {}
    text = labels.get(COMPLETION_INDEX) or dig(pod, "metadata", "annotations", COMPLETION_INDEX)
    return int(text) if isinstance(text, str) and text.isdigit() else 0


def step_name(pod: Mapping[str, Any], mpi: bool = False) -> str:
    rjob = str(dig(pod, "metadata", "labels", REPLICATED_JOB) or "")
    if rjob in INITIALIZERS:
        return rjob
    if rjob == LAUNCHER:
        return f"{NODE}-0"
    if rjob == NODE:
        return f"{NODE}-{_index(pod) + 1 if mpi else _index(pod)}"
    return f"{rjob or 'pod'}-{_index(pod)}"


def step_of(pod: Mapping[str, Any], mpi: bool = False) -> _types.Step:
    device, count = device_of(main_container(pod))
    status = container_status(pod, str(main_container(pod).get("name") or "")) or {}
    restarts = status.get("restartCount")
    return _types.Step(
        name=step_name(pod, mpi),
        status=dig(pod, "status", "phase") or None,
        pod_name=name_of(pod),
        device=device,
        device_count=count,
        node=dig(pod, "spec", "nodeName") or None,
        exit_code=exit_code(pod),
        restarts=restarts if isinstance(restarts, int) else 0,
    )


def _step_order(step: _types.Step) -> tuple[int, int, str]:
    if step.name in INITIALIZERS:
        return (0, INITIALIZERS.index(step.name), step.name)
    prefix, _, number = step.name.rpartition("-")
    if prefix == NODE and number.isdigit():
        return (1, int(number), step.name)
    return (2, 0, step.name)


def steps_of(pods: Iterable[Mapping[str, Any]], mpi: bool = False) -> list[_types.Step]:
    """One step per name, from the newest pod (by creation time, then name), in order:
    initializers, then the nodes by number, then anything else."""
    newest: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for pod in pods:
        name = step_name(pod, mpi)
        created = str(dig(pod, "metadata", "creationTimestamp") or "")
        deleting = bool(dig(pod, "metadata", "deletionTimestamp"))
        rank = ("0" if deleting else "1") + created + name_of(pod)
        if name not in newest or rank > newest[name][0]:
            newest[name] = (rank, pod)
    return sorted((step_of(pod, mpi) for _, pod in newest.values()), key=_step_order)


def pods_by_job(pods: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        job = dig(pod, "metadata", "labels", JOBSET_NAME)
        if isinstance(job, str):
            grouped.setdefault(job, []).append(pod)
    return grouped


def status_of(trainjob: Mapping[str, Any], steps: Sequence[_types.Step]) -> str:
    if is_true(trainjob, FAILED):
        return FAILED
    if is_true(trainjob, COMPLETE):
        return COMPLETE
    if is_true(trainjob, RUNNING):
        return RUNNING
    nodes = [s for s in steps if s.name.startswith(f"{NODE}-")]
    if nodes and all(s.status in ("Running", "Succeeded") for s in nodes):
        return RUNNING
    return CREATED


def trainjob_of(
    obj: Mapping[str, Any], runtime: _types.Runtime, pods: Iterable[Mapping[str, Any]]
) -> _types.TrainJob:
    mpi = runtime.trainer.framework == "mpi" or runtime.trainer.command[:1] == ("mpirun",)
    steps = steps_of(pods, mpi)
    num_nodes = dig(obj, "spec", "trainer", "numNodes")
    failed = condition(obj, FAILED)
    message = ""
    if failed is not None and failed.get("status") == "True":
        message = ": ".join(str(failed.get(k)) for k in ("reason", "message") if failed.get(k))
    return _types.TrainJob(
        name=name_of(obj),
        runtime=runtime,
        steps=steps,
        num_nodes=num_nodes if isinstance(num_nodes, int) else runtime.trainer.num_nodes,
        creation_timestamp=parse_time(dig(obj, "metadata", "creationTimestamp")),
        status=status_of(obj, steps),
        namespace=str(dig(obj, "metadata", "namespace") or "default"),
        message=message,
    )


@dataclass(frozen=True)
class Failure:
    """Why a job counts as failed, and the step to blame (None if no step exited non-zero)."""

    message: str
    step: str | None = None
    pod: str | None = None
    exit_code: int | None = None


def failed_step(steps: Sequence[_types.Step]) -> _types.Step | None:
    """The first step (in step order) whose container exited non-zero, or whose pod failed."""
    for step in steps:
        if step.exit_code not in (None, 0):
            return step
    for step in steps:
        if step.status == "Failed":
            return step
    return None


def failure_of(job: _types.TrainJob) -> Failure | None:
    """Why ``job`` failed: its Failed condition, or a step that exited non-zero."""
    step = failed_step(job.steps)
    where = f"TrainJob {job.namespace}/{job.name}"
    if job.status == FAILED:
        text = f"{where} failed: {job.message or 'Failed'}"
    elif step is not None and step.exit_code not in (None, 0):
        text = f"{where}: step {step.name} failed"
    else:
        return None
    if step is None:
        return Failure(text)
    if step.exit_code is not None:
        text += f"; step {step.name} (pod {step.pod_name}) exited with code {step.exit_code}"
    else:
        text += f"; step {step.name} (pod {step.pod_name}) is {step.status}"
    return Failure(text, step.name, step.pod_name, step.exit_code)


def job_pod_name(job: str) -> re.Pattern[str]:
    """The names of a TrainJob's pods: ``<job>-<replicatedJob>-<jobIndex>-<podIndex>``."""
    return re.compile(rf"^{re.escape(job)}-[a-z0-9]([a-z0-9-]*[a-z0-9])?-\d+-\d+$")


# --- events ------------------------------------------------------------------------------------


def event_of(obj: Mapping[str, Any]) -> _types.Event:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    when = (
        parse_time(obj.get("eventTime"))
        or parse_time(obj.get("lastTimestamp"))
        or parse_time(obj.get("firstTimestamp"))
        or parse_time(dig(obj, "metadata", "creationTimestamp"))
    )
    return _types.Event(
        involved_object_kind=str(involved.get("kind") or ""),
        involved_object_name=str(involved.get("name") or ""),
        message=str(obj.get("message") or obj.get("note") or ""),
        reason=str(obj.get("reason") or ""),
        event_time=when,
    )


def sorted_events(events: Iterable[_types.Event]) -> list[_types.Event]:
    floor = datetime.min.replace(tzinfo=timezone.utc)
    return sorted(events, key=lambda e: e.event_time or floor)
