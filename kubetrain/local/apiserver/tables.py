"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` asks for with
``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``.

This module owns the columns and cells kube-apiserver prints: the built-in printers of
``pkg/printers/internalversion/printers.go`` (Kubernetes 1.32) for the kinds kubetrain
serves, the printer-column convertor of custom resources
(``apiextensions-apiserver/pkg/registry/customresource/tableconvertor``), and the default
convertor (NAME, CREATED AT) for kinds without a printer, such as LimitRange and
CustomResourceDefinition. It does no I/O and reads no clock: the caller passes ``now``.

As kube-apiserver does, every table carries the wide columns (``priority: 1``); kubectl
drops them unless asked for ``-o wide``. A cell kube leaves empty is ``None`` (JSON null),
which kubectl prints as ``<none>``. Ages are kube's ``HumanDuration`` (:func:`human_duration`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from kubetrain import gofmt, timefmt

Obj = dict[str, Any]
Row = tuple[list[Any], list[dict[str, str]]]

_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


# --- durations and timestamps ------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """kube's ``duration.HumanDuration``: ``0s``, ``45s``, ``5m30s``, ``3h``, ``2d4h``, ``2y``.

    About two significant figures; up to a second in the future still reads ``0s``,
    further is ``<invalid>``.
    """
    return _human(int(seconds * 1_000_000_000))


def _human(ns: int) -> str:
    seconds = int(ns / 1_000_000_000)  # Go truncates toward zero
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = ns // 60_000_000_000
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = ns // 3_600_000_000_000
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (``metav1.Time``, ``MicroTime``); None when absent."""
    return timefmt.parse(value)


def _utc(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)


def _since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` if unset."""
    then = value if isinstance(value, datetime) else _parse_time(value)
    if then is None:
        return "<unknown>"
    delta = _utc(now) - then
    return _human((delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000)


# --- JSONPath ----------------------------------------------------------------------------

_Step = tuple[str, Any]


def _parse_jsonpath(expr: str) -> list[_Step]:
    """Parse the JSONPath subset printer columns use (``client-go/util/jsonpath``):
    ``.a.b``, ``.a\\.b`` (escaped dot), ``['a.b']``, ``[0]``, ``[-1]``, ``[1:3]``,
    ``[-1:]``, ``[::2]``, ``[*]`` and ``.*``, optionally inside ``{...}`` and after ``$``."""
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[_Step] = []
    i = 0
    while i < len(text):
        if text[i] == ".":
            i += 1
            name = []
            while i < len(text) and text[i] not in ".[":
                if text[i] == "\\" and i + 1 < len(text):
                    i += 1
                name.append(text[i])
                i += 1
            field = "".join(name)
            if not field:
                if i >= len(text):
                    break
                raise ValueError(f"unsupported JSONPath {expr!r}")
            steps.append(("all", None) if field == "*" else ("field", field))
        elif text[i] == "[":
            end = text.find("]", i)
            if end < 0:
                raise ValueError(f"unclosed [ in JSONPath {expr!r}")
            steps.append(_parse_bracket(text[i + 1 : end].strip(), expr))
            i = end + 1
        else:
            raise ValueError(f"unsupported JSONPath {expr!r}")
    return steps


def _parse_bracket(inner: str, expr: str) -> _Step:
    if inner == "*":
        return ("all", None)
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return ("field", inner[1:-1])
    if re.fullmatch(r"-?\d+", inner):
        return ("index", int(inner))
    parts = inner.split(":")
    if 2 <= len(parts) <= 3 and all(re.fullmatch(r"\s*(-?\d+)?\s*", p) for p in parts):
        bounds = [int(p) if p.strip() else None for p in parts]
        return ("slice", [*bounds, None][:3])
    raise ValueError(f"unsupported JSONPath {expr!r}")


def _slice(items: list[Any], start: int | None, stop: int | None, step: int | None) -> list[Any]:
    """``evalArray``: negative bounds count from the end; out of range is an error."""
    size = len(items)
    first = 0 if start is None else start + size if start < 0 else start
    last = size if stop is None else stop + size if stop < 0 else stop
    if last == first:
        return []
    if first >= size or first < 0 or last > size or last < 0 or first > last:
        raise IndexError("array index out of bounds")
    if step is not None and step <= 0:
        raise ValueError("step must be > 0")
    return items[first : last : step or 1]


def jsonpath(obj: Any, expr: str) -> list[Any]:
    """Every value ``expr`` selects in ``obj``, in order, as kube's JSONPath with missing
    keys allowed. A missing key selects nothing; so does an index out of range or a step
    through a non-list (kube's errors, which a printer column shows as an empty cell).
    Raises ValueError for syntax outside the supported subset (see ``_parse_jsonpath``).
    """
    values = [obj]
    for kind, arg in _parse_jsonpath(expr):
        found: list[Any] = []
        for value in values:
            if value is None:
                continue
            if kind == "field":
                if isinstance(value, dict) and arg in value:
                    found.append(value[arg])
            elif kind == "all":
                if isinstance(value, dict):
                    found.extend(value.values())
                elif isinstance(value, list):
                    found.extend(value)
            else:
                if not isinstance(value, list):
                    return []
                try:
                    if kind == "index":
                        found.extend(_slice(value, arg, arg + 1 if arg != -1 else None, None))
                    else:
                        found.extend(_slice(value, *arg))
                except (IndexError, ValueError):
                    return []
        values = found
    return values


# --- tables ------------------------------------------------------------------------------


def _column(
    name: str, type_: str = "string", description: str = "", *, fmt: str = "", priority: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "type": type_,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


_NAME = _column("Name", "string", _NAME_DOC, fmt="name")
_AGE = _column("Age", "string", _AGE_DOC)


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _sub(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``a=b,c=d`` sorted by key, ``<none>`` when empty."""
    pairs = [f"{k}={v}" for k, v in sorted(_dict(labels).items())]
    return ",".join(pairs) or "<none>"


def _quantity(value: Any) -> str:
    return "<nil>" if value is None else str(value)


# Pods


def _restartable(container: Any) -> bool:
    return _sub(container, "restartPolicy") == "Always"


def _finished(status: Any) -> datetime | None:
    return _parse_time(_sub(status, "lastState", "terminated", "finishedAt"))


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    if b is None:
        return a
    return b if a is None or a < b else a


def _has_condition(status: Obj, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in _list(status.get("conditions"))
        if isinstance(c, dict)
    )


_POD_SUCCEEDED = [
    {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    }
]
_POD_FAILED = [
    {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}
]


def _print_pod(pod: Obj, now: datetime) -> Row:
    spec, status, meta = _dict(pod.get("spec")), _dict(pod.get("status")), _meta(pod)
    restarts = restartable_restarts = ready = 0
    total = len(_list(spec.get("containers")))
    last_restart: datetime | None = None
    last_restartable: datetime | None = None
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or "") or phase
    for condition in _list(status.get("conditions")):
        if _sub(condition, "type") == "PodScheduled" and _sub(condition, "reason") == (
            "SchedulingGated"
        ):
            reason = "SchedulingGated"
    conditions = {"Succeeded": _POD_SUCCEEDED, "Failed": _POD_FAILED}.get(phase, [])

    init_specs = {_sub(c, "name"): c for c in _list(spec.get("initContainers"))}
    total += sum(1 for c in init_specs.values() if _restartable(c))
    initializing = False
    for i, container in enumerate(_list(status.get("initContainerStatuses"))):
        container = _dict(container)
        restartable = _restartable(init_specs.get(container.get("name")))
        restarts += int(container.get("restartCount") or 0)
        last_restart = _later(last_restart, _finished(container))
        if restartable:
            restartable_restarts += int(container.get("restartCount") or 0)
            last_restartable = _later(last_restartable, _finished(container))
        terminated = _sub(container, "state", "terminated")
        waiting = _sub(container, "state", "waiting")
        if isinstance(terminated, dict) and int(terminated.get("exitCode") or 0) == 0:
            continue
        if restartable and container.get("started"):
            ready += 1 if container.get("ready") else 0
            continue
        if isinstance(terminated, dict):
            reason = "Init:" + _termination(terminated)
        elif isinstance(waiting, dict) and waiting.get("reason") not in (
            None,
            "",
            "PodInitializing",
        ):
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _has_condition(status, "Initialized"):
        restarts, last_restart = restartable_restarts, last_restartable
        has_running = False
        for container in reversed(_list(status.get("containerStatuses"))):
            container = _dict(container)
            restarts += int(container.get("restartCount") or 0)
            last_restart = _later(last_restart, _finished(container))
            waiting = _sub(container, "state", "waiting")
            terminated = _sub(container, "state", "terminated")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(terminated, dict):
                reason = str(terminated.get("reason") or "") or _termination(terminated)
            elif container.get("ready") and isinstance(_sub(container, "state", "running"), dict):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _has_condition(status, "Ready") else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    shown = str(restarts)
    if restarts and last_restart is not None:
        shown = f"{restarts} ({_since(last_restart, now)} ago)"

    ips = [_sub(ip, "ip") for ip in _list(status.get("podIPs"))] or [status.get("podIP")]
    gates = _list(spec.get("readinessGates"))
    gates_shown = "<none>"
    if gates:
        true = sum(
            1
            for gate in gates
            if any(
                _sub(c, "type") == _sub(gate, "conditionType") and _sub(c, "status") == "True"
                for c in _list(status.get("conditions"))
            )
        )
        gates_shown = f"{true}/{len(gates)}"
    cells = [
        meta.get("name", ""),
        f"{ready}/{total}",
        reason,
        shown,
        _since(meta.get("creationTimestamp"), now),
        ips[0] or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_shown,
    ]
    return cells, conditions


def _termination(terminated: Obj) -> str:
    """The reason a terminated container shows when it has none: ``Signal:9`` or
    ``ExitCode:1``."""
    if terminated.get("reason"):
        return str(terminated["reason"])
    if terminated.get("signal"):
        return f"Signal:{terminated['signal']}"
    return f"ExitCode:{int(terminated.get('exitCode') or 0)}"


_POD_COLUMNS = [
    _NAME,
    _column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    _column("Status", "string", "The aggregate status of the containers in this pod."),
    _column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
    ),
    _AGE,
    _column("IP", "string", "IP address allocated to the pod.", priority=1),
    _column("Node", "string", "The node the pod is scheduled onto.", priority=1),
    _column("Nominated Node", "string", "The node the scheduler nominated.", priority=1),
    _column("Readiness Gates", "string", "Pod readiness gates that are true.", priority=1),
]


# Services


def _external_ip(spec: Obj, status: Obj) -> str:
    kind = spec.get("type") or "ClusterIP"
    external = [str(ip) for ip in _list(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = sorted(
            {
                str(_sub(i, "ip") or _sub(i, "hostname"))
                for i in _list(_sub(status, "loadBalancer", "ingress"))
                if _sub(i, "ip") or _sub(i, "hostname")
            }
        )
        if external:
            return ",".join(ingress + external)
        return ",".join(ingress) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _print_service(svc: Obj, now: datetime) -> Row:
    spec, meta = _dict(svc.get("spec")), _meta(svc)
    cluster_ips = _list(spec.get("clusterIPs")) or [spec.get("clusterIP")]
    ports = []
    for port in _list(spec.get("ports")):
        protocol = _sub(port, "protocol") or "TCP"
        if _sub(port, "nodePort"):
            ports.append(f"{_sub(port, 'port')}:{_sub(port, 'nodePort')}/{protocol}")
        else:
            ports.append(f"{_sub(port, 'port')}/{protocol}")
    cells = [
        meta.get("name", ""),
        spec.get("type") or "ClusterIP",
        cluster_ips[0] or "<none>",
        _external_ip(spec, _dict(svc.get("status"))),
        ",".join(ports) or "<none>",
        _since(meta.get("creationTimestamp"), now),
        _format_labels(spec.get("selector")),
    ]
    return cells, []


_SERVICE_COLUMNS = [
    _NAME,
    _column("Type", "string", "type determines how the Service is exposed."),
    _column("Cluster-IP", "string", "clusterIP is the IP address of the service."),
    _column("External-IP", "string", "externalIPs is a list of IP addresses."),
    _column("Port(s)", "string", "The list of ports that are exposed by this service."),
    _AGE,
    _column("Selector", "string", "Route service traffic to pods with these labels.", priority=1),
]


# Nodes


def _print_node(node: Obj, now: datetime) -> Row:
    spec, status, meta = _dict(node.get("spec")), _dict(node.get("status")), _meta(node)
    ready = [c for c in _list(status.get("conditions")) if _sub(c, "type") == "Ready"]
    shown = []
    if ready:
        shown.append("Ready" if _sub(ready[-1], "status") == "True" else "NotReady")
    else:
        shown.append("Unknown")
    if spec.get("unschedulable"):
        shown.append("SchedulingDisabled")
    roles = set()
    for key, value in _dict(meta.get("labels")).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/") :]:
            roles.add(key[len("node-role.kubernetes.io/") :])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = _dict(status.get("nodeInfo"))

    def address(kind: str) -> str:
        for entry in _list(status.get("addresses")):
            if _sub(entry, "type") == kind:
                return str(_sub(entry, "address"))
        return "<none>"

    cells = [
        meta.get("name", ""),
        ",".join(shown),
        ",".join(sorted(roles)) or "<none>",
        _since(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]
    return cells, []


_NODE_COLUMNS = [
    _NAME,
    _column("Status", "string", "The status of the node"),
    _column("Roles", "string", "The roles of the node"),
    _AGE,
    _column("Version", "string", "Kubelet Version reported by the node."),
    _column("Internal-IP", "string", "List of addresses reachable to the node.", priority=1),
    _column("External-IP", "string", "List of addresses reachable to the node.", priority=1),
    _column("OS-Image", "string", "OS Image reported by the node.", priority=1),
    _column("Kernel-Version", "string", "Kernel Version reported by the node.", priority=1),
    _column(
        "Container-Runtime", "string", "ContainerRuntime Version reported by the node.", priority=1
    ),
]


# Events (core/v1, and events.k8s.io/v1 seen through the same printer as kube does)


def _core_event(event: Obj) -> Obj:
    """An ``events.k8s.io/v1`` Event in ``core/v1`` field names, as kube converts it."""
    source = _dict(event.get("deprecatedSource"))
    return {
        "metadata": _meta(event),
        "involvedObject": _dict(event.get("regarding")),
        "reason": event.get("reason", ""),
        "message": event.get("note", ""),
        "source": source,
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": event.get("deprecatedCount", 0),
        "type": event.get("type", ""),
        "eventTime": event.get("eventTime"),
        "series": event.get("series"),
        "reportingComponent": event.get("reportingController", ""),
        "reportingInstance": event.get("reportingInstance", ""),
    }


def _print_event(event: Obj, now: datetime) -> Row:
    meta, involved = _meta(event), _dict(event.get("involvedObject"))
    first = _since(event.get("firstTimestamp"), now)
    if _parse_time(event.get("firstTimestamp")) is None:
        first = _since(event.get("eventTime"), now)
    last = _since(event.get("lastTimestamp"), now)
    if _parse_time(event.get("lastTimestamp")) is None:
        last = first
    count = int(event.get("count") or 0)
    series = event.get("series")
    if isinstance(series, dict):
        last = _since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1  # singleton events do not set a count in the new API
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = _dict(event.get("source"))
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    cells = [
        last,
        event.get("type", ""),
        event.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component,
        str(event.get("message") or "").strip(),
        first,
        count,
        meta.get("name", ""),
    ]
    return cells, []


_EVENT_COLUMNS = [
    _column("Last Seen", "string", "The time at which the most recent occurrence was recorded."),
    _column("Type", "string", "Type of this event (Normal, Warning)."),
    _column("Reason", "string", "The reason for the transition into the object's current status."),
    _column("Object", "string", "The object that this event is about."),
    _column("Subobject", "string", "The part of the object the event is about.", priority=1),
    _column("Source", "string", "The component reporting this event.", priority=1),
    _column("Message", "string", "A human-readable description of the status of this operation."),
    _column("First Seen", "string", "The time the event was first recorded.", priority=1),
    _column("Count", "string", "The number of times this event has occurred.", priority=1),
    {**_NAME, "priority": 1},
]


# Small kinds


def _printer(*cells: Callable[[Obj, datetime], Any]) -> Callable[[Obj, datetime], Row]:
    def row(obj: Obj, now: datetime) -> Row:
        return [cell(obj, now) for cell in cells], []

    return row


def _name(obj: Obj, now: datetime) -> Any:
    return _meta(obj).get("name", "")


def _age(obj: Obj, now: datetime) -> str:
    return _since(_meta(obj).get("creationTimestamp"), now)


def _access_modes(modes: Any) -> str:
    """``GetAccessModesAsString``: RWO, ROX, RWX, RWOP in that order."""
    present = set(_list(modes))
    short = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    return ",".join(s for mode, s in short if mode in present)


def _print_pvc(pvc: Obj, now: datetime) -> Row:
    spec, status, meta = _dict(pvc.get("spec")), _dict(pvc.get("status")), _meta(pvc)
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(status.get("accessModes"))
        capacity = _quantity(_sub(status, "capacity", "storage"))
        capacity = "0" if capacity == "<nil>" else capacity
    annotations = _dict(meta.get("annotations"))
    storage_class = annotations.get("volume.beta.kubernetes.io/storage-class")
    if storage_class is None:
        storage_class = spec.get("storageClassName") or ""
    cells = [
        meta.get("name", ""),
        phase,
        spec.get("volumeName", ""),
        capacity,
        modes,
        storage_class,
        spec.get("volumeAttributesClassName") or "<unset>",
        _since(meta.get("creationTimestamp"), now),
        spec.get("volumeMode") or "<unset>",
    ]
    return cells, []


_PVC_COLUMNS = [
    _NAME,
    _column("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
    _column("Volume", "string", "volumeName is the binding reference to the PersistentVolume."),
    _column("Capacity", "string", "capacity represents the actual resources of the volume."),
    _column("Access Modes", "string", "accessModes contains the actual access modes."),
    _column("StorageClass", "string", "StorageClass of the pvc"),
    _column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    _AGE,
    _column(
        "VolumeMode", "string", "volumeMode defines what type of volume is required.", priority=1
    ),
]


def _hpa_metrics(specs: list[Any], statuses: list[Any]) -> str:
    """``formatHPAMetrics``: ``cpu: 40%/80%`` and friends, at most two then ``+ N more...``."""
    if not specs:
        return "<none>"
    shown = []
    for i, spec in enumerate(specs):
        kind = _sub(spec, "type")
        current = statuses[i] if i < len(statuses) and isinstance(statuses[i], dict) else {}
        if kind == "External" or kind == "Object":
            key = "external" if kind == "External" else "object"
            target = _dict(_sub(spec, key, "target"))
            now = _dict(_sub(current, key, "current"))
            if target.get("averageValue") is not None:
                value = (
                    _quantity(now.get("averageValue")) if now.get("averageValue") else "<unknown>"
                )
                shown.append(f"{value}/{_quantity(target['averageValue'])} (avg)")
            else:
                value = _quantity(now.get("value")) if _sub(current, key) else "<unknown>"
                shown.append(f"{value}/{_quantity(target.get('value'))}")
        elif kind == "Pods":
            value = _sub(current, "pods", "current", "averageValue")
            value = _quantity(value) if _sub(current, "pods") else "<unknown>"
            shown.append(f"{value}/{_quantity(_sub(spec, 'pods', 'target', 'averageValue'))}")
        elif kind in ("Resource", "ContainerResource"):
            key = "resource" if kind == "Resource" else "containerResource"
            source = _dict(_sub(spec, key))
            target = _dict(source.get("target"))
            now = _dict(_sub(current, key, "current"))
            name = source.get("name", "")
            if target.get("averageValue") is not None:
                value = _quantity(now.get("averageValue")) if _sub(current, key) else "<unknown>"
                shown.append(f"{name}: {value}/{_quantity(target['averageValue'])}")
            else:
                value = "<unknown>"
                if _sub(current, key) and now.get("averageUtilization") is not None:
                    value = f"{now['averageUtilization']}%"
                goal = "<auto>"
                if target.get("averageUtilization") is not None:
                    goal = f"{target['averageUtilization']}%"
                shown.append(f"{name}: {value}/{goal}")
        else:
            shown.append("<unknown type>")
    if len(shown) > 2:
        return ", ".join(shown[:2]) + f" + {len(shown) - 2} more..."
    return ", ".join(shown)


def _print_hpa(hpa: Obj, now: datetime) -> Row:
    spec, status, meta = _dict(hpa.get("spec")), _dict(hpa.get("status")), _meta(hpa)
    ref = _dict(spec.get("scaleTargetRef"))
    minimum = spec.get("minReplicas")
    cells = [
        meta.get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _hpa_metrics(_list(spec.get("metrics")), _list(status.get("currentMetrics"))),
        "<unset>" if minimum is None else str(minimum),
        int(spec.get("maxReplicas") or 0),
        int(status.get("currentReplicas") or 0),
        _since(meta.get("creationTimestamp"), now),
    ]
    return cells, []


_HPA_COLUMNS = [
    _NAME,
    _column("Reference", "string", "reference to scaled resource"),
    _column("Targets", "string", "the specifications for which to use to calculate replicas"),
    _column("MinPods", "string", "the lower limit for the number of replicas"),
    _column("MaxPods", "string", "the upper limit for the number of replicas"),
    _column("Replicas", "string", "current number of replicas of pods managed by this autoscaler"),
    _AGE,
]


def _print_quota(quota: Obj, now: datetime) -> Row:
    status, meta = _dict(quota.get("status")), _meta(quota)
    hard, used = _dict(status.get("hard")), _dict(status.get("used"))
    requests, limits = [], []
    for resource in sorted(hard):
        column = limits if resource.split(".")[0] == "limits" and "." in resource else requests
        column.append(f"{resource}: {used.get(resource, '0')}/{hard[resource]}")
    cells = [
        meta.get("name", ""),
        ", ".join(requests),
        ", ".join(limits),
        _since(meta.get("creationTimestamp"), now),
    ]
    return cells, []


_QUOTA_COLUMNS = [
    _NAME,
    _column(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    _column(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use "
        "independent of contention on the node.",
    ),
    _AGE,
]

_BINDING_COLUMNS = [
    _NAME,
    _column(
        "Role",
        "string",
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
        "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
    ),
    _AGE,
    _column("Users", "string", "Users in the roleBinding", priority=1),
    _column("Groups", "string", "Groups in the roleBinding", priority=1),
    _column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", priority=1),
]


def _print_binding(obj: Obj, now: datetime) -> Row:
    """``printRoleBinding``: ``Kind/name`` of the role, then the subjects by kind
    (``rbac.SubjectsStrings``: service accounts as ``namespace/name``)."""
    ref = _dict(obj.get("roleRef"))
    by_kind: dict[str, list[str]] = {"User": [], "Group": [], "ServiceAccount": []}
    for subject in _list(obj.get("subjects")):
        subject = _dict(subject)
        kind = subject.get("kind")
        if kind == "ServiceAccount":
            by_kind[kind].append(f"{subject.get('namespace') or ''}/{subject.get('name') or ''}")
        elif kind in by_kind:
            by_kind[kind].append(str(subject.get("name") or ""))
    cells = [
        _meta(obj).get("name", ""),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        _age(obj, now),
        ", ".join(by_kind["User"]),
        ", ".join(by_kind["Group"]),
        ", ".join(by_kind["ServiceAccount"]),
    ]
    return cells, []


_Printer = tuple[list[dict[str, Any]], Callable[[Obj, datetime], Row]]

# (group, kind) -> columns and printer; the version does not change what kube prints.
_PRINTERS: dict[tuple[str, str], _Printer] = {
    ("", "Pod"): (_POD_COLUMNS, _print_pod),
    ("", "Service"): (_SERVICE_COLUMNS, _print_service),
    ("", "Node"): (_NODE_COLUMNS, _print_node),
    ("", "Event"): (_EVENT_COLUMNS, _print_event),
    ("events.k8s.io", "Event"): (_EVENT_COLUMNS, lambda e, now: _print_event(_core_event(e), now)),
    ("", "Namespace"): (
        [_NAME, _column("Status", "string", "The status of the namespace"), _AGE],
        _printer(_name, lambda o, now: _sub(o, "status", "phase") or "", _age),
    ),
    ("", "ConfigMap"): (
        [_NAME, _column("Data", "string", "Data contains the configuration data."), _AGE],
        _printer(
            _name,
            lambda o, now: len(_dict(o.get("data"))) + len(_dict(o.get("binaryData"))),
            _age,
        ),
    ),
    ("", "Secret"): (
        [
            _NAME,
            _column("Type", "string", "Used to facilitate programmatic handling of secret data."),
            _column("Data", "string", "Data contains the secret data."),
            _AGE,
        ],
        _printer(
            _name,
            lambda o, now: o.get("type") or "Opaque",
            lambda o, now: len(_dict(o.get("data"))),
            _age,
        ),
    ),
    ("", "ServiceAccount"): (
        [
            _NAME,
            _column("Secrets", "string", "Secrets is a list of the secrets in the same namespace."),
            _AGE,
        ],
        _printer(_name, lambda o, now: len(_list(o.get("secrets"))), _age),
    ),
    ("", "PersistentVolumeClaim"): (_PVC_COLUMNS, _print_pvc),
    ("", "ResourceQuota"): (_QUOTA_COLUMNS, _print_quota),
    ("coordination.k8s.io", "Lease"): (
        [
            _NAME,
            _column("Holder", "string", "holderIdentity contains the identity of the holder."),
            _AGE,
        ],
        _printer(_name, lambda o, now: _sub(o, "spec", "holderIdentity") or "", _age),
    ),
    ("scheduling.k8s.io", "PriorityClass"): (
        [
            _NAME,
            _column("Value", "integer", "The value of this priority class."),
            _column(
                "Global-Default", "boolean", "Whether this is the global default priority class."
            ),
            _AGE,
            _column(
                "PreemptionPolicy",
                "string",
                "The Policy for preempting pods with lower priority.",
                priority=1,
            ),
        ],
        _printer(
            _name,
            lambda o, now: int(o.get("value") or 0),
            lambda o, now: bool(o.get("globalDefault")),
            _age,
            lambda o, now: o.get("preemptionPolicy") or "",
        ),
    ),
    ("autoscaling", "HorizontalPodAutoscaler"): (_HPA_COLUMNS, _print_hpa),
    ("rbac.authorization.k8s.io", "RoleBinding"): (_BINDING_COLUMNS, _print_binding),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (_BINDING_COLUMNS, _print_binding),
}


def _default_table(objects: list[Obj], now: datetime) -> tuple[list[dict[str, Any]], list[Row]]:
    """``rest.NewDefaultTableConvertor``: NAME and CREATED AT (RFC 3339, UTC)."""
    columns = [_NAME, {**_column("Created At", "date", _AGE_DOC)}]
    rows = []
    for obj in objects:
        created = _parse_time(_meta(obj).get("creationTimestamp"))
        shown = timefmt.seconds(created) if created else "0001-01-01T00:00:00Z"
        rows.append(([_meta(obj).get("name", ""), shown], []))
    return columns, rows


def _go_print(value: Any) -> str:
    """``jsonpath.PrintResults`` of one value: objects and lists as JSON, scalars as Go's
    ``fmt.Print`` writes them."""
    if isinstance(value, dict | list):
        return gofmt.go_json(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return gofmt.go_float(value)
    return str(value)


def _custom_cell(kind: str, value: Any, now: datetime) -> Any:
    """``cellForJSONValue``: a printer-column value in the column's type, or None."""
    if value is None:
        return None
    if kind == "string":
        return _go_print(value)
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        if value in ("", "null"):
            return "<unknown>"
        return _since(value, now) if _parse_time(value) else "<invalid>"
    return None


def _custom_table(
    columns: list[dict[str, Any]], objects: list[Obj], now: datetime
) -> tuple[list[dict[str, Any]], list[Row]]:
    """Printer columns of a custom resource: NAME, then each column's first JSONPath result."""
    if not columns:
        columns = [
            {
                "name": "Age",
                "type": "date",
                "jsonPath": ".metadata.creationTimestamp",
                "description": _AGE_DOC,
            }
        ]
    definitions = [_NAME]
    for column in columns:
        path = str(column.get("jsonPath", ""))
        description = column.get("description") or (
            f"Custom resource definition column (in JSONPath format): {path}"
        )
        definitions.append(
            _column(
                str(column.get("name", "")),
                str(column.get("type", "string")),
                description,
                fmt=str(column.get("format") or ""),
                priority=int(column.get("priority") or 0),
            )
        )
    rows = []
    for obj in objects:
        cells: list[Any] = [_meta(obj).get("name", "")]
        for column in columns:
            try:
                found = jsonpath(obj, str(column.get("jsonPath", "")))
            except ValueError:
                found = []
            value = found[0] if found else None
            cells.append(_custom_cell(str(column.get("type", "string")), value, now))
        rows.append((cells, []))
    return definitions, rows


def _row_object(obj: Obj, include_object: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(_meta(obj)),
    }


def _split_kind(kind_key: str) -> tuple[str, str]:
    """``v1/Pod`` -> (``""``, ``Pod``); ``kubeflow.org/v1/PyTorchJob`` -> (group, kind)."""
    parts = kind_key.split("/")
    if len(parts) == 2:
        return "", parts[1]
    if len(parts) == 3:
        return parts[0], parts[2]
    raise ValueError(f"kind key must be [group/]version/Kind, got {kind_key!r}")


def table(
    kind_key: str,
    objects: list[Obj],
    *,
    crd_columns: list[dict[str, Any]] | None = None,
    include_object: str = "Metadata",
    now: datetime,
    list_meta: dict[str, Any] | None = None,
    no_headers: bool = False,
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (a list's items, or one object).

    ``kind_key`` is ``[group/]version/Kind``. Pass ``crd_columns`` (the served version's
    ``additionalPrinterColumns``, possibly empty) for a custom resource; kinds with neither a
    built-in printer nor columns get NAME and CREATED AT. ``include_object`` is the
    ``includeObject`` query parameter: ``Metadata`` (the default; a PartialObjectMetadata
    per row), ``Object`` or ``None``. ``list_meta`` (resourceVersion, continue,
    remainingItemCount) becomes the table's metadata; ``no_headers`` (``TableOptions``) drops
    the column definitions, as kube does for watch events after the first.
    """
    group, kind = _split_kind(kind_key)
    if crd_columns is not None:
        columns, rows = _custom_table(crd_columns, objects, now)
    elif (group, kind) in _PRINTERS:
        columns, printer = _PRINTERS[(group, kind)]
        rows = [printer(obj, now) for obj in objects]
    else:
        columns, rows = _default_table(objects, now)
    result_rows = []
    for obj, (cells, conditions) in zip(objects, rows, strict=True):
        row: dict[str, Any] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(obj, include_object)
        result_rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta or {}),
        "columnDefinitions": None if no_headers else [dict(c) for c in columns],
        "rows": result_rows,
    }
