"""The errors the SDK raises on purpose.

Each is a :class:`~kubetrain.errors.KubetrainError` and also the builtin exception the Kubeflow
SDKs raise in the same situation, so code written against ``kubeflow.trainer`` or
``kubeflow.training`` that catches ``ValueError``, ``RuntimeError`` or ``TimeoutError`` keeps
working::

    KubetrainError
    └── SdkError
        ├── InvalidTrainer   (ValueError)    a trainer, runtime or argument cannot be submitted
        ├── NotFoundError    (ValueError)    no such job or runtime
        ├── JobFailedError   (RuntimeError)  a job (or one of its steps) failed while waited on
        └── WaitTimeout      (TimeoutError)  a wait ran out of time

API failures other than a missing object come through as :mod:`kubetrain.kube.errors`.

Must not: hold logic beyond carrying the facts a caller may want (the failing step, its exit
code, its last log lines).
"""

from __future__ import annotations

from kubetrain.errors import KubetrainError


class SdkError(KubetrainError):
    """A problem the SDK detected and can describe."""


class InvalidTrainer(SdkError, ValueError):
    """What was asked for cannot be submitted; the message says which field and why."""


class NotFoundError(SdkError, ValueError):
    """The job or runtime named does not exist where the client looks."""


class JobFailedError(SdkError, RuntimeError):
    """A job failed (or one of its steps exited non-zero) while a caller waited for it."""

    def __init__(
        self,
        message: str,
        *,
        job: object = None,
        step: str | None = None,
        exit_code: int | None = None,
        logs: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.job = job
        self.step = step
        self.exit_code = exit_code
        self.logs = logs


class WaitTimeout(SdkError, TimeoutError):
    """A job did not reach the awaited state in time."""
