"""Per-resource rules for the generic registry, as kube's ``strategy.go`` files: the base
:class:`Strategy`, ObjectMeta validation, and the strategies of the simple built-in kinds.

A strategy has hooks the registry calls in a fixed order — prepare (clear what a client may
not set, fill defaults), validate (metadata, then the resource's own rules), admission,
after-write side effects — plus a few answers (does this resource keep ``generation``, which
field selectors it supports, does delete return the object). The base :class:`Strategy` is
what kube's generic registry does for a resource with no special rules, e.g. leases.

A write to a subresource takes a strategy of its own, as kube gives ``/status`` a store that
differs only in its strategy: :class:`StatusStrategy` keeps all of the stored object but its
status, while the resource's own strategy keeps the stored status; other subresources
(``scale``, ``binding``, ``finalize``) are a :class:`SubresourceStrategy` that says what they
reset and prepare. So no hook asks which endpoint a write came to.

Here: configmaps and secrets (keys, ``stringData``, ``immutable``), resourcequotas,
limitranges, priorityclasses, events (and the events.k8s.io/v1 shape of them), nodes. Kinds
with more to them have their own modules: :mod:`namespaces`, :mod:`pods`, :mod:`services`,
:mod:`claims`, :mod:`crds`.

What it must not do: storage or HTTP. Side effects go back through the registry's public
methods, so they take the same path as any client's write.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubetrain.local.apiserver import builtin_schemas, errors, resources, schema, selectors, store

Cause = dict[str, str]
R = resources.Resource
Obj = dict[str, Any]

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_ANNOTATIONS_MAX = 256 * 1024


@dataclass
class Settings:
    """Where the local control plane keeps what strategies need to point at."""

    volume_dir: str = "/tmp/kubetrain-volumes"
    service_cidr: str = "10.96.0.0/12"
    root_ca: str = ""  # PEM of the API server's CA, published in every namespace


# --- names and metadata ---------------------------------------------------------------------


def dns1123_subdomain(name: str) -> list[str]:
    problems = []
    if len(name) > 253:
        problems.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(name):
        problems.append(_DNS1123_SUBDOMAIN_MSG)
    return problems


def dns1123_label(name: str) -> list[str]:
    problems = []
    if len(name) > 63:
        problems.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.fullmatch(name):
        problems.append(_DNS1123_LABEL_MSG)
    return problems


def dns1035_label(name: str) -> list[str]:
    problems = []
    if len(name) > 63:
        problems.append("must be no more than 63 characters")
    if not _DNS1035_LABEL.fullmatch(name):
        problems.append(_DNS1035_LABEL_MSG)
    return problems


def path_segment(name: str) -> list[str]:
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def invalid(field: str, value: Any, detail: str) -> Cause:
    return errors.field_error("Invalid value", field, detail, value)


def required(field: str, detail: str = "") -> Cause:
    return errors.field_error("Required value", field, detail)


def forbidden(field: str, detail: str) -> Cause:
    return errors.field_error("Forbidden", field, detail)


def validate_metadata(
    meta: Mapping[str, Any], name_rule: Callable[[str], list[str]], namespaced: bool
) -> list[Cause]:
    """kube's ValidateObjectMeta: name, labels, annotations, finalizers, ownerReferences."""
    causes: list[Cause] = []
    name = meta.get("name") or ""
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    else:
        causes += [invalid("metadata.name", name, p) for p in name_rule(name)]
    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, Mapping):
            causes.append(invalid("metadata.labels", labels, "must be a map of strings"))
        else:
            for key, value in labels.items():
                causes += [
                    invalid("metadata.labels", key, p) for p in selectors.label_key_errors(str(key))
                ]
                if not isinstance(value, str):
                    causes.append(invalid(f"metadata.labels[{key}]", value, "must be a string"))
                else:
                    causes += [
                        invalid("metadata.labels", value, p)
                        for p in selectors.label_value_errors(value)
                    ]
    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, Mapping):
            causes.append(invalid("metadata.annotations", annotations, "must be a map of strings"))
        else:
            size = 0
            for key, value in annotations.items():
                causes += [
                    invalid("metadata.annotations", key, p)
                    for p in selectors.label_key_errors(str(key).lower())
                ]
                if not isinstance(value, str):
                    causes.append(
                        invalid(f"metadata.annotations[{key}]", value, "must be a string")
                    )
                    continue
                size += len(str(key)) + len(value)
            if size > _ANNOTATIONS_MAX:
                causes.append(
                    errors.field_error(
                        "Too long",
                        "metadata.annotations",
                        f"must have at most {_ANNOTATIONS_MAX} bytes",
                    )
                )
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
            causes.append(invalid("metadata.finalizers", finalizers, "must be a list of strings"))
        else:
            for i, fin in enumerate(finalizers):
                causes += [
                    invalid(f"metadata.finalizers[{i}]", fin, p)
                    for p in selectors.label_key_errors(fin)
                ]
    owners = meta.get("ownerReferences")
    if owners is not None:
        causes += _owner_reference_causes(owners)
    return causes


def _owner_reference_causes(owners: Any) -> list[Cause]:
    if not isinstance(owners, list):
        return [invalid("metadata.ownerReferences", owners, "must be a list")]
    causes = []
    controllers = []
    for i, ref in enumerate(owners):
        path = f"metadata.ownerReferences[{i}]"
        if not isinstance(ref, Mapping):
            causes.append(invalid(path, ref, "must be an object"))
            continue
        for field_name in ("apiVersion", "kind", "name"):
            if not ref.get(field_name):
                causes.append(
                    invalid(
                        f"metadata.ownerReferences.{field_name}",
                        "",
                        f"{field_name} must not be empty",
                    )
                )
        if not ref.get("uid"):
            causes.append(invalid("metadata.ownerReferences.uid", "", "uid must not be empty"))
        if ref.get("controller") is True:
            controllers.append(f"{ref.get('kind')}/{ref.get('name')}")
    if len(controllers) > 1:
        causes.append(
            invalid(
                "metadata.ownerReferences",
                owners,
                'Only one reference can have Controller set to true. Found "true" in references '
                "for " + " and ".join(controllers),
            )
        )
    return causes


# --- the base strategy ----------------------------------------------------------------------

SubresourceHandler = Callable[..., Awaitable[Any]]


DEFAULT_FIELD_LABELS = frozenset({"metadata.name", "metadata.namespace"})


class Strategy:
    """What kube's generic registry does for a resource without special rules."""

    # A write to the resource itself; :meth:`for_subresource` gives the others.
    subresource = ""
    prunes = True  # unknown fields are dropped (a status write keeps the stored object's)
    admitted = True  # kubetrain's admission reviews it (writes of subresources it does not)

    name_rule: Callable[[str], list[str]] = staticmethod(dns1123_subdomain)
    status_reset_on_create = True
    generation = False
    # kube gives a few kinds a field-label conversion of their own (pods, secrets, events,
    # nodes, namespaces; every custom resource): those know metadata.name, metadata.namespace
    # where namespaced, and their extra labels. Every other kind takes the default conversion,
    # which knows metadata.name and metadata.namespace whatever its scope.
    own_field_labels = False
    extra_field_labels: frozenset[str] = frozenset()

    def uses_generation(self, r: resources.Resource) -> bool:
        return self.generation

    def serializes_creates(self, reg: Any, namespace: str) -> bool:
        """Whether creates in ``namespace`` must be admitted one at a time, because admission
        counts what exists (a quota)."""
        return False

    def spec_changed(self, r: resources.Resource, new: Mapping, old: Mapping) -> bool:
        return new.get("spec") != old.get("spec")

    def allow_unconditional_update(self, r: resources.Resource) -> bool:
        return True

    def return_deleted(self, r: resources.Resource) -> bool:
        return False

    def field_labels(self, r: resources.Resource) -> frozenset[str]:
        if not self.own_field_labels:
            return DEFAULT_FIELD_LABELS
        base = DEFAULT_FIELD_LABELS if r.namespaced else frozenset({"metadata.name"})
        return base | self.extra_field_labels

    def unsupported_field_label(self, r: resources.Resource, name: str) -> str:
        """The 400's message for a field selector on ``name``, in the words of the kind's
        conversion (see :attr:`own_field_labels`)."""
        if self.own_field_labels:
            return f"field label not supported: {name}"
        return f'"{name}" is not a known field selector: only "metadata.name", "metadata.namespace"'

    def prune(self, r: resources.Resource, obj: dict[str, Any]) -> list[str]:
        """Remove fields the type does not have, as kube's typed decoder does; return their
        paths (for fieldValidation)."""
        removed = schema.prune_metadata(obj)
        shape = builtin_schemas.schema_for(r.group, r.version, r.kind)
        if shape is not None:
            removed += schema.prune(obj, shape)
        return removed

    def list_keys(self, r: resources.Resource) -> Any:
        """Which lists are keyed, for managedFields (None: the built-in kinds' markers)."""
        return None

    def prepare_for_create(self, r: resources.Resource, obj: dict[str, Any], reg: Any) -> None:
        pass

    def prepare_for_update(
        self, r: resources.Resource, new: dict[str, Any], old: Mapping, reg: Any
    ) -> None:
        """An update of the main resource, after :meth:`reset_for_update`."""

    def prepare_status_for_update(
        self, r: resources.Resource, new: dict[str, Any], old: Mapping, reg: Any
    ) -> None:
        """An update of ``/status``, after :class:`StatusStrategy` kept all but status."""

    def reset_for_update(
        self, r: resources.Resource, new: dict[str, Any], old: Mapping[str, Any]
    ) -> dict[str, Any]:
        """What an update of the main resource may not change: status, where it is a
        subresource; and ``generation`` moves when the spec changed."""
        if r.has_status():
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        if self.uses_generation(r) and self.spec_changed(r, new, old):
            new_meta, old_meta = new["metadata"], old["metadata"]
            new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
        return new

    def reset_fields(self, r: resources.Resource, config: dict[str, Any]) -> dict[str, Any]:
        """An applied configuration without the fields this write resets (kube's
        ``GetResetFields``): the field manager removes them before it computes ownership and
        conflicts, so they are neither owned nor compared."""
        if r.has_status() and "status" in config:
            return {k: v for k, v in config.items() if k != "status"}
        return config

    def for_subresource(self, name: str) -> WriteStrategy:
        """The strategy of a write to subresource ``name`` ("" is the resource itself): kube
        builds a ``/status`` store that differs from the main one only in its strategy."""
        if name == "":
            return self
        if name == "status":
            return StatusStrategy(self)
        if name == "scale":
            return SubresourceStrategy(self, name, self.reset_for_update, self.prepare_for_update)
        return SubresourceStrategy(self, name, _keep_all, self.prepare_for_update)

    def validate(
        self, r: resources.Resource, obj: Mapping[str, Any], old: Mapping | None, reg: Any
    ) -> list[Cause]:
        return validate_metadata(obj.get("metadata") or {}, self.name_rule, r.namespaced)

    def admit_create(self, r: resources.Resource, obj: dict[str, Any], reg: Any) -> None:
        """Admission that may refuse a create (quota); raise an ApiError to refuse."""

    async def after_create(self, r: resources.Resource, item: store.Item, reg: Any) -> None:
        pass

    async def after_update(
        self, r: resources.Resource, item: store.Item, prev: store.Item, reg: Any
    ) -> None:
        pass

    async def after_delete(self, r: resources.Resource, item: store.Item, reg: Any) -> None:
        pass

    def grace_period(self, r: resources.Resource, obj: Mapping, options: Mapping) -> int:
        return 0

    def before_delete(self, r: resources.Resource, obj: dict[str, Any], reg: Any) -> None:
        """Refuse a delete by raising an ApiError."""

    def finalizes(self, r: resources.Resource, obj: Mapping) -> bool:
        """Deletion waits for something besides metadata.finalizers (namespaces)."""
        return False

    def mark_deleting(self, r: resources.Resource, obj: dict[str, Any], reg: Any) -> None:
        pass

    def subresource_create(self, name: str) -> SubresourceHandler | None:
        return None


DEFAULT = Strategy()


# --- subresource writes ---------------------------------------------------------------------


class WriteStrategy(Protocol):
    """What an update asks of the strategy of the endpoint it came to: the resource's own
    (:class:`Strategy`), or one of its subresources' (:meth:`Strategy.for_subresource`)."""

    subresource: str
    prunes: bool
    admitted: bool

    def reset_for_update(self, r: R, new: Obj, old: Mapping[str, Any]) -> Obj: ...

    def reset_fields(self, r: R, config: Obj) -> Obj: ...

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None: ...

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]: ...


Reset = Callable[[R, Obj, Mapping[str, Any]], Obj]
Prepare = Callable[[R, Obj, Mapping, Any], None]


def _keep_all(r: R, new: Obj, old: Mapping[str, Any]) -> Obj:
    """A subresource that writes what it is given (pods/binding sets spec and status)."""
    return new


@dataclass(frozen=True)
class SubresourceStrategy:
    """A write to a subresource: the resource's validation, with what the subresource resets
    and prepares. kubetrain's admission reviews writes of the resource itself only."""

    main: Strategy
    subresource: str
    reset: Reset
    prepare: Prepare
    prunes: bool = True
    admitted: bool = False

    def reset_for_update(self, r: R, new: Obj, old: Mapping[str, Any]) -> Obj:
        return self.reset(r, new, old)

    def reset_fields(self, r: R, config: Obj) -> Obj:
        return config

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        self.prepare(r, new, old, reg)

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        return self.main.validate(r, obj, old, reg)


class StatusStrategy(SubresourceStrategy):
    """``/status``: everything but status is the stored object's, and unknown fields are not
    looked for (the stored object has none)."""

    def __init__(self, main: Strategy) -> None:
        super().__init__(main, "status", _status_only, main.prepare_status_for_update, prunes=False)

    def reset_fields(self, r: R, config: Obj) -> Obj:
        """Everything but ``status``; ``metadata`` keeps only the name, which the request has
        already checked."""
        kept = {k: v for k, v in config.items() if k in ("apiVersion", "kind", "status")}
        kept["metadata"] = {"name": config["metadata"]["name"]}
        return kept


def _status_only(r: R, new: Obj, old: Mapping[str, Any]) -> Obj:
    """The stored object with ``new``'s status (and the managedFields recorded so far).

    Its parts are shared with ``old`` rather than copied: nothing after this edits them but
    metadata, copied here, and the managedFields diff skips a part that is ``old``'s own."""
    new_meta = new["metadata"]
    status = new.get("status")
    out = dict(old)
    out["metadata"] = dict(old["metadata"])
    if status is not None:
        out["status"] = status
    else:
        out.pop("status", None)
    if "managedFields" in new_meta:
        out["metadata"]["managedFields"] = new_meta["managedFields"]
    return out


class ConfigMapStrategy(Strategy):
    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        data = obj.get("data")
        binary = obj.get("binaryData")
        for field_name, values in (("data", data), ("binaryData", binary)):
            if values is None:
                continue
            if not isinstance(values, Mapping) or not all(
                isinstance(v, str) for v in values.values()
            ):
                causes.append(invalid(field_name, values, "must be a map of strings"))
                continue
            for key in values:
                if not re.fullmatch(r"[-._a-zA-Z0-9]+", key) or len(key) > 253:
                    causes.append(
                        invalid(
                            f"{field_name}[{key}]",
                            key,
                            "a valid config key must consist of alphanumeric characters, '-', "
                            "'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
                            "used for validation is '[-._a-zA-Z0-9]+')",
                        )
                    )
        if isinstance(data, Mapping) and isinstance(binary, Mapping):
            for key in set(data) & set(binary):
                causes.append(
                    invalid(f"binaryData[{key}]", key, "duplicate of key present in data")
                )
        frozen = obj.get("immutable") is True and old is not None and old.get("immutable") is True
        if (
            frozen
            and old is not None
            and (
                obj.get("data") != old.get("data") or obj.get("binaryData") != old.get("binaryData")
            )
        ):
            causes.append(forbidden("data", "field is immutable when `immutable` is set"))
        return causes


class SecretStrategy(ConfigMapStrategy):
    own_field_labels = True
    extra_field_labels = frozenset({"type"})

    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        _fold_string_data(obj)
        obj.setdefault("type", "Opaque")

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        _fold_string_data(new)
        new.setdefault("type", old.get("type", "Opaque"))

    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = validate_metadata(obj.get("metadata") or {}, self.name_rule, True)
        data = obj.get("data") or {}
        if not isinstance(data, Mapping):
            return [*causes, invalid("data", data, "must be a map of strings")]
        for key, value in data.items():
            try:
                base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError):
                causes.append(
                    invalid(f"data[{key}]", "<secret contents redacted>", "illegal base64 data")
                )
        if old is not None and old.get("type") != obj.get("type"):
            causes.append(invalid("type", obj.get("type"), "field is immutable"))
        return causes


def _fold_string_data(obj: dict[str, Any]) -> None:
    """``stringData`` is write-only: merged into ``data``, base64-encoded, as kube does."""
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, Mapping):
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


class PriorityClassStrategy(Strategy):
    def validate(self, r: R, obj: Obj, old: Mapping | None, reg: Any) -> list[Cause]:
        causes = super().validate(r, obj, old, reg)
        value = obj.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            causes.append(required("value"))
        elif value > 1_000_000_000 and not obj["metadata"].get("name", "").startswith("system-"):
            causes.append(
                forbidden("value", "maximum allowed value of a user defined priority is 1000000000")
            )
        if old is not None and old.get("value") != value:
            causes.append(forbidden("value", "may not be changed in an update."))
        return causes


class EventStrategy(Strategy):
    own_field_labels = True
    extra_field_labels = frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "reportingController",
            "note",
        }
    )


class NodeStrategy(Strategy):
    own_field_labels = True
    extra_field_labels = frozenset({"spec.unschedulable"})
    status_reset_on_create = False  # a kubelet registers its Node with capacity and addresses


# --- events.k8s.io/v1 <-> core/v1 -----------------------------------------------------------

_EVENT_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)


def convert_in(r: resources.Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """From the served shape of ``r`` to the stored shape (only events differ in shape)."""
    if r.group == "events.k8s.io":
        for new_name, core_name in _EVENT_RENAMES:
            if new_name in obj:
                obj[core_name] = obj.pop(new_name)
        if "series" in obj and isinstance(obj["series"], dict):
            obj["series"] = {
                "count": obj["series"].get("count"),
                "lastObservedTime": obj["series"].get("lastObservedTime"),
            }
    return obj


def convert_out(r: resources.Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
    """From the stored shape to the served shape of ``r``; always a copy."""
    out = copy.deepcopy(dict(obj))
    if r.group == "events.k8s.io":
        for new_name, core_name in _EVENT_RENAMES:
            if core_name in out:
                out[new_name] = out.pop(core_name)
    return out


class LimitRangeStrategy(Strategy):
    def prepare_for_create(self, r: R, obj: Obj, reg: Any) -> None:
        default_limit_range(obj)

    def prepare_for_update(self, r: R, new: Obj, old: Mapping, reg: Any) -> None:
        default_limit_range(new)


def default_limit_range(obj: Obj) -> None:
    """kube's SetDefaults_LimitRangeItem for Container items: the default limit falls back to
    max; the default request to the default limit, then to min."""
    for item in (obj.get("spec") or {}).get("limits") or []:
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = item.setdefault("default", {})
        request = item.setdefault("defaultRequest", {})
        if not isinstance(default, dict) or not isinstance(request, dict):
            continue
        for source, target in (
            (item.get("max"), default),
            (default, request),
            (item.get("min"), request),
        ):
            for name, value in (source or {}).items():
                target.setdefault(name, value)
        if not default:
            item.pop("default")
        if not request:
            item.pop("defaultRequest")
