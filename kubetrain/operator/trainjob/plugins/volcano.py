"""Volcano: a ``scheduling.volcano.sh/v1beta1`` PodGroup and the pod annotation that joins it.

Every pod gets ``scheduling.k8s.io/group-name: <job>``; the PodGroup of that name holds
``minMember`` and ``minResources``, the ``queue`` from the ``scheduling.volcano.sh/queue-name``
annotation (runtime template, overridden by the TrainJob), the ``priorityClassName`` of the pod
templates (the last one set wins, as upstream), and ``networkTopology`` from the runtime's
volcano policy. As for coscheduling, an existing PodGroup changes only while the TrainJob is
suspended, and ``schedulerName`` is the runtime's. Its admission checks (an empty queue name,
a PriorityClass that does not exist) are :mod:`kubetrain.frameworks.trainjob.volcano`'s.
"""

from __future__ import annotations

from typing import Any, Final

from kubetrain import api, podgroups
from kubetrain.operator.trainjob import phases, runtime_info
from kubetrain.operator.trainjob.plugins import gang

QUEUE_ANNOTATION: Final = api.VOLCANO_QUEUE_ANNOTATION


def _policy(info: runtime_info.RuntimeInfo) -> Any:
    policy = info.pod_group_policy
    return policy.volcano if policy is not None else None


class Volcano:
    name = "Volcano"

    def enforce_pod_group_policy(self, info: runtime_info.RuntimeInfo) -> None:
        if _policy(info) is not None:
            info.scheduler.pod_annotations[podgroups.VOLCANO_ANNOTATION] = podgroups.name_for(
                info.name
            )

    def build(
        self, info: runtime_info.RuntimeInfo, context: phases.BuildContext
    ) -> list[dict[str, Any]]:
        policy = _policy(info)
        if policy is None:
            return []
        spec: dict[str, Any] = {}
        if QUEUE_ANNOTATION in info.annotations:
            spec["queue"] = info.annotations[QUEUE_ANNOTATION]
        for rjob in info.replicated_jobs():
            priority = runtime_info.pod_spec(rjob).get("priorityClassName")
            if isinstance(priority, str) and priority:
                spec["priorityClassName"] = priority
        topology = policy.network_topology
        if topology is not None:
            spec["networkTopology"] = topology.to_dict()
        return [gang.pod_group(info, podgroups.VOLCANO, **spec)]
