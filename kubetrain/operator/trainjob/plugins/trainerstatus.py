"""TrainerStatus: tells the trainer which TrainJob it reports its progress to.

Upstream's ``TrainJobStatus`` plugin (an EnforcePodSpec plugin, behind a feature gate) gives
the trainer a status server's URL, CA and token. kubetrain's training processes write
``status.trainerStatus`` themselves through the pod's in-cluster credentials
(:mod:`kubetrain.progress`), so all they need is the TrainJob's name and namespace:
``KUBETRAIN_TRAINJOB_NAME`` and ``KUBETRAIN_TRAINJOB_NAMESPACE`` on the trainer's ``node``
container, after every other env (the values are the job's own; a user's value would only
send reports to another job).

In the pod-spec phase, after the ML and pod-group plugins, as upstream's. Pure.
"""

from __future__ import annotations

from typing import Final

from kubetrain.frameworks.trainjob import node
from kubetrain.operator.trainjob import runtime_info, upserts

NAME_ENV: Final = "KUBETRAIN_TRAINJOB_NAME"  # kubetrain.progress.NAME_ENV
NAMESPACE_ENV: Final = "KUBETRAIN_TRAINJOB_NAMESPACE"  # kubetrain.progress.NAMESPACE_ENV


class TrainerStatus:
    name = "TrainerStatus"

    def enforce_pod_spec(self, info: runtime_info.RuntimeInfo) -> None:
        container = info.trainer_container()
        if container is None:
            return
        upserts.upsert_env(
            container.env,
            [node.value_env(NAME_ENV, info.name), node.value_env(NAMESPACE_ENV, info.namespace)],
        )
