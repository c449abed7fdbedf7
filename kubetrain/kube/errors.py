"""Errors from a Kubernetes API server, as kubetrain's own types.

Owns: choosing the error class from the HTTP status (and the Status ``reason`` where one status
code means two things), and keeping the server's ``Status`` body for callers that need its
``details``. Must not: log, retry, or keep a response body that is not a ``Status`` (other text
is clipped, so a misdirected request cannot put a page of HTML or a secret into a log line).

The tree::

    KubetrainError
    ├── ApiError              any failed API call; .code, .reason, .message, .status
    │   ├── BadRequest        400  malformed request, bad selector or patch
    │   ├── Unauthorized      401  no or bad credentials
    │   ├── Forbidden         403  authenticated but not allowed
    │   ├── NotFound          404  the object or the resource type does not exist
    │   ├── AlreadyExists     409  reason AlreadyExists: a create found the name taken
    │   ├── Conflict          409  any other 409: a stale resourceVersion or a failed precondition
    │   ├── Gone              410  the resourceVersion asked for is too old (re-list)
    │   ├── Invalid           422  the object failed validation; .causes lists the fields
    │   ├── TooManyRequests   429  throttled; .retry_after says when to come back
    │   ├── ServerError       5xx  the server failed (500, 503, 504, ...)
    │   └── Unavailable       no HTTP answer at all: refused, reset, TLS failure, timed out
    └── ConfigError           no usable kubeconfig or in-cluster configuration

``AlreadyExists`` and ``Conflict`` are siblings on purpose: a create that finds its object
(house rule 5: "409 on create = exists") and an update that lost a race call for different
handling, and a caller catching one must not silently catch the other.
"""

from __future__ import annotations

import json
from typing import Any

from kubetrain.errors import KubetrainError

MAX_TEXT = 200  # characters kept from a body that is not a Status


class ApiError(KubetrainError):
    """A call to the API server failed.

    ``status`` is the server's ``Status`` object when it sent one (else a minimal one built
    here), so ``details`` (name, kind, causes, retryAfterSeconds) stay available.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int = 0,
        reason: str = "",
        status: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.status: dict[str, Any] = status if status is not None else {}

    @property
    def details(self) -> dict[str, Any]:
        details = self.status.get("details")
        return details if isinstance(details, dict) else {}

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked the client to wait before retrying, if it said."""
        seconds = self.details.get("retryAfterSeconds")
        return float(seconds) if isinstance(seconds, int | float) else None

    def __str__(self) -> str:
        if self.code:
            return f"{self.code} {self.reason or 'Error'}: {self.message}"
        return self.message


class BadRequest(ApiError):
    """400: the server could not make sense of the request."""


class Unauthorized(ApiError):
    """401: the credentials are missing, wrong or expired."""


class Forbidden(ApiError):
    """403: the caller may not do this (RBAC, or a namespace being terminated)."""


class NotFound(ApiError):
    """404: no such object, or no such resource type."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: a create found an object of that name."""


class Conflict(ApiError):
    """409: the object changed since it was read (stale resourceVersion, failed precondition)."""


class Gone(ApiError):
    """410: the resourceVersion is older than the server keeps; list again."""


class Invalid(ApiError):
    """422: the object was rejected by validation or admission."""

    @property
    def causes(self) -> list[dict[str, Any]]:
        """``details.causes``: each with ``field``, ``reason`` and ``message``."""
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []


class TooManyRequests(ApiError):
    """429: the server is throttling this client."""


class ServerError(ApiError):
    """5xx: the server failed; usually worth retrying later."""


class Unavailable(ApiError):
    """No HTTP answer: the server could not be reached or did not answer in time."""


class ConfigError(KubetrainError):
    """The kubeconfig (or in-cluster service account) cannot be read or names nothing usable."""


_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_class(code: int, reason: str = "") -> type[ApiError]:
    """The class for an HTTP status code (and, for 409, the Status reason)."""
    if code == 409 and reason == "AlreadyExists":
        return AlreadyExists
    if code >= 500:
        return ServerError
    return _BY_CODE.get(code, ApiError)


def from_status(status: dict[str, Any], code: int | None = None) -> ApiError:
    """The error a ``Status`` body describes (a failed response, or a watch ERROR event).

    ``code`` is the HTTP status; a watch ERROR event has none, so the Status's own ``code``
    decides there.
    """
    if code is None or code == 0:
        raw = status.get("code")
        code = raw if isinstance(raw, int) else 0
    reason = status.get("reason") if isinstance(status.get("reason"), str) else ""
    message = status.get("message") if isinstance(status.get("message"), str) else ""
    return error_class(code, reason)(
        message or reason or f"HTTP {code}", code=code, reason=reason, status=status
    )


def from_response(code: int, body: bytes, http_reason: str = "") -> ApiError:
    """The error for a failed HTTP response: from its Status body when it is one, else from the
    status code alone with the body's text clipped."""
    try:
        doc = json.loads(body) if body else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        return from_status(doc, code)
    text = body.decode("utf-8", errors="replace").strip() if body else ""
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + "..."
    reason = http_reason or ""
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    return error_class(code, "")(
        text or reason or f"HTTP {code}", code=code, reason=reason, status=status
    )
