"""JobSet: the pod endpoints, the JobSet a TrainJob becomes, and the TrainJob status from it.

- pre-build: each pod set's endpoints ``<job>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>``
  (subdomain: ``network.subdomain`` or the job name), for the MPI hostfile;
- build, last of all plugins: the runtime's JobSet template with every plugin's edits copied in
  (``parallelism = completions =`` the pod set's count; env, ports and mounts upserted into the
  containers; volumes into the pods), then, as upstream's builder:

  - initializer jobs (ancestor ``dataset-initializer`` / ``model-initializer``): one replica;
    their container of the same name gets ``STORAGE_URI`` and the initializer's env, and
    ``envFrom`` its ``secretRef``; for a ``pvc://<claim>/<path>`` URI (kubetrain's), the pod
    gets that claim as the read-only volume ``storage-source``, mounted at
    :data:`PVC_SOURCE_MOUNT`, where ``python3 -m kubetrain.initializers`` reads it;
  - the trainer job: one replica; its ``node`` container gets the TrainJob's image, command
    (as the plugins rewrote it) and args, and ``trainer.env``; with MPI ``runLauncherAsNode``
    the ``node`` job's ``node`` container gets ``trainer.env`` too;
  - the gang-scheduling labels and annotations on every pod template, and
    ``suspend = spec.suspend``;
  - on a shared host network (the Info's ``host_network``): ``hostNetwork: true`` and
    ``dnsPolicy: ClusterFirstWithHostNet`` on every pod template, and the job's port recorded
    on the JobSet (:data:`~kubetrain.operator.hostports.HOST_PORT_ANNOTATION`), from
    where the workload puts it on the Service and on rank 0 alone;
  - name, namespace, labels and annotations of the TrainJob's Info, and a controller reference
    to the TrainJob.

  The JobSet is not sent to the API server: kubetrain realises it itself
  (:mod:`kubetrain.operator.trainjob.workload`), so no JobSet controller is needed;
- status (the one status plugin): ``Complete`` / ``Failed`` with JobSet's reasons and messages,
  and ``jobsStatus`` per replicated job, in template order.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from kubetrain import api
from kubetrain.operator import hostports
from kubetrain.operator.trainjob import (
    observation,
    phases,
    runtime_info,
    upserts,
)

API_VERSION: Final = "jobset.x-k8s.io/v1alpha2"
KIND: Final = "JobSet"
STORAGE_URI_ENV: Final = "STORAGE_URI"
DATASET_INITIALIZER: Final = "dataset-initializer"
MODEL_INITIALIZER: Final = "model-initializer"
PVC_SCHEME: Final = "pvc://"
PVC_SOURCE_VOLUME: Final = "storage-source"
PVC_SOURCE_MOUNT: Final = "/mnt/source"  # kubetrain.initializers.config.PVC_SOURCE_MOUNT


def subdomain(info: runtime_info.RuntimeInfo) -> str:
    network = info.jobset_spec.get("network")
    value = network.get("subdomain") if isinstance(network, dict) else None
    return value if isinstance(value, str) and value else info.name


def _container(items: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((c for c in items if c.get("name") == name), None)


def _containers(pod_spec: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = pod_spec.get(key)
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def _list(obj: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = obj.get(key)
    if not isinstance(value, list):
        value = obj[key] = []
    return value


def _copy_pod_set(rjob: dict[str, Any], pod_set: runtime_info.PodSet) -> None:
    job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
    job_spec["parallelism"] = pod_set.count
    job_spec["completions"] = pod_set.count
    pod_spec = runtime_info.ensure_pod_spec(rjob)
    if pod_set.volumes:
        upserts.upsert_volumes(_list(pod_spec, "volumes"), pod_set.volumes)
    for key, edits in (
        ("containers", pod_set.containers),
        ("initContainers", pod_set.init_containers),
    ):
        for edit in edits:
            container = _container(_containers(pod_spec, key), edit.name)
            if container is None:
                continue
            if edit.env:
                upserts.upsert_env(_list(container, "env"), edit.env)
            if edit.ports:
                upserts.upsert_ports(_list(container, "ports"), edit.ports)
            if edit.volume_mounts:
                upserts.upsert_mounts(_list(container, "volumeMounts"), edit.volume_mounts)


def _initializer(rjob: dict[str, Any], ancestor: str, job: api.TrainJob) -> None:
    rjob["replicas"] = 1
    initializer = job.spec.initializer if job.spec is not None else None
    source = getattr(initializer, "dataset" if ancestor == DATASET_INITIALIZER else "model", None)
    if source is None:
        return
    container = _container(_containers(runtime_info.ensure_pod_spec(rjob), "containers"), ancestor)
    if container is None:
        return
    env = _list(container, "env")
    if source.storage_uri is not None:
        upserts.upsert_env(env, [{"name": STORAGE_URI_ENV, "value": source.storage_uri}])
    upserts.upsert_env(env, source.env or [])
    if source.secret_ref is not None and source.secret_ref.name:
        _list(container, "envFrom").append({"secretRef": {"name": source.secret_ref.name}})
    uri = source.storage_uri or ""
    claim = uri[len(PVC_SCHEME) :].split("/", 1)[0] if uri.startswith(PVC_SCHEME) else ""
    if claim:
        volume = {
            "name": PVC_SOURCE_VOLUME,
            "persistentVolumeClaim": {"claimName": claim, "readOnly": True},
        }
        mount = {"name": PVC_SOURCE_VOLUME, "mountPath": PVC_SOURCE_MOUNT, "readOnly": True}
        upserts.upsert_volumes(_list(runtime_info.ensure_pod_spec(rjob), "volumes"), [volume])
        upserts.upsert_mounts(_list(container, "volumeMounts"), [mount])


def _trainer(rjob: dict[str, Any], info: runtime_info.RuntimeInfo, is_trainer: bool) -> None:
    trainer = info.trainer
    container = _container(_containers(runtime_info.ensure_pod_spec(rjob), "containers"), api.NODE)
    if is_trainer:
        rjob["replicas"] = 1
    if container is None or trainer is None:
        return
    if is_trainer:
        if trainer.image is not None:
            container["image"] = trainer.image
        if trainer.command is not None:
            container["command"] = list(trainer.command)
        if trainer.args is not None:
            container["args"] = list(trainer.args)
    if trainer.env:
        upserts.upsert_env(_list(container, "env"), trainer.env)


def _host_network(rjob: dict[str, Any]) -> None:
    pod_spec = runtime_info.ensure_pod_spec(rjob)
    pod_spec["hostNetwork"] = True
    pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"


def _scheduler_metadata(rjob: dict[str, Any], scheduler: runtime_info.Scheduler) -> None:
    """The gang-scheduling labels and annotations, merged into the pod template's."""
    for key, values in (
        ("labels", scheduler.pod_labels),
        ("annotations", scheduler.pod_annotations),
    ):
        if values:
            metadata = runtime_info.ensure_pod_template(rjob).setdefault("metadata", {})
            metadata[key] = {**(metadata.get(key) or {}), **values}


class JobSet:
    name = KIND

    def pre_build(self, info: runtime_info.RuntimeInfo) -> list[api.FieldError]:
        domain = subdomain(info)
        for pod_set in info.pod_sets:
            replicas = 1 if pod_set.ancestor is not None else pod_set.replicas
            pod_set.endpoints = [
                f"{info.name}-{pod_set.name}-{job}-{pod}.{domain}"
                for job in range(replicas)
                for pod in range(pod_set.count)
            ]
        return []

    def build(
        self, info: runtime_info.RuntimeInfo, context: phases.BuildContext
    ) -> list[dict[str, Any]]:
        spec = copy.deepcopy(info.jobset_spec)
        rjobs = [j for j in spec.get("replicatedJobs") or [] if isinstance(j, dict)]
        policy = info.ml_policy
        launcher_as_node = bool(policy and policy.mpi and policy.mpi.run_launcher_as_node)
        for rjob in rjobs:
            pod_set = info.pod_set(str(rjob.get("name")))
            if pod_set is not None:
                _copy_pod_set(rjob, pod_set)
            ancestor = pod_set.ancestor if pod_set is not None else None
            if ancestor in (DATASET_INITIALIZER, MODEL_INITIALIZER):
                _initializer(rjob, ancestor, info.job)
            is_trainer = ancestor == api.TRAINER_ANCESTOR
            if is_trainer or (launcher_as_node and rjob.get("name") == api.NODE):
                _trainer(rjob, info, is_trainer)
            _scheduler_metadata(rjob, info.scheduler)
            if info.host_network:
                _host_network(rjob)
        job_spec = info.job.spec
        spec["suspend"] = bool(job_spec.suspend) if job_spec is not None else False
        metadata = info.object_meta(info.name)
        if info.labels:
            metadata["labels"] = dict(info.labels)
        annotations = dict(info.annotations)
        if info.host_network:
            annotations[hostports.HOST_PORT_ANNOTATION] = str(info.port)
        if annotations:
            metadata["annotations"] = annotations
        return [{"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}]

    def status(
        self, info: runtime_info.RuntimeInfo, observed: observation.Observation
    ) -> phases.StatusUpdate:
        conditions: tuple[dict[str, Any], ...] = ()
        if observed.outcome is not None:
            outcome = observed.outcome
            conditions = (
                {
                    "type": outcome.type,
                    "status": "True",
                    "reason": outcome.reason,
                    "message": outcome.message,
                },
            )
        return phases.StatusUpdate(
            conditions=conditions,
            jobs_status=tuple(status.to_dict() for status in observed.statuses),
        )
