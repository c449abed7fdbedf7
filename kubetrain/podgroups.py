"""How a pod names the PodGroup it belongs to, and what a job's PodGroup is called.

Gang scheduling has two dialects, and every part of kubetrain that makes or reads PodGroups
speaks both: the v1 job controllers and the TrainJob plugins that create them and mark their
pods, the local scheduler that reads the marks, and the command line that shows a job's queue.

- scheduler-plugins' coscheduling (:data:`COSCHEDULING`): the pod's label
  :data:`COSCHEDULING_LABEL` names the group;
- Volcano (:data:`VOLCANO`): the pod's annotation :data:`VOLCANO_ANNOTATION` names it (Volcano
  also reads the older :data:`VOLCANO_LEGACY_ANNOTATION`).

A job has one PodGroup, in its namespace, named like the job (:func:`name_for`), as upstream's
training operator and Trainer both do.

Pure facts and two functions; imports nothing, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

KIND: Final = "PodGroup"
PLURAL: Final = "podgroups"
COSCHEDULING_GROUP: Final = "scheduling.x-k8s.io"
COSCHEDULING_VERSION: Final = "v1alpha1"
COSCHEDULING: Final = f"{COSCHEDULING_GROUP}/{COSCHEDULING_VERSION}"
VOLCANO_GROUP: Final = "scheduling.volcano.sh"
VOLCANO_VERSION: Final = "v1beta1"
VOLCANO: Final = f"{VOLCANO_GROUP}/{VOLCANO_VERSION}"

COSCHEDULING_LABEL: Final = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION: Final = "scheduling.k8s.io/group-name"
VOLCANO_LEGACY_ANNOTATION: Final = "scheduling.volcano.sh/group-name"


def name_for(job_name: str) -> str:
    """The name of the PodGroup of the job named ``job_name`` (in the job's namespace)."""
    return job_name


def member_of(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(apiVersion, name)`` of the PodGroup ``pod`` names, if any (the coscheduling label
    first, as the local scheduler has always read them)."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    labels = meta.get("labels")
    name = labels.get(COSCHEDULING_LABEL) if isinstance(labels, Mapping) else None
    if isinstance(name, str) and name:
        return COSCHEDULING, name
    annotations = meta.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    for key in (VOLCANO_ANNOTATION, VOLCANO_LEGACY_ANNOTATION):
        name = annotations.get(key)
        if isinstance(name, str) and name:
            return VOLCANO, name
    return None
