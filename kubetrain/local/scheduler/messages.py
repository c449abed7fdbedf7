"""The scheduler's reasons and messages: kube-scheduler's and the gang schedulers' word for
word (users and tools match on them), then kubetrain's own for what kube-scheduler does not
do (gangs, backfill), written in the same style.

Owns: these strings. Must not: decide anything.
"""

from __future__ import annotations

from typing import Final

# --- kube-scheduler: filter reasons (pkg/scheduler/framework/plugins/*) -------------------------
NODE_UNSCHEDULABLE: Final = "node(s) were unschedulable"
NODE_AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
NODE_PORTS: Final = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS: Final = "Too many pods"


def insufficient(resource: str) -> str:
    return f"Insufficient {resource}"


def untolerated_taint(key: str, value: str) -> str:
    return f"node(s) had untolerated taint {{{key}: {value}}}"


# --- kube-scheduler: the aggregated FitError, and what it writes --------------------------------
NO_NODE_AVAILABLE: Final = "0/{count} nodes are available:"
NO_NODES: Final = "no nodes available to schedule pods"
CONDITION_UNSCHEDULABLE: Final = "Unschedulable"  # PodScheduled=False reason
EVENT_FAILED: Final = "FailedScheduling"
EVENT_SCHEDULED: Final = "Scheduled"
ACTION_SCHEDULING: Final = "Scheduling"
ACTION_BINDING: Final = "Binding"


def scheduled(namespace: str, name: str, node: str) -> str:
    return f"Successfully assigned {namespace}/{name} to {node}"


# --- PodGroup phases and conditions -------------------------------------------------------------
# scheduler-plugins coscheduling (apis/scheduling/v1alpha1/types.go)
PENDING: Final = "Pending"
SCHEDULING: Final = "Scheduling"
RUNNING: Final = "Running"
FINISHED: Final = "Finished"
FAILED: Final = "Failed"
# Volcano (apis/pkg/apis/scheduling/v1beta1/types.go)
INQUEUE: Final = "Inqueue"
COMPLETED: Final = "Completed"
CONDITION_TYPE_UNSCHEDULABLE: Final = "Unschedulable"
CONDITION_TYPE_SCHEDULED: Final = "Scheduled"
NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"
NOT_ENOUGH_TASKS: Final = "NotEnoughTasks"
GANG_READY: Final = "tasks in gang are ready to be scheduled"
EVENT_GANG_UNSCHEDULABLE: Final = "Unschedulable"

# --- kubetrain's own ----------------------------------------------------------------------------


def gang_waiting(group: str, placed: int, need: int) -> str:
    return f"pod group {group}: {placed}/{need} pods can be placed; waiting for the whole gang."


def gang_incomplete(group: str, min_member: int) -> str:
    return (
        f"pod group {group}: fewer pods than minMember ({min_member}) exist; waiting for the rest."
    )


def group_not_found(group: str) -> str:
    return f"pod group {group} not found; waiting for it."


def group_kind_not_served(group: str, api_version: str) -> str:
    return f"pod group {group}: PodGroup {api_version} is not served; waiting for it."


def min_resources_short(group: str, needed: str) -> str:
    return (
        f"pod group {group}: minResources ({needed}) exceed what the nodes have free; "
        "waiting for the whole gang."
    )


def never_fits_min_resources(group: str, needed: str) -> str:
    return f"pod group {group}: minResources ({needed}) exceed what the nodes have."


def exceeded_quota(unit: str, quota: str, requested: str, used: str, limited: str) -> str:
    return (
        f"{unit}: exceeded quota: {quota}, requested: {requested}, used: {used}, limited: {limited}"
    )


def backfill_denied(unit: str, ahead: str) -> str:
    return (
        f"{unit} fits now, but starting it could delay {ahead}, which is ahead of it in the "
        "queue and has the resources reserved; waiting."
    )


def fifo_blocked(unit: str, head: str) -> str:
    return f"{unit} waits behind {head}, which is first in the queue."


def schedule_timeout(seconds: int) -> str:
    return f"scheduleTimeoutSeconds ({seconds}s) passed; still trying."


# --- queues (Volcano's words first where it has them) -------------------------------------------
QUEUE_QUOTA_INSUFFICIENT: Final = "queue resource quota insufficient"  # Volcano's proportion
QUEUE_NOT_FOUND: Final = "QueueNotFound"  # PodGroup Unschedulable reasons of kubetrain's own
QUEUE_CLOSED: Final = "QueueClosed"


def queue_not_found(unit: str, queue: str) -> str:
    return f"{unit}: queue {queue} not found; waiting for it to be created."


def queue_closed(unit: str, queue: str, state: str) -> str:
    return f"{unit}: queue {queue} is {state} and admits nothing new; waiting for it to open."


def queue_capability(
    unit: str, queue: str, over: list[str], capability: str, allocated: str, requested: str
) -> str:
    names = ", ".join(over)
    return (
        f"{QUEUE_QUOTA_INSUFFICIENT}: insufficient {names}: {unit}: queue {queue} has "
        f"capability {capability}, its running pods hold {allocated}, and this asks for "
        f"{requested}; waiting."
    )


def behind_queue(unit: str, queue: str, share: str, ahead: str) -> str:
    return f"{unit} waits behind {ahead}: queue {queue} is at {share} of its fair share."


# --- preemption (kube-scheduler's words for pods, word for word) --------------------------------
DISRUPTION_TARGET: Final = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
EVENT_PREEMPTED: Final = "Preempted"
ACTION_PREEMPTING: Final = "Preempting"
EVENT_GANG_PREEMPTED: Final = "Preempted"  # on a victim's PodGroup (kubetrain's own)
EVENT_GANG_PREEMPTING: Final = "Preempting"  # on the preemptor's PodGroup (kubetrain's own)


def preempting_condition(scheduler_name: str) -> str:
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"


def preempted_by(preemptor_uid: str, node: str) -> str:
    return f"Preempted by pod {preemptor_uid} on node {node}"


def preempted(victim: str, preemptor: str, why: str) -> str:
    return f"{victim}: evicted, every pod of it, to make room for {preemptor}: {why}."


def preempting(preemptor: str, victims: str) -> str:
    """``victims``: each victim's label with why it may be taken, in brackets."""
    return f"{preemptor}: evicting {victims} to make room for it; waiting for them to end."


def higher_priority(priority: int, victim_priority: int, queue: str) -> str:
    return f"priority {priority} over {victim_priority} in queue {queue}"


def reclaimed(queue: str, victim_queue: str, victim_share: str, share: str) -> str:
    return (
        f"queue {queue} (at {share} of its fair share) reclaims from queue {victim_queue} "
        f"(at {victim_share}), which lent it"
    )


def waiting_for_preempted(unit: str, count: int) -> str:
    return f"{unit} fits once {count} pods being evicted have ended; waiting for them."
