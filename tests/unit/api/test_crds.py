"""The CRDs built from the API models: structural, complete, current, with upstream's rules.

A real API server prunes every field its CRD schema does not name, so a model field missing
from the schema is data silently lost; these tests walk the models to make that impossible.
They also check what a real API server would refuse to register (a non-structural node, a
transition rule inside an atomic list), and that valid jobs conform to the schemas under a
small structural checker written here, independently of the generator.
"""

from __future__ import annotations

import json
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import pytest
import yaml
from pydantic import BaseModel, Field, StrictBool, StrictInt, StrictStr

from kubetrain import api
from kubetrain.api import _crds, _k8sschemas, _kubeobjects, _trainer, _v1
from kubetrain.api._model import NonNegInt32
from tests.builders import job

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "crds"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: the CRD files are megabytes
ETCD_REQUEST_LIMIT = 1572864  # etcd's default --max-request-bytes
CRDS = api.crds()
BY_KIND = {crd["spec"]["names"]["kind"]: crd for crd in CRDS}
MODELS: dict[str, type[BaseModel]] = {
    **{k.KIND: k for k in _v1.V1_KINDS},
    **{k.KIND: k for k in _trainer.TRAINER_KINDS},
}
JOB_KINDS = [k.KIND for k in _v1.V1_KINDS] + ["TrainJob"]
RUNTIME_KINDS = ["TrainingRuntime", "ClusterTrainingRuntime"]
SCALED = ("PyTorchJob", "PaddleJob", "JAXJob")
WIRE_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def schema_of(kind: str, version: int = 0) -> dict[str, Any]:
    return BY_KIND[kind]["spec"]["versions"][version]["schema"]["openAPIV3Schema"]


def nodes(schema: dict[str, Any], path: str = "") -> typing.Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node with its path (``a.b[].c{}``)."""
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from nodes(child, f"{path}.{name}")
    if "items" in schema:
        yield from nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}{{}}")


def every_node() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (crd["spec"]["names"]["kind"], path, node)
        for crd in CRDS
        for version in crd["spec"]["versions"]
        for path, node in nodes(version["schema"]["openAPIV3Schema"])
    ]


def at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The node at a dotted property path (``spec.runPolicy.suspend``)."""
    node = schema
    for name in path.split("."):
        node = node["items"] if name == "[]" else node["properties"][name]
    return node


# --- a small structural checker, written apart from the generator --------------------------


def violations(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """What a structural API server would reject or prune in ``value`` (CEL not evaluated)."""
    where = path or "<root>"
    if path == "metadata":
        return []  # object metadata is the API server's own, whatever the CRD says
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, int | str) and not isinstance(value, bool)
        return [] if ok else [f"{where}: must be an integer or a string"]
    kind = schema.get("type")
    if kind is None:
        return []
    python = {
        "object": dict,
        "array": list,
        "string": str,
        "integer": int,
        "number": int | float,
        "boolean": bool,
    }[kind]
    if not isinstance(value, python) or (kind in ("integer", "number") and value is True):
        return [f"{where}: must be of type {kind}"]
    if isinstance(value, bool) and kind != "boolean":
        return [f"{where}: must be of type {kind}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: Unsupported value: {value!r}")
    if kind == "integer":
        low, high = INT_RANGES.get(schema.get("format", ""), (None, None))
        lows = [v for v in (low, schema.get("minimum")) if v is not None]
        highs = [v for v in (high, schema.get("maximum")) if v is not None]
        if (lows and value < max(lows)) or (highs and value > min(highs)):
            errors.append(f"{where}: {value} out of range")
    if kind == "string":
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 1e9):
            errors.append(f"{where}: bad length")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: does not match {schema['pattern']}")
    if kind == "array":
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", 1e9):
            errors.append(f"{where}: bad number of items")
        for i, item in enumerate(value):
            errors += violations(item, schema.get("items", {}), f"{path}[{i}]")
        if schema.get("x-kubernetes-list-type") == "map":
            keys = [
                tuple(item.get(k) for k in schema["x-kubernetes-list-map-keys"]) for item in value
            ]
            if len(keys) != len(set(keys)):
                errors.append(f"{where}: duplicate map-list keys")
    if kind == "object":
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            child = f"{path}.{key}" if path else key
            if key in properties:
                errors += violations(item, properties[key], child)
            elif isinstance(extra, dict):
                errors += violations(item, extra, child)
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{child}: unknown field (would be pruned)")
        errors += [
            f"{path + '.' if path else ''}{name}: Required value"
            for name in schema.get("required", [])
            if name not in value
        ]
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{where}: too few properties")
    return errors


# --- in step with deploy/crds -------------------------------------------------------------


def test_deploy_crds_match_the_models() -> None:
    names = [api.crd_filename(crd) for crd in CRDS]
    stale = "deploy/crds is out of date with the API models: run `make crds`"
    assert sorted(p.name for p in DEPLOY.glob("*.yaml")) == sorted(
        [*names, "kustomization.yaml"]
    ), stale
    for name, crd in zip(names, CRDS, strict=True):
        assert yaml.load((DEPLOY / name).read_text(), Loader=LOADER) == crd, f"{name}: {stale}"
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert kustomization == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": names,
    }, stale


def test_every_crd_is_well_below_the_size_kubernetes_stores() -> None:
    """etcd takes at most 1.5 MiB in one request. Applied server-side (as deploy/README.md
    says), a CRD is stored as it is; a client-side apply would also copy it into an
    annotation, which holds at most 256 KiB: too little for the trainer CRDs, as upstream's."""
    for crd in CRDS:
        size = len(json.dumps(crd, separators=(",", ":")))
        assert size < ETCD_REQUEST_LIMIT / 2, f"{crd['metadata']['name']}: {size} bytes"


def test_crds_come_in_a_stable_order_with_upstream_file_names() -> None:
    assert [api.crd_filename(crd) for crd in CRDS] == [
        "kubeflow.org_tfjobs.yaml",
        "kubeflow.org_pytorchjobs.yaml",
        "kubeflow.org_xgboostjobs.yaml",
        "kubeflow.org_paddlejobs.yaml",
        "kubeflow.org_jaxjobs.yaml",
        "kubeflow.org_mpijobs.yaml",
        "kubeflow.org_mxjobs.yaml",
        "trainer.kubeflow.org_trainjobs.yaml",
        "trainer.kubeflow.org_trainingruntimes.yaml",
        "trainer.kubeflow.org_clustertrainingruntimes.yaml",
    ]


def test_each_call_returns_fresh_dicts() -> None:
    first = api.crds()
    first[0]["spec"]["names"]["kind"] = "Changed"
    assert api.crds()[0]["spec"]["names"]["kind"] == "TFJob"


# --- names, scope, versions, subresources, columns ----------------------------------------


@pytest.mark.parametrize("kind", list(MODELS), ids=lambda k: f"{k} is named as upstream names it")
def test_names_and_scope(kind: str) -> None:
    model = MODELS[kind]
    crd = BY_KIND[kind]
    plural = model.PLURAL  # type: ignore[attr-defined]
    group = _v1.GROUP if kind in MODELS and issubclass(model, _v1.JobKind) else _trainer.GROUP
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == f"{plural}.{group}"
    assert crd["spec"]["group"] == group
    assert crd["spec"]["names"] == {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    expected_scope = "Cluster" if kind == "ClusterTrainingRuntime" else "Namespaced"
    assert crd["spec"]["scope"] == expected_scope


@pytest.mark.parametrize(
    "kind", [k.KIND for k in _v1.V1_KINDS], ids=lambda k: f"{k} serves and stores v1 only"
)
def test_v1_kinds_serve_and_store_v1_only(kind: str) -> None:
    versions = BY_KIND[kind]["spec"]["versions"]
    assert [(v["name"], v["served"], v["storage"]) for v in versions] == [("v1", True, True)]


@pytest.mark.parametrize(
    "kind", ["TrainJob", *RUNTIME_KINDS], ids=lambda k: f"{k} serves v2alpha1 like v1alpha1"
)
def test_trainer_kinds_store_v1alpha1_and_serve_v2alpha1_with_the_same_schema(kind: str) -> None:
    first, second = BY_KIND[kind]["spec"]["versions"]
    assert (first["name"], first["served"], first["storage"]) == ("v1alpha1", True, True)
    assert (second["name"], second["served"], second["storage"]) == ("v2alpha1", True, False)
    assert {k: v for k, v in second.items() if k not in ("name", "storage")} == {
        k: v for k, v in first.items() if k not in ("name", "storage")
    }


STATE = {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"}
AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
PROGRESS = {
    "name": "Progress %",
    "type": "integer",
    "jsonPath": ".status.trainerStatus.progressPercentage",
}
ETA = {
    "name": "ETA",
    "type": "integer",
    "description": "estimated seconds of training left",
    "jsonPath": ".status.trainerStatus.estimatedRemainingSeconds",
}


COLUMNS = [
    *[(k, [STATE, AGE]) for k in JOB_KINDS if k not in ("MPIJob", "TrainJob")],
    ("TrainJob", [STATE, PROGRESS, ETA, AGE]),  # kubetrain: what kubetrain.report sent
    ("MPIJob", [AGE, STATE]),  # upstream's mpijobs CRD lists Age first
    *[(k, [AGE]) for k in RUNTIME_KINDS],
]


@pytest.mark.parametrize(
    ("kind", "columns"),
    COLUMNS,
    ids=[f"{k} shows {' then '.join(c['name'] for c in cols)}" for k, cols in COLUMNS],
)
def test_printer_columns(kind: str, columns: list[dict[str, str]]) -> None:
    for version in BY_KIND[kind]["spec"]["versions"]:
        assert version["additionalPrinterColumns"] == columns


@pytest.mark.parametrize(
    "kind",
    list(MODELS),
    ids=lambda k: f"{k} {'has a status subresource' if k in JOB_KINDS else 'has no status'}",
)
def test_jobs_have_a_status_subresource_and_runtimes_none(kind: str) -> None:
    for version in BY_KIND[kind]["spec"]["versions"]:
        if kind in JOB_KINDS:
            assert version["subresources"]["status"] == {}
        else:
            assert "subresources" not in version
            assert "status" not in version["schema"]["openAPIV3Schema"]["properties"]


def resolve(schema: dict[str, Any], json_path: str) -> dict[str, Any]:
    """The node a ``.spec.x.Key.y`` path reaches; map keys go through additionalProperties."""
    node = schema
    for name in json_path.lstrip(".").split("."):
        if name in node.get("properties", {}):
            node = node["properties"][name]
        else:
            assert isinstance(node.get("additionalProperties"), dict), f"{json_path}: {name}"
            node = node["additionalProperties"]
    return node


@pytest.mark.parametrize(
    "kind",
    [k.KIND for k in _v1.V1_KINDS],
    ids=lambda k: f"{k} {'scales its workers' if k in SCALED else 'has no scale subresource'}",
)
def test_scale_subresource_points_at_real_worker_fields(kind: str) -> None:
    version = BY_KIND[kind]["spec"]["versions"][0]
    scale = version["subresources"].get("scale")
    if kind not in SCALED:
        assert scale is None
        return
    field = MODELS[kind].REPLICA_FIELD  # type: ignore[attr-defined]
    assert scale == {
        "specReplicasPath": f".spec.{field}.Worker.replicas",
        "statusReplicasPath": ".status.replicaStatuses.Worker.active",
        "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
    }
    schema = version["schema"]["openAPIV3Schema"]
    assert resolve(schema, scale["specReplicasPath"])["type"] == "integer"
    assert resolve(schema, scale["statusReplicasPath"])["type"] == "integer"
    assert resolve(schema, scale["labelSelectorPath"])["type"] == "string"


# --- structural -----------------------------------------------------------------------------


def test_every_node_has_a_type_or_is_int_or_string_or_free_form() -> None:
    for kind, path, node in every_node():
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node, f"{kind}{path}"
            continue
        if "type" not in node:
            assert node.get("x-kubernetes-preserve-unknown-fields") is True, f"{kind}{path}"
            continue
        assert node["type"] in TYPES, f"{kind}{path}"


def test_no_refs_or_combinators_anywhere() -> None:
    for kind, path, node in every_node():
        for keyword in ("$ref", "$defs", "definitions", "anyOf", "oneOf", "allOf", "nullable"):
            assert keyword not in node, f"{kind}{path}: {keyword}"


def test_property_names_are_wire_names() -> None:
    for kind, path, node in every_node():
        for name in node.get("properties", {}):
            assert WIRE_NAME.match(name), f"{kind}{path}.{name}"


def test_object_nodes_are_well_formed() -> None:
    for kind, path, node in every_node():
        if node.get("type") != "object":
            assert "properties" not in node, f"{kind}{path}"
            assert "additionalProperties" not in node, f"{kind}{path}"
            continue
        assert not ("properties" in node and "additionalProperties" in node), f"{kind}{path}"
        properties = node.get("properties", {})
        for name in node.get("required", []):
            assert name in properties, f"{kind}{path}: required {name} is not a property"


def test_arrays_have_items_and_map_lists_have_required_scalar_keys() -> None:
    """A map-list key must be required or defaulted (a port's protocol defaults to TCP)."""
    for kind, path, node in every_node():
        if node.get("type") != "array":
            continue
        assert "items" in node, f"{kind}{path}"
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "map":
            items = node["items"]
            for key in node["x-kubernetes-list-map-keys"]:
                required = key in items.get("required", [])
                assert required or "default" in items["properties"][key], f"{kind}{path}: {key}"
                assert items["properties"][key]["type"] in ("string", "integer"), path
        elif list_type == "set":
            assert node["items"]["type"] in ("string", "integer"), f"{kind}{path}"


def test_enums_and_defaults_conform_to_their_own_node() -> None:
    for kind, path, node in every_node():
        bare = {k: v for k, v in node.items() if k not in ("default", "enum")}
        for value in node.get("enum", []):
            assert violations(value, bare) == [], f"{kind}{path}: enum {value!r}"
        if "default" in node:
            assert violations(node["default"], node) == [], f"{kind}{path}: default"


# JobSet types its coordinator's indexes as Go ints, which its CRD writes without a format.
UNSIZED_INTEGERS = (
    ".spec.template.spec.coordinator.jobIndex",
    ".spec.template.spec.coordinator.podIndex",
)


def test_integers_carry_a_kubernetes_format() -> None:
    for kind, path, node in every_node():
        if node.get("type") == "integer" and path not in UNSIZED_INTEGERS:
            assert node.get("format") in ("int32", "int64"), f"{kind}{path}"


def test_transition_rules_sit_only_where_old_values_can_be_correlated() -> None:
    """A rule on ``oldSelf`` below an atomic list or a set makes an API server refuse the CRD."""

    def walk(node: dict[str, Any], path: str, correlatable: bool) -> None:
        for rule in node.get("x-kubernetes-validations", []):
            if "oldSelf" in rule["rule"]:
                assert correlatable, f"{path}: {rule['rule']}"
        for name, child in node.get("properties", {}).items():
            walk(child, f"{path}.{name}", correlatable)
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}{{}}", correlatable)
        if "items" in node:
            is_map = node.get("x-kubernetes-list-type") == "map"
            walk(node["items"], f"{path}[]", correlatable and is_map)

    for crd in CRDS:
        for version in crd["spec"]["versions"]:
            walk(version["schema"]["openAPIV3Schema"], crd["spec"]["names"]["kind"], True)


SELF_PATH = re.compile(r"\b(?:self|oldSelf)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)(\s*\()?")


def test_cel_rules_refer_only_to_fields_in_the_schema() -> None:
    for kind, path, node in every_node():
        for rule in node.get("x-kubernetes-validations", []):
            assert set(rule) == {"rule", "message"}, f"{kind}{path}"
            assert rule["rule"].count("(") == rule["rule"].count(")"), rule["rule"]
            for match in SELF_PATH.finditer(rule["rule"]):
                names = match.group(1).lstrip(".").split(".")
                if match.group(2):  # a method call such as self.exists(...)
                    names = names[:-1]
                target = node
                for name in names:
                    if target.get("type") == "object" and path == "" and name == "metadata":
                        target = {"type": "object", "properties": {"name": {}, "generateName": {}}}
                        continue
                    assert name in target.get("properties", {}), f"{kind}{path}: {rule['rule']}"
                    target = target["properties"][name]


# --- every model field is in the schema -----------------------------------------------------


def assert_covers(
    annotation: Any, node: dict[str, Any], where: str, kube: dict[str, Any] | None = None
) -> None:
    """Walk a model annotation and its schema node together; every field must be present, and
    a Kubernetes object kubetrain keeps as written has the schema of its Kubernetes type."""
    origin = typing.get_origin(annotation)
    if kube is not None and _kubeobjects.is_kube_object(annotation):
        expected = _k8sschemas.structural(kube)
        assert node["type"] == expected["type"], where
        assert node.get("properties") == expected.get("properties"), where
        assert node.get("additionalProperties") == expected.get("additionalProperties"), where
    elif origin is Annotated:
        assert_covers(typing.get_args(annotation)[0], node, where, kube)
    elif origin in (Union, types.UnionType):
        for member in typing.get_args(annotation):
            if member is not type(None):
                assert_covers(member, node, where, kube)
    elif origin is list:
        assert node["type"] == "array", where
        assert_covers(typing.get_args(annotation)[0], node["items"], f"{where}[]", kube)
    elif origin is dict:
        value = typing.get_args(annotation)[1]
        assert node["type"] == "object", where
        if value is Any:
            assert node.get("x-kubernetes-preserve-unknown-fields") is True, where
        else:
            assert_covers(value, node["additionalProperties"], f"{where}{{}}", kube)
    elif origin is Literal:
        assert node["enum"] == list(typing.get_args(annotation)), where
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        assert node["type"] == "object", where
        for name, field in annotation.model_fields.items():
            wire = field.alias or name
            assert wire in node.get("properties", {}), f"{where}.{wire} is missing from the CRD"
            kube = _kubeobjects.FIELDS.get((annotation, name))
            assert_covers(field.annotation, node["properties"][wire], f"{where}.{wire}", kube)
        assert set(node.get("properties", {})) == {
            f.alias or n for n, f in annotation.model_fields.items()
        }, f"{where}: the CRD has fields the model does not"


@pytest.mark.parametrize("kind", list(MODELS), ids=lambda k: f"every {k} field is in its CRD")
def test_every_model_field_is_in_the_schema(kind: str) -> None:
    model = MODELS[kind]
    for version in range(len(BY_KIND[kind]["spec"]["versions"])):
        schema = schema_of(kind, version)
        wire = {f.alias or n: (n, f) for n, f in model.model_fields.items()}
        assert list(schema["properties"]) == list(wire)
        for name, (_, field) in wire.items():
            if name in ("apiVersion", "kind", "metadata"):
                assert schema["properties"][name] == {
                    "type": "object" if name == "metadata" else "string"
                }
                continue
            assert_covers(field.annotation, schema["properties"][name], f"{kind}.{name}")


def test_property_order_follows_the_model() -> None:
    spec = at(schema_of("PyTorchJob"), "spec")
    assert list(spec["properties"]) == [
        "runPolicy",
        "elasticPolicy",
        "nprocPerNode",
        "pytorchReplicaSpecs",
    ]


# --- types ----------------------------------------------------------------------------------

TYPE_CASES = [
    ("an Int32 field", "PyTorchJob", "spec.runPolicy.backoffLimit", {"format": "int32"}),
    ("an Int64 field", "PyTorchJob", "spec.runPolicy.activeDeadlineSeconds", {"format": "int64"}),
    ("a bool field", "TFJob", "spec.enableDynamicWorker", {"type": "boolean"}),
    (
        "a Literal with an empty member",
        "TFJob",
        "spec.successPolicy",
        {"type": "string", "enum": ["", "AllWorkers"]},
    ),
    (
        "an int-or-string field",
        "TrainJob",
        "spec.trainer.numProcPerNode",
        {"x-kubernetes-int-or-string": True},
    ),
    (
        "a pod template",
        "PyTorchJob",
        "spec.pytorchReplicaSpecs",
        {"type": "object", "additionalProperties": {"type": "object"}},
    ),
    (
        "a list of env vars, merged by name",
        "TrainJob",
        "spec.trainer.env",
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"]},
        },
    ),
    (
        "a resource list",
        "PyTorchJob",
        "spec.runPolicy.schedulingPolicy.minResources",
        {
            "type": "object",
            "additionalProperties": {
                "pattern": _k8sschemas.QUANTITY_PATTERN,
                "x-kubernetes-int-or-string": True,
            },
        },
    ),
    (
        "a string map",
        "TrainJob",
        "spec.labels",
        {"type": "object", "additionalProperties": {"type": "string"}},
    ),
    (
        "a JobSet's replicated jobs",
        "TrainingRuntime",
        "spec.template.spec.replicatedJobs",
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name", "template"]},
        },
    ),
]


@pytest.mark.parametrize(
    ("kind", "path", "expected"), [c[1:] for c in TYPE_CASES], ids=[c[0] for c in TYPE_CASES]
)
def test_types_map_to_structural_schemas(kind: str, path: str, expected: dict[str, Any]) -> None:
    node = at(schema_of(kind), path)
    for key, value in expected.items():
        if isinstance(value, dict):
            assert {k: node[key][k] for k in value} == value
        else:
            assert node[key] == value


ANNOTATION_CASES = [
    ("a non-negative int32", NonNegInt32, {"type": "integer", "format": "int32", "minimum": 0}),
    (
        "a bounded int",
        Annotated[StrictInt, Field(gt=0, lt=101)],
        {"type": "integer", "format": "int32", "minimum": 1, "maximum": 100},
    ),
    ("an int beyond int32", Annotated[StrictInt, Field(ge=0, le=2**40)], {"format": "int64"}),
    (
        "a short string",
        Annotated[StrictStr, Field(min_length=1, max_length=8)],
        {"type": "string", "minLength": 1, "maxLength": 8},
    ),
    (
        "a short list",
        Annotated[list[StrictStr], Field(max_length=3)],
        {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    ),
    ("an optional bool", StrictBool | None, {"type": "boolean"}),
    ("a bare Any", Any, {"x-kubernetes-preserve-unknown-fields": True}),
]


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [c[1:] for c in ANNOTATION_CASES],
    ids=[f"{c[0]} maps to its schema" for c in ANNOTATION_CASES],
)
def test_annotations_map_to_schemas(annotation: Any, expected: dict[str, Any]) -> None:
    schema = _crds._type_schema(annotation, "field")
    assert {k: schema.get(k) for k in expected} == expected


@pytest.mark.parametrize(
    "annotation",
    [tuple[str, str], int | bool, dict[int, str], Literal[1, 2]],
    ids=["a tuple", "an int-or-bool union", "a map with int keys", "an int Literal"],
)
def test_a_type_without_a_structural_schema_is_an_error_naming_the_field(annotation: Any) -> None:
    with pytest.raises(TypeError, match=r"^Model\.field: "):
        _crds._type_schema(annotation, "Model.field")


def test_int_bounds_appear_only_where_tighter_than_the_format() -> None:
    for kind, path, node in every_node():
        if node.get("format") in INT_RANGES:
            low, high = INT_RANGES[node["format"]]
            assert node.get("minimum", 0) > low, f"{kind}{path}"
            assert node.get("maximum", 0) < high, f"{kind}{path}"


def test_pod_templates_carry_the_pod_template_spec_schema() -> None:
    template = at(schema_of("TFJob"), "spec.tfReplicaSpecs")["additionalProperties"]
    assert template["properties"]["template"] == _k8sschemas.structural(
        _k8sschemas.ref("io.k8s.api.core.v1.PodTemplateSpec")
    )
    container = at(template, "template.spec.containers.[]")
    assert container["required"] == ["name"]
    assert "x-kubernetes-preserve-unknown-fields" not in container


def test_only_the_empty_ml_policies_keep_unknown_fields() -> None:
    """Everything else is pruned and refused as unknown by a real API server too."""
    kept = {
        path for _, path, node in every_node() if node.get("x-kubernetes-preserve-unknown-fields")
    }
    assert kept == {".spec.mlPolicy.jax", ".spec.mlPolicy.xgboost"}


def test_every_kubernetes_object_a_model_keeps_has_its_type_named() -> None:
    """A ``KubeObject`` field left out of _kubeobjects.FIELDS would keep anything, unchecked."""
    for model in MODELS.values():
        for name, field in model.model_fields.items():
            if name == "metadata":
                continue  # an object's own metadata is the API server's
            assert not _unnamed(field.annotation, model, name), f"{model.__name__}.{name}"


def _unnamed(
    tp: Any, model: type[BaseModel], name: str, seen: frozenset[Any] = frozenset()
) -> bool:
    """Whether ``tp`` (model.name's annotation) holds a KubeObject with no type named."""
    origin = typing.get_origin(tp)
    if _kubeobjects.is_kube_object(tp):
        return (model, name) not in _kubeobjects.FIELDS
    if origin in (Annotated, Union, types.UnionType, list, dict):
        return any(_unnamed(arg, model, name, seen) for arg in typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, BaseModel) and tp not in seen:
        return any(_unnamed(f.annotation, tp, n, seen | {tp}) for n, f in tp.model_fields.items())
    return False


# --- upstream's rules, defaults and requirements -------------------------------------------

QUEUE_MSG = "spec.runPolicy.schedulingPolicy.queue is immutable"
RULES = [
    *[
        (f"{k.KIND} queue is immutable", k.KIND, "spec.runPolicy.schedulingPolicy.queue", QUEUE_MSG)
        for k in _v1.V1_KINDS
    ],
    (
        "a TrainJob name is an RFC 1035 label",
        "TrainJob",
        "",
        "metadata.name must match RFC 1035 DNS label format",
    ),
    (
        "a TrainJob name has at most 63 characters",
        "TrainJob",
        "",
        "metadata.name must be no more than 63 characters",
    ),
    ("runtimeRef is immutable", "TrainJob", "spec.runtimeRef", "field is immutable"),
    ("initializer is immutable", "TrainJob", "spec.initializer", "field is immutable"),
    ("trainer is immutable", "TrainJob", "spec.trainer", "field is immutable"),
    (
        "activeDeadlineSeconds is immutable",
        "TrainJob",
        "spec.activeDeadlineSeconds",
        "field is immutable",
    ),
    (
        "managedBy names a known controller",
        "TrainJob",
        "spec.managedBy",
        "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue "
        "if set",
    ),
    ("managedBy is immutable", "TrainJob", "spec.managedBy", "field is immutable"),
    (
        "trainer numProcPerNode is at least 1",
        "TrainJob",
        "spec.trainer.numProcPerNode",
        "numProcPerNode must be greater than or equal to 1",
    ),
    (
        "a dataset storageUri is a URI",
        "TrainJob",
        "spec.initializer.dataset.storageUri",
        "storageUri may be empty, or it must be a valid URI (scheme://...)",
    ),
    (
        "a model storageUri is a URI",
        "TrainJob",
        "spec.initializer.model.storageUri",
        "storageUri may be empty, or it must be a valid URI (scheme://...)",
    ),
    (
        "a runtime patch keeps its manager",
        "TrainJob",
        "spec.runtimePatches.[].manager",
        "field is immutable",
    ),
    (
        "trainerStatus carries lastUpdatedTime",
        "TrainJob",
        "status.trainerStatus",
        "lastUpdatedTime is required when trainerStatus is present",
    ),
    *[
        (
            f"{k} allows one ML policy",
            k,
            "spec.mlPolicy",
            "Only one of the policy can be configured",
        )
        for k in RUNTIME_KINDS
    ],
    (
        "numNodes and torch elastic exclude each other",
        "TrainingRuntime",
        "spec.mlPolicy",
        "numNodes should not be set if torch.elasticPolicy is configured",
    ),
    (
        "torch numProcPerNode is auto, cpu, gpu or positive",
        "ClusterTrainingRuntime",
        "spec.mlPolicy.torch.numProcPerNode",
        "NumProcPerNode must be equal to auto, cpu, gpu, or int value",
    ),
    (
        "mpi numProcPerNode is at least 1",
        "ClusterTrainingRuntime",
        "spec.mlPolicy.mpi.numProcPerNode",
        "NumProcPerNode in mpiPolicy must be >= 1",
    ),
    (
        "flux numProcPerNode is at least 1",
        "TrainingRuntime",
        "spec.mlPolicy.flux.numProcPerNode",
        "NumProcPerNode in fluxPolicy must be >= 1",
    ),
    (
        "env injection never targets the node container",
        "TrainingRuntime",
        "spec.mlPolicy.torch.envInjection.targets.[].containerNames",
        "containerNames must not include the main node container because PET_* envs are always "
        "injected into it",
    ),
]


def node_at(kind: str, path: str) -> dict[str, Any]:
    schema = schema_of(kind)
    return at(schema, path) if path else schema


@pytest.mark.parametrize(
    ("kind", "path", "message"), [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_upstream_cel_rules_are_present(kind: str, path: str, message: str) -> None:
    node = node_at(kind, path)
    messages = [rule["message"] for rule in node.get("x-kubernetes-validations", [])]
    assert message in messages


RUNTIME_DEFAULTS = [
    ("torch numProcPerNode", "spec.mlPolicy.torch.numProcPerNode", "auto"),
    ("mpi numProcPerNode", "spec.mlPolicy.mpi.numProcPerNode", 1),
    ("mpi implementation", "spec.mlPolicy.mpi.mpiImplementation", "OpenMPI"),
    ("mpi ssh mount path", "spec.mlPolicy.mpi.sshAuthMountPath", "/root/.ssh"),
    ("mpi launcher as node", "spec.mlPolicy.mpi.runLauncherAsNode", False),
    ("flux numProcPerNode", "spec.mlPolicy.flux.numProcPerNode", 1),
    ("coscheduling timeout", "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds", 60),
    ("volcano topology mode", "spec.podGroupPolicy.volcano.networkTopology.mode", "hard"),
    ("volcano tier", "spec.podGroupPolicy.volcano.networkTopology.highestTierAllowed", 1),
]
DEFAULTS = [
    *[
        (f"{k.KIND} runPolicy.suspend", k.KIND, "spec.runPolicy.suspend", False)
        for k in _v1.V1_KINDS
    ],
    ("TrainJob suspend", "TrainJob", "spec.suspend", False),
    (
        "TrainJob managedBy",
        "TrainJob",
        "spec.managedBy",
        "trainer.kubeflow.org/trainjob-controller",
    ),
    ("runtimeRef apiGroup", "TrainJob", "spec.runtimeRef.apiGroup", "trainer.kubeflow.org"),
    ("runtimeRef kind", "TrainJob", "spec.runtimeRef.kind", "ClusterTrainingRuntime"),
    *[
        (f"{k} {what}", k, path, value)
        for k in RUNTIME_KINDS
        for what, path, value in RUNTIME_DEFAULTS
    ],
]


@pytest.mark.parametrize(
    ("kind", "path", "default"), [d[1:] for d in DEFAULTS], ids=[d[0] for d in DEFAULTS]
)
def test_upstream_crd_defaults(kind: str, path: str, default: Any) -> None:
    assert node_at(kind, path)["default"] == default


# Defaults inside Kubernetes types, as Kubernetes' and JobSet's definitions declare them.
KUBERNETES_DEFAULTS = {
    "protocol": "TCP",  # a container port's
    "groupName": "default",  # a JobSet's replicated job's
    "replicas": 1,  # a JobSet's replicated job's
    "restartStrategy": "Recreate",  # a JobSet's failure policy's
    "whenDeleted": "Delete",  # a JobSet's volume claim retention
}


def test_no_defaults_beyond_upstream_ones() -> None:
    found = {
        (kind, path)
        for kind, path, node in every_node()
        if "default" in node and not inside_kubernetes_object(kind, path)
    }
    assert found == {(kind, f".{path}") for _, kind, path, _ in DEFAULTS}
    for kind, path, node in every_node():
        if "default" in node and inside_kubernetes_object(kind, path):
            field = re.split(r"[.\[\]{}]+", path.rstrip("[]{}"))[-1]
            assert node["default"] == KUBERNETES_DEFAULTS[field], f"{kind}{path}"


def inside_kubernetes_object(kind: str, path: str) -> bool:
    prefixes = [
        "." + "".join(s if s in ("[]", "{}") else f".{s}" for s in steps).lstrip(".")
        for steps, _ in _kubeobjects.places(MODELS[kind])
    ]
    return any(path.startswith(p) for p in prefixes)


REQUIRED = [
    *[(f"{k.KIND} needs its replica specs", k.KIND, "spec", k.REPLICA_FIELD) for k in _v1.V1_KINDS],
    ("an MXJob needs a jobMode", "MXJob", "spec", "jobMode"),
    ("a TrainJob needs a runtimeRef", "TrainJob", "spec", "runtimeRef"),
    ("a runtimeRef needs a name", "TrainJob", "spec.runtimeRef", "name"),
    ("a runtime patch needs a manager", "TrainJob", "spec.runtimePatches.[]", "manager"),
    ("a v1 condition needs a type", "PyTorchJob", "status.conditions.[]", "type"),
]


@pytest.mark.parametrize(
    ("kind", "path", "field"), [r[1:] for r in REQUIRED], ids=[r[0] for r in REQUIRED]
)
def test_upstream_required_fields(kind: str, path: str, field: str) -> None:
    assert field in node_at(kind, path)["required"]


def test_every_crd_only_fact_names_a_real_model_field() -> None:
    """A renamed field would otherwise silently lose its rule, default or requirement."""
    for model, name in _crds._FIELD_EXTRAS:
        assert name in model.model_fields, f"{model.__name__}.{name}"
    for model, names in _crds._REQUIRED.items():
        for name in names:
            assert name in model.model_fields, f"{model.__name__}.{name}"


def test_status_never_requires_what_the_model_may_leave_out() -> None:
    """The operator writes status; a stricter schema than the model would reject its writes."""
    condition = at(schema_of("TrainJob"), "status.conditions.[]")
    assert condition["required"] == ["type", "status"]
    assert "minProperties" not in at(schema_of("TrainJob"), "status")


# --- samples conform ------------------------------------------------------------------------

V1_SAMPLES = [
    job("TFJob").replica("Chief").replica("Worker", 2).doc(),
    job("PyTorchJob").replica("Master").replica("Worker", 2).doc(),
    job("XGBoostJob").replica("Master").replica("Worker", 2).doc(),
    job("PaddleJob").replica("Master").replica("Worker", 2).doc(),
    job("JAXJob").replica("Worker", 2).run_policy(suspend=True, backoffLimit=3).doc(),
    job("MPIJob").replica("Launcher").replica("Worker", 2).spec(slotsPerWorker=1).doc(),
    job("MXJob")
    .replica("Scheduler")
    .replica("Server")
    .replica("Worker")
    .spec(jobMode="MXTrain")
    .doc(),
]


@pytest.mark.parametrize("raw", V1_SAMPLES, ids=lambda raw: f"a valid {raw['kind']} conforms")
def test_valid_v1_jobs_conform_after_admission(raw: dict[str, Any]) -> None:
    verdict = api.review(raw)
    assert verdict.ok, verdict.messages()
    assert verdict.obj is not None
    assert violations(verdict.obj.to_dict(), schema_of(raw["kind"])) == []


TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "mnist", "namespace": "default"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {
            "image": "example/train:1",
            "command": ["torchrun", "train.py"],
            "numNodes": 2,
            "numProcPerNode": "auto",
            "resourcesPerNode": {"limits": {"cpu": "2", "nvidia.com/gpu": 1}},
            "env": [{"name": "EPOCHS", "value": "3"}],
        },
        "initializer": {"dataset": {"storageUri": "hf://datasets/mnist"}},
        "runtimePatches": [
            {
                "manager": "example.com/tool",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "node",
                                    "template": {
                                        "spec": {
                                            "template": {"spec": {"nodeSelector": {"pool": "gpu"}}}
                                        }
                                    },
                                }
                            ]
                        }
                    }
                },
            }
        ],
    },
}
RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
        "podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": 120}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}},
                        },
                    }
                ]
            }
        },
    },
}


@pytest.mark.parametrize(
    "raw", [TRAINJOB, RUNTIME], ids=lambda raw: f"a {raw['kind']} parsed by the model conforms"
)
def test_trainer_objects_conform(raw: dict[str, Any]) -> None:
    obj, errors = api.parse(raw)
    assert errors == []
    assert obj is not None
    for version in range(2):
        assert violations(obj.to_dict(), schema_of(raw["kind"], version)) == []


def pytorch(**spec: Any) -> dict[str, Any]:
    return job("PyTorchJob").replica("Master").replica("Worker", 2).spec(**spec).doc()


def with_worker(**fields: Any) -> dict[str, Any]:
    doc = pytorch()
    doc["spec"]["pytorchReplicaSpecs"]["Worker"].update(fields)
    return doc


NONCONFORMING = [
    (
        "a string replica count",
        with_worker(replicas="2"),
        "spec.pytorchReplicaSpecs.Worker.replicas: must be of type integer",
    ),
    (
        "an unknown spec field",
        pytorch(replicaz=1),
        "spec.replicaz: unknown field (would be pruned)",
    ),
    (
        "an unsupported restart policy",
        with_worker(restartPolicy="Sometimes"),
        "spec.pytorchReplicaSpecs.Worker.restartPolicy: Unsupported value: 'Sometimes'",
    ),
    (
        "a replica count beyond int32",
        with_worker(replicas=2**31),
        "spec.pytorchReplicaSpecs.Worker.replicas: 2147483648 out of range",
    ),
    (
        "a missing replica map",
        {**pytorch(), "spec": {"runPolicy": {}}},
        "spec.pytorchReplicaSpecs: Required value",
    ),
    (
        "a boolean as nprocPerNode",
        pytorch(nprocPerNode=True),
        "spec.nprocPerNode: must be of type string",
    ),
]


@pytest.mark.parametrize(
    ("raw", "problem"), [c[1:] for c in NONCONFORMING], ids=[c[0] for c in NONCONFORMING]
)
def test_nonconforming_jobs_are_caught_by_the_schema(raw: dict[str, Any], problem: str) -> None:
    assert problem in violations(raw, schema_of("PyTorchJob"))


def test_a_trainjob_with_a_negative_node_count_does_not_conform() -> None:
    raw = {**TRAINJOB, "spec": {"runtimeRef": {"name": "x"}, "trainer": {"numNodes": -1}}}
    assert violations(raw, schema_of("TrainJob")) == ["spec.trainer.numNodes: -1 out of range"]


def test_a_trainjob_without_a_runtime_ref_does_not_conform() -> None:
    raw = {**TRAINJOB, "spec": {"trainer": {"numNodes": 1}}}
    assert violations(raw, schema_of("TrainJob")) == ["spec.runtimeRef: Required value"]


def test_the_trainer_rule_keeps_every_field_but_num_nodes_as_it_was() -> None:
    """numNodes is left to admission, which allows it to change on an elastic runtime only."""
    trainer = at(schema_of("TrainJob"), "spec.trainer")
    (rule,) = trainer["x-kubernetes-validations"]
    assert rule["message"] == "field is immutable"
    compared = set(re.findall(r"self\.(\w+) == oldSelf\.\1", rule["rule"]))
    assert compared == set(trainer["properties"]) - {"numNodes"}
    for name in compared:
        assert f"has(self.{name}) == has(oldSelf.{name})" in rule["rule"]
