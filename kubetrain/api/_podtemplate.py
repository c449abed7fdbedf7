"""Pod templates: Kubernetes objects kubetrain keeps as written, checked for unknown field
names everywhere and for shape where kubetrain relies on them.

kubetrain does not re-model the whole Pod API; the API server and the node own that. It does
read containers (name, image, command, args, env, ports, resources) to build env contracts and
count resources, so those parts must have the shape Kubernetes gives them, and a wrong shape is
reported here with its field path instead of failing later in a controller.

Every field name inside a template is checked against the structural schema of its
Kubernetes type (:func:`unknown_fields`), the very schema the CRDs carry there, so a misspelt
``comand:`` is an error naming its path, where kube-apiserver's strict decoding refuses it
too, instead of a field dropped without a word.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubetrain.api import _fielderrors as fe
from kubetrain.api._fielderrors import ErrorType, FieldError, Path

_QUANTITY = re.compile(
    r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(\d+(\.\d*)?|\.\d+)))?$"
)
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def pod_spec(template: Any) -> dict[str, Any]:
    """``template.spec`` or an empty dict, whatever shape the template has."""
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        return template["spec"]
    return {}


def containers(template: Any, field: str = "containers") -> list[dict[str, Any]]:
    """The containers (or initContainers) of a pod template that are objects."""
    items = pod_spec(template).get(field)
    if not isinstance(items, list):
        return []
    return [c for c in items if isinstance(c, dict)]


def default_container(template: Any, name: str) -> dict[str, Any] | None:
    """The container called ``name``, else the first one (upstream's rule), else None."""
    found = containers(template)
    for container in found:
        if container.get("name") == name:
            return container
    return found[0] if found else None


def is_quantity(value: Any) -> bool:
    """A non-negative Kubernetes quantity: resource amounts can never be below zero.

    A number must be a whole one: the CRDs type a quantity as an integer or a string (as
    upstream's do), so the API server refuses ``0.5`` there before a pod could take it."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value >= 0 and float(value).is_integer()
    return isinstance(value, str) and not value.startswith("-") and bool(_QUANTITY.match(value))


def check_template(template: Any, path: Path) -> list[FieldError]:
    """Shape errors in the parts of a pod template that kubetrain reads."""
    if template is None:
        return []
    if not isinstance(template, dict):
        return [fe.invalid(str(path), template, "must be an object (a pod template)")]
    errors: list[FieldError] = []
    for key in ("metadata", "spec"):
        if key in template and not isinstance(template[key], dict):
            errors.append(fe.invalid(str(path.child(key)), template[key], "must be an object"))
    metadata = template.get("metadata")
    if isinstance(metadata, dict):
        for key in ("labels", "annotations"):
            errors += _check_string_map(metadata.get(key), path.child("metadata", key))
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return errors
    spec_path = path.child("spec")
    for field in ("containers", "initContainers"):
        items = spec.get(field)
        if items is None:
            continue
        if not isinstance(items, list):
            errors.append(fe.invalid(str(spec_path.child(field)), items, "must be a list"))
            continue
        seen: set[str] = set()
        for i, container in enumerate(items):
            cpath = spec_path.child(field).index(i)
            errors += check_container(container, cpath)
            name = container.get("name") if isinstance(container, dict) else None
            if isinstance(name, str) and name:
                if name in seen:
                    errors.append(fe.duplicate(str(cpath.child("name")), name))
                seen.add(name)
    return errors


def check_container(container: Any, path: Path) -> list[FieldError]:
    if not isinstance(container, dict):
        return [fe.invalid(str(path), container, "must be an object (a container)")]
    errors: list[FieldError] = []
    name = container.get("name")
    if name is None or name == "":
        errors.append(fe.required(str(path.child("name"))))
    elif not isinstance(name, str):
        errors.append(fe.invalid(str(path.child("name")), name, "must be a string"))
    elif not _DNS1123_LABEL.match(name) or len(name) > 63:
        errors.append(
            fe.invalid(
                str(path.child("name")),
                name,
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character",
            )
        )
    image = container.get("image")
    if image is not None and not isinstance(image, str):
        errors.append(fe.invalid(str(path.child("image")), image, "must be a string"))
    for key in ("command", "args"):
        value = container.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            errors.append(fe.invalid(str(path.child(key)), value, "must be a list of strings"))
    errors += check_env(container.get("env"), path.child("env"))
    errors += _check_ports(container.get("ports"), path.child("ports"))
    errors += check_resources(container.get("resources"), path.child("resources"))
    return errors


def check_env(env: Any, path: Path) -> list[FieldError]:
    """An env list: ``name`` plus a string ``value`` or an object ``valueFrom``."""
    if env is None:
        return []
    if not isinstance(env, list):
        return [fe.invalid(str(path), env, "must be a list of {name, value} objects")]
    errors: list[FieldError] = []
    for i, var in enumerate(env):
        vpath = path.index(i)
        if not isinstance(var, dict):
            errors.append(fe.invalid(str(vpath), var, "must be an object with name and value"))
            continue
        name = var.get("name")
        if not isinstance(name, str) or not name:
            errors.append(fe.required(str(vpath.child("name"))))
        elif not _ENV_NAME.match(name):
            errors.append(
                fe.invalid(
                    str(vpath.child("name")),
                    name,
                    "a valid environment variable name must consist of alphabetic characters, "
                    "digits, '_', '-', or '.', and must not start with a digit",
                )
            )
        value = var.get("value")
        if value is not None and not isinstance(value, str):
            errors.append(
                fe.invalid(str(vpath.child("value")), value, "must be a string (quote numbers)")
            )
        value_from = var.get("valueFrom")
        if value_from is not None and not isinstance(value_from, dict):
            errors.append(
                fe.invalid(str(vpath.child("valueFrom")), value_from, "must be an object")
            )
        if value is not None and value_from is not None:
            errors.append(
                fe.invalid(
                    str(vpath.child("valueFrom")),
                    "",
                    "may not be specified when `value` is not empty",
                )
            )
    return errors


def _check_ports(ports: Any, path: Path) -> list[FieldError]:
    if ports is None:
        return []
    if not isinstance(ports, list):
        return [fe.invalid(str(path), ports, "must be a list of {name, containerPort} objects")]
    errors: list[FieldError] = []
    for i, port in enumerate(ports):
        ppath = path.index(i)
        if not isinstance(port, dict):
            errors.append(fe.invalid(str(ppath), port, "must be an object"))
            continue
        number = port.get("containerPort")
        if number is None:
            errors.append(fe.required(str(ppath.child("containerPort"))))
        elif isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 65536:
            errors.append(
                fe.invalid(str(ppath.child("containerPort")), number, "must be between 1 and 65535")
            )
        name = port.get("name")
        if name is not None and not isinstance(name, str):
            errors.append(fe.invalid(str(ppath.child("name")), name, "must be a string"))
    return errors


def check_resources(resources: Any, path: Path) -> list[FieldError]:
    """``{requests, limits}`` maps of resource name to quantity ("2", "500m", "16Gi", 4)."""
    if resources is None:
        return []
    if not isinstance(resources, dict):
        return [fe.invalid(str(path), resources, "must be an object with requests and limits")]
    errors: list[FieldError] = []
    for key in ("requests", "limits"):
        amounts = resources.get(key)
        if amounts is None:
            continue
        if not isinstance(amounts, dict):
            errors.append(fe.invalid(str(path.child(key)), amounts, "must be an object"))
            continue
        for resource, quantity in amounts.items():
            if not is_quantity(quantity):
                fraction = isinstance(quantity, float) and quantity >= 0
                errors.append(
                    fe.invalid(
                        str(path.child(key).key(str(resource))),
                        quantity,
                        f'must be a whole number or a string: "{quantity}" or {quantity * 1000:g}m'
                        if fraction
                        else "must be a quantity such as 2, 500m or 16Gi",
                    )
                )
    return errors


def _check_string_map(value: Any, path: Path) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [fe.invalid(str(path), value, "must be a map of strings")]
    return [
        fe.invalid(str(path.key(str(k))), v, "must be a string (quote numbers and booleans)")
        for k, v in value.items()
        if not isinstance(v, str)
    ]


# --- unknown fields ----------------------------------------------------------------------------


def unknown_field(path: str, accepted: Sequence[str]) -> FieldError:
    """``<path>: Unknown field: did you mean "<nearest>"?``, or the accepted names when none is
    near. The name is the last part of ``path``."""
    name = path.rpartition(".")[2]
    close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.7)
    if not close:
        by_lower = {a.lower(): a for a in accepted}
        close = [by_lower[name.lower()]] if name.lower() in by_lower else []
    if close:
        detail = f'did you mean "{close[0]}"?'
    else:
        detail = "accepted: " + ", ".join(accepted) if accepted else "no fields are accepted here"
    return FieldError(ErrorType.UNKNOWN_FIELD, path, detail)


def unknown_fields(value: Any, schema: Mapping[str, Any] | None, path: Path) -> list[FieldError]:
    """Every field inside ``value`` that its structural ``schema`` does not name, with its full
    path: what kube-apiserver prunes from a custom resource, and refuses under strict field
    validation, by the same schema (the CRD's, :mod:`_k8sschemas`).

    As kube's pruning, it looks into the properties of objects, the values of maps and the
    items of lists, and not below ``x-kubernetes-preserve-unknown-fields``. A value of another
    shape than its schema (a list for an object) is left alone here: the schema's type check
    reports it.
    """
    if not schema or schema.get("x-kubernetes-preserve-unknown-fields") is True:
        return []
    if isinstance(value, list):
        items = schema.get("items")
        return [
            e for i, item in enumerate(value) for e in unknown_fields(item, items, path.index(i))
        ]
    if not isinstance(value, Mapping) or schema.get("type") != "object":
        return []
    properties: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    errors: list[FieldError] = []
    for key, item in value.items():
        if key in properties:
            errors += unknown_fields(item, properties[key], path.child(str(key)))
        elif isinstance(extra, Mapping):
            errors += unknown_fields(item, extra, path.key(str(key)))
        elif extra is not True:
            errors.append(unknown_field(str(path.child(str(key))), list(properties)))
    return errors
