"""How many times a job has been retried, for ``runPolicy.backoffLimit``.

Upstream sums the ``restartCount`` of the containers of Running pods only (reference 3.4). With
``restartPolicy: ExitCode`` (or a pod that reached Failed under OnFailure/Always) the operator
deletes the failed pod and creates a new one, whose counts start at zero, so those retries are
never counted and the limit never bites (kubeflow/trainer#2045). kubetrain counts them:

- each pod the operator deletes to recreate it adds 1 plus that pod's own in-place restarts to
  a count recorded on the replica's headless Service (:data:`RESTARTS_ANNOTATION`), which
  outlives the pod; the Service also records the uid of the last pod counted
  (:data:`RESTARTED_POD_ANNOTATION`), so a pod seen twice is counted once;
- in-place restarts of the pods that exist now are added, for replica types whose
  restartPolicy is OnFailure, Always or ExitCode, as upstream does, but of every pod, not only
  Running ones.

The limit means what it means for a Kubernetes Job: the number of retries allowed. A job fails
when it would need retry ``backoffLimit + 1``; ``backoffLimit: 0`` allows none. (Upstream
fails once the count reaches the limit, so 0 and 1 behave alike.)

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubetrain import api
from kubetrain.operator.jobs import children

RESTARTS_ANNOTATION: Final = "kubetrain.io/restarts"
RESTARTED_POD_ANNOTATION: Final = "kubetrain.io/restarted-pod"
COUNTED_POLICIES: Final = frozenset({"OnFailure", "Always", "ExitCode"})


def recorded(service: Mapping[str, Any]) -> int:
    """Retries recorded on one replica's Service (0 when none or unreadable)."""
    text = children.annotations_of(service).get(RESTARTS_ANNOTATION)
    try:
        count = int(str(text))
    except ValueError:
        return 0
    return max(count, 0)


def counted(service: Mapping[str, Any] | None, pod: Mapping[str, Any]) -> bool:
    """Whether this failed pod's recreation is already in the Service's count."""
    if service is None:
        return False
    uid = children.uid_of(pod)
    return bool(uid) and children.annotations_of(service).get(RESTARTED_POD_ANNOTATION) == uid


def record(service: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that adds one recreated pod (and its in-place restarts) to the count."""
    total = recorded(service) + 1 + children.restart_count(pod)
    annotations = {RESTARTS_ANNOTATION: str(total), RESTARTED_POD_ANNOTATION: children.uid_of(pod)}
    return {"metadata": {"annotations": annotations}}


def retries(
    job: api.JobKind,
    pods_by_type: Mapping[str, Iterable[Mapping[str, Any]]],
    services: Iterable[Mapping[str, Any]],
) -> int:
    """Retries so far: recorded recreations plus in-place restarts of the pods there now."""
    total = sum(recorded(service) for service in services)
    specs = job.replica_specs() or {}
    for rtype, pods in pods_by_type.items():
        spec = specs.get(rtype)
        if spec is None or spec.restart_policy not in COUNTED_POLICIES:
            continue
        total += sum(children.restart_count(pod) for pod in pods)
    return total


def exceeded(limit: int | None, retries_so_far: int, new: int = 0) -> bool:
    """Whether ``new`` more retries on top of those so far go past ``limit`` (None: no limit)."""
    return limit is not None and retries_so_far + new > limit
