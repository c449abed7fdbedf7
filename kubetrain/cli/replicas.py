"""A job's replicas as the command line shows them: ``master-0``, ``worker-1``, ``launcher``,
``node-0``, each with its pod (if any) and that pod's phase, node, restarts and exit code.

A v1 pod is named by the labels the operator puts on it (replica type, lower-cased, and
index); a TrainJob's by its JobSet labels (replicated job and job index), as the Kubeflow SDK
names its steps. Replicas the spec asks for but whose pods do not exist yet are listed too,
so a job the operator has not picked up still shows what it will run.

Owns: those names, their order, and reading facts out of pod objects. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.cli import jobkinds, jobstate

DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"


@dataclass(frozen=True)
class Replica:
    """One replica of a job: its name, its type (CamelCase for v1) and index, and its pod."""

    id: str
    rtype: str
    index: int | None
    pod: Mapping[str, Any] | None = None

    @property
    def pod_name(self) -> str | None:
        return _name(self.pod) if self.pod is not None else None


def identify(pod: Mapping[str, Any], kind: jobkinds.JobKind) -> tuple[str, int | None]:
    """(replica type, index) of a pod of a job of ``kind``; the type is CamelCase for v1 kinds
    when the framework knows it."""
    labels = _labels(pod)
    if kind.v1:
        lowered = labels.get(jobkinds.REPLICA_TYPE_LABEL, "")
        rtype = next((t for t in kind.replica_types if t.lower() == lowered), lowered)
        return rtype or "replica", _index(labels.get(jobkinds.REPLICA_INDEX_LABEL))
    rjob = labels.get(jobkinds.REPLICATED_JOB_LABEL) or "node"
    return rjob, _index(labels.get(jobkinds.JOB_INDEX_LABEL))


def replica_id(rtype: str, index: int | None, kind: jobkinds.JobKind) -> str:
    """``worker-1``; an unindexed type alone (``launcher``); a TrainJob's replicated jobs other
    than ``node`` without their index when there is one of them (``dataset-initializer``)."""
    name = rtype.lower()
    if index is None:
        return name
    if not kind.v1 and name != jobkinds.NODE and index == 0:
        return name
    return f"{name}-{index}"


def of_pod(pod: Mapping[str, Any], kind: jobkinds.JobKind) -> Replica:
    rtype, index = identify(pod, kind)
    rid = replica_id(rtype, index, kind)
    # A TrainJob's Job may run several pods (parallelism > 1): the completion index tells them
    # apart; the first keeps the plain name, so one pod per node reads node-0, node-1, ...
    pod_index = _index(_labels(pod).get(jobkinds.COMPLETION_INDEX_LABEL)) if not kind.v1 else None
    if pod_index:
        rid = f"{rid}-{pod_index}"
    return Replica(rid, rtype, index, pod)


def expected(job: Mapping[str, Any]) -> list[Replica]:
    """The replicas the spec asks for, without pods (a TrainJob's only when numNodes is set)."""
    kind = jobkinds.of(job)
    found = []
    for rtype, count in jobstate.replica_specs(job):
        if count is None:
            continue
        if kind.controller is not None and rtype in kind.unindexed:
            found.append(Replica(replica_id(rtype, None, kind), rtype, None))
            continue
        found += [Replica(replica_id(rtype, i, kind), rtype, i) for i in range(count)]
    return found


def of_job(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[Replica]:
    """Every replica of ``job``, in the framework's order: each pod, plus a pod-less entry for
    every expected replica that has no pod. Several pods of one replica (a replacement while
    the old one terminates) are all listed, oldest first."""
    kind = jobkinds.of(job)
    with_pods = [of_pod(pod, kind) for pod in pods]
    have = {r.id for r in with_pods}
    missing = [r for r in expected(job) if r.id not in have]
    return sorted([*with_pods, *missing], key=lambda r: sort_key(r, kind))


def node_counts(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], runtime_nodes: int | None
) -> tuple[int, int | None]:
    """(running, desired) trainer nodes of a TrainJob, counted on its pods: its ``jobsStatus``
    counts Jobs, and one Job runs all of its nodes. Desired is ``trainer.numNodes``, else
    ``runtime_nodes`` (the runtime's), else None."""
    kind = jobkinds.of(job)
    running = {
        replica.id
        for replica in map(lambda pod: of_pod(pod, kind), pods)
        if replica.rtype == jobkinds.NODE and phase(replica.pod) == "Running"
    }
    [(_, nodes)] = jobstate.replica_specs(job)
    return len(running), nodes if nodes is not None else runtime_nodes


def sort_key(replica: Replica, kind: jobkinds.JobKind) -> tuple[int, str, int, str]:
    order = [t.lower() for t in kind.replica_types]
    lowered = replica.rtype.lower()
    rank = order.index(lowered) if lowered in order else len(order)
    created = str(((replica.pod or {}).get("metadata") or {}).get("creationTimestamp") or "")
    return rank, lowered, replica.index if replica.index is not None else -1, created


# --- facts about a pod --------------------------------------------------------------------


def phase(pod: Mapping[str, Any] | None) -> str:
    """The pod's phase; Terminating while it is being deleted; ``-`` for no pod."""
    if pod is None:
        return "-"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return str(_status(pod).get("phase") or "Pending")


def node(pod: Mapping[str, Any] | None) -> str | None:
    spec = (pod or {}).get("spec")
    return str(spec.get("nodeName")) if isinstance(spec, Mapping) and spec.get("nodeName") else None


def restarts(pod: Mapping[str, Any] | None) -> int:
    return sum(
        s.get("restartCount") or 0 for s in _container_statuses(pod) if isinstance(s, Mapping)
    )


@dataclass(frozen=True)
class Termination:
    """How a container last ended: its exit code and the kubelet's reason (Error, OOMKilled)."""

    container: str
    exit_code: int
    reason: str = ""
    message: str = ""
    current: bool = True  # False: from lastState (the container has been restarted since)

    def __str__(self) -> str:
        return f"{self.exit_code} ({self.reason})" if self.reason else str(self.exit_code)


def termination(pod: Mapping[str, Any] | None, container: str | None = None) -> Termination | None:
    """The last termination of ``container`` (default: the first one that failed, else the
    first that ended), or None when none has ended."""
    ended: list[Termination] = []
    for status in _container_statuses(pod):
        if not isinstance(status, Mapping) or (container and status.get("name") != container):
            continue
        for key, current in (("state", True), ("lastState", False)):
            terminated = (status.get(key) or {}).get("terminated")
            if isinstance(terminated, Mapping) and isinstance(terminated.get("exitCode"), int):
                ended.append(
                    Termination(
                        str(status.get("name") or ""),
                        terminated["exitCode"],
                        str(terminated.get("reason") or ""),
                        str(terminated.get("message") or ""),
                        current,
                    )
                )
                break
    failing = [t for t in ended if t.exit_code != 0]
    return (failing or ended or [None])[0]


@dataclass(frozen=True)
class Reason:
    """Why a replica does not run: a reason word (``Unschedulable``, ``CreateContainerError``,
    an event's reason) and the message that explains it, when there is one."""

    reason: str
    message: str = ""

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}" if self.message else self.reason


def why_waiting(pod: Mapping[str, Any] | None) -> Reason | None:
    """Why the pod is not scheduled (``Unschedulable``, with the scheduler's message), else
    why a container waits (``CrashLoopBackOff``, ``CreateContainerError``, ...; with the
    kubelet's message), when either says."""
    for condition in _status(pod).get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
        ):
            return Reason(
                str(condition.get("reason") or "Unschedulable"),
                one_line(condition.get("message")),
            )
    for status in _container_statuses(pod):
        waiting = (
            (status.get("state") or {}).get("waiting") if isinstance(status, Mapping) else None
        )
        if isinstance(waiting, Mapping) and waiting.get("reason"):
            return Reason(str(waiting["reason"]), one_line(waiting.get("message")))
    return None


def one_line(message: Any) -> str:
    """A message on one line, as the live view's rows need it."""
    return " ".join(str(message or "").split())


def waiting_reason(pod: Mapping[str, Any] | None) -> str | None:
    """The reason word of :func:`why_waiting`."""
    why = why_waiting(pod)
    return why.reason if why is not None else None


def container_names(pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    return [str(c.get("name")) for c in containers or [] if isinstance(c, Mapping)]


def default_container(pod: Mapping[str, Any], kind: jobkinds.JobKind) -> str | None:
    """The container whose log is the replica's log: the pod's default-container annotation,
    else the framework's container (``pytorch``, ``node``, ...), else the first."""
    names = container_names(pod)
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    chosen = annotations.get(DEFAULT_CONTAINER_ANNOTATION)
    if chosen in names:
        return str(chosen)
    if kind.default_container in names:
        return kind.default_container
    return names[0] if names else None


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    labels = (pod.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def _index(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _status(pod: Mapping[str, Any] | None) -> Mapping[str, Any]:
    status = (pod or {}).get("status")
    return status if isinstance(status, Mapping) else {}


def _container_statuses(pod: Mapping[str, Any] | None) -> list[Any]:
    status = _status(pod)
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
