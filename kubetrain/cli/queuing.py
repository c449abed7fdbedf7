"""Where jobs stand in the queues, for ``kubetrain top queue``, the QUEUE column of ``kubetrain
top job`` and the Queue and Waiting lines of ``kubetrain get``.

- Per Volcano Queue (``scheduling.volcano.sh/v1beta1``): its state, weight and capability,
  what its running pods hold, its deserved share of the nodes and how much of it it holds.
  The deserved share is computed as the local scheduler computes it (Volcano's proportion
  plugin: :func:`kubetrain.local.scheduler.queues.deserved`), from every queue's weight, its
  running pods and what waits in it, against what the nodes offer.
- A job's queue: its Volcano PodGroup's ``spec.queue``; else the Kueue LocalQueue its
  ``kueue.x-k8s.io/queue-name`` label names.
- Why a job waits: a suspended job labelled for Kueue waits for Kueue to admit it (on the
  local control plane nothing does: it stays suspended until resumed); otherwise its
  PodGroup's ``Unschedulable`` condition, else its first waiting pod's ``PodScheduled``
  message. The scheduler writes those naming what holds the job back: the queue and the
  capability it is over, the job whose reservation it would delay, the gangs it is evicting.

Owns: reading Queues and PodGroups, and these rows and lines. Must not: write anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import kube, podgroups
from kubetrain.cli import jobkinds, jobs
from kubetrain.kube import discovery, resource
from kubetrain.local.scheduler import amounts, gangs, queues, requests

QUEUES: Final = kube.Resource(
    "scheduling.volcano.sh", "v1beta1", "queues", namespaced=False, kind="Queue"
)
POD_GROUPS: Final = kube.Resource(
    podgroups.VOLCANO_GROUP, podgroups.VOLCANO_VERSION, podgroups.PLURAL, kind=podgroups.KIND
)
KUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
TERMINAL: Final = ("Succeeded", "Failed")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class Snapshot:
    """What the views need, read at once."""

    queues: Sequence[Mapping[str, Any]]
    groups: Sequence[Mapping[str, Any]]  # Volcano PodGroups, every namespace
    pods: Sequence[Mapping[str, Any]]
    nodes: Sequence[Mapping[str, Any]]
    kueue: bool = False  # Kueue's API is served


async def served(client: kube.Client) -> tuple[bool, bool]:
    """Whether Volcano's Queue and Kueue's API are served.

    The server's list of API groups answers both in one request, and Volcano's group-version
    is asked for its resources only where that group is listed: a whole discovery asks every
    group-version (a dozen requests on the local control plane), which ``kubetrain get``
    waited for to print one line.
    """
    groups = await client.request("GET", "/apis")
    versions = discovery.group_versions({}, groups or {}).api_versions
    kueue = any(v.startswith(f"{KUEUE_GROUP}/") for v in versions)
    if QUEUES.api_version not in versions:
        return False, kueue
    try:
        listed = await client.request("GET", f"/apis/{QUEUES.api_version}")
    except kube.ApiError:  # as a partial discovery leaves out a group-version that fails
        return False, kueue
    resources, _ = discovery.parse_resource_list(listed or {})
    return any(r.plural == QUEUES.plural for r in resources), kueue


async def snapshot(client: kube.Client) -> Snapshot | None:
    """Queues, Volcano PodGroups, pods and nodes; None where no Queue is served."""
    volcano, kueue = await served(client)
    if not volcano:
        return None
    listed = await asyncio.gather(
        client.list_all(QUEUES),
        client.list_all(POD_GROUPS),
        client.list_all(resource.PODS),
        client.list_all(jobs.NODES),
    )
    items = [list(found.get("items") or []) for found in listed]
    return Snapshot(*items, kueue=kueue)


async def group(client: kube.Client, job: Mapping[str, Any]) -> dict[str, Any] | None:
    """The job's Volcano PodGroup (named like the job, in its namespace), if there is one."""
    try:
        found: dict[str, Any] = await client.get(
            POD_GROUPS, podgroups.name_for(jobs.name_of(job)), namespace=jobs.namespace_of(job)
        )
    except kube.NotFound:
        return None
    return found


def _group_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return jobs.namespace_of(obj), jobs.name_of(obj)


def _queue_of_pod(pod: Mapping[str, Any], groups: Mapping[tuple[str, str], Mapping]) -> str:
    ref = gangs.group_of(pod)
    if ref is None or ref.api_version != gangs.VOLCANO:
        return queues.DEFAULT
    group = groups.get((ref.namespace, ref.name))
    return queues.queue_of(gangs.Spec.of(group).queue if group is not None else None)


def fair(snap: Snapshot) -> queues.Fair:
    """Each queue's deserved share and what it holds, as the local scheduler reckons them."""
    groups = {_group_key(g): g for g in snap.groups}
    held: dict[str, amounts.Amounts] = {}
    waiting: dict[str, amounts.Amounts] = {}
    with_pods: set[tuple[str, str]] = set()
    for pod in snap.pods:
        phase = _mapping(pod.get("status")).get("phase")
        ref = gangs.group_of(pod)
        if ref is not None:
            with_pods.add((ref.namespace, ref.name))
        if phase in TERMINAL or _mapping(pod.get("metadata")).get("deletionTimestamp"):
            continue
        name = _queue_of_pod(pod, groups)
        into = held if _mapping(pod.get("spec")).get("nodeName") else waiting
        into[name] = amounts.add(into.get(name, {}), requests.pod_requests(pod))
    for key, group in groups.items():
        spec = gangs.Spec.of(group)
        phase = _mapping(group.get("status")).get("phase")
        if key in with_pods or not spec.min_resources or phase == "Completed":
            continue
        name = queues.queue_of(spec.queue)
        waiting[name] = amounts.add(waiting.get(name, {}), spec.min_resources)
    total: amounts.Amounts = {}
    for node in snap.nodes:
        offered = amounts.parse(_mapping(node.get("status")).get("allocatable"))
        offered.pop("pods", None)
        total = amounts.add(total, offered)
    known = [queues.Queue.of(q) for q in snap.queues]
    return queues.Fair.build(known, total, held, waiting)


def _percent(value: Any) -> str:
    return f"{float(value):.0%}"


def _amounts(values: Mapping[str, Any] | None) -> str:
    shown = {n: v for n, v in (values or {}).items() if v > 0}
    return amounts.format_amounts(shown) if shown else "-"


def queue_rows(snap: Snapshot) -> list[dict[str, Any]]:
    """One row per Queue, by name, as plain values (for the table and ``-o json``)."""
    reckoned = fair(snap)
    rows = []
    for obj in sorted(snap.queues, key=jobs.name_of):
        q = queues.Queue.of(obj)
        status = _mapping(obj.get("status"))
        rows.append(
            {
                "name": q.name,
                "state": str(status.get("state") or queues.OPEN),
                "weight": q.weight,
                "reclaimable": q.reclaimable,
                "capability": _amounts(q.capability),
                "allocated": _amounts(reckoned.allocated.get(q.name)),
                "deserved": _amounts(reckoned.deserved.get(q.name)),
                "share": _percent(reckoned.share(q.name)),
                "running": int(status.get("running") or 0),
                "waiting": int(status.get("pending") or 0) + int(status.get("inqueue") or 0),
            }
        )
    return rows


QUEUE_COLUMNS: Final = (
    ("NAME", "name"),
    ("STATE", "state"),
    ("WEIGHT", "weight"),
    ("CAPABILITY", "capability"),
    ("ALLOCATED", "allocated"),
    ("DESERVED", "deserved"),
    ("SHARE", "share"),
    ("RUNNING", "running"),
    ("WAITING", "waiting"),
)
QUEUE_HELP: Final = (
    "DESERVED is each queue's fair share of the nodes, by weight, capped by its capability and "
    "by what it asks for (what one queue leaves unused goes to the others), as Volcano's "
    "proportion plugin and kubetrain's local scheduler reckon it; SHARE is how much of it the "
    "queue's running pods hold. RUNNING and WAITING count its PodGroups."
)


# --- one job ------------------------------------------------------------------------------------


def group_of_job(job: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> Mapping | None:
    """The job's Volcano PodGroup (named like the job, in its namespace), if any."""
    key = (jobs.namespace_of(job), podgroups.name_for(jobs.name_of(job)))
    return next((g for g in groups if _group_key(g) == key), None)


def kueue_queue(job: Mapping[str, Any]) -> str | None:
    labels = _mapping(_mapping(job.get("metadata")).get("labels"))
    name = labels.get(KUEUE_LABEL)
    return name if isinstance(name, str) and name else None


def queue_of_job(job: Mapping[str, Any], group: Mapping[str, Any] | None) -> str | None:
    """The job's Volcano queue (its PodGroup's), else its Kueue LocalQueue; None: neither."""
    if group is not None:
        return queues.queue_of(gangs.Spec.of(group).queue)
    name = kueue_queue(job)
    return f"{name} (Kueue)" if name else None


def _suspended(job: Mapping[str, Any]) -> bool:
    spec = _mapping(job.get("spec"))
    if jobkinds.of(job).v1:
        return _mapping(spec.get("runPolicy")).get("suspend") is True
    return spec.get("suspend") is True


def _unschedulable(group: Mapping[str, Any] | None) -> str | None:
    for condition in _mapping((group or {}).get("status")).get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "Unschedulable"
            and condition.get("status") == "True"
            and condition.get("message")
        ):
            return str(condition["message"])
    return None


def _pod_waiting(pods: Sequence[Mapping[str, Any]]) -> str | None:
    for pod in sorted(pods, key=jobs.name_of):
        if _mapping(pod.get("spec")).get("nodeName"):
            continue
        for condition in _mapping(pod.get("status")).get("conditions") or []:
            if (
                isinstance(condition, Mapping)
                and condition.get("type") == "PodScheduled"
                and condition.get("status") == "False"
                and condition.get("message")
            ):
                return str(condition["message"])
    return None


def waiting(
    job: Mapping[str, Any],
    group: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    *,
    kueue_served: bool = False,
) -> str | None:
    """Why the job waits, in the scheduler's words; None when nothing says it does."""
    local = kueue_queue(job)
    if local is not None and _suspended(job):
        if kueue_served:
            return f"suspended until Kueue admits it from LocalQueue {local}"
        return (
            f"suspended, for Kueue to admit it from LocalQueue {local}; no Kueue serves this "
            f"cluster, so it stays suspended until resumed (kubetrain resume {jobs.ref_of(job)})"
        )
    if group is not None and _mapping(group.get("status")).get("phase") in ("Running", "Completed"):
        return _pod_waiting(pods)
    return _unschedulable(group) or _pod_waiting(pods)


def queue_line(
    job: Mapping[str, Any], group: Mapping[str, Any] | None, snap: Snapshot | None
) -> str | None:
    """``team-a (Open, weight 3; holds cpu=8 of its deserved cpu=10: 80%)`` for a job in a
    Volcano queue; the Kueue LocalQueue for a job labelled for one; None otherwise."""
    name = queue_of_job(job, group)
    if name is None or group is None or snap is None:
        return name
    found = next((q for q in snap.queues if jobs.name_of(q) == name), None)
    if found is None:
        return f"{name} (no such Queue)"
    row = next(r for r in queue_rows(snap) if r["name"] == name)
    return (
        f"{name} ({row['state']}, weight {row['weight']}; holds {row['allocated']} of its "
        f"deserved {row['deserved']}: {row['share']})"
    )
