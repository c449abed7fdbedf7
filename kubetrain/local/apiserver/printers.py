"""The built-in printers of ``kubectl get``: the columns and cells kube-apiserver prints for
the kinds kubetrain serves, as ``pkg/printers/internalversion/printers.go`` (Kubernetes 1.32)
writes them: pods (status reasons, restarts, readiness), services, nodes, events, claims,
quotas, autoscalers, role bindings and the simple kinds.

A cell kube leaves empty is ``None`` (JSON null), which kubectl prints as ``<none>``; every
table carries the wide columns (``priority: 1``), which kubectl drops unless asked for
``-o wide``. Pure: the caller passes ``now``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubetrain import accessors
from kubetrain.local.apiserver import tablecolumns

Obj = dict[str, Any]
Row = tablecolumns.Row


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
    return tablecolumns.parse_time(_sub(status, "lastState", "terminated", "finishedAt"))


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
    spec, status, meta = _dict(pod.get("spec")), _dict(pod.get("status")), accessors.metadata(pod)
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
        shown = f"{restarts} ({tablecolumns.since(last_restart, now)} ago)"

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
        tablecolumns.since(meta.get("creationTimestamp"), now),
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
    tablecolumns.NAME,
    tablecolumns.column(
        "Ready", "string", "The aggregate readiness state of this pod for accepting traffic."
    ),
    tablecolumns.column("Status", "string", "The aggregate status of the containers in this pod."),
    tablecolumns.column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
    ),
    tablecolumns.AGE,
    tablecolumns.column("IP", "string", "IP address allocated to the pod.", priority=1),
    tablecolumns.column("Node", "string", "The node the pod is scheduled onto.", priority=1),
    tablecolumns.column(
        "Nominated Node", "string", "The node the scheduler nominated.", priority=1
    ),
    tablecolumns.column(
        "Readiness Gates", "string", "Pod readiness gates that are true.", priority=1
    ),
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
    spec, meta = _dict(svc.get("spec")), accessors.metadata(svc)
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
        tablecolumns.since(meta.get("creationTimestamp"), now),
        _format_labels(spec.get("selector")),
    ]
    return cells, []


_SERVICE_COLUMNS = [
    tablecolumns.NAME,
    tablecolumns.column("Type", "string", "type determines how the Service is exposed."),
    tablecolumns.column("Cluster-IP", "string", "clusterIP is the IP address of the service."),
    tablecolumns.column("External-IP", "string", "externalIPs is a list of IP addresses."),
    tablecolumns.column("Port(s)", "string", "The list of ports that are exposed by this service."),
    tablecolumns.AGE,
    tablecolumns.column(
        "Selector", "string", "Route service traffic to pods with these labels.", priority=1
    ),
]


# Nodes


def _print_node(node: Obj, now: datetime) -> Row:
    spec, status = _dict(node.get("spec")), _dict(node.get("status"))
    meta = accessors.metadata(node)
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
        tablecolumns.since(meta.get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]
    return cells, []


_NODE_COLUMNS = [
    tablecolumns.NAME,
    tablecolumns.column("Status", "string", "The status of the node"),
    tablecolumns.column("Roles", "string", "The roles of the node"),
    tablecolumns.AGE,
    tablecolumns.column("Version", "string", "Kubelet Version reported by the node."),
    tablecolumns.column(
        "Internal-IP", "string", "List of addresses reachable to the node.", priority=1
    ),
    tablecolumns.column(
        "External-IP", "string", "List of addresses reachable to the node.", priority=1
    ),
    tablecolumns.column("OS-Image", "string", "OS Image reported by the node.", priority=1),
    tablecolumns.column(
        "Kernel-Version", "string", "Kernel Version reported by the node.", priority=1
    ),
    tablecolumns.column(
        "Container-Runtime", "string", "ContainerRuntime Version reported by the node.", priority=1
    ),
]


# Events (core/v1, and events.k8s.io/v1 seen through the same printer as kube does)


def _core_event(event: Obj) -> Obj:
    """An ``events.k8s.io/v1`` Event in ``core/v1`` field names, as kube converts it."""
    source = _dict(event.get("deprecatedSource"))
    return {
        "metadata": accessors.metadata(event),
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
    meta, involved = accessors.metadata(event), _dict(event.get("involvedObject"))
    first = tablecolumns.since(event.get("firstTimestamp"), now)
    if tablecolumns.parse_time(event.get("firstTimestamp")) is None:
        first = tablecolumns.since(event.get("eventTime"), now)
    last = tablecolumns.since(event.get("lastTimestamp"), now)
    if tablecolumns.parse_time(event.get("lastTimestamp")) is None:
        last = first
    count = int(event.get("count") or 0)
    series = event.get("series")
    if isinstance(series, dict):
        last = tablecolumns.since(series.get("lastObservedTime"), now)
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
    tablecolumns.column(
        "Last Seen", "string", "The time at which the most recent occurrence was recorded."
    ),
    tablecolumns.column("Type", "string", "Type of this event (Normal, Warning)."),
    tablecolumns.column(
        "Reason", "string", "The reason for the transition into the object's current status."
    ),
    tablecolumns.column("Object", "string", "The object that this event is about."),
    tablecolumns.column(
        "Subobject", "string", "The part of the object the event is about.", priority=1
    ),
    tablecolumns.column("Source", "string", "The component reporting this event.", priority=1),
    tablecolumns.column(
        "Message", "string", "A human-readable description of the status of this operation."
    ),
    tablecolumns.column(
        "First Seen", "string", "The time the event was first recorded.", priority=1
    ),
    tablecolumns.column(
        "Count", "string", "The number of times this event has occurred.", priority=1
    ),
    {**tablecolumns.NAME, "priority": 1},
]


# Small kinds


def _printer(*cells: Callable[[Obj, datetime], Any]) -> Callable[[Obj, datetime], Row]:
    def row(obj: Obj, now: datetime) -> Row:
        return [cell(obj, now) for cell in cells], []

    return row


def _name(obj: Obj, now: datetime) -> Any:
    return accessors.metadata(obj).get("name", "")


def _age(obj: Obj, now: datetime) -> str:
    return tablecolumns.since(accessors.metadata(obj).get("creationTimestamp"), now)


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
    spec, status, meta = _dict(pvc.get("spec")), _dict(pvc.get("status")), accessors.metadata(pvc)
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
        tablecolumns.since(meta.get("creationTimestamp"), now),
        spec.get("volumeMode") or "<unset>",
    ]
    return cells, []


_PVC_COLUMNS = [
    tablecolumns.NAME,
    tablecolumns.column(
        "Status", "string", "phase represents the current phase of PersistentVolumeClaim."
    ),
    tablecolumns.column(
        "Volume", "string", "volumeName is the binding reference to the PersistentVolume."
    ),
    tablecolumns.column(
        "Capacity", "string", "capacity represents the actual resources of the volume."
    ),
    tablecolumns.column("Access Modes", "string", "accessModes contains the actual access modes."),
    tablecolumns.column("StorageClass", "string", "StorageClass of the pvc"),
    tablecolumns.column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    tablecolumns.AGE,
    tablecolumns.column(
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
    spec, status, meta = _dict(hpa.get("spec")), _dict(hpa.get("status")), accessors.metadata(hpa)
    ref = _dict(spec.get("scaleTargetRef"))
    minimum = spec.get("minReplicas")
    cells = [
        meta.get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _hpa_metrics(_list(spec.get("metrics")), _list(status.get("currentMetrics"))),
        "<unset>" if minimum is None else str(minimum),
        int(spec.get("maxReplicas") or 0),
        int(status.get("currentReplicas") or 0),
        tablecolumns.since(meta.get("creationTimestamp"), now),
    ]
    return cells, []


_HPA_COLUMNS = [
    tablecolumns.NAME,
    tablecolumns.column("Reference", "string", "reference to scaled resource"),
    tablecolumns.column(
        "Targets", "string", "the specifications for which to use to calculate replicas"
    ),
    tablecolumns.column("MinPods", "string", "the lower limit for the number of replicas"),
    tablecolumns.column("MaxPods", "string", "the upper limit for the number of replicas"),
    tablecolumns.column(
        "Replicas", "string", "current number of replicas of pods managed by this autoscaler"
    ),
    tablecolumns.AGE,
]


def _print_quota(quota: Obj, now: datetime) -> Row:
    status, meta = _dict(quota.get("status")), accessors.metadata(quota)
    hard, used = _dict(status.get("hard")), _dict(status.get("used"))
    requests, limits = [], []
    for resource in sorted(hard):
        column = limits if resource.split(".")[0] == "limits" and "." in resource else requests
        column.append(f"{resource}: {used.get(resource, '0')}/{hard[resource]}")
    cells = [
        meta.get("name", ""),
        ", ".join(requests),
        ", ".join(limits),
        tablecolumns.since(meta.get("creationTimestamp"), now),
    ]
    return cells, []


_QUOTA_COLUMNS = [
    tablecolumns.NAME,
    tablecolumns.column(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    tablecolumns.column(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use "
        "independent of contention on the node.",
    ),
    tablecolumns.AGE,
]

_BINDING_COLUMNS = [
    tablecolumns.NAME,
    tablecolumns.column(
        "Role",
        "string",
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
        "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
    ),
    tablecolumns.AGE,
    tablecolumns.column("Users", "string", "Users in the roleBinding", priority=1),
    tablecolumns.column("Groups", "string", "Groups in the roleBinding", priority=1),
    tablecolumns.column(
        "ServiceAccounts", "string", "ServiceAccounts in the roleBinding", priority=1
    ),
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
        accessors.metadata(obj).get("name", ""),
        f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
        _age(obj, now),
        ", ".join(by_kind["User"]),
        ", ".join(by_kind["Group"]),
        ", ".join(by_kind["ServiceAccount"]),
    ]
    return cells, []


Printer = tuple[list[dict[str, Any]], Callable[[Obj, datetime], Row]]

# (group, kind) -> columns and printer; the version does not change what kube prints.
PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "Pod"): (_POD_COLUMNS, _print_pod),
    ("", "Service"): (_SERVICE_COLUMNS, _print_service),
    ("", "Node"): (_NODE_COLUMNS, _print_node),
    ("", "Event"): (_EVENT_COLUMNS, _print_event),
    ("events.k8s.io", "Event"): (_EVENT_COLUMNS, lambda e, now: _print_event(_core_event(e), now)),
    ("", "Namespace"): (
        [
            tablecolumns.NAME,
            tablecolumns.column("Status", "string", "The status of the namespace"),
            tablecolumns.AGE,
        ],
        _printer(_name, lambda o, now: _sub(o, "status", "phase") or "", _age),
    ),
    ("", "ConfigMap"): (
        [
            tablecolumns.NAME,
            tablecolumns.column("Data", "string", "Data contains the configuration data."),
            tablecolumns.AGE,
        ],
        _printer(
            _name,
            lambda o, now: len(_dict(o.get("data"))) + len(_dict(o.get("binaryData"))),
            _age,
        ),
    ),
    ("", "Secret"): (
        [
            tablecolumns.NAME,
            tablecolumns.column(
                "Type", "string", "Used to facilitate programmatic handling of secret data."
            ),
            tablecolumns.column("Data", "string", "Data contains the secret data."),
            tablecolumns.AGE,
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
            tablecolumns.NAME,
            tablecolumns.column(
                "Secrets", "string", "Secrets is a list of the secrets in the same namespace."
            ),
            tablecolumns.AGE,
        ],
        _printer(_name, lambda o, now: len(_list(o.get("secrets"))), _age),
    ),
    ("", "PersistentVolumeClaim"): (_PVC_COLUMNS, _print_pvc),
    ("", "ResourceQuota"): (_QUOTA_COLUMNS, _print_quota),
    ("coordination.k8s.io", "Lease"): (
        [
            tablecolumns.NAME,
            tablecolumns.column(
                "Holder", "string", "holderIdentity contains the identity of the holder."
            ),
            tablecolumns.AGE,
        ],
        _printer(_name, lambda o, now: _sub(o, "spec", "holderIdentity") or "", _age),
    ),
    ("scheduling.k8s.io", "PriorityClass"): (
        [
            tablecolumns.NAME,
            tablecolumns.column("Value", "integer", "The value of this priority class."),
            tablecolumns.column(
                "Global-Default", "boolean", "Whether this is the global default priority class."
            ),
            tablecolumns.AGE,
            tablecolumns.column(
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
