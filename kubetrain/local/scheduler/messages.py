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
