"""Table responses for ``kubectl get``, cell by cell as kube-apiserver 1.32 prints them.

Kubernetes documents the format at
https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-tables
and the custom resource columns at
https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#additional-printer-columns
; the cells below are what kube's printers produce for these objects.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubetrain import api
from kubetrain.local.apiserver import jsonpath, tablecolumns, tables

NOW = datetime(2024, 5, 10, 12, 0, 0, tzinfo=timezone.utc)
CRDS = {crd["spec"]["names"]["kind"]: crd for crd in api.crds()}


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(name: str = "a", **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "creationTimestamp": ago(minutes=5), **extra}


def cells(kind_key: str, obj: dict[str, Any], **options: Any) -> list[Any]:
    result = tables.table(kind_key, [obj], now=NOW, **options)
    return list(result["rows"][0]["cells"])


DURATIONS = [
    ("a second in the future still reads as now", -1.5, "0s"),
    ("further in the future is invalid", -3, "<invalid>"),
    ("zero", 0, "0s"),
    ("seconds up to two minutes", 119.9, "119s"),
    ("two minutes", 120, "2m"),
    ("minutes and seconds under ten minutes", 5 * 60 + 30, "5m30s"),
    ("whole minutes under three hours", 170 * 60 + 59, "170m"),
    ("hours and minutes under eight hours", 7 * 3600 + 5 * 60, "7h5m"),
    ("whole hours under two days", 47 * 3600, "47h"),
    ("days and hours under eight days", 2 * 86400 + 4 * 3600, "2d4h"),
    ("whole days under two years", 400 * 86400, "400d"),
    ("years and days under eight years", 3 * 365 * 86400 + 5 * 86400, "3y5d"),
    ("whole years from eight years", 9 * 365 * 86400 + 100 * 86400, "9y"),
]


@pytest.mark.parametrize(
    ("seconds", "expected"), [c[1:] for c in DURATIONS], ids=[c[0] for c in DURATIONS]
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert tablecolumns.human_duration(seconds) == expected


DOC = {
    "metadata": {"labels": {"app.kubernetes.io/name": "x"}},
    "status": {"conditions": [{"type": "Created"}, {"type": "Running"}]},
    "spec": {"items": [{"b": 1}, {"c": 2}, {"b": 3}]},
}
JSONPATHS = [
    ("a field path", ".status.conditions[0].type", ["Created"]),
    ("the last element by slice", ".status.conditions[-1:].type", ["Running"]),
    ("the last element by index", ".status.conditions[-1].type", ["Running"]),
    ("a wildcard collects what is present", ".spec.items[*].b", [1, 3]),
    ("a slice", ".spec.items[0:2]", [{"b": 1}, {"c": 2}]),
    ("braces and a dollar are accepted", "{$.status.conditions[1].type}", ["Running"]),
    ("an escaped dot stays in the key", ".metadata.labels.app\\.kubernetes\\.io/name", ["x"]),
    ("a quoted key", ".metadata.labels['app.kubernetes.io/name']", ["x"]),
    ("a missing key selects nothing", ".status.phase", []),
    ("an index out of range selects nothing", ".status.conditions[5].type", []),
    ("a slice of a missing list selects nothing", ".status.missing[-1:].type", []),
]


@pytest.mark.parametrize(
    ("expr", "expected"), [c[1:] for c in JSONPATHS], ids=[c[0] for c in JSONPATHS]
)
def test_jsonpath(expr: str, expected: list[Any]) -> None:
    assert jsonpath.jsonpath(DOC, expr) == expected


def test_jsonpath_refuses_filters() -> None:
    with pytest.raises(ValueError, match="unsupported JSONPath"):
        jsonpath.jsonpath(DOC, ".spec.items[?(@.b==1)]")


def pod(
    phase: str = "Running", containers: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if containers is not None:
        status["containerStatuses"] = containers
    metadata = extra.pop("metadata", meta())
    spec = {"containers": [{"name": "main"}], "nodeName": "node-1", **extra.pop("spec", {})}
    status.update(extra)
    return {"metadata": metadata, "spec": spec, "status": status}


def running(ready: bool = True, restarts: int = 0, **state: Any) -> dict[str, Any]:
    return {
        "name": "main",
        "ready": ready,
        "restartCount": restarts,
        "state": state or {"running": {"startedAt": ago(minutes=4)}},
    }


POD_CASES = [
    ("a pending pod shows its phase", pod("Pending"), ["a", "0/1", "Pending", "0", "5m"]),
    (
        "a container being created shows the waiting reason",
        pod("Pending", [running(False, waiting={"reason": "ContainerCreating"})]),
        ["a", "0/1", "ContainerCreating", "0", "5m"],
    ),
    ("a ready running container", pod("Running", [running()]), ["a", "1/1", "Running", "0", "5m"]),
    (
        "a finished container shows Completed",
        pod("Succeeded", [running(False, terminated={"exitCode": 0, "reason": "Completed"})]),
        ["a", "0/1", "Completed", "0", "5m"],
    ),
    (
        "a failed container shows Error",
        pod("Failed", [running(False, terminated={"exitCode": 1, "reason": "Error"})]),
        ["a", "0/1", "Error", "0", "5m"],
    ),
    (
        "a terminated container without a reason shows its exit code",
        pod("Failed", [running(False, terminated={"exitCode": 3})]),
        ["a", "0/1", "ExitCode:3", "0", "5m"],
    ),
    (
        "a crash loop shows restarts and when the last one happened",
        pod(
            "Running",
            [
                {
                    **running(False, restarts=3, waiting={"reason": "CrashLoopBackOff"}),
                    "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(seconds=45)}},
                }
            ],
        ),
        ["a", "0/1", "CrashLoopBackOff", "3 (45s ago)", "5m"],
    ),
    (
        "a pod being deleted shows Terminating",
        pod("Running", [running()], metadata=meta(deletionTimestamp=ago(seconds=1))),
        ["a", "1/1", "Terminating", "0", "5m"],
    ),
    (
        "a finished pod being deleted keeps its reason",
        pod(
            "Succeeded",
            [running(False, terminated={"exitCode": 0, "reason": "Completed"})],
            metadata=meta(deletionTimestamp=ago(seconds=1)),
        ),
        ["a", "0/1", "Completed", "0", "5m"],
    ),
    (
        "an init container still running shows Init:n/m",
        pod(
            "Pending",
            [running(False, waiting={"reason": "PodInitializing"})],
            spec={"initContainers": [{"name": "init"}]},
            initContainerStatuses=[{"name": "init", "restartCount": 0, "state": {"running": {}}}],
        ),
        ["a", "0/1", "Init:0/1", "0", "5m"],
    ),
    (
        "a scheduling-gated pod says so",
        pod(
            "Pending",
            conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
        ),
        ["a", "0/1", "SchedulingGated", "0", "5m"],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES]
)
def test_pod_cells(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("v1/Pod", obj)[:5] == expected


def test_pod_wide_cells_and_column_priorities() -> None:
    obj = pod(
        "Running",
        [running()],
        podIPs=[{"ip": "10.0.0.7"}],
        spec={"readinessGates": [{"conditionType": "x/ready"}]},
        conditions=[{"type": "x/ready", "status": "True"}],
    )
    result = tables.table("v1/Pod", [obj], now=NOW)
    assert result["rows"][0]["cells"][5:] == ["10.0.0.7", "node-1", "<none>", "1/1"]
    assert [(c["name"], c["priority"]) for c in result["columnDefinitions"]] == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]
    assert result["columnDefinitions"][0]["format"] == "name"
    assert result["columnDefinitions"][4]["type"] == "string"


def test_a_succeeded_pod_row_carries_the_completed_condition() -> None:
    row = tables.table("v1/Pod", [pod("Succeeded")], now=NOW)["rows"][0]
    assert row["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]


KIND_CASES = [
    (
        "a ClusterIP service with ports",
        "v1/Service",
        {
            "metadata": meta("svc"),
            "spec": {
                "type": "ClusterIP",
                "clusterIPs": ["10.96.0.10"],
                "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                "selector": {"b": "2", "a": "1"},
            },
        },
        ["svc", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP", "5m", "a=1,b=2"],
    ),
    (
        "a headless NodePort service",
        "v1/Service",
        {
            "metadata": meta("np"),
            "spec": {
                "type": "NodePort",
                "clusterIP": "None",
                "ports": [{"port": 80, "nodePort": 30080}],
            },
        },
        ["np", "NodePort", "None", "<none>", "80:30080/TCP", "5m", "<none>"],
    ),
    (
        "a LoadBalancer service still waiting for an address",
        "v1/Service",
        {"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"]}},
        ["lb", "LoadBalancer", "10.0.0.1", "<pending>", "<none>", "5m", "<none>"],
    ),
    (
        "a namespace",
        "v1/Namespace",
        {"metadata": meta("ns"), "status": {"phase": "Active"}},
        ["ns", "Active", "5m"],
    ),
    (
        "a ready control-plane node",
        "v1/Node",
        {
            "metadata": meta("n1", labels={"node-role.kubernetes.io/control-plane": ""}),
            "spec": {"unschedulable": True},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v1.32.0"},
                "addresses": [{"type": "InternalIP", "address": "192.168.1.2"}],
            },
        },
        [
            "n1",
            "Ready,SchedulingDisabled",
            "control-plane",
            "5m",
            "v1.32.0",
            "192.168.1.2",
            "<none>",
            "<unknown>",
            "<unknown>",
            "<unknown>",
        ],
    ),
    (
        "a node that never reported",
        "v1/Node",
        {"metadata": meta("n2"), "status": {}},
        [
            "n2",
            "Unknown",
            "<none>",
            "5m",
            "",
            "<none>",
            "<none>",
            "<unknown>",
            "<unknown>",
            "<unknown>",
        ],
    ),
    (
        "a config map counts data and binary data",
        "v1/ConfigMap",
        {"metadata": meta("cm"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}},
        ["cm", 3, "5m"],
    ),
    (
        "a secret shows its type and key count",
        "v1/Secret",
        {
            "metadata": meta("s"),
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
        },
        ["s", "kubernetes.io/tls", 2, "5m"],
    ),
    (
        "a service account counts its secrets",
        "v1/ServiceAccount",
        {"metadata": meta("default")},
        ["default", 0, "5m"],
    ),
    (
        "an event about a pod, repeated",
        "v1/Event",
        {
            "metadata": meta("a.17"),
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{main}"},
            "reason": "Pulled",
            "message": "Container image pulled \n",
            "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": ago(hours=2),
            "lastTimestamp": ago(minutes=1),
            "count": 4,
        },
        [
            "60s",
            "Normal",
            "Pulled",
            "pod/p",
            "spec.containers{main}",
            "kubelet, node-1",
            "Container image pulled",
            "120m",
            4,
            "a.17",
        ],
    ),
    (
        "a new-style event has its time from eventTime and counts one",
        "events.k8s.io/v1/Event",
        {
            "metadata": meta("e"),
            "regarding": {"kind": "PyTorchJob", "name": "job"},
            "reason": "SuccessfulCreatePod",
            "note": "Created pod: job-master-0",
            "type": "Normal",
            "eventTime": "2024-05-10T11:59:30.000000Z",
            "reportingController": "kubetrain",
        },
        [
            "30s",
            "Normal",
            "SuccessfulCreatePod",
            "pytorchjob/job",
            "",
            "kubetrain",
            "Created pod: job-master-0",
            "30s",
            1,
            "e",
        ],
    ),
    (
        "a bound claim shows its volume, capacity and access modes",
        "v1/PersistentVolumeClaim",
        {
            "metadata": meta("data"),
            "spec": {"volumeName": "pv-1", "storageClassName": "local"},
            "status": {
                "phase": "Bound",
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
            },
        },
        ["data", "Bound", "pv-1", "1Gi", "RWO,RWX", "local", "<unset>", "5m", "<unset>"],
    ),
    (
        "a pending claim shows no capacity",
        "v1/PersistentVolumeClaim",
        {"metadata": meta("data"), "spec": {}, "status": {"phase": "Pending"}},
        ["data", "Pending", "", "", "", "", "<unset>", "5m", "<unset>"],
    ),
    (
        "a lease with a holder",
        "coordination.k8s.io/v1/Lease",
        {"metadata": meta("l"), "spec": {"holderIdentity": "me"}},
        ["l", "me", "5m"],
    ),
    (
        "a priority class",
        "scheduling.k8s.io/v1/PriorityClass",
        {
            "metadata": meta("high"),
            "value": 1000,
            "globalDefault": True,
            "preemptionPolicy": "Never",
        },
        ["high", 1000, True, "5m", "Never"],
    ),
    (
        "an autoscaler with a utilization target",
        "autoscaling/v2/HorizontalPodAutoscaler",
        {
            "metadata": meta("h"),
            "spec": {
                "scaleTargetRef": {"kind": "PyTorchJob", "name": "job"},
                "maxReplicas": 4,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 80},
                        },
                    }
                ],
            },
            "status": {
                "currentReplicas": 2,
                "currentMetrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "current": {"averageUtilization": 40}},
                    }
                ],
            },
        },
        ["h", "PyTorchJob/job", "cpu: 40%/80%", "<unset>", 4, 2, "5m"],
    ),
    (
        "a resource quota splits requests from limits",
        "v1/ResourceQuota",
        {
            "metadata": meta("q"),
            "status": {
                "hard": {"requests.cpu": "2", "pods": "10", "limits.memory": "4Gi"},
                "used": {"requests.cpu": "500m", "pods": "3"},
            },
        },
        ["q", "pods: 3/10, requests.cpu: 500m/2", "limits.memory: 0/4Gi", "5m"],
    ),
    (
        "a limit range has only a name and creation time",
        "v1/LimitRange",
        {"metadata": meta("lr")},
        ["lr", ago(minutes=5)],
    ),
    (
        "a CRD has only a name and creation time",
        "apiextensions.k8s.io/v1/CustomResourceDefinition",
        {
            "metadata": {
                "name": "pytorchjobs.kubeflow.org",
                "creationTimestamp": "2024-05-01T00:00:00Z",
            }
        },
        ["pytorchjobs.kubeflow.org", "2024-05-01T00:00:00Z"],
    ),
]


@pytest.mark.parametrize(
    ("kind_key", "obj", "expected"), [c[1:] for c in KIND_CASES], ids=[c[0] for c in KIND_CASES]
)
def test_builtin_cells(kind_key: str, obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells(kind_key, obj) == expected


COLUMNS = [
    ("Service", ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]),
    ("Namespace", ["Name", "Status", "Age"]),
    (
        "Node",
        [
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime",
        ],
    ),
    ("ConfigMap", ["Name", "Data", "Age"]),
    ("Secret", ["Name", "Type", "Data", "Age"]),
    ("ServiceAccount", ["Name", "Secrets", "Age"]),
    (
        "Event",
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name",
        ],
    ),
    (
        "PersistentVolumeClaim",
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode",
        ],
    ),
    ("ResourceQuota", ["Name", "Request", "Limit", "Age"]),
    ("LimitRange", ["Name", "Created At"]),
]


@pytest.mark.parametrize(("kind", "names"), COLUMNS, ids=[f"{c[0]} columns" for c in COLUMNS])
def test_builtin_columns(kind: str, names: list[str]) -> None:
    result = tables.table(f"v1/{kind}", [], now=NOW)
    assert [c["name"] for c in result["columnDefinitions"]] == names
    assert result["rows"] == []


def job(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": meta("job"),
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}},
        "status": status,
    }


def printer_columns(kind: str) -> list[dict[str, Any]]:
    return list(CRDS[kind]["spec"]["versions"][0].get("additionalPrinterColumns", []))


def test_pytorchjob_shows_its_last_condition_and_age() -> None:
    running = job(
        conditions=[{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]
    )
    result = tables.table(
        "kubeflow.org/v1/PyTorchJob", [running], crd_columns=printer_columns("PyTorchJob"), now=NOW
    )
    assert [(c["name"], c["type"], c["priority"]) for c in result["columnDefinitions"]] == [
        ("Name", "string", 0),
        ("State", "string", 0),
        ("Age", "date", 0),
    ]
    assert result["columnDefinitions"][1]["description"] == (
        "Custom resource definition column (in JSONPath format): .status.conditions[-1:].type"
    )
    assert result["rows"][0]["cells"] == ["job", "Running", "5m"]


def test_a_missing_printer_column_value_is_null() -> None:
    result = tables.table(
        "kubeflow.org/v1/PyTorchJob", [job()], crd_columns=printer_columns("PyTorchJob"), now=NOW
    )
    assert result["rows"][0]["cells"] == ["job", None, "5m"]


CUSTOM_CELLS = [
    (
        "a string column prints numbers as text",
        {"type": "string", "jsonPath": ".spec.n"},
        {"n": 3},
        "3",
    ),
    (
        "a string column prints objects as JSON",
        {"type": "string", "jsonPath": ".spec.o"},
        {"o": {"b": 1, "a": [True]}},
        '{"a":[true],"b":1}',
    ),
    (
        "an integer column truncates a float",
        {"type": "integer", "jsonPath": ".spec.n"},
        {"n": 2.9},
        2,
    ),
    ("a number column takes an integer", {"type": "number", "jsonPath": ".spec.n"}, {"n": 2}, 2.0),
    (
        "a boolean column ignores a string",
        {"type": "boolean", "jsonPath": ".spec.n"},
        {"n": "true"},
        None,
    ),
    (
        "a date column shows an age",
        {"type": "date", "jsonPath": ".spec.t"},
        {"t": ago(hours=3)},
        "3h",
    ),
    (
        "a date column flags a bad timestamp",
        {"type": "date", "jsonPath": ".spec.t"},
        {"t": "soon"},
        "<invalid>",
    ),
    (
        "a wildcard column shows the first match",
        {"type": "string", "jsonPath": ".spec.l[*].x"},
        {"l": [{"x": "a"}, {"x": "b"}]},
        "a",
    ),
]


@pytest.mark.parametrize(
    ("column", "spec", "expected"), [c[1:] for c in CUSTOM_CELLS], ids=[c[0] for c in CUSTOM_CELLS]
)
def test_custom_column_cells(column: dict[str, Any], spec: dict[str, Any], expected: Any) -> None:
    obj = {"metadata": meta("w"), "spec": spec}
    assert cells("example.com/v1/Widget", obj, crd_columns=[{"name": "X", **column}]) == [
        "w",
        expected,
    ]


def test_a_crd_without_printer_columns_shows_name_and_age() -> None:
    result = tables.table(
        "example.com/v1/Widget", [{"metadata": meta("w")}], crd_columns=[], now=NOW
    )
    assert [(c["name"], c["type"]) for c in result["columnDefinitions"]] == [
        ("Name", "string"),
        ("Age", "date"),
    ]
    assert result["rows"][0]["cells"] == ["w", "5m"]


def test_rows_carry_partial_object_metadata_by_default() -> None:
    obj = {"metadata": meta("ns"), "status": {"phase": "Active"}}
    result = tables.table("v1/Namespace", [obj], now=NOW, list_meta={"resourceVersion": "42"})
    assert result["kind"] == "Table"
    assert result["apiVersion"] == "meta.k8s.io/v1"
    assert result["metadata"] == {"resourceVersion": "42"}
    assert result["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta("ns"),
    }


INCLUDE = [
    ("includeObject=Object returns the object", "Object", {"metadata": meta("ns")}),
    ("includeObject=None returns null", "None", None),
]


@pytest.mark.parametrize(
    ("include", "expected"), [c[1:] for c in INCLUDE], ids=[c[0] for c in INCLUDE]
)
def test_include_object(include: str, expected: Any) -> None:
    result = tables.table(
        "v1/Namespace", [{"metadata": meta("ns")}], include_object=include, now=NOW
    )
    assert result["rows"][0]["object"] == expected


def test_no_headers_drops_the_column_definitions() -> None:
    result = tables.table("v1/Namespace", [{"metadata": meta("ns")}], now=NOW, no_headers=True)
    assert result["columnDefinitions"] is None
    assert result["rows"][0]["cells"] == ["ns", "", "5m"]


def test_an_object_without_a_creation_time_has_an_unknown_age() -> None:
    assert cells("v1/Namespace", {"metadata": {"name": "ns"}}) == ["ns", "", "<unknown>"]


def test_kind_keys_must_name_a_version() -> None:
    with pytest.raises(ValueError, match="kind key"):
        tables.table("Pod", [], now=NOW)
