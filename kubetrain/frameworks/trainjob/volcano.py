"""Volcano: what admission checks of a TrainJob on a runtime with a volcano pod-group policy.

As upstream's Volcano plugin ``Validate``:

- the queue annotation ``scheduling.volcano.sh/queue-name``, as the JobSet would carry it
  (runtime template, then the TrainJob's ``annotations``, then its runtime patches' template
  annotations, later ones winning), must not be empty when present;
- a pod template's ``priorityClassName`` must name a PriorityClass that exists. Looking one up
  needs the cluster, so this runs only where the caller gives a lookup (the API server's
  admission); the search stops, as upstream's does, at the first system class it meets.

The PodGroup itself is built by the operator's volcano plugin. Pure: the lookup is the
caller's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain import api
from kubetrain.frameworks.trainjob import node

QUEUE_MESSAGE = "Volcano queue name must not be empty"
PRIORITY_CLASS_PATH = "spec.templateSpec.priorityClassName"  # upstream's path
PRIORITY_CLASS_MESSAGE = (
    'PriorityClass "{name}" doesn\'t exist: priorityclasses.scheduling.k8s.io "{name}" not found'
)
SYSTEM_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def annotations(job: api.TrainJob, runtime: api.Runtime) -> dict[str, str]:
    """The JobSet's annotations as the runtime, the TrainJob and its patches set them."""
    spec = runtime.spec
    result: dict[str, str] = {}
    if spec is not None and spec.template is not None and spec.template.metadata is not None:
        result.update(spec.template.metadata.annotations or {})
    result.update((job.spec.annotations if job.spec else None) or {})
    for patch in (job.spec.runtime_patches if job.spec else None) or ():
        template = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        if template is not None and template.metadata is not None:
            result.update(template.metadata.annotations or {})
    return result


def validate(
    job: api.TrainJob,
    runtime: api.Runtime,
    find_priority_class: api.PriorityClassLookup | None = None,
) -> list[api.FieldError]:
    """The Volcano plugin's admission checks; none without a volcano policy."""
    spec = runtime.spec
    if spec is None or spec.pod_group_policy is None or spec.pod_group_policy.volcano is None:
        return []
    errors: list[api.FieldError] = []
    if annotations(job, runtime).get(api.VOLCANO_QUEUE_ANNOTATION) == "":
        path = api.Path("spec").child("annotations").key(api.VOLCANO_QUEUE_ANNOTATION)
        errors.append(api.FieldError(api.ErrorType.INVALID, str(path), QUEUE_MESSAGE, ""))
    if find_priority_class is None:
        return errors
    items = node.jobset_spec(runtime).get("replicatedJobs")
    for rjob in items if isinstance(items, list) else ():
        if not isinstance(rjob, dict):
            continue
        pod_spec = _pod_spec(rjob)
        name = pod_spec.get("priorityClassName") if pod_spec is not None else None
        if not isinstance(name, str):
            continue
        if name in SYSTEM_PRIORITY_CLASSES:
            break  # upstream stops looking at the first of these
        if not find_priority_class(name):
            detail = PRIORITY_CLASS_MESSAGE.format(name=name)
            errors.append(api.FieldError(api.ErrorType.INVALID, PRIORITY_CLASS_PATH, detail, name))
    return errors


def _pod_spec(rjob: Mapping[str, Any]) -> Mapping[str, Any] | None:
    value: Any = rjob
    for key in ("template", "spec", "template", "spec"):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, dict) else None
