"""A pod's status as the kubelet computes it, from what the node knows of its containers.

Owns the kubelet's rules (``pkg/kubelet/kubelet_pods.go`` ``getPhase`` and
``convertToAPIContainerStatuses``, ``pkg/kubelet/status/generate.go``): the phase from the
restart policy and the container states, the conditions (PodReadyToStartContainers,
Initialized, Ready, ContainersReady, PodScheduled) with their reasons and messages and
``lastTransitionTime`` kept while a condition holds, container statuses (state, last state,
restart count, ready, started, container IDs), the pod's IPs (the node's address: every local
pod shares the host network), start time and QoS class. Also the patch that brings the stored
status to the computed one, so the agent writes only when something changed.

Must not: do I/O, read the clock (``now`` is passed in), or decide what runs (the worker
does, and says here why a container waits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from kubetrain import timefmt
from kubetrain.local.node import runtime

PENDING: Final = "Pending"
RUNNING: Final = "Running"
SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"
TERMINAL: Final = frozenset({SUCCEEDED, FAILED})

# waiting reasons
CONTAINER_CREATING: Final = "ContainerCreating"
POD_INITIALIZING: Final = "PodInitializing"
CRASH_LOOP_BACK_OFF: Final = "CrashLoopBackOff"
CREATE_CONTAINER_CONFIG_ERROR: Final = "CreateContainerConfigError"
CREATE_CONTAINER_ERROR: Final = "CreateContainerError"
# pod-level failure
DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
DEADLINE_MESSAGE: Final = "Pod was active on the node longer than the specified deadline"

# conditions, in the order the kubelet writes them
READY_TO_START: Final = "PodReadyToStartContainers"
INITIALIZED: Final = "Initialized"
READY: Final = "Ready"
CONTAINERS_READY: Final = "ContainersReady"
SCHEDULED: Final = "PodScheduled"
OWNED_CONDITIONS: Final = (READY_TO_START, INITIALIZED, READY, CONTAINERS_READY, SCHEDULED)
OWNED_FIELDS: Final = (
    "phase",
    "reason",
    "message",
    "conditions",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "initContainerStatuses",
    "containerStatuses",
    "qosClass",
)
ID_SCHEME: Final = "kubetrain"


@dataclass(frozen=True)
class Waiting:
    """Why a container (or the whole pod) is not running: a reason and a message."""

    reason: str
    message: str = ""


@dataclass(frozen=True)
class Observed:
    """What the node knows of one pod.

    ``containers`` maps a container name to its attempts, oldest first (the runtime's states;
    attempt n is restart number n). ``waiting`` overrides the waiting reason of a container
    that is not running: set for one that will be started again (``CrashLoopBackOff``) or
    cannot be created yet (``CreateContainerConfigError``, ``CreateContainerError``: retried,
    the pod stays Pending); a container with an exited last attempt and no entry here is shown
    terminated. ``failure`` fails the whole pod (``DeadlineExceeded``);
    ``terminal`` says nothing will run again (deadline, deletion, ``restartPolicy`` Never),
    so a pod whose containers all stopped gets a final phase whatever its restart policy.
    """

    address: str
    containers: Mapping[str, Sequence[runtime.ContainerState]] = field(default_factory=dict)
    waiting: Mapping[str, Waiting] = field(default_factory=dict)
    sandbox_ready: bool = False
    failure: Waiting | None = None
    terminal: bool = False
    start_time: datetime | None = None


def timestamp(when: datetime) -> str:
    """RFC 3339 in UTC, to the second, as ``metav1.Time`` is written."""
    return timefmt.seconds(when)


def container_id(state_id: runtime.ContainerId) -> str:
    return f"{ID_SCHEME}://{state_id.pod_uid}/{state_id.name}/{state_id.attempt}"


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _containers(pod: Mapping[str, Any], section: str) -> list[Mapping[str, Any]]:
    return [c for c in _spec(pod).get(section) or [] if isinstance(c, Mapping)]


# -- container statuses --------------------------------------------------------------------


def _terminated(state: runtime.ContainerState) -> dict[str, Any]:
    out: dict[str, Any] = {
        "exitCode": state.exit_code if state.exit_code is not None else 0,
        "reason": state.reason or ("Completed" if state.exit_code == 0 else "Error"),
        "startedAt": timestamp(state.started_at) if state.started_at else None,
        "finishedAt": timestamp(state.finished_at) if state.finished_at else None,
        "containerID": container_id(state.id),
    }
    if state.message:
        out["message"] = state.message
    return out


def _waiting(waiting: Waiting) -> dict[str, Any]:
    out = {"reason": waiting.reason}
    if waiting.message:
        out["message"] = waiting.message
    return out


def container_status(
    container: Mapping[str, Any],
    attempts: Sequence[runtime.ContainerState],
    waiting: Waiting | None,
    default: Waiting,
    *,
    init: bool,
    terminating: bool,
) -> dict[str, Any]:
    """One entry of ``containerStatuses`` / ``initContainerStatuses``."""
    name = str(container.get("name") or "")
    status: dict[str, Any] = {
        "name": name,
        "image": str(container.get("image") or ""),
        "imageID": "",
        "restartCount": 0,
        "started": False,
        "ready": False,
        "state": {"waiting": _waiting(waiting or default)},
        "lastState": {},
    }
    if not attempts:
        return status
    latest = attempts[-1]
    previous = attempts[-2] if len(attempts) > 1 else None
    status["restartCount"] = latest.id.attempt
    status["containerID"] = container_id(latest.id)
    if latest.running:
        status["state"] = {
            "running": {"startedAt": timestamp(latest.started_at) if latest.started_at else None}
        }
        status["started"] = True
        status["ready"] = not init and not terminating
        if previous is not None and not previous.running:
            status["lastState"] = {"terminated": _terminated(previous)}
    elif waiting is not None:
        status["state"] = {"waiting": _waiting(waiting)}
        status["lastState"] = {"terminated": _terminated(latest)}
    else:
        status["state"] = {"terminated": _terminated(latest)}
        status["ready"] = init and latest.exit_code == 0
        if previous is not None and not previous.running:
            status["lastState"] = {"terminated": _terminated(previous)}
    return status


def _state(status: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = (status.get("state") or {}).get(key)
    return value if isinstance(value, Mapping) else None


def _last_terminated(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    value = (status.get("lastState") or {}).get("terminated")
    return value if isinstance(value, Mapping) else None


# -- phase --------------------------------------------------------------------------------


def phase(
    pod: Mapping[str, Any],
    init_statuses: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
    *,
    terminal: bool,
) -> str:
    """The kubelet's ``getPhase`` (restartable init containers aside)."""
    restart = _spec(pod).get("restartPolicy") or "Always"
    by_name = {s["name"]: s for s in [*init_statuses, *statuses]}
    pending_init = failed_init = 0
    for c in _containers(pod, "initContainers"):
        s = by_name.get(c.get("name"))
        if s is None or _state(s, "running") is not None:
            pending_init += 1
        elif (t := _state(s, "terminated")) is not None:
            failed_init += t.get("exitCode") != 0
        elif _state(s, "waiting") is not None:
            last = _last_terminated(s)
            if last is not None:
                failed_init += last.get("exitCode") != 0
            else:
                pending_init += 1
        else:
            pending_init += 1
    unknown = running = waiting = stopped = succeeded = 0
    for c in _containers(pod, "containers"):
        s = by_name.get(c.get("name"))
        if s is None:
            unknown += 1
        elif _state(s, "running") is not None:
            running += 1
        elif (t := _state(s, "terminated")) is not None:
            stopped += 1
            succeeded += t.get("exitCode") == 0
        elif _state(s, "waiting") is not None:
            if _last_terminated(s) is not None:
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1
    if failed_init > 0 and restart == "Never":
        return FAILED
    if (pending_init > 0 and not any_regular_started(statuses)) or waiting > 0:
        return PENDING
    if running > 0 and unknown == 0:
        return RUNNING
    if running == 0 and stopped > 0 and unknown == 0:
        if terminal:
            return SUCCEEDED if stopped == succeeded else FAILED
        if restart == "Always":
            return RUNNING
        if stopped == succeeded:
            return SUCCEEDED
        if restart == "Never":
            return FAILED
        return RUNNING
    return PENDING


def any_regular_started(statuses: Sequence[Mapping[str, Any]]) -> bool:
    """kube's ``HasAnyRegularContainerStarted``."""
    return any(
        _state(s, "running") is not None
        or _state(s, "terminated") is not None
        or _last_terminated(s) is not None
        for s in statuses
    )


# -- conditions -----------------------------------------------------------------------------


def _names(names: Sequence[str]) -> str:
    return "[" + " ".join(names) + "]"  # Go's %s of a []string


def _condition(kind: str, ok: bool, reason: str = "", message: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "status": "True" if ok else "False"}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def initialized(
    pod: Mapping[str, Any],
    init_statuses: Sequence[Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
    pod_phase: str,
) -> dict[str, Any]:
    by_name = {s["name"]: s for s in init_statuses}
    unknown: list[str] = []
    incomplete: list[str] = []
    for c in _containers(pod, "initContainers"):
        name = str(c.get("name") or "")
        s = by_name.get(name)
        if s is None:
            unknown.append(name)
        elif not s.get("ready"):
            incomplete.append(name)
    if pod_phase == SUCCEEDED and not unknown:
        return _condition(INITIALIZED, True, "PodCompleted")
    if any_regular_started(statuses):
        return _condition(INITIALIZED, True)
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_names(unknown)}")
    if incomplete:
        messages.append(f"containers with incomplete status: {_names(incomplete)}")
    if messages:
        return _condition(INITIALIZED, False, "ContainersNotInitialized", ", ".join(messages))
    return _condition(INITIALIZED, True)


def containers_ready(
    pod: Mapping[str, Any], statuses: Sequence[Mapping[str, Any]], pod_phase: str, kind: str
) -> dict[str, Any]:
    """ContainersReady (or Ready, the same with no readiness gates)."""
    if pod_phase in TERMINAL:
        return _condition(kind, False, "PodCompleted")
    by_name = {s["name"]: s for s in statuses}
    unknown: list[str] = []
    unready: list[str] = []
    for c in _containers(pod, "containers"):
        name = str(c.get("name") or "")
        s = by_name.get(name)
        if s is None:
            unknown.append(name)
        elif not s.get("ready"):
            unready.append(name)
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_names(unknown)}")
    if unready:
        messages.append(f"containers with unready status: {_names(unready)}")
    if messages:
        return _condition(kind, False, "ContainersNotReady", ", ".join(messages))
    return _condition(kind, True)


def _with_transitions(
    conditions: Sequence[dict[str, Any]], old: Sequence[Any], now: str
) -> list[dict[str, Any]]:
    """``lastTransitionTime`` stays while a condition's status holds; other components'
    conditions (types not ours) are kept as they were, after ours."""
    previous = {c.get("type"): c for c in old if isinstance(c, Mapping)}
    out = []
    for c in conditions:
        before = previous.get(c["type"])
        same = before is not None and before.get("status") == c["status"]
        transition = before.get("lastTransitionTime") if same and before else None
        out.append({**c, "lastProbeTime": None, "lastTransitionTime": transition or now})
    out += [dict(c) for t, c in previous.items() if t not in OWNED_CONDITIONS]
    return out


# -- the whole status ---------------------------------------------------------------------------


def pod_status(pod: Mapping[str, Any], observed: Observed, now: datetime) -> dict[str, Any]:
    """The status fields the node owns (:data:`OWNED_FIELDS`), computed whole."""
    old = pod.get("status") if isinstance(pod.get("status"), Mapping) else {}
    assert isinstance(old, Mapping)
    stamp = timestamp(now)
    terminating = bool((pod.get("metadata") or {}).get("deletionTimestamp")) or observed.terminal
    default = Waiting(
        POD_INITIALIZING if _containers(pod, "initContainers") else CONTAINER_CREATING
    )
    init_statuses = [
        container_status(
            c,
            observed.containers.get(str(c.get("name") or ""), ()),
            observed.waiting.get(str(c.get("name") or "")),
            default,
            init=True,
            terminating=terminating,
        )
        for c in _containers(pod, "initContainers")
    ]
    statuses = sorted(
        (
            container_status(
                c,
                observed.containers.get(str(c.get("name") or ""), ()),
                observed.waiting.get(str(c.get("name") or "")),
                default,
                init=False,
                terminating=terminating,
            )
            for c in _containers(pod, "containers")
        ),
        key=lambda s: s["name"],
    )
    computed = phase(pod, init_statuses, statuses, terminal=observed.terminal)
    old_phase = old.get("phase")
    reason = message = ""
    if observed.failure is not None:
        computed = FAILED
        reason, message = observed.failure.reason, observed.failure.message
    if old_phase in TERMINAL:  # a terminal phase is never left
        computed = str(old_phase)
        reason = str(old.get("reason") or reason)
        message = str(old.get("message") or message)
    conditions = [
        _condition(READY_TO_START, observed.sandbox_ready and computed not in TERMINAL),
        initialized(pod, init_statuses, statuses, computed),
        containers_ready(pod, statuses, computed, READY),
        containers_ready(pod, statuses, computed, CONTAINERS_READY),
        _condition(SCHEDULED, True),
    ]
    ips = [{"ip": observed.address}]
    started = old.get("startTime") or (
        timestamp(observed.start_time) if observed.start_time else stamp
    )
    status: dict[str, Any] = {
        "phase": computed,
        "conditions": _with_transitions(conditions, old.get("conditions") or [], stamp),
        "hostIP": observed.address,
        "hostIPs": ips,
        "podIP": observed.address,
        "podIPs": ips,
        "startTime": started,
        "containerStatuses": statuses,
        "qosClass": old.get("qosClass") or qos_class(pod),
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return status


def patch(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], *, uid: str = ""
) -> dict[str, Any] | None:
    """A JSON merge patch of ``status`` that turns ``old`` into ``new`` for the owned fields
    (None for a field ``new`` lacks), or None when nothing differs.

    With ``uid``, the patch also names the pod's ``metadata.uid``, so the API server refuses
    it when the name now belongs to another pod: a pod deleted and made again under its name
    (a controller replacing it) must not get its predecessor's end written over its own
    status (kubelet's ``PatchPodStatus`` puts the uid in for the same reason)."""
    old = old or {}
    changes: dict[str, Any] = {}
    for key in OWNED_FIELDS:
        if old.get(key) != new.get(key):
            changes[key] = new.get(key)
    if not changes:
        return None
    if uid:
        return {"metadata": {"uid": uid}, "status": changes}
    return {"status": changes}


def qos_class(pod: Mapping[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort, from cpu and memory requests and limits."""
    containers = [*_containers(pod, "initContainers"), *_containers(pod, "containers")]
    any_set = False
    guaranteed = bool(containers)
    for c in containers:
        resources = c.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        for name in ("cpu", "memory"):
            if name in requests or name in limits:
                any_set = True
            if name not in limits or requests.get(name, limits.get(name)) != limits.get(name):
                guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if any_set else "BestEffort"
