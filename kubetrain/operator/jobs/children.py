"""The objects a v1 job owns: which resources they are, the ownerReference that ties them to the
job, and the few pod fields the reconcile rules read (phase, exit code, restart counts).

Pure: reads dicts, builds dicts; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubetrain import accessors, api, kube

PODS: Final = kube.Resource("", "v1", "pods", kind="Pod")
SERVICES: Final = kube.Resource("", "v1", "services", kind="Service")
CONFIGMAPS: Final = kube.Resource("", "v1", "configmaps", kind="ConfigMap")
SERVICE_ACCOUNTS: Final = kube.Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
ROLES: Final = kube.Resource("rbac.authorization.k8s.io", "v1", "roles", kind="Role")
ROLE_BINDINGS: Final = kube.Resource(
    "rbac.authorization.k8s.io", "v1", "rolebindings", kind="RoleBinding"
)
PRIORITY_CLASSES: Final = kube.Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass"
)

API_VERSION: Final = "kubeflow.org/v1"


def job_resource(job_class: type[api.JobKind]) -> kube.Resource:
    return kube.Resource("kubeflow.org", "v1", job_class.PLURAL, kind=job_class.KIND)


metadata = accessors.metadata  # one home: kubetrain.accessors


name_of = accessors.name_of


uid_of = accessors.uid_of


labels_of = accessors.labels_of


annotations_of = accessors.annotations_of


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(metadata(obj).get("deletionTimestamp"))


def owner_reference(kind: str, name: str, uid: str) -> dict[str, Any]:
    """The controller ownerReference every child of a job carries (upstream's NewControllerRef)."""
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ownerReference marked ``controller: true``, if any."""
    for ref in metadata(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def is_controlled_by(obj: Mapping[str, Any], uid: str) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == uid


phase = accessors.phase


def _container_statuses(pod: Mapping[str, Any], field: str) -> list[dict[str, Any]]:
    status = pod.get("status")
    items = status.get(field) if isinstance(status, dict) else None
    return [s for s in items if isinstance(s, dict)] if isinstance(items, list) else []


def terminated(pod: Mapping[str, Any], container: str) -> dict[str, Any] | None:
    """The ``state.terminated`` of one container, if it has terminated."""
    for status in _container_statuses(pod, "containerStatuses"):
        if status.get("name") != container:
            continue
        state = status.get("state")
        ended = state.get("terminated") if isinstance(state, dict) else None
        return ended if isinstance(ended, dict) else None
    return None


def exit_code(pod: Mapping[str, Any], container: str) -> int | None:
    """The exit code of ``container`` (the framework's default one), None if not terminated."""
    ended = terminated(pod, container)
    code = ended.get("exitCode") if ended is not None else None
    return code if isinstance(code, int) else None


def restart_count(pod: Mapping[str, Any]) -> int:
    """In-place restarts of every container and init container of the pod."""
    total = 0
    for field in ("containerStatuses", "initContainerStatuses"):
        for status in _container_statuses(pod, field):
            count = status.get("restartCount")
            if isinstance(count, int) and count > 0:
                total += count
    return total
