"""The structural schemas of Kubernetes types, made from the pinned OpenAPI definitions:
kubetrain/api/_k8sopenapi.py is what tools/k8s_openapi.py writes (the test on a real
kube-apiserver, tests/realk8s/test_k8s_openapi.py, checks that its definitions are that
server's), and each rule of the conversion holds where a CRD shows it."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from kubetrain.api import _jobset, _k8sopenapi, _k8sschemas

GENERATOR = Path(__file__).parents[3] / "tools" / "k8s_openapi.py"
REGENERATE = "make k8s-openapi (KUBEBUILDER_ASSETS names kube-apiserver and etcd)"
CORE = "io.k8s.api.core.v1."


def generator() -> dict[str, Any]:
    return runpy.run_path(str(GENERATOR))


def kept() -> dict[str, Any]:
    return json.loads(_k8sopenapi.DEFINITIONS)


def schema_of(name: str, **options: Any) -> dict[str, Any]:
    return _k8sschemas.structural(_k8sschemas.ref(name), **options)


# --- the kept definitions ---------------------------------------------------------------


def test_the_kept_module_is_what_the_generator_writes() -> None:
    text = Path(_k8sopenapi.__file__).read_text(encoding="utf-8")
    tool = generator()
    assert text == tool["render"](_k8sopenapi.KUBERNETES, kept()), f"regenerate: {REGENERATE}"


def test_the_kept_definitions_are_the_generators_roots_and_all_they_reference() -> None:
    tool = generator()
    assert tuple(_k8sopenapi.ROOTS) == tool["ROOTS"], f"the roots changed: {REGENERATE}"
    assert tuple(_k8sopenapi.SOURCES) == tool["SOURCES"], f"the sources changed: {REGENERATE}"
    assert tool["trim"](kept(), tool["ROOTS"]) == kept()


def test_the_definitions_name_the_kubernetes_version_they_come_from() -> None:
    assert _k8sopenapi.KUBERNETES == "v1.28.7"


def test_trimming_keeps_what_a_root_references_and_nothing_else() -> None:
    trim = generator()["trim"]
    definitions = {
        "a": {"properties": {"b": {"allOf": [{"$ref": "#/components/schemas/b"}]}}},
        "b": {"items": {"$ref": "#/components/schemas/c"}},
        "c": {"type": "string"},
        "unused": {"type": "string"},
    }
    assert list(trim(definitions, ["a"])) == ["a", "b", "c"]
    with pytest.raises(KeyError, match="missing"):
        trim({"a": {"$ref": "#/components/schemas/missing"}}, ["a"])


def test_every_reference_resolves() -> None:
    definitions = _k8sschemas.definitions()
    for name in [*_k8sopenapi.ROOTS, *_jobset.DEFINITIONS]:
        schema_of(name)  # raises on a reference to nothing
    assert set(definitions) >= set(_k8sopenapi.ROOTS)


# --- the conversion -----------------------------------------------------------------------


def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("properties", {}).values():
        found += walk(child)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            found += walk(node[key])
    return found


def test_refs_are_inlined_and_only_crd_keywords_remain() -> None:
    allowed = {
        "description",
        "type",
        "format",
        "properties",
        "items",
        "additionalProperties",
        "required",
        "default",
        "pattern",
        "minimum",
        "maxItems",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-int-or-string",
        "x-kubernetes-validations",
    }
    for root in (*_k8sopenapi.ROOTS, _jobset.PREFIX + "JobSetSpec"):
        for node in walk(schema_of(root)):
            assert set(node) <= allowed, set(node) - allowed


def test_int_or_string_and_quantities_take_integers_and_strings() -> None:
    port = schema_of(CORE + "HTTPGetAction")["properties"]["port"]
    assert port == {
        "description": port["description"],
        "x-kubernetes-int-or-string": True,
    }
    limits = schema_of(CORE + "ResourceRequirements")["properties"]["limits"]
    assert limits["additionalProperties"] == {
        "pattern": _k8sschemas.QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }


@pytest.mark.parametrize(
    ("quantity", "ok"),
    [("2", True), ("500m", True), ("16Gi", True), ("1e3", True), ("lots", False), ("2 Gi", False)],
    ids=lambda v: repr(v),
)
def test_the_quantity_pattern_is_kubernetes_grammar(quantity: str, ok: bool) -> None:
    import re

    assert bool(re.search(_k8sschemas.QUANTITY_PATTERN, quantity)) is ok


def test_a_templates_metadata_is_the_part_a_crd_may_carry() -> None:
    metadata = schema_of(CORE + "PodTemplateSpec")["properties"]["metadata"]
    assert metadata == {
        "description": "Standard object's metadata.",
        "type": "object",
        "properties": {
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
    }


def test_list_types_stay_as_kubernetes_declares_them() -> None:
    container = schema_of(CORE + "Container")["properties"]
    assert container["ports"]["x-kubernetes-list-type"] == "map"
    assert container["ports"]["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert container["ports"]["items"]["properties"]["protocol"]["default"] == "TCP"
    # 1.28 declares containers with a strategic-merge key only, which a CRD cannot hold
    pod = schema_of(CORE + "PodSpec")["properties"]
    assert "x-kubernetes-list-type" not in pod["containers"]
    assert kept()[CORE + "PodSpec"]["properties"]["containers"]["x-kubernetes-patch-merge-key"]


def test_atomic_structs_keep_their_map_type() -> None:
    field_ref = schema_of(CORE + "EnvVarSource")["properties"]["fieldRef"]
    assert field_ref["x-kubernetes-map-type"] == "atomic"
    assert field_ref["required"] == ["fieldPath"]


def test_zero_defaults_are_dropped_and_real_ones_kept() -> None:
    env = schema_of(CORE + "EnvVar")
    assert kept()[CORE + "EnvVar"]["properties"]["name"]["default"] == ""
    assert "default" not in env["properties"]["name"]
    defaults = [n["default"] for n in walk(schema_of(CORE + "PodTemplateSpec")) if "default" in n]
    assert set(defaults) == {"TCP"}


def test_the_fields_description_wins_and_descriptions_are_cut_at_a_full_stop() -> None:
    spec = schema_of(CORE + "PodTemplateSpec")["properties"]["spec"]
    assert spec["description"].startswith("Specification of the desired behavior of the pod.")
    assert len(spec["description"]) <= _k8sschemas.DESCRIPTION_LIMIT
    assert spec["description"].endswith(".")
    full = schema_of(CORE + "PodTemplateSpec", limit=10**6)["properties"]["spec"]
    assert len(full["description"]) > len(spec["description"])
    bare = schema_of(CORE + "PodTemplateSpec", limit=0)
    assert all("description" not in node for node in walk(bare))


def test_a_keyword_the_generator_does_not_know_is_an_error() -> None:
    with pytest.raises(ValueError, match="x-kubernetes-new-thing"):
        _k8sschemas.structural({"type": "string", "x-kubernetes-new-thing": True})


def test_each_call_returns_a_fresh_copy() -> None:
    first = schema_of(CORE + "EnvVar")
    first["properties"].clear()
    assert schema_of(CORE + "EnvVar")["properties"]


def test_jobset_holds_kubernetes_job_templates_and_claims() -> None:
    spec = schema_of(_jobset.PREFIX + "JobSetSpec")["properties"]
    job = spec["replicatedJobs"]["items"]["properties"]["template"]
    pod = job["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
    assert pod["properties"] == schema_of(CORE + "PodSpec")["properties"]
    claims = spec["volumeClaimPolicies"]["items"]["properties"]["templates"]["items"]
    claim = schema_of(CORE + "PersistentVolumeClaimSpec")
    assert claims["properties"]["spec"]["properties"] == claim["properties"]
