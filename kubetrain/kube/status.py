"""The ``Status`` body of an invalid object, worded as kube-apiserver words it
(``k8s.io/apimachinery/pkg/api/errors.NewInvalid``): code 422, reason ``Invalid``, one
``StatusCause`` per field error, and a message that kubectl and people search for.

Two servers answer with it and must say the same: the local API server, in its 422, and the
operator's admission webhook, in the ``status`` of an AdmissionResponse, which kube-apiserver
passes on to the client. So ``kubectl apply`` prints the same lines on both.

Owns: that wording. Must not: decide whether something is invalid (``kubetrain.api`` does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for a type only: the client layer is imported without the job models
    from kubetrain import api

# Kubernetes' field.ErrorType → StatusCause reason (metav1.CauseType).
CAUSE_TYPES = {
    "Required value": "FieldValueRequired",
    "Invalid value": "FieldValueInvalid",
    "Unsupported value": "FieldValueNotSupported",
    "Forbidden": "FieldValueForbidden",
    "Duplicate value": "FieldValueDuplicate",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
    "Not found": "FieldValueNotFound",
    "Invalid type": "FieldValueTypeInvalid",
    "Unknown field": "FieldValueUnknown",
    "Internal error": "InternalError",
}


def qualified(name: str, group: str) -> str:
    """``pods``, ``jobs.batch``, ``PyTorchJob.kubeflow.org``: kube's GroupResource/GroupKind."""
    return f"{name}.{group}" if group else name


def cause(kind: str, field: str, body: str) -> dict[str, str]:
    """A StatusCause: ``kind`` is the field.ErrorType wording (e.g. ``Invalid value``),
    ``body`` the error without its field path (kube's ``ErrorBody()``)."""
    return {"reason": CAUSE_TYPES.get(kind, kind), "message": body, "field": field}


def cause_text(c: Mapping[str, str]) -> str:
    field = c.get("field", "")
    return f"{field}: {c.get('message', '')}" if field else str(c.get("message", ""))


def field_error_cause(error: api.FieldError) -> dict[str, str]:
    """The StatusCause of one of kubetrain's field errors."""
    text = str(error)
    prefix = (error.path or "<root>") + ": "
    body = text[len(prefix) :] if text.startswith(prefix) else text
    return cause(error.type.value, error.path, body)


def details(name: str, group: str, kind: str, **more: Any) -> dict[str, Any]:
    """A Status's ``details``: what was refused, and any further non-empty fields."""
    found: dict[str, Any] = {}
    if name:
        found["name"] = name
    if group:
        found["group"] = group
    if kind:
        found["kind"] = kind
    found.update({k: v for k, v in more.items() if v})
    return found


def invalid(
    group: str, kind: str, name: str, causes: Sequence[Mapping[str, str]]
) -> dict[str, Any]:
    """The 422 Status with every cause, worded as ``NewInvalid``: one error bare, several in
    brackets."""
    texts = [cause_text(c) for c in causes]
    aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{qualified(kind, group)} "{name}" is invalid: {aggregate}',
        "reason": "Invalid",
        "details": details(name, group, kind, causes=[dict(c) for c in causes]),
        "code": 422,
    }
