"""Structural schemas applied to custom resources as kube-apiserver applies them.

Expected values come from Kubernetes' documented behaviour
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/:
"Field pruning", "Defaulting", "Defaulting and Nullable", "Validation ratcheting",
"Transition rules") and from the messages kube-apiserver 1.32 returns, written out here.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain import api, gofmt
from kubetrain.local.apiserver import crdvalidation, schema, schemavalidation

CRDS = {crd["spec"]["names"]["kind"]: crd for crd in api.crds()}

SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 10},
        "count": {"type": "integer", "format": "int32"},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
        "ratio": {"type": "number", "maximum": 1000000},
        "flag": {"type": "boolean"},
        "port": {"x-kubernetes-int-or-string": True},
        "note": {"type": "string", "nullable": True},
        "when": {"type": "string", "format": "date-time"},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 2,
            "x-kubernetes-list-type": "set",
        },
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
            },
        },
        "labels": {
            "type": "object",
            "maxProperties": 2,
            "additionalProperties": {"type": "string"},
        },
        "replicaSpecs": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"replicas": {"type": "integer"}},
            },
        },
        "template": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}},
        },
        "embedded": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}},
        },
    },
    "required": ["replicas"],
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": SPEC,
    },
}


def cr(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"replicas": 1, **spec},
    }


def cause(field: str, reason: str, message: str) -> dict[str, str]:
    return {"field": field, "reason": reason, "message": message}


def invalid(field: str, message: str) -> dict[str, str]:
    return cause(field, "FieldValueInvalid", "Invalid value: " + message)


def type_invalid(field: str, message: str) -> dict[str, str]:
    return cause(field, "FieldValueTypeInvalid", "Invalid value: " + message)


# --- pruning -----------------------------------------------------------------------------

PRUNE_CASES = [
    (
        "an unknown spec field is removed and reported by its path",
        cr(bogus=1),
        ["spec.bogus"],
        cr(),
    ),
    (
        "unknown fields inside array items are reported with their index",
        cr(ports=[{"name": "a", "extra": 1}]),
        ["spec.ports[0].extra"],
        cr(ports=[{"name": "a"}]),
    ),
    (
        "additionalProperties values are pruned against the value schema",
        cr(replicaSpecs={"Worker": {"replicas": 2, "bogus": True}}),
        ["spec.replicaSpecs.Worker.bogus"],
        cr(replicaSpecs={"Worker": {"replicas": 2}}),
    ),
    (
        "preserve-unknown-fields keeps unknown fields but still prunes known children",
        cr(template={"anything": {"x": 1}, "known": {"a": "k", "b": 2}}),
        ["spec.template.known.b"],
        cr(template={"anything": {"x": 1}, "known": {"a": "k"}}),
    ),
    (
        "an embedded resource keeps its apiVersion, kind and metadata",
        cr(embedded={"apiVersion": "v1", "kind": "Pod", "metadata": {"x": 1}, "spec": {"y": 1}}),
        ["spec.embedded.spec.y"],
        cr(embedded={"apiVersion": "v1", "kind": "Pod", "metadata": {"x": 1}, "spec": {}}),
    ),
    (
        "root apiVersion, kind and metadata are never pruned, other root fields are",
        {**cr(), "status2": {"a": 1}, "metadata": {"name": "w", "anything": 1}},
        ["status2"],
        {**cr(), "metadata": {"name": "w", "anything": 1}},
    ),
    (
        "paths come back sorted, as kube-apiserver reports them",
        cr(zzz=1, aaa=2, ports=[{"name": "a", "q": 1}]),
        ["spec.aaa", "spec.ports[0].q", "spec.zzz"],
        cr(ports=[{"name": "a"}]),
    ),
]


@pytest.mark.parametrize(
    ("obj", "removed", "after"), [c[1:] for c in PRUNE_CASES], ids=[c[0] for c in PRUNE_CASES]
)
def test_prune(obj: dict[str, Any], removed: list[str], after: dict[str, Any]) -> None:
    assert schema.prune(obj, SCHEMA) == removed
    assert obj == after


def test_prune_reaches_into_a_pytorchjob_pod_template_by_its_kubernetes_schema() -> None:
    crd_schema = crdvalidation.version_schema(CRDS["PyTorchJob"], "v1")
    container = {"name": "pytorch", "image": "i", "env": [{"name": "A", "value": "1"}]}
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [container]}}
    sent = copy.deepcopy(template)
    sent["spec"]["containers"][0]["anyField"] = 1
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "a"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": sent}}},
        "status": {"unknownStatus": 1},
    }
    assert schema.prune(job, crd_schema) == [
        "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].anyField",
        "status.unknownStatus",
    ]
    assert job["spec"]["pytorchReplicaSpecs"]["Master"]["template"] == template


def test_prune_metadata_drops_fields_objectmeta_does_not_have() -> None:
    obj = {
        "metadata": {
            "name": "a",
            "labels": {"x": "y"},
            "bogus": 1,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "z": 1}
            ],
        }
    }
    assert schema.prune_metadata(obj) == ["metadata.bogus", "metadata.ownerReferences[0].z"]
    assert obj["metadata"] == {
        "name": "a",
        "labels": {"x": "y"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}],
    }


# --- defaulting --------------------------------------------------------------------------

DEFAULTED = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "policy": {
                    "type": "object",
                    "default": {},
                    "properties": {"mode": {"type": "string", "default": "All"}},
                },
                "kept": {"type": "string", "nullable": True, "default": "x"},
                "nullable": {"type": "string", "nullable": True},
                "plain": {"type": "string"},
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "default": {"port": 1},
                        "properties": {"port": {"type": "integer", "default": 80}},
                    },
                },
                "specs": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"restart": {"type": "string", "default": "Never"}},
                    },
                },
                "absent": {
                    "type": "object",
                    "properties": {"inner": {"type": "string", "default": "never created"}},
                },
            },
        }
    },
}

BASE = {"replicas": 1, "policy": {"mode": "All"}, "kept": "x"}

DEFAULT_CASES = [
    ("an absent field takes its default", {}, BASE),
    (
        "a present field keeps its value",
        {"replicas": 3, "policy": {"mode": "None"}, "kept": "y"},
        {"replicas": 3, "policy": {"mode": "None"}, "kept": "y"},
    ),
    (
        "a default object is itself defaulted further down",
        {"replicas": 2},
        {**BASE, "replicas": 2},
    ),
    ("a null in a non-nullable field with a default becomes the default", {"replicas": None}, BASE),
    ("a null in a non-nullable field without a default is dropped", {"plain": None}, BASE),
    (
        "a null in a nullable field stays null, default or not",
        {"nullable": None, "kept": None},
        {**BASE, "nullable": None, "kept": None},
    ),
    (
        "array items are defaulted, and a null item takes the items default",
        {"ports": [{}, None, {"port": 8080}]},
        {**BASE, "ports": [{"port": 80}, {"port": 1}, {"port": 8080}]},
    ),
    (
        "additionalProperties values are defaulted",
        {"specs": {"Worker": {}, "Master": {"restart": "Always"}}},
        {**BASE, "specs": {"Worker": {"restart": "Never"}, "Master": {"restart": "Always"}}},
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"), [c[1:] for c in DEFAULT_CASES], ids=[c[0] for c in DEFAULT_CASES]
)
def test_apply_defaults(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = {"spec": spec}
    schema.apply_defaults(obj, DEFAULTED)
    assert obj == {"spec": expected}


def test_defaults_are_copied_not_shared() -> None:
    first, second = {"spec": {}}, {"spec": {}}
    schema.apply_defaults(first, DEFAULTED)
    schema.apply_defaults(second, DEFAULTED)
    first["spec"]["policy"]["mode"] = "changed"
    assert second["spec"]["policy"] == {"mode": "All"}
    assert DEFAULTED["properties"]["spec"]["properties"]["policy"]["default"] == {}


def test_defaults_need_the_parent_object() -> None:
    obj: dict[str, Any] = {}
    schema.apply_defaults(obj, DEFAULTED)
    assert obj == {}


def test_pytorchjob_run_policy_suspend_defaults_to_false() -> None:
    job = {"spec": {"runPolicy": {}, "pytorchReplicaSpecs": {}}}
    schema.apply_defaults(job, crdvalidation.version_schema(CRDS["PyTorchJob"], "v1"))
    assert job["spec"]["runPolicy"] == {"suspend": False}


# --- validation --------------------------------------------------------------------------

VALIDATE_CASES = [
    ("a valid object has no causes", cr(mode="a", name="ab", port="http"), []),
    (
        "a string where an integer belongs is a type error naming the JSON type sent",
        cr(replicas="x"),
        [
            type_invalid(
                "spec.replicas",
                '"string": spec.replicas in body must be of type integer: "string"',
            )
        ],
    ),
    (
        "a fraction is a number, not an integer",
        cr(replicas=1.5),
        [
            type_invalid(
                "spec.replicas", '"number": spec.replicas in body must be of type integer: "number"'
            )
        ],
    ),
    ("an integral float is an integer", cr(replicas=2.0), []),
    (
        "maximum",
        cr(replicas=11),
        [invalid("spec.replicas", "11: spec.replicas in body should be less than or equal to 10")],
    ),
    (
        "minimum",
        cr(replicas=-1),
        [
            invalid(
                "spec.replicas", "-1: spec.replicas in body should be greater than or equal to 0"
            )
        ],
    ),
    (
        "a float bound prints as Go prints a float64",
        cr(ratio=2e6),
        [invalid("spec.ratio", "2e+06: spec.ratio in body should be less than or equal to 1e+06")],
    ),
    ("int32 bounds are not checked, as kube strips the int32 format", cr(count=2**40), []),
    (
        "a value outside the enum lists the supported values",
        cr(mode="c"),
        [
            cause(
                "spec.mode",
                "FieldValueNotSupported",
                'Unsupported value: "c": supported values: "a", "b"',
            )
        ],
    ),
    (
        "maxLength is a too-long error that omits the value",
        cr(name="abcdefg"),
        [cause("spec.name", "FieldValueTooLong", "Too long: may not be longer than 5")],
    ),
    (
        "minLength",
        cr(name="a"),
        [invalid("spec.name", '"a": spec.name in body should be at least 2 chars long')],
    ),
    (
        "pattern",
        cr(name="AB"),
        [invalid("spec.name", "\"AB\": spec.name in body should match '^[a-z]+$'")],
    ),
    (
        "a missing required field",
        {**cr(), "spec": {}},
        [cause("spec.replicas", "FieldValueRequired", "Required value")],
    ),
    (
        "boolean",
        cr(flag="yes"),
        [
            type_invalid(
                "spec.flag", '"string": spec.flag in body must be of type boolean: "string"'
            )
        ],
    ),
    ("int-or-string takes an integer", cr(port=80), []),
    (
        "int-or-string refuses anything else",
        cr(port=True),
        [
            type_invalid(
                "spec.port",
                '"boolean": spec.port in body must be of type integer,string: "boolean"',
            )
        ],
    ),
    ("a nullable field takes null", cr(note=None), []),
    (
        "null in a non-nullable enum field fails the type and the enum",
        cr(mode=None),
        [
            type_invalid("spec.mode", '"null": spec.mode in body must be of type string: "null"'),
            cause(
                "spec.mode",
                "FieldValueNotSupported",
                'Unsupported value: null: supported values: "a", "b"',
            ),
        ],
    ),
    (
        "a string format kube checks",
        cr(when="yesterday"),
        [
            type_invalid(
                "spec.when", '"yesterday": spec.when in body must be of type date-time: "yesterday"'
            )
        ],
    ),
    ("an RFC 3339 date-time", cr(when="2024-05-01T10:00:00Z"), []),
    (
        "maxItems is too many",
        cr(tags=["a", "b", "c"]),
        [cause("spec.tags", "FieldValueTooMany", "Too many: 3: must have at most 2 items")],
    ),
    (
        "minItems",
        cr(tags=[]),
        [invalid("spec.tags", "0: spec.tags in body should have at least 1 items")],
    ),
    (
        "a set list may not repeat an item",
        cr(tags=["a", "a"]),
        [cause("spec.tags[1]", "FieldValueDuplicate", 'Duplicate value: "a"')],
    ),
    (
        "a map list may not repeat a key",
        cr(ports=[{"name": "a"}, {"name": "a", "port": 2}]),
        [
            cause(
                "spec.ports[1]",
                "FieldValueDuplicate",
                'Duplicate value: map[string]interface {}{"name":"a"}',
            )
        ],
    ),
    (
        "required inside array items has the index in its path",
        cr(ports=[{"port": 1}]),
        [cause("spec.ports[0].name", "FieldValueRequired", "Required value")],
    ),
    (
        "maxProperties is too many",
        cr(labels={"a": "1", "b": "2", "c": "3"}),
        [cause("spec.labels", "FieldValueTooMany", "Too many: 3: must have at most 2 items")],
    ),
    (
        "additionalProperties values are validated under their key",
        cr(labels={"a": 1}),
        [
            type_invalid(
                "spec.labels.a",
                '"integer": spec.labels.a in body must be of type string: "integer"',
            )
        ],
    ),
    (
        "known fields inside preserve-unknown-fields are validated",
        cr(template={"known": {"a": 1}, "other": 1}),
        [
            type_invalid(
                "spec.template.known.a",
                '"integer": spec.template.known.a in body must be of type string: "integer"',
            )
        ],
    ),
    (
        "an object where one belongs",
        {**cr(), "spec": "x"},
        [type_invalid("spec", '"string": spec in body must be of type object: "string"')],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in VALIDATE_CASES], ids=[c[0] for c in VALIDATE_CASES]
)
def test_validate(obj: dict[str, Any], expected: list[dict[str, str]]) -> None:
    assert schemavalidation.validate(obj, SCHEMA) == expected


def test_validate_with_a_path_prefixes_fields_as_for_a_status_update() -> None:
    status_schema = {"type": "object", "properties": {"phase": {"type": "string"}}}
    assert schemavalidation.validate({"phase": 1}, status_schema, path="status") == [
        type_invalid("status.phase", '"integer": phase in body must be of type string: "integer"')
    ]


RATCHET_CASES = [
    (
        "an invalid value left unchanged by an update is accepted",
        cr(name="AB", mode="a"),
        cr(name="AB", mode="b"),
        [],
    ),
    (
        "an invalid value introduced by an update is refused",
        cr(name="ab"),
        cr(name="AB"),
        [invalid("spec.name", "\"AB\": spec.name in body should match '^[a-z]+$'")],
    ),
    (
        "an invalid value changed into another invalid value is refused",
        cr(name="AB"),
        cr(name="CD"),
        [invalid("spec.name", "\"CD\": spec.name in body should match '^[a-z]+$'")],
    ),
    (
        "map-list items are correlated by key, not position",
        cr(ports=[{"name": "x", "port": "bad"}, {"name": "y", "port": 1}]),
        cr(ports=[{"name": "y", "port": 2}, {"name": "x", "port": "bad"}]),
        [],
    ),
    (
        "atomic list items are not correlated, so an unchanged bad item in a changed list fails",
        {**cr(), "spec": {"replicas": 1, "tags": ["a", 1]}},
        {**cr(), "spec": {"replicas": 1, "tags": ["b", 1]}},
        [
            type_invalid(
                "spec.tags[1]", '"integer": spec.tags[1] in body must be of type string: "integer"'
            )
        ],
    ),
    (
        "an object with unknown preserved fields never counts as unchanged, as upstream",
        {**cr(), "spec": {"template": {"x": 1}}},
        {**cr(), "spec": {"template": {"x": 1}}},
        [cause("spec.replicas", "FieldValueRequired", "Required value")],
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"), [c[1:] for c in RATCHET_CASES], ids=[c[0] for c in RATCHET_CASES]
)
def test_updates_ratchet(
    old: dict[str, Any], new: dict[str, Any], expected: list[dict[str, str]]
) -> None:
    assert schemavalidation.validate(new, SCHEMA, old) == expected


RULES = copy.deepcopy(SCHEMA)
RULES["properties"]["spec"]["properties"]["queue"] = {
    "type": "string",
    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "queue is immutable"}],
}
RULES["properties"]["spec"]["properties"]["ref"] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
}
RULES["properties"]["spec"]["properties"]["rules"] = {
    "type": "string",
    "x-kubernetes-validations": [{"rule": "self.size() > 1", "message": "not evaluated here"}],
}
SKIPPED = invalid(
    "<nil>",
    '"null": some validation rules were not checked because the object was invalid; '
    "correct the existing errors to complete validation",
)

TRANSITION_CASES = [
    (
        "changing an immutable field is refused, the value shown being its type",
        cr(queue="a"),
        cr(queue="b"),
        [invalid("spec.queue", '"string": queue is immutable')],
    ),
    ("setting an immutable field that was unset is allowed", cr(), cr(queue="b"), []),
    ("leaving it as it was is allowed", cr(queue="a"), cr(queue="a"), []),
    (
        "a rule without a message reports the rule",
        cr(ref={"name": "a"}),
        cr(ref={"name": "b"}),
        [invalid("spec.ref", '"object": failed rule: self == oldSelf')],
    ),
    ("other CEL rules are not evaluated", cr(rules="x"), cr(rules="y"), []),
    (
        "with a blocking error, rules are not run and kube says so",
        cr(queue="a"),
        cr(queue="b", replicas="x"),
        [
            type_invalid(
                "spec.replicas", '"string": spec.replicas in body must be of type integer: "string"'
            ),
            SKIPPED,
        ],
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [c[1:] for c in TRANSITION_CASES],
    ids=[c[0] for c in TRANSITION_CASES],
)
def test_transition_rules(
    old: dict[str, Any], new: dict[str, Any], expected: list[dict[str, str]]
) -> None:
    assert schemavalidation.validate(new, RULES, old) == expected


def test_a_create_with_a_blocking_error_says_rules_were_not_checked() -> None:
    assert schemavalidation.validate(cr(mode="c"), RULES)[-1] == SKIPPED


def test_a_create_never_checks_transition_rules() -> None:
    assert schemavalidation.validate(cr(queue="a"), RULES) == []


def test_pytorchjob_queue_is_immutable_with_kubes_message() -> None:
    crd_schema = crdvalidation.version_schema(CRDS["PyTorchJob"], "v1")

    def job(queue: str) -> dict[str, Any]:
        run_policy = {"schedulingPolicy": {"queue": queue}}
        return {
            "spec": {"runPolicy": run_policy, "pytorchReplicaSpecs": {"Master": {"replicas": 1}}}
        }

    assert schemavalidation.validate(job("b"), crd_schema, job("a")) == [
        invalid(
            "spec.runPolicy.schedulingPolicy.queue",
            '"string": spec.runPolicy.schedulingPolicy.queue is immutable',
        )
    ]


# --- CRDs --------------------------------------------------------------------------------


def widget_crd(**changes: Any) -> dict[str, Any]:
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(SCHEMA)},
                }
            ],
        },
    }
    for path, value in changes.items():
        target = crd
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value
    return crd


def test_every_kubetrain_crd_is_accepted() -> None:
    assert {name: crdvalidation.crd_problems(crd) for name, crd in CRDS.items()} == {
        name: [] for name in CRDS
    }


ROOT = "spec.versions[0].schema.openAPIV3Schema"
DNS1123_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

CRD_CASES = [
    ("a well-formed CRD has no problems", widget_crd(), []),
    (
        "the name must be plural.group",
        widget_crd(metadata={"name": "gadgets.example.com"}),
        [
            invalid(
                "metadata.name", '"gadgets.example.com": must be spec.names.plural+"."+spec.group'
            )
        ],
    ),
    (
        "the group needs a dot",
        widget_crd(metadata={"name": "widgets.example"}, spec__group="example"),
        [invalid("spec.group", '"example": should be a domain with at least one dot')],
    ),
    (
        "the scope is Cluster or Namespaced",
        widget_crd(spec__scope="Global"),
        [
            cause(
                "spec.scope",
                "FieldValueNotSupported",
                'Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
            )
        ],
    ),
    (
        "the plural is required",
        widget_crd(metadata={"name": ".example.com"}, spec__names={"kind": "Widget"}),
        [
            invalid("metadata.name", '".example.com": ' + DNS1123_SUBDOMAIN),
            cause("spec.names.plural", "FieldValueRequired", "Required value"),
        ],
    ),
    (
        "kind and listKind may not be the same",
        widget_crd(spec__names={"plural": "widgets", "kind": "Widget", "listKind": "Widget"}),
        [invalid("spec.names.listKind", '"Widget": kind and listKind may not be the same')],
    ),
    (
        "exactly one version is the storage version",
        widget_crd(spec__versions__0__storage=False),
        ["spec.versions: must have exactly one version marked as storage version"],
    ),
    (
        "every version needs a schema",
        widget_crd(spec__versions__0__schema={}),
        [cause(f"{ROOT}", "FieldValueRequired", "Required value: schemas are required")],
    ),
    (
        "every field has a type",
        widget_crd(
            spec__versions__0__schema={
                "openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {}}}}
            }
        ),
        [
            cause(
                f"{ROOT}.properties[spec].type",
                "FieldValueRequired",
                "Required value: must not be empty for specified object fields",
            )
        ],
    ),
    (
        "an array needs items, and items need a type",
        widget_crd(
            spec__versions__0__schema={
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {"a": {"type": "array"}, "b": {"type": "array", "items": {}}},
                }
            }
        ),
        [
            cause(
                f"{ROOT}.properties[a].items",
                "FieldValueRequired",
                "Required value: must be specified",
            ),
            cause(
                f"{ROOT}.properties[b].items.type",
                "FieldValueRequired",
                "Required value: must not be empty for specified array items",
            ),
        ],
    ),
    (
        "the root is an object without additionalProperties",
        widget_crd(
            spec__versions__0__schema={
                "openAPIV3Schema": {"type": "object", "additionalProperties": {"type": "string"}}
            }
        ),
        [
            cause(
                f"{ROOT}.additionalProperties",
                "FieldValueForbidden",
                "Forbidden: must not be used at the root",
            )
        ],
    ),
    (
        "properties and additionalProperties exclude each other",
        widget_crd(
            spec__versions__0__schema={
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "m": {
                            "type": "object",
                            "properties": {"a": {"type": "string"}},
                            "additionalProperties": {"type": "string"},
                        }
                    },
                }
            }
        ),
        [
            cause(
                f"{ROOT}.properties[m].additionalProperties",
                "FieldValueForbidden",
                "Forbidden: additionalProperties and properties are mutual exclusive",
            )
        ],
    ),
    (
        "root metadata may only restrict name and generateName",
        widget_crd(
            spec__versions__0__schema={
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
                    },
                }
            }
        ),
        [
            cause(
                f"{ROOT}.properties[metadata]",
                "FieldValueForbidden",
                "Forbidden: must not specify anything other than name and generateName, "
                "but metadata is implicitly specified",
            )
        ],
    ),
    (
        "a map list needs its keys",
        widget_crd(
            spec__versions__0__schema={
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "l": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "items": {"type": "object"},
                        }
                    },
                }
            }
        ),
        [
            cause(
                f"{ROOT}.properties[l].x-kubernetes-list-map-keys",
                "FieldValueRequired",
                "Required value: must not be empty if x-kubernetes-list-type is map",
            )
        ],
    ),
    (
        "a printer column type is one kube knows",
        widget_crd(
            spec__versions__0__additionalPrinterColumns=[
                {"name": "X", "type": "text", "jsonPath": ".spec.x"}
            ]
        ),
        [
            invalid(
                "spec.versions[0].additionalPrinterColumns[0].type",
                '"text": must be one of boolean,date,integer,number,string',
            )
        ],
    ),
    (
        "the scale subresource reads replicas under .spec",
        widget_crd(
            spec__versions__0__subresources={
                "scale": {"specReplicasPath": ".replicas", "statusReplicasPath": ".status.replicas"}
            }
        ),
        [
            invalid(
                "spec.versions[0].subresources.scale.specReplicasPath",
                '".replicas": should be a json path under .spec',
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("crd", "expected"), [c[1:] for c in CRD_CASES], ids=[c[0] for c in CRD_CASES]
)
def test_crd_problems(crd: dict[str, Any], expected: list[Any]) -> None:
    problems = crdvalidation.crd_problems(crd)
    if expected and isinstance(expected[0], str):  # only the detail; the value is a Go dump
        assert [f"{p['field']}: {p['message'].rsplit(': ', 1)[-1]}" for p in problems] == expected
    else:
        assert problems == expected


def test_crd_defaults_fill_singular_list_kind_and_conversion() -> None:
    crd = widget_crd()
    crdvalidation.apply_crd_defaults(crd)
    assert crd["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert crd["spec"]["conversion"] == {"strategy": "None"}


def test_versions_served_and_stored() -> None:
    versions = [
        {"name": name, "served": name != "v3", "storage": name == "v1beta1"}
        for name in ("v1alpha1", "foo", "v1", "v1beta1", "v2beta1", "v3")
    ]
    crd = {"spec": {"versions": versions}}
    assert crdvalidation.served_versions(crd) == ["v1", "v2beta1", "v1beta1", "v1alpha1", "foo"]
    assert crdvalidation.storage_version(crd) == "v1beta1"
    assert crdvalidation.version_schema(crd, "v1") is None
    assert crdvalidation.version_schema(widget_crd(), "v1") == SCHEMA
    assert crdvalidation.version_schema(widget_crd(), "v2") is None
    with pytest.raises(ValueError, match="no storage version"):
        crdvalidation.storage_version({"spec": {"versions": []}})


def test_trainjob_serves_both_versions_preferring_v2alpha1() -> None:
    assert crdvalidation.served_versions(CRDS["TrainJob"]) == ["v2alpha1", "v1alpha1"]


# --- Go rendering ------------------------------------------------------------------------

GO_CASES = [
    ("a float64 with an exponent of 6 or more uses e form", gofmt.go_float(1e6), "1e+06"),
    ("a float64 below that prints in full", gofmt.go_float(123456.0), "123456"),
    ("an integral float64 has no decimal point", gofmt.go_float(100.0), "100"),
    ("small float64s switch to e form below 1e-4", gofmt.go_float(0.00001), "1e-05"),
    (
        "encoding/json switches at 1e21 and trims the exponent",
        gofmt.go_json([1.0, 1e21, 1e-7]),
        "[1,1e+21,1e-7]",
    ),
    (
        "encoding/json sorts keys and escapes HTML",
        gofmt.go_json({"b": "<", "a": True}),
        '{"a":true,"b":"\\u003c"}',
    ),
    ("strconv.Quote escapes like Go", gofmt.go_quote('tab\t"q"\x01é'), '"tab\\t\\"q\\"\\x01é"'),
    (
        "an object prints as Go's %#v of a map",
        gofmt.go_value({"b": [1, None], "a": "x"}),
        'map[string]interface {}{"a":"x", "b":[]interface {}{1, interface {}(nil)}}',
    ),
]


@pytest.mark.parametrize(
    ("actual", "expected"), [c[1:] for c in GO_CASES], ids=[c[0] for c in GO_CASES]
)
def test_go_rendering(actual: str, expected: str) -> None:
    assert actual == expected
