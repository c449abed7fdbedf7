"""Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``), decoded into the
JSON form the registry takes.

kubectl's typed clients send protobuf for built-in kinds: ``kubectl create configmap``,
``secret``, ``namespace``, ``serviceaccount``, ``quota``, ``priorityclass``, ``service``,
``token`` (a TokenRequest), ``role``, ``rolebinding``, ``clusterrole``, ``clusterrolebinding``
and the Eviction ``kubectl drain`` posts. Responses are always JSON (those clients accept it
too), so only decoding is needed, and only for the messages below; any other kind is refused
with 415, which names the JSON types that are accepted.

The envelope is kube's: the magic ``k8s\\x00``, then a ``runtime.Unknown`` whose ``typeMeta``
names the kind and whose ``raw`` holds the object's message. Field numbers are those of the
published ``generated.proto`` files. Zero values (empty strings, 0, false, empty maps), which
the Go marshaller writes for non-pointer fields, are dropped, as JSON's ``omitempty`` would.

Pure: no I/O. Raises :class:`ProtobufError` for anything it cannot read.
"""

from __future__ import annotations

import base64
from typing import Any

from kubetrain import timefmt

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """A body that is not a readable Kubernetes protobuf message of a known kind."""


# A field: (json name, type, repeated). Types: "string", "bytes", "bool", "int", "time",
# "quantity", "intorstr", "map:<value type>", or a message name from MESSAGES.
Field = tuple[str, str, bool]

MESSAGES: dict[str, dict[int, Field]] = {
    "ObjectMeta": {
        1: ("name", "string", False),
        2: ("generateName", "string", False),
        3: ("namespace", "string", False),
        5: ("uid", "string", False),
        6: ("resourceVersion", "string", False),
        7: ("generation", "int", False),
        10: ("deletionGracePeriodSeconds", "int", False),
        11: ("labels", "map:string", False),
        12: ("annotations", "map:string", False),
        13: ("ownerReferences", "OwnerReference", True),
        14: ("finalizers", "string", True),
    },
    "OwnerReference": {
        1: ("kind", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
        5: ("apiVersion", "string", False),
        6: ("controller", "bool", False),
        7: ("blockOwnerDeletion", "bool", False),
    },
    "ConfigMap": {
        1: ("metadata", "ObjectMeta", False),
        2: ("data", "map:string", False),
        3: ("binaryData", "map:bytes", False),
        4: ("immutable", "bool", False),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta", False),
        2: ("data", "map:bytes", False),
        3: ("type", "string", False),
        4: ("stringData", "map:string", False),
        5: ("immutable", "bool", False),
    },
    "Namespace": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "NamespaceSpec", False),
    },
    "NamespaceSpec": {1: ("finalizers", "string", True)},
    "ServiceAccount": {
        1: ("metadata", "ObjectMeta", False),
        2: ("secrets", "ObjectReference", True),
        3: ("imagePullSecrets", "LocalObjectReference", True),
        4: ("automountServiceAccountToken", "bool", False),
    },
    "ObjectReference": {
        1: ("kind", "string", False),
        2: ("namespace", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
        5: ("apiVersion", "string", False),
        6: ("resourceVersion", "string", False),
        7: ("fieldPath", "string", False),
    },
    "LocalObjectReference": {1: ("name", "string", False)},
    "ResourceQuota": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "ResourceQuotaSpec", False),
    },
    "ResourceQuotaSpec": {
        1: ("hard", "map:quantity", False),
        2: ("scopes", "string", True),
        3: ("scopeSelector", "ScopeSelector", False),
    },
    "ScopeSelector": {1: ("matchExpressions", "ScopedResourceSelectorRequirement", True)},
    "ScopedResourceSelectorRequirement": {
        1: ("scopeName", "string", False),
        2: ("operator", "string", False),
        3: ("values", "string", True),
    },
    "PriorityClass": {
        1: ("metadata", "ObjectMeta", False),
        2: ("value", "int", False),
        3: ("globalDefault", "bool", False),
        4: ("description", "string", False),
        5: ("preemptionPolicy", "string", False),
    },
    "Service": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "ServiceSpec", False),
    },
    "ServiceSpec": {
        1: ("ports", "ServicePort", True),
        2: ("selector", "map:string", False),
        3: ("clusterIP", "string", False),
        4: ("type", "string", False),
        5: ("externalIPs", "string", True),
        7: ("sessionAffinity", "string", False),
        10: ("externalName", "string", False),
        11: ("externalTrafficPolicy", "string", False),
        13: ("publishNotReadyAddresses", "bool", False),
        17: ("ipFamilyPolicy", "string", False),
        18: ("clusterIPs", "string", True),
        19: ("ipFamilies", "string", True),
        22: ("internalTrafficPolicy", "string", False),
    },
    "ServicePort": {
        1: ("name", "string", False),
        2: ("protocol", "string", False),
        3: ("port", "int", False),
        4: ("targetPort", "intorstr", False),
        5: ("nodePort", "int", False),
        6: ("appProtocol", "string", False),
    },
    "Eviction": {
        1: ("metadata", "ObjectMeta", False),
        2: ("deleteOptions", "DeleteOptions", False),
    },
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int", False),
        2: ("preconditions", "Preconditions", False),
        3: ("orphanDependents", "bool", False),
        4: ("propagationPolicy", "string", False),
        5: ("dryRun", "string", True),
    },
    "Preconditions": {1: ("uid", "string", False), 2: ("resourceVersion", "string", False)},
    "TokenRequest": {
        1: ("metadata", "ObjectMeta", False),
        2: ("spec", "TokenRequestSpec", False),
    },
    "TokenRequestSpec": {
        1: ("audiences", "string", True),
        3: ("boundObjectRef", "BoundObjectReference", False),
        4: ("expirationSeconds", "int", False),
    },
    "BoundObjectReference": {
        1: ("kind", "string", False),
        2: ("apiVersion", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
    },
    "Role": {1: ("metadata", "ObjectMeta", False), 2: ("rules", "PolicyRule", True)},
    "ClusterRole": {
        1: ("metadata", "ObjectMeta", False),
        2: ("rules", "PolicyRule", True),
        3: ("aggregationRule", "AggregationRule", False),
    },
    "PolicyRule": {
        1: ("verbs", "string", True),
        2: ("apiGroups", "string", True),
        3: ("resources", "string", True),
        4: ("resourceNames", "string", True),
        5: ("nonResourceURLs", "string", True),
    },
    "AggregationRule": {1: ("clusterRoleSelectors", "LabelSelector", True)},
    "LabelSelector": {
        1: ("matchLabels", "map:string", False),
        2: ("matchExpressions", "LabelSelectorRequirement", True),
    },
    "LabelSelectorRequirement": {
        1: ("key", "string", False),
        2: ("operator", "string", False),
        3: ("values", "string", True),
    },
    "RoleBinding": {
        1: ("metadata", "ObjectMeta", False),
        2: ("subjects", "Subject", True),
        3: ("roleRef", "RoleRef", False),
    },
    "ClusterRoleBinding": {
        1: ("metadata", "ObjectMeta", False),
        2: ("subjects", "Subject", True),
        3: ("roleRef", "RoleRef", False),
    },
    "Subject": {
        1: ("kind", "string", False),
        2: ("apiGroup", "string", False),
        3: ("name", "string", False),
        4: ("namespace", "string", False),
    },
    "RoleRef": {
        1: ("apiGroup", "string", False),
        2: ("kind", "string", False),
        3: ("name", "string", False),
    },
}

KINDS = (
    "ConfigMap",
    "Secret",
    "Namespace",
    "ServiceAccount",
    "ResourceQuota",
    "PriorityClass",
    "Service",
    "Eviction",
    "DeleteOptions",
    "TokenRequest",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def varint(self) -> int:
        result = shift = 0
        while True:
            if self.pos >= len(self.data) or shift > 63:
                raise ProtobufError("truncated varint")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtobufError("truncated field")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def fields(self) -> list[tuple[int, int, Any]]:
        out = []
        while not self.done():
            tag = self.varint()
            number, wire = tag >> 3, tag & 7
            if wire == 0:
                value: Any = self.varint()
            elif wire == 1:
                value = self.take(8)
            elif wire == 2:
                value = self.take(self.varint())
            elif wire == 5:
                value = self.take(4)
            else:
                raise ProtobufError(f"unsupported wire type {wire}")
            out.append((number, wire, value))
        return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: Any) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtobufError("a string is not UTF-8") from exc


def _scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        return _text(value)
    if kind == "bytes":
        if not isinstance(value, bytes):
            raise ProtobufError("expected bytes")
        return base64.b64encode(value).decode()
    if kind == "bool":
        return bool(value)
    if kind == "int":
        if not isinstance(value, int):
            raise ProtobufError("expected an integer")
        return _signed(value)
    if kind == "quantity":
        fields = decode_message_fields(value)
        return fields.get(1, "")
    if kind == "time":
        fields = decode_message_fields(value)
        seconds = _signed(fields.get(1, 0)) if isinstance(fields.get(1, 0), int) else 0
        return timefmt.seconds(timefmt.from_epoch(seconds))
    if kind == "intorstr":
        fields = decode_message_fields(value)
        if fields.get(1, 0) == 1:
            return fields.get(3, "")
        return _signed(fields.get(2, 0))
    if kind in MESSAGES:
        return decode(kind, value)
    raise ProtobufError(f"unknown field type {kind}")


def decode_message_fields(data: Any) -> dict[int, Any]:
    """A small message's fields by number (last one wins); strings decoded."""
    if not isinstance(data, bytes):
        raise ProtobufError("expected an embedded message")
    out: dict[int, Any] = {}
    for number, wire, value in _Reader(data).fields():
        out[number] = _text(value) if wire == 2 else value
    return out


def _empty(value: Any) -> bool:
    return value in ("", 0, False, None) or value == {} or value == []


def decode(message: str, data: bytes) -> dict[str, Any]:
    """Decode ``data`` as the named message into its JSON form."""
    schema = MESSAGES[message]
    out: dict[str, Any] = {}
    for number, _wire, value in _Reader(data).fields():
        spec = schema.get(number)
        if spec is None:
            continue  # a field this table does not carry (status, managedFields, ...)
        name, kind, repeated = spec
        if kind.startswith("map:"):
            entry = _Reader(value if isinstance(value, bytes) else b"").fields()
            key = next((_text(v) for n, _, v in entry if n == 1), "")
            raw = next((v for n, _, v in entry if n == 2), b"")
            out.setdefault(name, {})[key] = _scalar(kind[4:], raw)
        elif repeated:
            out.setdefault(name, []).append(_scalar(kind, value))
        else:
            out[name] = _scalar(kind, value)
    return {k: v for k, v in out.items() if not _empty(v)}


def decode_body(body: bytes) -> dict[str, Any]:
    """A request body in kube's protobuf envelope as a JSON-form object."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic")
    envelope = _Reader(body[len(MAGIC) :]).fields()
    type_meta: dict[int, Any] = {}
    raw = b""
    for number, _wire, value in envelope:
        if number == 1:
            type_meta = decode_message_fields(value)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    api_version = str(type_meta.get(1, ""))
    kind = str(type_meta.get(2, ""))
    if kind not in KINDS:
        raise ProtobufError(f"protobuf is not accepted for kind {kind or '<none>'}")
    obj = decode(kind, raw)
    return {"apiVersion": api_version, "kind": kind, **obj}
