"""What both gang-scheduling PodGroups count: every pod of the TrainJob, and what they request.

``minMember`` is the number of pods over all replicated jobs, initializers included (upstream
counts them too), and ``minResources`` the sum of their requests (after
``trainer.resourcesPerNode`` is applied; see :mod:`~kubetrain.operator.trainjob.runtime_info`).
Pure.
"""

from __future__ import annotations

from kubetrain.operator.trainjob import podrequests, runtime_info


def min_member(info: runtime_info.RuntimeInfo) -> int:
    return sum(pod_set.count * pod_set.replicas for pod_set in info.pod_sets)


def min_resources(info: runtime_info.RuntimeInfo) -> dict[str, str]:
    total: podrequests.Requests = {}
    for pod_set in info.pod_sets:
        podrequests.add(total, pod_set.single_pod_requests, pod_set.count * pod_set.replicas)
    return podrequests.as_resource_list(total)
