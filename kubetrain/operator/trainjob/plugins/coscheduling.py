"""Coscheduling (scheduler-plugins): a ``scheduling.x-k8s.io/v1alpha1`` PodGroup and its label.

Every pod gets the label ``scheduling.x-k8s.io/pod-group: <job>``; the PodGroup of that name
holds ``minMember``, ``minResources`` and ``scheduleTimeoutSeconds`` (default 60). The plugin
does not set ``schedulerName``: the runtime's pod template names the coscheduling profile.
The reconciler writes the PodGroup when it is missing and, as upstream, changes an existing
one only while the TrainJob is suspended.
"""

from __future__ import annotations

from typing import Any, Final

from kubetrain import podgroups
from kubetrain.operator.trainjob import phases, runtime_info
from kubetrain.operator.trainjob.plugins import gang

DEFAULT_SCHEDULE_TIMEOUT_SECONDS: Final = 60


def _policy(info: runtime_info.RuntimeInfo) -> Any:
    policy = info.pod_group_policy
    return policy.coscheduling if policy is not None else None


class Coscheduling:
    name = "CoScheduling"

    def enforce_pod_group_policy(self, info: runtime_info.RuntimeInfo) -> None:
        if _policy(info) is not None:
            info.scheduler.pod_labels[podgroups.COSCHEDULING_LABEL] = podgroups.name_for(info.name)

    def build(
        self, info: runtime_info.RuntimeInfo, context: phases.BuildContext
    ) -> list[dict[str, Any]]:
        policy = _policy(info)
        if policy is None:
            return []
        timeout = policy.schedule_timeout_seconds
        if timeout is None:
            timeout = DEFAULT_SCHEDULE_TIMEOUT_SECONDS
        return [gang.pod_group(info, podgroups.COSCHEDULING, scheduleTimeoutSeconds=timeout)]
