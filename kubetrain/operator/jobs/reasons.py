"""Upstream's job-level event reasons and messages, word for word, in one place.

The Training Operator v1 (``pkg/controller.v1/common``, ``pkg/util/status.go``,
``pkg/controller.v1/control``) words these; kubetrain copies them so that ``kubectl describe``,
dashboards and alerts written for upstream keep working. Condition messages that differ per
framework (Running, Succeeded, the failure counts) live with the frameworks
(:class:`kubetrain.frameworks.Messages`); the ones here are the same for every kind.

Holds constants and the one helper that builds ``<Kind><Reason>``; must not hold logic.
"""

from __future__ import annotations

from typing import Final

# Condition types (JobConditionType).
CREATED: Final = "Created"
RUNNING: Final = "Running"
RESTARTING: Final = "Restarting"
SUCCEEDED: Final = "Succeeded"
SUSPENDED: Final = "Suspended"
FAILED: Final = "Failed"
# Reason suffixes that are not condition types.
RESUMED: Final = "Resumed"
FAILED_VALIDATION: Final = "FailedValidation"


def reason(kind: str, what: str) -> str:
    """Upstream's ``NewReason``: ``PyTorchJob`` + ``Running`` → ``PyTorchJobRunning``."""
    return f"{kind}{what}"


# Job conditions and events (common/job.go, each framework's create predicate).
CREATED_MESSAGE: Final = "{kind} {name} is created."
SUSPENDED_MESSAGE: Final = "{kind} {name} is suspended."
RESUMED_MESSAGE: Final = "{kind} {name} is resumed."
BACKOFF_LIMIT_MESSAGE: Final = (
    "Job {name} has failed because it has reached the specified backoff limit"
)
DEADLINE_MESSAGE: Final = (
    "Job {name} has failed because it was active longer than specified deadline"
)
# MPIJob's in-controller validation; kubetrain uses it for every kind a webhook did not stop.
FAILED_VALIDATION_MESSAGE: Final = "{kind} failed validation because {errors}"

# Pods (common/pod.go).
EXITED_WITH_CODE: Final = "ExitedWithCode"
EXITED_WITH_CODE_MESSAGE: Final = "Pod: {namespace}.{pod} exited with code {code}"
ABNORMAL_POD_MESSAGE: Final = (
    "Error pod {pod} container {container} exitCode: {code} terminated message: {message}"
)
SET_POD_TEMPLATE_RESTART_POLICY: Final = "SetPodTemplateRestartPolicy"
SET_POD_TEMPLATE_RESTART_POLICY_MESSAGE: Final = (
    "Restart policy in pod template will be overwritten by restart policy in replica spec"
)

# Pod and service control (controller.v1/control).
SUCCESSFUL_CREATE: Final = "SuccessfulCreate{kind}"  # {kind}: Pod or Service
FAILED_CREATE: Final = "FailedCreate{kind}"
SUCCESSFUL_DELETE: Final = "SuccessfulDelete{kind}"
FAILED_DELETE: Final = "FailedDelete{kind}"
CREATED_OBJECT_MESSAGE: Final = "Created {noun}: {name}"  # {noun}: pod or service
DELETED_OBJECT_MESSAGE: Final = "Deleted {noun}: {name}"
CREATE_ERROR_MESSAGE: Final = "Error creating: {error}"
DELETE_ERROR_MESSAGE: Final = "Error deleting: {error}"

# Gang scheduling (common/job.go, common/scheduling.go, control/podgroup_control.go).
JOB_TERMINATED: Final = "JobTerminated"
JOB_TERMINATED_MESSAGE: Final = "Job has been terminated. Deleting PodGroup"
SUCCESSFUL_DELETE_POD_GROUP: Final = "SuccessfulDeletePodGroup"
FAILED_DELETE_POD_GROUP: Final = "FailedDeletePodGroup"
DELETED_POD_GROUP_MESSAGE: Final = "Deleted PodGroup: {name}"
SET_POD_TEMPLATE_SCHEDULER_NAME: Final = "SetPodTemplateSchedulerName"
SET_POD_TEMPLATE_SCHEDULER_NAME_MESSAGE: Final = (
    "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten"
)

# TTL after finish. Upstream's TF, MPI and XGBoost controllers say SuccessfulDeleteJob; the
# PyTorch, Paddle and JAX ones reuse SuccessfulDeletePod for the job. kubetrain says
# SuccessfulDeleteJob for every kind.
SUCCESSFUL_DELETE_JOB: Final = "SuccessfulDeleteJob"
FAILED_DELETE_JOB: Final = "FailedDeleteJob"
DELETED_JOB_MESSAGE: Final = "Deleted job: {name}"

# Objects the job needs that someone else owns (MPIJob's ConfigMap, ServiceAccount, RBAC).
ERR_RESOURCE_EXISTS: Final = "ErrResourceExists"
RESOURCE_EXISTS_MESSAGE: Final = (
    'Resource "{name}" of MPIJobKind "{kind}" already exists and is not managed by MPIJob'
)
