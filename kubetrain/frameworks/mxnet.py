"""MXJob (legacy, upstream v1.8.1): the MX_CONFIG and DMLC_* env contract for ps-lite/BytePS.

Upstream: ``pkg/controller.v1/mxnet/{mxnet,mxjob_controller}.go`` at v1.8.1, the last release
with MXJob. The scheduler's address and the server/worker counts are read back from the same
cluster spec that MX_CONFIG carries, so the two always agree. Pure: no I/O, no logging.
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

MX_CONFIG = "MX_CONFIG"
TUNER_SERVER_KEY = "tuner-server-key"  # template annotation copied into MX_CONFIG labels


def is_master(present: Collection[str], rtype: str, index: int) -> bool:
    """Upstream marks Server pods (not the Scheduler) with the master role."""
    return rtype == "Server"


def cluster_spec(
    job: api.JobKind, settings: Settings | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Every pod's address and the port it listens on (its own one on the host network)."""
    settings = settings or Settings()
    cluster: dict[str, list[dict[str, Any]]] = {}
    for rtype, spec in _replicas.specs(job).items():
        cluster[rtype.lower()] = [
            {
                "url": _replicas.pod_name(job.name, rtype, i),
                "port": _replicas.require_port(job, rtype, i, settings),
            }
            for i in range(spec.replicas or 0)
        ]
    return _gojson.sorted_map(cluster)


def _tuner_labels(job: api.JobKind) -> dict[str, str]:
    labels: dict[str, str] = {}
    for rtype, spec in _replicas.specs(job).items():
        template = spec.template if isinstance(spec.template, dict) else {}
        metadata = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
        annotations = metadata.get("annotations") or {}
        labels[rtype.lower()] = str(annotations.get(TUNER_SERVER_KEY, ""))
    return _gojson.sorted_map(labels)


def mx_config(job: api.JobKind, rtype: str, index: int, settings: Settings | None = None) -> str:
    """The MX_CONFIG text for one pod, as upstream's ``json.Marshal`` writes it."""
    return _gojson.marshal(
        {
            "cluster": cluster_spec(job, settings),
            "labels": _tuner_labels(job),
            "task": {"type": rtype.lower(), "index": index},
        }
    )


def env(job: api.JobKind, rtype: str, index: int, settings: Settings) -> ContainerEnv:
    cluster = cluster_spec(job, settings)
    schedulers = cluster.get("scheduler") or [{"url": "", "port": 0}]
    vars_ = [
        _replicas.value(MX_CONFIG, mx_config(job, rtype, index, settings)),
        _replicas.value("DMLC_PS_ROOT_PORT", str(schedulers[0]["port"])),
        _replicas.value("DMLC_PS_ROOT_URI", schedulers[0]["url"]),
        _replicas.value("DMLC_NUM_SERVER", str(len(cluster.get("server", [])))),
        _replicas.value("DMLC_NUM_WORKER", str(len(cluster.get("worker", [])))),
        _replicas.value("DMLC_ROLE", rtype.lower()),
        _replicas.value("DMLC_USE_KUBERNETES", "1"),
    ]
    if rtype == "Worker":  # BytePS reads its worker id from here
        vars_.append(_replicas.value("DMLC_WORKER_ID", str(index)))
    return _replicas.same_for_all(_replicas.specs(job).get(rtype), vars_)


FRAMEWORK = Framework(
    job_class=api.MXJob,
    name="mxnet",
    controller="mxjob-controller",
    is_master=is_master,
    env=env,
    status=StatusRules(
        order=("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"),
        leaders=("Scheduler",),
        single_worker_leads=True,
        restart_policies=frozenset({"ExitCode"}),
        messages=Messages.standard("MXJob", lower_kind="mxjob"),
    ),
)
