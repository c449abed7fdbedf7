"""One AdmissionReview answered with kubetrain's own admission, :func:`kubetrain.api.review`:
the code path the local API server and ``kubetrain validate`` take, so a cluster refuses
what they refuse, with the same field paths and words.

What the local API server stores, a webhook reproduces:

- ``kubeflow.org/v1`` jobs are stored as sent: only validated (upstream has no defaulter);
- ``trainer.kubeflow.org`` objects are stored defaulted: the mutating webhook answers with a
  JSON patch from the object as sent to the defaulted one (metadata and status left as sent,
  ``runtimePatches[].time`` stamped with the webhook's clock), then the validating webhook
  judges the result.

A refusal carries the local server's 422 Status (:func:`kubetrain.kube.status.invalid`):
kube-apiserver prefixes its message with ``admission webhook "<name>" denied the request``
and passes the rest on, so ``kubectl`` prints ``The PyTorchJob "x" is invalid: ...`` with the
same causes on both servers. Deprecations are AdmissionResponse ``warnings``.

A review may need to know what exists (the runtime a TrainJob names, a PriorityClass). The
review is pure and synchronous, so it is run, the names it asked about are looked up, and it
is run again with the answers, until it asks nothing new.

Owns: AdmissionReview in, AdmissionReview out. Must not: serve HTTP or hold a client (the
lookups are handed in).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubetrain import api, kube
from kubetrain.operator.webhook import configurations, jsonpatch

API_VERSION: Final = "admission.k8s.io/v1"
# A TrainJob's runtime, then the PriorityClasses its pods name: one more pass for slack.
MAX_PASSES: Final = 4

RuntimeKey = tuple[str, str | None, str]  # kind, namespace (None: cluster-scoped), name


@dataclass(frozen=True)
class Lookups:
    """How the webhook learns what exists: the runtime of (kind, namespace, name) as stored,
    or None; whether a PriorityClass of that name exists."""

    runtime: Callable[[str, str | None, str], Awaitable[Mapping[str, Any] | None]]
    priority_class: Callable[[str], Awaitable[bool]]


class BadReview(ValueError):
    """The body is not an AdmissionReview request this webhook can answer (HTTP 400)."""


async def answer(
    hook: configurations.Hook, review: Any, lookups: Lookups, now: str
) -> dict[str, Any]:
    """The AdmissionReview that answers ``review`` (decoded JSON) for ``hook``; ``now`` is
    the time (RFC 3339) a mutating webhook stamps."""
    request = _request(review)
    response = await _respond(hook, request, lookups, now)
    response["uid"] = request["uid"]
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def _request(review: Any) -> dict[str, Any]:
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        raise BadReview("expected an AdmissionReview")
    if review.get("apiVersion") != API_VERSION:
        raise BadReview(f"expected apiVersion {API_VERSION}, got {review.get('apiVersion')!r}")
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise BadReview("the AdmissionReview has no request with a uid")
    return request


async def _respond(
    hook: configurations.Hook, request: dict[str, Any], lookups: Lookups, now: str
) -> dict[str, Any]:
    asked = request.get("kind") or {}
    if (asked.get("group"), asked.get("kind")) != (hook.group, hook.kind):
        wrong = f"{asked.get('kind')}.{asked.get('group')}"
        return _denied(400, "BadRequest", f"{hook.path} judges {hook.kind} objects, not {wrong}")
    if request.get("operation") not in ("CREATE", "UPDATE"):
        return {"allowed": True}
    obj = request.get("object")
    old = request.get("oldObject") if request.get("operation") == "UPDATE" else None
    verdict = await judge(obj, old, lookups, now=now if hook.mutating else None)
    if hook.mutating:
        return _defaulted(obj, verdict)
    warnings = list(verdict.warnings)
    if verdict.ok and verdict.obj is not None:
        return {"allowed": True, **({"warnings": warnings} if warnings else {})}
    name = _name(obj) or str(request.get("name") or "")
    causes = [kube.status.field_error_cause(e) for e in verdict.errors]
    status = kube.status.invalid(hook.group, hook.kind, name, causes)
    return {"allowed": False, "status": status, **({"warnings": warnings} if warnings else {})}


async def judge(raw: Any, old: Any, lookups: Lookups, *, now: str | None) -> api.Review:
    """:func:`kubetrain.api.review` with what it asks about the cluster looked up."""
    known = _Known()
    for _ in range(MAX_PASSES):
        known.wanted_runtimes.clear()
        known.wanted_classes.clear()
        verdict = api.review(
            raw,
            old,
            find_runtime=known.find_runtime,
            now=now,
            find_priority_class=known.find_priority_class,
        )
        if not known.wanted_runtimes and not known.wanted_classes:
            return verdict
        for key in known.wanted_runtimes:
            known.runtimes[key] = _parsed_runtime(key[0], await lookups.runtime(*key))
        for name in known.wanted_classes:
            known.classes[name] = await lookups.priority_class(name)
    raise RuntimeError(f"the review still asked for more after {MAX_PASSES} passes")


class _Known:
    """What a review has learned about the cluster, and what it asked that is not known yet
    (answered as if absent, or for a PriorityClass present, until looked up)."""

    def __init__(self) -> None:
        self.runtimes: dict[RuntimeKey, Any] = {}
        self.classes: dict[str, bool] = {}
        self.wanted_runtimes: set[RuntimeKey] = set()
        self.wanted_classes: set[str] = set()

    def find_runtime(self, kind: str, namespace: str | None, name: str) -> Any:
        key = (kind, namespace, name)
        if key not in self.runtimes:
            self.wanted_runtimes.add(key)
        return self.runtimes.get(key)

    def find_priority_class(self, name: str) -> bool:
        if name not in self.classes:
            self.wanted_classes.add(name)
        return self.classes.get(name, True)


def _parsed_runtime(kind: str, stored: Mapping[str, Any] | None) -> Any:
    """The runtime as the review wants it: parsed, and of the kind asked for."""
    if stored is None or stored.get("kind") != kind:
        return None
    parsed, _ = api.parse(dict(stored))
    return parsed


def _defaulted(obj: Any, verdict: api.Review) -> dict[str, Any]:
    """The mutating answer: the patch to the defaulted object. An invalid object is let
    through unchanged, for the validating webhook to refuse with every reason."""
    if not verdict.ok or verdict.obj is None or not isinstance(obj, dict):
        return {"allowed": True}
    defaulted = verdict.obj.to_dict()
    defaulted["metadata"] = obj.get("metadata")  # the server owns metadata
    if "status" in obj:
        defaulted["status"] = obj["status"]
    patch = jsonpatch.diff(obj, defaulted)
    if not patch:
        return {"allowed": True}
    encoded = base64.b64encode(json.dumps(patch, separators=(",", ":")).encode()).decode()
    return {"allowed": True, "patchType": "JSONPatch", "patch": encoded}


def _denied(code: int, reason: str, message: str) -> dict[str, Any]:
    status = {"status": "Failure", "message": message, "reason": reason, "code": code}
    return {"allowed": False, "status": {"kind": "Status", "apiVersion": "v1", **status}}


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""
