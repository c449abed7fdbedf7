"""``kubeflow.org/v1`` jobs for ``TrainingClient``: the kinds by name, jobs built from a
function or an image, their conditions, and why one failed.

A job from ``train_func`` is built as kubeflow-training 1.9 builds it: a PyTorchJob gets one
Master and ``num_workers - 1`` Workers (the Master is what makes the operator set ``RANK``
and ``WORLD_SIZE``); a TFJob gets ``num_workers`` Workers, plus Chief and PS replicas when
asked; the pod template carries ``sidecar.istio.io/inject: "false"``; resources are requests
and limits alike. The function is called with ``parameters`` as one positional dict (v1's
convention) and runs as ``python3 -u -c SCRIPT``, or under ``torchrun --no-python`` for a
PyTorchJob of more than one worker or with ``num_procs_per_worker``. Unlike 1.9, such a
PyTorchJob gets ``nprocPerNode`` 1 unless told otherwise: torchrun's ``auto`` on a CPU node
means one process per host CPU, and the local control plane runs all nodes on one host.

Must not: do I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kubetrain import api, kube
from kubetrain.sdk import _fields, _functions, _status, _trainjobs, _types
from kubetrain.sdk._errors import InvalidTrainer

GROUP: Final = "kubeflow.org"
VERSION: Final = "v1"
DEFAULT_IMAGES: Final = {
    "PyTorchJob": "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime",
    "TFJob": "docker.io/tensorflow/tensorflow:2.9.1",
}
FUNCTION_KINDS: Final = tuple(DEFAULT_IMAGES)
ISTIO_ANNOTATION: Final = "sidecar.istio.io/inject"
CONDITION_TYPES: Final = ("Created", "Running", "Restarting", "Succeeded", "Suspended", "Failed")
_BY_NAME: Final = {cls.KIND.lower(): cls for cls in api.V1_KINDS}


def kind_of(job_kind: str) -> type[api.JobKind]:
    """The v1 kind named (any case); InvalidTrainer names the accepted ones."""
    found = _BY_NAME.get(str(job_kind).lower())
    if found is None:
        accepted = ", ".join(cls.KIND for cls in api.V1_KINDS)
        raise InvalidTrainer(f"job_kind: {job_kind!r}; accepted: {accepted}")
    return found


def resource_of(kind: type[api.JobKind]) -> kube.Resource:
    return kube.Resource(GROUP, VERSION, kind.PLURAL, kind=kind.KIND)


def build(
    *,
    kind: type[api.JobKind],
    name: str,
    namespace: str,
    train_func: Callable[..., Any] | None = None,
    parameters: Mapping[str, Any] | None = None,
    base_image: str | None = None,
    num_workers: int = 1,
    num_procs_per_worker: int | str | None = None,
    resources_per_worker: Mapping[str, Any] | None = None,
    num_chief_replicas: int | None = None,
    num_ps_replicas: int | None = None,
    packages_to_install: Sequence[str] | None = None,
    pip_index_url: str | None = None,
    env_vars: Mapping[str, str] | Sequence[Mapping[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A job of ``kind`` running ``train_func`` (or the image's own entry point)."""
    if kind.KIND not in FUNCTION_KINDS:
        raise InvalidTrainer(
            f"job_kind: {kind.KIND} jobs are created from a job object only; accepted for "
            f"train_func and base_image: {', '.join(FUNCTION_KINDS)}"
        )
    if train_func is None and base_image is None:
        raise InvalidTrainer("create_job: give job, train_func or base_image")
    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
        raise InvalidTrainer(f"num_workers: {num_workers!r}; accepted: a whole number, 1 or more")
    check_name(name, "name")
    check_name(namespace, "namespace")
    for field, text in (("base_image", base_image), ("pip_index_url", pip_index_url)):
        if text is not None and (not isinstance(text, str) or not text):
            raise InvalidTrainer(f"{field}: {text!r}; accepted: a string")
    for field, count in (
        ("num_chief_replicas", num_chief_replicas),
        ("num_ps_replicas", num_ps_replicas),
    ):
        if count is not None and (
            not isinstance(count, int) or isinstance(count, bool) or count < 0
        ):
            raise InvalidTrainer(f"{field}: {count!r}; accepted: a whole number, 0 or more")
    procs = num_procs_per_worker
    if procs is not None and not (
        (isinstance(procs, int) and not isinstance(procs, bool) and procs >= 1)
        or (isinstance(procs, str) and procs)
    ):
        raise InvalidTrainer(
            f"num_procs_per_worker: {procs!r}; accepted: a whole number, 1 or more, or auto"
        )
    if packages_to_install is not None:  # a string would install each of its letters
        packages_to_install = _fields.strings(packages_to_install, "packages_to_install")
    if resources_per_worker is not None and not isinstance(resources_per_worker, Mapping):
        _fields.resources(resources_per_worker, "resources_per_worker")  # raises: not a dict
    check_strings_map(labels, "labels")
    check_strings_map(annotations, "annotations")
    container: dict[str, Any] = {
        "name": kind.DEFAULT_CONTAINER,
        "image": base_image or DEFAULT_IMAGES[kind.KIND],
    }
    torchrun = kind.KIND == "PyTorchJob" and (num_workers > 1 or num_procs_per_worker is not None)
    if train_func is not None:
        prepared = _functions.prepare(
            train_func, parameters, where="train_func", style="positional"
        )
        command = [*_trainjobs.PYTHON, prepared.script]
        if torchrun:
            command = [*_trainjobs.TORCHRUN, *command]
        trainer = _types.CommandTrainer(
            command=command,
            packages_to_install=list(packages_to_install) if packages_to_install else None,
            pip_index_urls=[pip_index_url] if pip_index_url else None,
        )
        spec = _trainjobs.trainer_spec(trainer, {})
        container["command"] = spec["command"]
    env = _env(env_vars)
    if env:
        container["env"] = env
    if resources_per_worker:
        lowered = {str(k).lower(): v for k, v in resources_per_worker.items()}
        container["resources"] = _fields.resources(lowered, "resources_per_worker")
    template = {
        "metadata": {"annotations": {ISTIO_ANNOTATION: "false"}},
        "spec": {"containers": [container]},
    }

    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "template": template}

    if kind.KIND == "PyTorchJob":
        specs = {"Master": replica(1)}
        if num_workers > 1:
            specs["Worker"] = replica(num_workers - 1)
        spec_body: dict[str, Any] = {"pytorchReplicaSpecs": specs}
        if torchrun or num_procs_per_worker is not None:
            spec_body["nprocPerNode"] = str(num_procs_per_worker or 1)
    else:
        specs = {}
        if num_chief_replicas:
            specs["Chief"] = replica(num_chief_replicas)
        if num_ps_replicas:
            specs["PS"] = replica(num_ps_replicas)
        specs["Worker"] = replica(num_workers)
        spec_body = {"tfReplicaSpecs": specs}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind.KIND,
        "metadata": metadata,
        "spec": spec_body,
    }


def check_name(value: Any, field: str) -> None:
    """A name (of a job, a namespace) the caller gave is a string: a number or None would only
    be refused by the server, after a round trip, or name something else."""
    if not isinstance(value, str) or not value:
        raise InvalidTrainer(f"{field}: {value!r}; accepted: a name (a non-empty string)")


def check_strings_map(value: Any, field: str) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidTrainer(f"{field}: {value!r}; accepted: a dict of strings to strings")


def _env(given: Mapping[str, str] | Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    if not given:
        return []
    if isinstance(given, str) or not isinstance(given, Mapping | Sequence):
        raise InvalidTrainer(
            f"env_vars: {given!r}; accepted: a dict of names to values, or a list of "
            '{"name": ..., "value": ...}'
        )
    if isinstance(given, Mapping):
        return [{"name": str(k), "value": str(v)} for k, v in given.items()]
    env = []
    for item in given:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise InvalidTrainer(
                f"env_vars: {item!r}; accepted: a dict of names to values, or a list of "
                '{"name": ..., "value": ...}'
            )
        env.append(dict(item))
    return env


# --- reading jobs ------------------------------------------------------------------------------


def conditions(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        dict(c) for c in _status.dig(job, "status", "conditions") or [] if isinstance(c, Mapping)
    ]


def true_conditions(job: Mapping[str, Any]) -> set[str]:
    return {str(c.get("type")) for c in conditions(job) if c.get("status") == "True"}


def pod_selector(
    name: str,
    *,
    is_master: bool = False,
    replica_type: str | None = None,
    replica_index: int | None = None,
) -> str:
    """The labels kubeflow-training 1.9 selects a job's pods by."""
    parts = [f"{api.JOB_NAME_LABEL}={name}"]
    if is_master:
        parts.append(f"{api.JOB_ROLE_LABEL}=master")
    if replica_type is not None:
        parts.append(f"{api.REPLICA_TYPE_LABEL}={replica_type.lower()}")
    if replica_index is not None:
        parts.append(f"{api.REPLICA_INDEX_LABEL}={replica_index}")
    return ",".join(parts)


def replica_of(pod: Mapping[str, Any]) -> str:
    """``worker-1``: a pod's replica type and index."""
    labels = _status.dig(pod, "metadata", "labels") or {}
    rtype = labels.get(api.REPLICA_TYPE_LABEL) or "pod"
    index = labels.get(api.REPLICA_INDEX_LABEL)
    return f"{rtype}-{index}" if index is not None else str(rtype)


def exit_code(pod: Mapping[str, Any], container: str) -> int | None:
    status = _status.container_status(pod, container)
    if status is None:
        return None
    for state in ("state", "lastState"):
        code = _status.dig(status, state, "terminated", "exitCode")
        if isinstance(code, int):
            return code
    return None


def failure_of(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], container: str
) -> _status.Failure | None:
    """Why a v1 job failed (its Failed condition), and the first replica that exited
    non-zero; None while it has not failed."""
    failed = _status.condition(job, "Failed")
    if failed is None or failed.get("status") != "True":
        return None
    ref = f"{job.get('kind')} {_status.dig(job, 'metadata', 'namespace')}/{_status.name_of(job)}"
    reason = ": ".join(str(failed.get(k)) for k in ("reason", "message") if failed.get(k))
    text = f"{ref} failed: {reason or 'Failed'}"
    for pod in sorted(pods, key=replica_of):
        code = exit_code(pod, container)
        if code not in (None, 0):
            replica = replica_of(pod)
            text += f"; replica {replica} (pod {_status.name_of(pod)}) exited with code {code}"
            return _status.Failure(text, replica, _status.name_of(pod), code)
    return _status.Failure(text)
