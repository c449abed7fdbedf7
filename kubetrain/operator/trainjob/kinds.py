"""The Kubernetes resources the TrainJob controller reads and writes, named once.

Must not: hold anything but :class:`kubetrain.kube.Resource` values.
"""

from __future__ import annotations

from typing import Final

from kubetrain import kube, podgroups

TRAINER_GROUP: Final = "trainer.kubeflow.org"
TRAINJOBS: Final = kube.Resource(TRAINER_GROUP, "v1alpha1", "trainjobs", kind="TrainJob")
TRAINING_RUNTIMES: Final = kube.Resource(
    TRAINER_GROUP, "v1alpha1", "trainingruntimes", kind="TrainingRuntime"
)
CLUSTER_TRAINING_RUNTIMES: Final = kube.Resource(
    TRAINER_GROUP,
    "v1alpha1",
    "clustertrainingruntimes",
    namespaced=False,
    kind="ClusterTrainingRuntime",
)
PODS: Final = kube.Resource("", "v1", "pods", kind="Pod")
SERVICES: Final = kube.Resource("", "v1", "services", kind="Service")
CONFIGMAPS: Final = kube.Resource("", "v1", "configmaps", kind="ConfigMap")
SECRETS: Final = kube.Resource("", "v1", "secrets", kind="Secret")
PERSISTENT_VOLUME_CLAIMS: Final = kube.Resource(
    "", "v1", "persistentvolumeclaims", kind="PersistentVolumeClaim"
)
COSCHEDULING_POD_GROUPS: Final = kube.Resource(
    podgroups.COSCHEDULING_GROUP,
    podgroups.COSCHEDULING_VERSION,
    podgroups.PLURAL,
    kind=podgroups.KIND,
)
VOLCANO_POD_GROUPS: Final = kube.Resource(
    podgroups.VOLCANO_GROUP, podgroups.VOLCANO_VERSION, podgroups.PLURAL, kind=podgroups.KIND
)

BY_API_VERSION_KIND: Final = {
    (r.api_version, r.kind): r
    for r in (PODS, SERVICES, CONFIGMAPS, SECRETS, COSCHEDULING_POD_GROUPS, VOLCANO_POD_GROUPS)
}
