"""What each page of the dashboard shows, as plain JSON-ready values computed from API objects.

The facts come from where the command line gets them, so the two never disagree: a job's state,
times and replica counts from :mod:`kubetrain.cli.jobstate`, its replicas, their phases, nodes,
restarts and exit codes from :mod:`kubetrain.cli.replicas`, requests and usage from
:mod:`kubetrain.cli.usage` and :mod:`kubetrain.cli.top`, the events about a job from
:func:`kubetrain.cli.jobs.about`. Times go to the browser as RFC 3339 strings, so that ages
and durations tick there without a message from the server.

Owns: the shape of each page's data (a job row, a job's details, a node row, the Gantt bars
of a job's pods). Pure: objects in, values out; the current time is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any

import yaml

from kubetrain import timefmt
from kubetrain.cli import jobkinds, jobs, jobstate, replicas, suspend, top
from kubetrain.cli import usage as amounts
from kubetrain.dashboard import curves, hub

Json = dict[str, Any]
MANAGED_FIELDS = "managedFields"


def key_of(job: Mapping[str, Any]) -> str:
    """``namespace/kind/name``: how the browser names a job (and the page's address)."""
    return address(hub.job_key(job))


def address(key: hub.JobKey) -> str:
    kind, namespace, name = key
    return f"{namespace}/{kind}/{name}"


def job_row(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    runtime_nodes: int | None = None,
) -> Json:
    """A job's line in the job list: state, times, replicas, progress, and for a failed job
    the replica that failed and how."""
    state = jobstate.of(job, pods)
    if jobkinds.of(job) is jobkinds.TRAINJOB:
        running, total = replicas.node_counts(job, pods, runtime_nodes)
    else:
        running, total = jobstate.replica_counts(job)
    point = curves.point_of(job)
    meta = job.get("metadata") or {}
    return {
        "key": key_of(job),
        "namespace": jobs.namespace_of(job),
        "kind": job.get("kind"),
        "name": jobs.name_of(job),
        "state": state.phase,
        "reason": state.reason,
        "message": state.message,
        "created": meta.get("creationTimestamp"),
        "started": _iso(jobstate.started(job)),
        "finished": _iso(jobstate.finished(job)),
        "running": running,
        "replicas": total,
        "progress": point.progress if point else None,
        "eta": point.eta if point else None,
        "reported": _iso_seconds(point.time) if point else None,
        "failure": failure(job, pods) if state.failed else None,
        "suspended": suspend.is_suspended(job),
        "finishedState": state.finished,
    }


def failure(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> Json | None:
    """The first replica whose container failed (its exit code and reason), for a failed job."""
    for replica in replicas.of_job(job, pods):
        ended = replicas.termination(replica.pod)
        if ended is not None and ended.exit_code != 0:
            return {
                "replica": replica.id,
                "pod": replica.pod_name,
                "exitCode": ended.exit_code,
                "reason": ended.reason,
                "text": f"{replica.id}: exit code {ended}",
            }
    return None


def job_detail(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    gone: Sequence[Mapping[str, Any]],
    events: Iterable[dict[str, Any]],
    *,
    runtime: Mapping[str, Any] | None,
    used: Mapping[tuple[str, str], amounts.Amounts],
    usage_note: str = "",
    points: Sequence[curves.Point] = (),
    curves_note: str = "",
) -> Json:
    """Everything the page of one job shows."""
    runtime_nodes = jobs.nodes_of_runtime(runtime) if runtime is not None else None
    return {
        "job": job_row(job, pods, runtime_nodes),
        "conditions": conditions(job),
        "replicas": replica_rows(job, pods, used),
        "usageNote": usage_note,
        "gantt": gantt(job, pods, gone),
        "events": event_rows(jobs.about(job, [*pods, *gone], events)),
        "yaml": to_yaml(job),
        "runtime": runtime_view(job, runtime),
        "curves": curves.series(points) if points else None,
        "curvesNote": curves_note,
    }


def conditions(job: Mapping[str, Any]) -> list[Json]:
    """The job's conditions in the order they last changed: the timeline."""
    found = [
        {
            "type": c.get("type"),
            "status": c.get("status"),
            "reason": c.get("reason") or "",
            "message": c.get("message") or "",
            "time": c.get("lastTransitionTime") or c.get("lastUpdateTime"),
        }
        for c in jobstate.conditions(job)
    ]
    return sorted(found, key=lambda c: str(c["time"] or ""))


def replica_rows(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    used: Mapping[tuple[str, str], amounts.Amounts],
) -> list[Json]:
    rows = []
    for replica in replicas.of_job(job, pods):
        pod = replica.pod
        ended = replicas.termination(pod)
        why = replicas.why_waiting(pod) if pod is not None else None
        running = pod is not None and replicas.phase(pod) == "Running"
        measured = used.get((jobs.namespace_of(pod), jobs.name_of(pod))) if running else None
        rows.append(
            {
                "id": replica.id,
                "type": replica.rtype,
                "pod": replica.pod_name,
                "phase": replicas.phase(pod),
                "waiting": str(why) if why is not None else "",
                "node": replicas.node(pod),
                "restarts": replicas.restarts(pod) if pod is not None else None,
                "exit": str(ended) if ended is not None else None,
                "exitCode": ended.exit_code if ended is not None else None,
                "created": ((pod or {}).get("metadata") or {}).get("creationTimestamp"),
                "resources": resources(pod, measured) if pod is not None else None,
            }
        )
    return rows


def resources(pod: Mapping[str, Any], used: amounts.Amounts | None) -> Json:
    """CPU, memory and GPUs of a pod: used (None: not measured), requested, and the limit
    (None: some container has none, so the pod has none), as text and as numbers."""
    asked = amounts.pod_requests(pod)
    limits = pod_limits(pod)
    formats = {"cpu": amounts.cpu, "memory": amounts.memory, "gpu": amounts.gpu}
    found = {}
    for name, text in formats.items():
        using = getattr(used, name) if used is not None and name != "gpu" else None
        found[name] = {
            "used": _amount(using, text),
            "request": _amount(getattr(asked, name), text),
            "limit": _amount(limits.get(name), text),
        }
    return found


def pod_limits(pod: Mapping[str, Any]) -> dict[str, Fraction | None]:
    """The pod's limit of each resource: the sum over its containers when every one sets it."""
    containers = [
        c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, Mapping)
    ]
    found: dict[str, Fraction | None] = {}
    for name in ("cpu", "memory", "gpu"):
        total: Fraction | None = Fraction(0)
        for container in containers:
            limits = (container.get("resources") or {}).get("limits") or {}
            has = any("gpu" in k for k in limits) if name == "gpu" else name in limits
            if not has or total is None:
                total = None
                continue
            total += getattr(amounts.resources_requests({"limits": limits}), name)
        found[name] = total if containers else None
    return found


def gantt(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    gone: Sequence[Mapping[str, Any]],
) -> list[Json]:
    """A bar per pod (deleted ones too, as the dashboard saw them go), in replica order:
    created, scheduled, the current container's start and end, the run before the last
    restart, and how it ended."""
    kind = jobkinds.of(job)
    bars = []
    for pod in [*gone, *pods]:
        replica = replicas.of_pod(pod, kind)
        container = replicas.default_container(pod, kind)
        status = _container_status(pod, container)
        state = status.get("state") or {}
        last = (status.get("lastState") or {}).get("terminated") or {}
        now_state = state.get("running") or state.get("terminated") or {}
        ended = state.get("terminated") or {}
        meta = pod.get("metadata") or {}
        bars.append(
            {
                "replica": replica.id,
                "pod": jobs.name_of(pod),
                "order": list(replicas.sort_key(replica, kind)),
                "created": meta.get("creationTimestamp"),
                "scheduled": _scheduled(pod),
                "started": now_state.get("startedAt"),
                "ended": ended.get("finishedAt"),
                "deleted": meta.get("deletionTimestamp"),
                "phase": replicas.phase(pod),
                "exitCode": ended.get("exitCode"),
                "restarts": int(status.get("restartCount") or 0),
                "previous": {
                    "started": last.get("startedAt"),
                    "ended": last.get("finishedAt"),
                    "exitCode": last.get("exitCode"),
                }
                if last
                else None,
            }
        )
    bars.sort(key=lambda b: (b["order"], str(b["created"] or "")))
    return bars


def event_rows(events: Sequence[Mapping[str, Any]]) -> list[Json]:
    rows = []
    for event in events:
        involved = event.get("involvedObject") or {}
        rows.append(
            {
                "time": jobs.event_time(event),
                "type": event.get("type") or "",
                "reason": event.get("reason") or "",
                "object": f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
                "message": str(event.get("message") or ""),
                "count": event.get("count") if isinstance(event.get("count"), int) else 1,
            }
        )
    return rows


def runtime_view(job: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> Json | None:
    """A TrainJob's runtime: its reference, and the object when the dashboard can see it."""
    where = jobs.runtime_ref(job)
    if where is None:
        return None
    resource, namespace, name = where
    return {
        "kind": resource.kind or ("TrainingRuntime" if namespace else "ClusterTrainingRuntime"),
        "name": name,
        "namespace": namespace,
        "nodes": jobs.nodes_of_runtime(runtime) if runtime is not None else None,
        "yaml": to_yaml(runtime) if runtime is not None else None,
    }


def node_rows(
    nodes: Sequence[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    used: Mapping[str, amounts.Amounts],
) -> list[Json]:
    """``kubetrain top node`` as data: per node, requests of its live pods against what it
    offers, and what it uses; plus the numbers the page draws its bars with."""
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        bound = replicas.node(pod)
        if bound:
            by_node.setdefault(bound, []).append(pod)
    rows = []
    for node in nodes:
        name = jobs.name_of(node)
        mine = by_node.get(name, [])
        row = top.node_row(node, mine, used.get(name))
        live = [p for p in mine if replicas.phase(p) in top.LIVE_PHASES]
        asked = sum((amounts.pod_requests(p) for p in live), amounts.Amounts())
        offered = amounts.node_allocatable(node)
        measured = used.get(name)
        row["bars"] = {
            resource: {
                "request": float(getattr(asked, resource)),
                "allocatable": float(getattr(offered, resource)),
                "used": float(getattr(measured, resource))
                if measured is not None and resource != "gpu"
                else None,
            }
            for resource in ("cpu", "memory", "gpu")
        }
        row["jobs"] = sorted(
            {
                f"{jobs.namespace_of(p)}/{owner[0]}/{owner[2]}"
                for p in live
                if (owner := hub.job_of_pod(p)) is not None
            }
        )
        rows.append(row)
    return rows


def to_yaml(obj: Mapping[str, Any]) -> str:
    """The object as ``kubectl get -o yaml`` shows it, less ``managedFields``."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != MANAGED_FIELDS}
    return yaml.safe_dump({**obj, "metadata": meta}, sort_keys=False, default_flow_style=False)


def _container_status(pod: Mapping[str, Any], container: str | None) -> Mapping[str, Any]:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if isinstance(status, Mapping) and status.get("name") == container:
            return status
    return {}


def _scheduled(pod: Mapping[str, Any]) -> str | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "True"
        ):
            return condition.get("lastTransitionTime")
    return None


def _amount(value: Fraction | None, text: Any) -> Json | None:
    if value is None:
        return None
    return {"text": text(value), "value": float(value)}


def _iso(when: datetime | None) -> str | None:
    return timefmt.seconds(when) if when is not None else None


def _iso_seconds(seconds: float) -> str:
    return _iso(datetime.fromtimestamp(seconds, timezone.utc)) or ""
