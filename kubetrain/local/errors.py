"""API errors and the ``Status`` bodies that carry them, shaped and worded as kube-apiserver's,
for both servers of the local control plane: the API server and the node's kubelet endpoint
(whose errors the API server's node proxy passes on).

Clients branch on ``reason`` and ``code`` and people search for the messages, so both are
copied from ``k8s.io/apimachinery/pkg/api/errors``. One exception type, :class:`ApiError`,
holds a finished Status; the constructors below build it::

    KubetrainError
    └── ApiError          a Status with code, reason, message and details
                          (not_found, already_exists, conflict, invalid, bad_request, gone, ...)

What it must not do: decide *whether* something is an error; the registry and server do that.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubetrain import gofmt
from kubetrain.errors import KubetrainError
from kubetrain.kube import status as kube_status

CAUSE_TYPES = kube_status.CAUSE_TYPES


class ApiError(KubetrainError):
    """An error the API answers with: ``status`` is the finished Status body."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details) if details else None

    @property
    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details:
            body["details"] = self.details
        body["code"] = self.code
        return body

    def body(self) -> bytes:
        return json.dumps(self.status, separators=(",", ":")).encode()


def success(name: str, group: str, resource: str, uid: str | None) -> dict[str, Any]:
    """The Status a delete returns for resources that do not return the deleted object."""
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
    if uid:
        details["uid"] = uid
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


qualified = kube_status.qualified
cause = kube_status.cause
cause_text = kube_status.cause_text
_details = kube_status.details


def not_found(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        _details(name, group, resource),
    )


def already_exists(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(group: str, resource: str, name: str, why: str | None = None) -> ApiError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        _details(name, group, resource),
    )


def field_error(
    kind: str, field: str, detail: str = "", value: Any = None, show_value: bool = True
) -> dict[str, str]:
    """A StatusCause for one field error, worded as Kubernetes' ``field.Error``."""
    parts = [kind]
    if show_value and kind in ("Invalid value", "Unsupported value", "Duplicate value"):
        parts.append(render_value(value))
    if detail:
        parts.append(detail)
    return cause(kind, field, ": ".join(parts))


def render_value(value: Any) -> str:
    """A bad value printed as kube's built-in checks print it: a scalar as ``field.Error``
    does (:func:`kubetrain.gofmt.go_value`), a list or an object as its JSON."""
    if isinstance(value, list | dict):
        return gofmt.go_json(value)
    return gofmt.go_value(value)


def invalid(group: str, kind: str, name: str, causes: Sequence[Mapping[str, str]]) -> ApiError:
    """422 with every cause, worded as ``NewInvalid`` (:func:`kubetrain.kube.status.invalid`,
    which the operator's webhook answers with too)."""
    body = kube_status.invalid(group, kind, name, causes)
    return ApiError(422, "Invalid", body["message"], body["details"])


def bad_request(message: str, causes: Iterable[Mapping[str, str]] = ()) -> ApiError:
    causes = [dict(c) for c in causes]
    return ApiError(400, "BadRequest", message, {"causes": causes} if causes else None)


def method_not_allowed(group: str, resource: str, verb: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"{verb} is not supported on resources of kind {json.dumps(qualified(resource, group))}",
        _details("", group, resource),
    )


def not_acceptable(accepted: Sequence[str]) -> ApiError:
    return ApiError(
        406,
        "NotAcceptable",
        "the server was unable to respond with a content type that the client supports "
        "- accepted media types include: " + ", ".join(accepted),
    )


def gone(message: str) -> ApiError:
    """410: a resourceVersion or continue token older than the history kept (kube: Expired)."""
    return ApiError(410, "Expired", message)


def too_old(requested: int, oldest: int) -> ApiError:
    return gone(f"too old resource version: {requested} ({oldest})")


CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter."
)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(group: str, resource: str, name: str, why: str) -> ApiError:
    what = f'{qualified(resource, group)} "{name}"' if name else qualified(resource, group)
    return ApiError(
        403, "Forbidden", f"{what} is forbidden: {why}", _details(name, group, resource)
    )


def unsupported_media_type(content_type: str, accepted: Sequence[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format ("{content_type}") '
        "- accepted media types include: " + ", ".join(accepted),
    )


def too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def object_too_large(group: str, resource: str, name: str, size: int, limit: int) -> ApiError:
    """413 for an object over the storage limit. kube-apiserver passes etcd's "request is too
    large" on as a 500 (kubernetes#112152); it is the client's request that is too large, so
    it gets kube's 413 and its wording, with the object and the sizes."""
    return ApiError(
        413,
        "RequestEntityTooLarge",
        f'Request entity too large: {qualified(resource, group)} "{name}" is {size} bytes '
        f"when stored; limit is {limit}",
        _details(name, group, resource),
    )


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def internal(message: str) -> ApiError:
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def unavailable(message: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


def timeout(message: str) -> ApiError:
    return ApiError(504, "Timeout", message)
