"""What both gang-scheduling PodGroups share: the object, named for the TrainJob, and what it
counts: every pod of the TrainJob, and what they request.

``minMember`` is the number of pods over all replicated jobs, initializers included (upstream
counts them too), and ``minResources`` the sum of their requests (after
``trainer.resourcesPerNode`` is applied; see :mod:`~kubetrain.operator.trainjob.runtime_info`).
Pure.
"""

from __future__ import annotations

from typing import Any

from kubetrain import podgroups
from kubetrain.operator.trainjob import podrequests, runtime_info


def min_member(info: runtime_info.RuntimeInfo) -> int:
    return sum(pod_set.count * pod_set.replicas for pod_set in info.pod_sets)


def min_resources(info: runtime_info.RuntimeInfo) -> dict[str, str]:
    total: podrequests.Requests = {}
    for pod_set in info.pod_sets:
        podrequests.add(total, pod_set.single_pod_requests, pod_set.count * pod_set.replicas)
    return podrequests.as_resource_list(total)


def pod_group(info: runtime_info.RuntimeInfo, api_version: str, **more: Any) -> dict[str, Any]:
    """The TrainJob's PodGroup of ``api_version``: named for the job, counting all its pods
    and their requests, with the kind's ``more`` fields after those two."""
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": info.object_meta(podgroups.name_for(info.name)),
        "spec": {"minMember": min_member(info), "minResources": min_resources(info), **more},
    }
