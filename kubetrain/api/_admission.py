"""Admission: parse, check and default one object, the way the API server's webhooks would.

This is the single entry point that the command line (``kubetrain validate``), the local API
server and the operator use, so a job is judged the same way everywhere. Order matters and
follows upstream:

- ``kubeflow.org/v1`` jobs are validated as written (replica keys CamelCased first), then
  defaulted, because upstream has no mutating webhook and validates the raw object;
- ``trainer.kubeflow.org`` objects are defaulted first (CRD and mutating-webhook defaults),
  then validated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubetrain.api import (
    _defaults,
    _parse,
    _trainer,
    _trainer_defaults,
    _trainer_plugins,
    _trainer_validation,
)
from kubetrain.api import _fielderrors as fe
from kubetrain.api import _validation as _v1_validation
from kubetrain.api._fielderrors import FieldError
from kubetrain.api._parse import Resource
from kubetrain.api._v1 import JobKind
from kubetrain.errors import KubetrainError

# Looks a runtime up by (kind, namespace, name); namespace is None for ClusterTrainingRuntime.
RuntimeLookup = Callable[[str, str | None, str], "_trainer.Runtime | None"]
PriorityClassLookup = _trainer_plugins.PriorityClassLookup
# How deeply an object may nest objects and arrays, as the local API server and the command
# line allow: far beyond real objects (kubetrain's deepest, its CRD schemas, nest about 35),
# and well inside what parsing, validation and printing can recurse through.
MAX_DEPTH = 100


@dataclass(frozen=True)
class Review:
    """The verdict on one object: the defaulted object when it is valid, else every error."""

    subject: str
    obj: Resource | None
    errors: tuple[FieldError, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.errors

    def messages(self) -> list[str]:
        return [f"{self.subject}: {error}" for error in self.errors]


class Invalid(KubetrainError):
    """An object was rejected; ``review`` holds every reason."""

    def __init__(self, review: Review) -> None:
        self.review = review
        super().__init__("; ".join(review.messages()))


def review(
    raw: Any,
    old: Any = None,
    *,
    find_runtime: RuntimeLookup | None = None,
    now: str | None = None,
    find_priority_class: PriorityClassLookup | None = None,
) -> Review:
    """Judge ``raw`` (a create, or an update from ``old``). Never raises for bad input.

    ``now`` (RFC 3339) is the API server's time: given, a valid TrainJob's
    ``runtimePatches[].time`` are stamped as upstream's mutating webhook does; without it
    (offline checks, the operator) they are left as written. ``find_priority_class``, given,
    checks that a Volcano runtime's ``priorityClassName`` exists, as upstream's plugin does."""
    subject = _parse.subject(raw)
    too_deep = _too_deep(raw)
    if too_deep is not None:
        return Review(subject, None, (too_deep,))
    if old is not None and _too_deep(old) is not None:
        old = None  # as a malformed old object: judged as a create
    obj, errors = _parse.parse(raw)
    if obj is None:
        return Review(subject, None, tuple(errors))
    old_obj = None
    if old is not None:
        old_obj, _ = _parse.parse(old)  # a malformed old object just means: treat as create
        if old_obj is not None and type(old_obj) is not type(obj):
            return Review(subject, None, (_kind_changed(old_obj, obj),))
    unknown = _parse.unknown_template_fields(raw)  # inside pod templates: kept as written
    if isinstance(obj, JobKind):
        verdict = _review_v1(subject, obj, old_obj)
    else:
        verdict = _review_trainer(subject, obj, old_obj, find_runtime, now, find_priority_class)
    if unknown:
        return Review(subject, None, (*unknown, *verdict.errors), verdict.warnings)
    return verdict


def admit(raw: Any, old: Any = None, *, find_runtime: RuntimeLookup | None = None) -> Resource:
    """The defaulted object, or :class:`Invalid` with every reason."""
    verdict = review(raw, old, find_runtime=find_runtime)
    if not verdict.ok or verdict.obj is None:
        raise Invalid(verdict)
    return verdict.obj


def _review_v1(subject: str, job: JobKind, old: Any) -> Review:
    _defaults.normalize_replica_types(job)
    if isinstance(old, JobKind):
        _defaults.normalize_replica_types(old)
    errors = _v1_validation.validate(job, old if isinstance(old, JobKind) else None)
    warnings = tuple(_v1_validation.warnings(job))
    if errors:
        return Review(subject, None, tuple(errors), warnings)
    return Review(subject, _defaults.set_defaults(job), (), warnings)


def _review_trainer(
    subject: str,
    obj: _trainer.TrainerKind,
    old: Any,
    find_runtime: RuntimeLookup | None,
    now: str | None,
    find_priority_class: PriorityClassLookup | None = None,
) -> Review:
    defaulted = _trainer_defaults.set_defaults(obj)
    old_defaulted = _trainer_defaults.set_defaults(old) if old is not None else None
    errors = _trainer_validation.validate(
        defaulted, old_defaulted, find_runtime=find_runtime, find_priority_class=find_priority_class
    )
    warnings = tuple(_trainer_validation.warnings(defaulted, find_runtime=find_runtime))
    if errors:
        return Review(subject, None, tuple(errors), warnings)
    if now is not None and isinstance(defaulted, _trainer.TrainJob):
        before = old_defaulted if isinstance(old_defaulted, _trainer.TrainJob) else None
        defaulted = _trainer_defaults.stamp_patch_times(defaulted, before, now)
    return Review(subject, defaulted, (), warnings)


def _too_deep(raw: Any) -> FieldError | None:
    """The first place ``raw`` nests deeper than :data:`MAX_DEPTH`, found without recursion
    (what would judge it recurses, and would run out of stack)."""
    pending: list[tuple[Any, int, str]] = [(raw, 0, "")]
    while pending:
        value, depth, path = pending.pop()
        if isinstance(value, dict):
            children = [(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            children = [(v, f"{path}[{i}]") for i, v in enumerate(value)]
        else:
            continue
        if depth >= MAX_DEPTH:
            return fe.FieldError(
                fe.ErrorType.INVALID, path or "<root>", f"nested more than {MAX_DEPTH} levels deep"
            )
        pending += [(child, depth + 1, where) for child, where in children]
    return None


def _kind_changed(old: Any, new: Any) -> FieldError:
    return fe.invalid("kind", new.kind, f"field is immutable (was {old.kind})")


def as_mapping(obj: Resource) -> dict[str, Any]:
    """The wire form of a typed object."""
    return obj.to_dict()
