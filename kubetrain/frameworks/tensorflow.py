"""TFJob: the TF_CONFIG contract, the chief/worker-0 master rule and TF's status rules.

Upstream: ``pkg/controller.v1/tensorflow/{tensorflow,tfjob_controller,util}.go`` (v1.9.4).
TF_CONFIG goes only to the container named ``tensorflow`` and only when the job has more than
one replica in total; a single-replica job trains locally. Pure: no I/O, no logging.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from kubetrain import api
from kubetrain.frameworks import _gojson, _replicas
from kubetrain.frameworks._framework import (
    ContainerEnv,
    Framework,
    Messages,
    Settings,
    StatusRules,
)

TF_CONFIG = "TF_CONFIG"


def is_master(present: Collection[str], rtype: str, index: int) -> bool:
    """Chief or Master when the job has either; otherwise worker 0."""
    if "Chief" in present or "Master" in present:
        return rtype in ("Chief", "Master")
    return rtype == "Worker" and index == 0


def is_distributed(job: api.JobKind) -> bool:
    """More (or fewer) than exactly one replica in total."""
    return _replicas.total(job) != 1


def port(job: api.JobKind, rtype: str, index: int = 0, settings: Settings | None = None) -> int:
    """The port of pod ``index``: its host port, else the ``tfjob-port`` of that replica's
    ``tensorflow`` container, else 2222."""
    found = _replicas.port_of(job, rtype, index, settings or Settings())
    return job.DEFAULT_PORT if found is None else found


def cluster_spec(job: api.JobKind, settings: Settings | None = None) -> dict[str, list[str]]:
    """Every replica's endpoint ``<pod>.<ns>.svc[.<domain>]:<port>``, keyed by lower type.

    Each pod is listed with its own port, so host-network pods are found where they listen.
    """
    settings = settings or Settings()
    domain = f".{settings.cluster_domain}" if settings.cluster_domain else ""
    cluster: dict[str, list[str]] = {}
    for rtype, spec in _replicas.specs(job).items():
        cluster[rtype.lower()] = [
            f"{_replicas.pod_name(job.name, rtype, i)}.{_replicas.namespace(job)}.svc{domain}"
            f":{port(job, rtype, i, settings)}"
            for i in range(spec.replicas or 0)
        ]
    return _gojson.sorted_map(cluster)


def tf_config(job: api.JobKind, rtype: str, index: int, settings: Settings | None = None) -> str:
    """The TF_CONFIG text for one pod, exactly as upstream's ``json.Marshal`` writes it."""
    cluster = cluster_spec(job, settings)
    rt = rtype.lower()
    task = {"type": rt, "index": index}
    if not job.spec.enable_dynamic_worker:
        return _gojson.marshal({"cluster": cluster, "task": task, "environment": "cloud"})
    # Sparse form: a worker knows only itself and every PS; a PS knows only itself. Other
    # types get an empty cluster. Upstream leaves "ps" null for a worker when there is no PS.
    workers: dict[str, str] = {}
    ps: list[str] | None = []
    if rt == "ps":
        ps = [cluster[rt][index]]
    elif rt == "worker":
        ps = cluster.get("ps")
        workers[str(index)] = cluster[rt][index]
    sparse: dict[str, Any] = {"worker": workers, "ps": ps}
    return _gojson.marshal({"cluster": sparse, "task": task})


def env(job: api.JobKind, rtype: str, index: int, settings: Settings) -> ContainerEnv:
    if not is_distributed(job):
        return {}
    names = [c.get("name") for c in _replicas.containers(_replicas.specs(job).get(rtype))]
    if job.DEFAULT_CONTAINER not in names:
        return {}
    text = tf_config(job, rtype, index, settings)
    return {job.DEFAULT_CONTAINER: (_replicas.value(TF_CONFIG, text),)}


FRAMEWORK = Framework(
    job_class=api.TFJob,
    name="tensorflow",
    controller="tfjob-controller",
    is_master=is_master,
    env=env,
    status=StatusRules(
        order=("Chief", "Evaluator", "Master", "PS", "Worker"),
        leaders=("Chief", "Master"),
        fallback="Worker",
        leader_success_stops=False,
        keeps_restarting=True,
        dynamic_workers_ignore_failures=True,
        worker0_success=True,
        messages=Messages(
            running_leader="TFJob {namespace}/{name} is running.",
            succeeded_leader="TFJob {namespace}/{name} successfully completed.",
            running="TFJob {namespace}/{name} is running.",
            succeeded="TFJob {namespace}/{name} successfully completed.",
            restarting="",  # TF never words its own: it re-sets the Restarting already there
            failed=(
                "TFJob {namespace}/{name} has failed because {failed} {rtype} replica(s) failed."
            ),
        ),
    ),
)
