"""Condition types, reasons, messages and event reasons of the TrainJob controller, in one place.

Upstream's words are copied verbatim (Kubeflow Trainer ``pkg/constants``, the TrainJob API's
reasons, JobSet's ``pkg/constants``, Kubernetes Job's failure reason), because users, dashboards
and SDKs match on them. kubetrain's additions (the ``Running`` condition) are marked.

Must not: hold logic. Format strings take their values by name.
"""

from __future__ import annotations

from typing import Final

# --- TrainJob condition types ------------------------------------------------------------------
SUSPENDED: Final = "Suspended"
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
# kubetrain: upstream has no Running condition (kubeflow/trainer#2713); its lastTransitionTime
# is when training started (all trainer pods running).
RUNNING: Final = "Running"

# --- TrainJob reasons and messages (pkg/constants, trainjob_types.go) ---------------------------
SUSPENDED_REASON: Final = "Suspended"
SUSPENDED_MESSAGE: Final = "TrainJob is suspended"
RESUMED_REASON: Final = "Resumed"
RESUMED_MESSAGE: Final = "TrainJob is resumed"
RUNTIME_NOT_SUPPORTED_REASON: Final = "TrainingRuntimeNotSupported"
RUNTIME_NOT_SUPPORTED_MESSAGE: Final = "unsupported runtime: {gk}"
DEADLINE_EXCEEDED_REASON: Final = "DeadlineExceeded"
DEADLINE_EXCEEDED_MESSAGE: Final = "TrainJob exceeded its active deadline"

# kubetrain: a TrainJob that fails admission (created while no webhook ran, or edited since) or
# that its plugins refuse gets Failed with this reason, the v1 jobs' <Kind>FailedValidation;
# unlike upstream's Failed, it is lifted once the spec is valid (see .status).
FAILED_VALIDATION_REASON: Final = "TrainJobFailedValidation"
FAILED_VALIDATION_MESSAGE: Final = "TrainJob failed validation because {errors}"
CONDITION_MESSAGE_LIMIT: Final = 32768  # metav1.Condition's message, at most

# kubetrain's Running condition.
RUNNING_REASON: Final = "TrainingStarted"
RUNNING_MESSAGE: Final = "all trainer pods are running"
NOT_STARTED_REASON: Final = "Pending"
NOT_STARTED_MESSAGE: Final = "waiting for all trainer pods to run"
RESTARTING_REASON: Final = "Restarting"
RESTARTING_MESSAGE: Final = "restarting all pods (restart attempt {attempt})"
STOPPED_SUSPENDED_REASON: Final = "Suspended"
STOPPED_COMPLETE_REASON: Final = "Completed"
STOPPED_FAILED_REASON: Final = "Failed"
STOPPED_MESSAGE: Final = "training is no longer running"

# --- JobSet's completion and failure (sigs.k8s.io/jobset pkg/constants) ------------------------
ALL_JOBS_COMPLETED_REASON: Final = "AllJobsCompleted"
ALL_JOBS_COMPLETED_MESSAGE: Final = "jobset completed successfully"
FAILED_JOBS_REASON: Final = "FailedJobs"
FAILED_JOBS_MESSAGE: Final = "jobset failed due to one or more job failures"
REACHED_MAX_RESTARTS_REASON: Final = "ReachedMaxRestarts"
REACHED_MAX_RESTARTS_MESSAGE: Final = "jobset failed due to reaching max number of restarts"
FAIL_JOBSET_ACTION_REASON: Final = "FailJobSetFailurePolicyAction"
FAIL_JOBSET_ACTION_MESSAGE: Final = "applying FailJobSet failure policy action"
RESTART_JOBSET_ACTION_REASON: Final = "RestartJobSetFailurePolicyAction"
RESTART_JOBSET_ACTION_MESSAGE: Final = "applying RestartJobSet failure policy action"
RESTART_IGNORE_MAX_ACTION_REASON: Final = "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
RESTART_IGNORE_MAX_ACTION_MESSAGE: Final = (
    "applying RestartJobSetAndIgnoreMaxRestarts failure policy action"
)
FIRST_FAILED_JOB: Final = "{message} (first failed job: {job})"

# Kubernetes Job: why a Job of a replicated job failed.
BACKOFF_LIMIT_EXCEEDED_REASON: Final = "BackoffLimitExceeded"
BACKOFF_LIMIT_EXCEEDED_MESSAGE: Final = "Job has reached the specified backoff limit"

# --- events ------------------------------------------------------------------------------------
RESOURCES_CREATION_FAILED_REASON: Final = "TrainJobResourcesCreationFailed"
RESOURCES_CREATION_FAILED_MESSAGE: Final = "TrainJob resources reconciliation failed: {error}"
EVENT_ERROR_LIMIT: Final = 950  # upstream cuts the error at 950 characters and adds " ..."
CREATED_POD_REASON: Final = "SuccessfulCreatePod"
DELETED_POD_REASON: Final = "SuccessfulDeletePod"
CREATED_POD_MESSAGE: Final = "Created pod: {name}"
DELETED_POD_MESSAGE: Final = "Deleted pod: {name}"
