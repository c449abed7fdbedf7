"""Gang scheduling of v1 jobs: the PodGroup and what pods carry to join it (reference 6.4).

Volcano (``scheduling.volcano.sh/v1beta1``) and scheduler-plugins' coscheduling
(``scheduling.x-k8s.io/v1alpha1``) each get one PodGroup per job, named like the job, with
``minMember`` (``schedulingPolicy.minAvailable``, else every replica) and ``minResources``
(``schedulingPolicy.minResources``, else the requests of the first ``minMember`` pods, taking
replica types by PriorityClass value, highest first). Under Volcano, pods are created only once
the PodGroup has a phase other than Pending, as upstream does.

Pure: PriorityClass values come in as a mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from kubetrain import api, kube, podgroups
from kubetrain.operator.jobs import ports, reasons
from kubetrain.operator.jobs import settings as settings_

VOLCANO_POD_GROUPS: Final = kube.Resource(
    podgroups.VOLCANO_GROUP, podgroups.VOLCANO_VERSION, podgroups.PLURAL, kind=podgroups.KIND
)
COSCHEDULING_POD_GROUPS: Final = kube.Resource(
    podgroups.COSCHEDULING_GROUP,
    podgroups.COSCHEDULING_VERSION,
    podgroups.PLURAL,
    kind=podgroups.KIND,
)
VOLCANO_TASK_ANNOTATION: Final = "volcano.sh/task-spec"
DEFAULT_QUEUE: Final = "default"


def resource(settings: settings_.Settings) -> kube.Resource | None:
    """The PodGroup resource of the configured gang scheduler; None without one."""
    if settings.gang_scheduler == settings_.VOLCANO:
        return VOLCANO_POD_GROUPS
    if settings.gang_scheduler == settings_.SCHEDULER_PLUGINS:
        return COSCHEDULING_POD_GROUPS
    return None


def _policy(job: api.JobKind) -> api.SchedulingPolicy:
    return job.run_policy_or_empty.scheduling_policy or api.SchedulingPolicy()


def min_member(job: api.JobKind) -> int:
    policy = _policy(job)
    if policy.min_available is not None:
        return policy.min_available
    return sum(spec.replicas or 0 for spec in (job.replica_specs() or {}).values() if spec)


def min_resources(job: api.JobKind, priorities: Mapping[str, int]) -> dict[str, Any]:
    """``schedulingPolicy.minResources``, else upstream's ``CalcPGMinResources``.

    Replica types are taken by their template's PriorityClass value, highest first (ties in the
    job's order), and each pod adds its containers' requests, or their limits where a container
    has no requests at all.
    """
    given = _policy(job).min_resources
    if given is not None:
        return dict(given)
    specs = [(rt, s) for rt, s in (job.replica_specs() or {}).items() if s is not None]
    ordered = sorted(
        specs,
        key=lambda item: (
            -priorities.get(
                str(ports.template_spec(job, item[0]).get("priorityClassName") or ""), 0
            )
        ),
    )
    wanted = min_member(job)
    totals: dict[str, Fraction] = {}
    counted = 0
    for rtype, spec in ordered:
        for _ in range(spec.replicas or 0):
            if counted >= wanted:
                break
            counted += 1
            for container in ports.template_spec(job, rtype).get("containers") or []:
                if isinstance(container, dict):
                    _add(totals, container.get("resources") or {})
    return {name: format_quantity(amount) for name, amount in totals.items()}


def _add(totals: dict[str, Fraction], resources: Mapping[str, Any]) -> None:
    amounts = resources.get("requests")
    if not amounts:
        amounts = resources.get("limits") or {}
    for name, value in amounts.items():
        try:
            totals[name] = totals.get(name, Fraction(0)) + api.parse_quantity(value)
        except ValueError:
            continue  # admission reports malformed quantities; nothing to add here


def format_quantity(amount: Fraction) -> str:
    """A quantity string for an exact amount: whole numbers plain, else in milli-units."""
    if amount.denominator == 1:
        return str(amount.numerator)
    milli = amount * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return f"{-(-milli.numerator // milli.denominator)}m"  # round up, as requests are


def pod_group(
    job: api.JobKind,
    settings: settings_.Settings,
    owner: dict[str, Any],
    priorities: Mapping[str, int],
    existing: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The PodGroup a job should have. An existing Volcano PodGroup keeps its queue."""
    group = resource(settings)
    if group is None:
        raise ValueError("no gang scheduler is configured")
    policy = _policy(job)
    spec: dict[str, Any] = {"minMember": min_member(job)}
    resources_ = min_resources(job, priorities)
    if settings.gang_scheduler == settings_.VOLCANO:
        queue = policy.queue or DEFAULT_QUEUE
        old_queue = ((existing or {}).get("spec") or {}).get("queue")
        if old_queue:
            queue = old_queue
        spec["queue"] = queue
        if policy.priority_class:
            spec["priorityClassName"] = policy.priority_class
    if resources_:
        spec["minResources"] = resources_
    if (
        settings.gang_scheduler == settings_.SCHEDULER_PLUGINS
        and policy.schedule_timeout_seconds is not None
    ):
        spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds
    metadata: dict[str, Any] = {
        "name": podgroups.name_for(job.name),
        "namespace": job.metadata.namespace,
        "ownerReferences": [owner],
    }
    if job.metadata.annotations:
        metadata["annotations"] = dict(job.metadata.annotations)
    return {
        "apiVersion": group.api_version,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def spec_patch(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """A merge patch bringing an existing PodGroup's spec to the desired one; None if equal."""
    old = existing.get("spec") or {}
    new = desired.get("spec") or {}
    changed = {key: value for key, value in new.items() if old.get(key) != value}
    return {"spec": changed} if changed else None


def delays_pods(settings: settings_.Settings, existing: Mapping[str, Any] | None) -> bool:
    """Volcano: no pods until the PodGroup has a phase, and it is not Pending."""
    if settings.gang_scheduler != settings_.VOLCANO:
        return False
    status = (existing or {}).get("status") or {}
    phase = status.get("phase") if isinstance(status, dict) else None
    return not phase or phase == "Pending"


def decorate(
    pod: dict[str, Any], job: api.JobKind, rtype: str, settings: settings_.Settings
) -> list[tuple[str, str]]:
    """Put a pod into its job's gang; returns Warning events (reason, message) to emit."""
    events: list[tuple[str, str]] = []
    spec = pod.setdefault("spec", {})
    metadata = pod.setdefault("metadata", {})
    scheduler = settings.pod_scheduler_name
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler
    elif spec["schedulerName"] != scheduler:
        events.append(
            (
                reasons.SET_POD_TEMPLATE_SCHEDULER_NAME,
                reasons.SET_POD_TEMPLATE_SCHEDULER_NAME_MESSAGE,
            )
        )
    if settings.gang_scheduler == settings_.VOLCANO:
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            podgroups.VOLCANO_ANNOTATION: podgroups.name_for(job.name),
            VOLCANO_TASK_ANNOTATION: rtype.lower(),
        }
    else:
        group = podgroups.name_for(job.name)
        metadata["labels"] = {**(metadata.get("labels") or {}), podgroups.COSCHEDULING_LABEL: group}
    return events
