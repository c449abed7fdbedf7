"""The checks kube-apiserver makes on a CustomResourceDefinition before it serves it
(apiextensions-apiserver's ``ValidateCustomResourceDefinition``), the defaults it applies
first, and the small questions about a CRD's versions (which schema, which are served, which
is stored).

:func:`crd_problems` says what is wrong with a CRD: its names, versions, and each version's
schema (structural, within the OpenAPI subset kube accepts, list types, the scale
subresource's paths, printer columns), every problem at once, in kube's words. What a CRD's
schema does to custom resources is :mod:`schema`'s.

Pure: it returns data, does no I/O, keeps no state, and never raises for bad input, which it
reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from kubetrain.local.apiserver import fielderrors

Schema = dict[str, Any]
Cause = dict[str, str]


def version_schema(crd: dict[str, Any], version: str) -> Schema | None:
    """The ``openAPIV3Schema`` of ``version``, or None if the version or schema is absent."""
    for entry in crd.get("spec", {}).get("versions") or []:
        if isinstance(entry, dict) and entry.get("name") == version:
            schema = (entry.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else None
    return None


_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _version_priority(name: str) -> tuple[int, ...]:
    """``version.CompareKubeAwareVersionStrings`` as a sort key: v2, v1, v1beta2, v1beta1,
    v1alpha1, then names that do not look like Kubernetes versions, alphabetically."""
    match = _KUBE_VERSION.match(name)
    if not match:
        return (3, 0, 0)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor)


def served_versions(crd: dict[str, Any]) -> list[str]:
    """Served version names, preferred first, in the order kube's discovery lists them."""
    names = [
        str(v.get("name"))
        for v in crd.get("spec", {}).get("versions") or []
        if isinstance(v, dict) and v.get("served")
    ]
    return sorted(names, key=lambda n: (_version_priority(n), n))


def storage_version(crd: dict[str, Any]) -> str:
    """The name of the version marked ``storage: true``.

    Raises ValueError when there is none: :func:`crd_problems` rejects such a CRD, so a
    stored CRD always has one.
    """
    for entry in crd.get("spec", {}).get("versions") or []:
        if isinstance(entry, dict) and entry.get("storage"):
            return str(entry.get("name"))
    raise ValueError("CustomResourceDefinition has no storage version")


def apply_crd_defaults(crd: dict[str, Any]) -> None:
    """The defaults kube-apiserver gives a CRD (``apiextensions/v1`` defaulting):
    ``names.singular`` (the lowercased kind), ``names.listKind`` (kind + ``List``) and
    ``conversion.strategy: None``."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind")
        if not names.get("singular") and isinstance(kind, str):
            names["singular"] = kind.lower()
        if not names.get("listKind") and isinstance(kind, str) and kind:
            names["listKind"] = kind + "List"
    if not isinstance(spec.get("conversion"), dict):
        spec["conversion"] = {"strategy": "None"}


_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
_COLUMN_TYPES = "boolean,date,integer,number,string"
_COLUMN_FORMATS = "byte,date,date-time,double,float,int32,int64,password"


def _dns1035(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1035.match(value):
        errors.append(_DNS1035_MESSAGE)
    return errors


def _dns1123_subdomain(value: str) -> list[str]:
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append(_DNS1123_SUBDOMAIN_MESSAGE)
    return errors


def crd_problems(crd: dict[str, Any]) -> list[Cause]:
    """The checks kube-apiserver makes on a CRD that matter for serving it, as causes.

    Run after :func:`apply_crd_defaults` semantics (a missing singular or listKind is
    defaulted, not reported). Checks the name (``<plural>.<group>``), group, scope, names,
    versions (unique, DNS-1035, exactly one storage version, a schema each), that every
    schema is structural (typed nodes, items for arrays, no additionalProperties beside
    properties or at the root, list-type rules, only name/generateName under root metadata),
    printer columns and scale subresource paths. Messages are kube's
    (``apiextensions-apiserver/pkg/apis/apiextensions/validation``); CEL rules are not
    compiled, and default values are not validated against their schemas.
    """
    crd = _defaulted_names(crd)
    causes: list[Cause] = []
    metadata = crd.get("metadata") if isinstance(crd.get("metadata"), dict) else {}
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    group = str(spec.get("group") or "")
    plural = str(names.get("plural") or "")

    name = str(metadata.get("name") or "")
    if not name:
        causes.append(fielderrors.required("metadata.name", "name or generateName is required"))
    else:
        for message in _dns1123_subdomain(name):
            causes.append(fielderrors.invalid("metadata.name", name, message))
        if name != f"{plural}.{group}":
            causes.append(
                fielderrors.invalid(
                    "metadata.name", name, 'must be spec.names.plural+"."+spec.group'
                )
            )

    if not group:
        causes.append(fielderrors.required("spec.group"))
    elif errors := _dns1123_subdomain(group):
        causes.append(fielderrors.invalid("spec.group", group, ",".join(errors)))
    elif len(group.split(".")) < 2:
        causes.append(
            fielderrors.invalid("spec.group", group, "should be a domain with at least one dot")
        )

    scope = spec.get("scope") or ""
    if not scope:
        causes.append(fielderrors.required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        causes.append(fielderrors.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))

    versions = [v if isinstance(v, dict) else {} for v in spec.get("versions") or []]
    for i, version in enumerate(versions):
        if not isinstance((version.get("schema") or {}).get("openAPIV3Schema"), dict):
            causes.append(
                fielderrors.required(
                    f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"
                )
            )
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        vname = str(version.get("name") or "")
        unique = unique and vname not in seen
        seen.add(vname)
        if errors := _dns1035(vname):
            causes.append(fielderrors.invalid(f"spec.versions[{i}].name", vname, ",".join(errors)))
        causes.extend(_version_problems(version, f"spec.versions[{i}]"))
    if not unique:
        causes.append(
            fielderrors.invalid("spec.versions", versions, "must contain unique version names")
        )
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            fielderrors.invalid(
                "spec.versions", versions, "must have exactly one version marked as storage version"
            )
        )

    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            causes.append(fielderrors.required(f"spec.names.{key}"))
    causes.extend(_names_problems(names))
    return causes


def _defaulted_names(crd: dict[str, Any]) -> dict[str, Any]:
    """``crd`` after :func:`apply_crd_defaults`, copying only what that changes: a CRD that
    embeds pod templates holds megabytes of schema, which the checks only read."""
    crd = dict(crd)
    if isinstance(crd.get("spec"), dict):
        spec = crd["spec"] = dict(crd["spec"])
        if isinstance(spec.get("names"), dict):
            spec["names"] = dict(spec["names"])
    apply_crd_defaults(crd)
    return crd


def _names_problems(names: dict[str, Any]) -> list[Cause]:
    causes = []
    for key in ("plural", "singular"):
        value = str(names.get(key) or "")
        if value and (errors := _dns1035(value)):
            causes.append(fielderrors.invalid(f"spec.names.{key}", value, ",".join(errors)))
    for key in ("kind", "listKind"):
        value = str(names.get(key) or "")
        if value and (errors := _dns1035(value.lower())):
            detail = "may have mixed case, but should otherwise match: " + ",".join(errors)
            causes.append(fielderrors.invalid(f"spec.names.{key}", value, detail))
    for i, short in enumerate(names.get("shortNames") or []):
        if errors := _dns1035(str(short)):
            causes.append(
                fielderrors.invalid(f"spec.names.shortNames[{i}]", short, ",".join(errors))
            )
    kind = names.get("kind")
    if kind and kind == names.get("listKind"):
        causes.append(
            fielderrors.invalid(
                "spec.names.listKind", kind, "kind and listKind may not be the same"
            )
        )
    for i, category in enumerate(names.get("categories") or []):
        if errors := _dns1035(str(category)):
            causes.append(
                fielderrors.invalid(f"spec.names.categories[{i}]", category, ",".join(errors))
            )
    return causes


def _version_problems(version: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    subresources = version.get("subresources") or {}
    if isinstance(schema, dict):
        base = f"{path}.schema.openAPIV3Schema"
        if "status" in subresources and schema.get("type", "object") != "object":
            detail = (
                'only "object" is allowed as the type at the root of the schema '
                "if the status subresource is enabled"
            )
            causes.append(
                fielderrors.invalid(
                    f"{path}.schema.openAPIV3Schema.type", schema.get("type"), detail
                )
            )
        if schema.get("nullable") is True:
            causes.append(
                fielderrors.forbidden(f"{base}.nullable", "nullable cannot be true at the root")
            )
        structural = _structural_problems(schema, base, "root")
        causes.extend(sorted(structural, key=lambda c: f"{c['field']}: {c['message']}"))
        causes.extend(_openapi_problems(schema, base))
    scale = subresources.get("scale")
    if isinstance(scale, dict):
        causes.extend(_scale_problems(scale, f"{path}.subresources"))
    for i, column in enumerate(version.get("additionalPrinterColumns") or []):
        causes.extend(
            _column_problems(
                column if isinstance(column, dict) else {}, f"{path}.additionalPrinterColumns[{i}]"
            )
        )
    return causes


def _walk(schema: Schema, path: str, level: str) -> Iterator[tuple[Schema, str, str]]:
    """Every node of a schema with its CRD path and level (root, field, item)."""
    yield schema, path, level
    for key, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict):
            yield from _walk(prop, f"{path}.properties[{key}]", "field")
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _walk(items, f"{path}.items", "item")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _walk(extra, f"{path}.additionalProperties", "field")


def _structural_problems(schema: Schema, base: str, level: str) -> list[Cause]:
    """``ValidateStructural``: what makes a schema not structural."""
    causes: list[Cause] = []
    for node, path, lvl in _walk(schema, base, level):
        kind = node.get("type") or ""
        embedded = node.get("x-kubernetes-embedded-resource") is True
        if kind == "array" and not isinstance(node.get("items"), dict):
            causes.append(fielderrors.required(f"{path}.items", "must be specified"))
        if "additionalProperties" in node and lvl == "root":
            causes.append(
                fielderrors.forbidden(
                    f"{path}.additionalProperties", "must not be used at the root"
                )
            )
        if node.get("x-kubernetes-int-or-string") is True:
            if node.get("x-kubernetes-preserve-unknown-fields") is True:
                causes.append(
                    fielderrors.invalid(
                        f"{path}.x-kubernetes-preserve-unknown-fields",
                        True,
                        "must be false if x-kubernetes-int-or-string is true",
                    )
                )
            if embedded:
                causes.append(
                    fielderrors.invalid(
                        f"{path}.x-kubernetes-embedded-resource",
                        True,
                        "must be false if x-kubernetes-int-or-string is true",
                    )
                )
        if embedded and kind != "object":
            detail = "must be object if x-kubernetes-embedded-resource is true"
            causes.append(
                fielderrors.invalid(f"{path}.type", kind, detail)
                if kind
                else fielderrors.required(f"{path}.type", detail)
            )
        elif (
            not kind
            and node.get("x-kubernetes-int-or-string") is not True
            and node.get("x-kubernetes-preserve-unknown-fields") is not True
        ):
            detail = {
                "root": "must not be empty at the root",
                "item": "must not be empty for specified array items",
                "field": "must not be empty for specified object fields",
            }[lvl]
            causes.append(fielderrors.required(f"{path}.type", detail))
        if embedded and "additionalProperties" in node:
            causes.append(
                fielderrors.forbidden(
                    f"{path}.additionalProperties",
                    "must not be used if x-kubernetes-embedded-resource is set",
                )
            )
        if lvl == "root" and kind and kind != "object":
            causes.append(fielderrors.invalid(f"{path}.type", kind, "must be object at the root"))
        check_meta = lvl == "root" or embedded
        props = node.get("properties") or {}
        for meta in ("kind", "apiVersion"):
            if (
                check_meta
                and isinstance(props.get(meta), dict)
                and props[meta].get("type") != "string"
            ):
                causes.append(
                    fielderrors.invalid(
                        f"{path}.properties[{meta}].type",
                        props[meta].get("type", ""),
                        "must be string",
                    )
                )
        metadata = props.get("metadata")
        if isinstance(metadata, dict):
            if check_meta and metadata.get("type") != "object":
                causes.append(
                    fielderrors.invalid(
                        f"{path}.properties[metadata].type",
                        metadata.get("type", ""),
                        "must be object",
                    )
                )
            if lvl == "root" and not _plain_metadata(metadata):
                causes.append(
                    fielderrors.forbidden(
                        f"{path}.properties[metadata]",
                        "must not specify anything other than name and generateName, "
                        "but metadata is implicitly specified",
                    )
                )
        if embedded and node.get("x-kubernetes-preserve-unknown-fields") is not True and not props:
            causes.append(
                fielderrors.required(
                    f"{path}.properties",
                    "must not be empty if x-kubernetes-embedded-resource is true "
                    "without x-kubernetes-preserve-unknown-fields",
                )
            )
    return causes


def _plain_metadata(schema: Schema) -> bool:
    """Root metadata may only say ``type: object`` and restrict name and generateName."""
    rest = {k: v for k, v in schema.items() if k not in ("type", "default", "description")}
    props = rest.pop("properties", None) or {}
    return not rest and set(props) <= {"name", "generateName"}


_UNSUPPORTED = {
    "id": "id is not supported",
    "additionalItems": "additionalItems is not supported",
    "patternProperties": "patternProperties is not supported",
    "definitions": "definitions is not supported",
    "dependencies": "dependencies is not supported",
    "$ref": "$ref is not supported",
}


def _openapi_problems(schema: Schema, base: str) -> list[Cause]:
    """``ValidateCustomResourceDefinitionOpenAPISchema``: the schema-language checks."""
    causes: list[Cause] = []
    for node, path, _ in _walk(schema, base, "root"):
        kind = node.get("type")
        if kind and kind not in _TYPES:
            causes.append(fielderrors.not_supported(f"{path}.type", kind, _TYPES))
        if kind == "null":
            causes.append(
                fielderrors.forbidden(
                    f"{path}.type", "type cannot be set to null, use nullable as an alternative"
                )
            )
        for key, detail in _UNSUPPORTED.items():
            if key in node:
                causes.append(fielderrors.forbidden(f"{path}.{key}", detail))
        if isinstance(node.get("items"), list):
            causes.append(
                fielderrors.forbidden(
                    f"{path}.items", "items must be a schema object and not an array"
                )
            )
        if node.get("uniqueItems") is True:
            causes.append(
                fielderrors.forbidden(
                    f"{path}.uniqueItems",
                    "uniqueItems cannot be set to true "
                    "since the runtime complexity becomes quadratic",
                )
            )
        extra = node.get("additionalProperties")
        if (
            "additionalProperties" in node
            and node.get("properties")
            and (extra is False or isinstance(extra, dict))
        ):
            causes.append(
                fielderrors.forbidden(
                    f"{path}.additionalProperties",
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        if node.get("x-kubernetes-preserve-unknown-fields") is False:
            causes.append(
                fielderrors.invalid(
                    f"{path}.x-kubernetes-preserve-unknown-fields",
                    False,
                    "must be true or undefined",
                )
            )
        causes.extend(_list_schema_problems(node, path))
    return causes


def _list_schema_problems(node: Schema, path: str) -> list[Cause]:
    causes: list[Cause] = []
    kind = node.get("type") or ""
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys") or []
    if list_type is not None and kind != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        causes.append(
            fielderrors.invalid(f"{path}.type", kind, detail)
            if kind
            else fielderrors.required(f"{path}.type", detail)
        )
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        causes.append(
            fielderrors.not_supported(
                f"{path}.x-kubernetes-list-type", list_type, ["atomic", "set", "map"]
            )
        )
    if keys and list_type is None:
        causes.append(
            fielderrors.required(
                f"{path}.x-kubernetes-list-type",
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )
        )
    elif keys and list_type != "map":
        causes.append(
            fielderrors.invalid(
                f"{path}.x-kubernetes-list-type",
                list_type,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )
        )
    if list_type == "map":
        items = node.get("items")
        if not keys:
            causes.append(
                fielderrors.required(
                    f"{path}.x-kubernetes-list-map-keys",
                    "must not be empty if x-kubernetes-list-type is map",
                )
            )
        if items is None:
            causes.append(
                fielderrors.required(
                    f"{path}.items", "must have a schema if x-kubernetes-list-type is map"
                )
            )
        elif isinstance(items, dict) and items.get("type") != "object":
            causes.append(
                fielderrors.invalid(
                    f"{path}.items.type",
                    items.get("type", ""),
                    "must be object if parent array's x-kubernetes-list-type is map",
                )
            )
        elif isinstance(items, dict):
            props = items.get("properties") or {}
            for key in keys:
                if key not in props:
                    causes.append(
                        fielderrors.invalid(
                            f"{path}.x-kubernetes-list-map-keys",
                            keys,
                            "entries must all be names of item properties",
                        )
                    )
            if len(set(keys)) != len(keys):
                causes.append(
                    fielderrors.invalid(
                        f"{path}.x-kubernetes-list-map-keys",
                        keys,
                        "must not contain duplicate entries",
                    )
                )
    return causes


def _simple_json_path(value: Any, path: str) -> list[Cause]:
    text = str(value or "")
    if not text:
        return [fielderrors.invalid(path, text, "must not be empty")]
    if not text.startswith("."):
        return [fielderrors.invalid(path, text, "must be a simple json path starting with .")]
    return []


def _scale_problems(scale: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key, prefix, where in (
        ("specReplicasPath", (".spec.",), "should be a json path under .spec"),
        ("statusReplicasPath", (".status.",), "should be a json path under .status"),
    ):
        value = scale.get(key)
        if not value:
            causes.append(fielderrors.required(f"{path}.scale.{key}"))
        elif errors := _simple_json_path(value, f"{path}.scale.{key}"):
            causes.extend(errors)
        elif not str(value).startswith(prefix):
            causes.append(fielderrors.invalid(f"{path}.scale.{key}", value, where))
    selector = scale.get("labelSelectorPath")
    if selector:
        if errors := _simple_json_path(selector, f"{path}.scale.labelSelectorPath"):
            causes.extend(errors)
        elif not str(selector).startswith((".spec.", ".status.")):
            causes.append(
                fielderrors.invalid(
                    f"{path}.scale.labelSelectorPath",
                    selector,
                    "should be a json path under either .spec or .status",
                )
            )
    return causes


def _column_problems(column: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not column.get("name"):
        causes.append(fielderrors.required(f"{path}.name"))
    kind = column.get("type")
    if not kind:
        causes.append(fielderrors.required(f"{path}.type", f"must be one of {_COLUMN_TYPES}"))
    elif kind not in _COLUMN_TYPES.split(","):
        causes.append(fielderrors.invalid(f"{path}.type", kind, f"must be one of {_COLUMN_TYPES}"))
    fmt = column.get("format")
    if fmt and fmt not in _COLUMN_FORMATS.split(","):
        causes.append(
            fielderrors.invalid(f"{path}.format", fmt, f"must be one of {_COLUMN_FORMATS}")
        )
    json_path = column.get("jsonPath")
    if not json_path:
        causes.append(fielderrors.required(f"{path}.JSONPath"))
    else:
        causes.extend(_simple_json_path(json_path, f"{path}.JSONPath"))
    return causes
