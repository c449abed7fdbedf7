"""A request's query string read into :mod:`queryoptions`' objects, with the checks kube's
option validation makes of the write's options object (``CreateOptions``, ``UpdateOptions``,
``PatchOptions``, ``DeleteOptions``), in its words and every problem at once.

Owns: the names and spellings of the query parameters. Must not: route, decode bodies or call
the registry (:mod:`server` does).
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from kubetrain import gofmt
from kubetrain.local.apiserver import bodies, errors, queryoptions


def flag(value: str | None) -> bool:
    """A boolean query parameter as kube reads one."""
    return value is not None and value.lower() in ("true", "1", "yes")


def int_param(query: Mapping[str, str], name: str) -> int:
    try:
        return int(query[name])
    except ValueError as exc:
        raise errors.bad_request(f"{name}: invalid integer {query[name]!r}") from exc


def list_options(query: Mapping[str, str]) -> queryoptions.ListOptions:
    limit = 0
    if query.get("limit"):
        limit = int_param(query, "limit")
    return queryoptions.ListOptions(
        label_selector=query.get("labelSelector", ""),
        field_selector=query.get("fieldSelector", ""),
        limit=max(0, limit),
        continue_token=query.get("continue", ""),
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
    )


# The options object kube decodes a write's query parameters into, by verb.
_OPTIONS_KINDS = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}


def write_options(request: web.Request, verb: str) -> queryoptions.Options:
    """The write options of the query, validated as kube validates the verb's options object:
    every problem at once, in a 422 naming it (``CreateOptions.meta.k8s.io "" is invalid``).
    Reads ignore them, as kube's do."""
    query = request.query
    dry_run = query.getall("dryRun", [])
    validation = query.get("fieldValidation", "")
    manager = query.get("fieldManager", "")
    kind = _OPTIONS_KINDS.get(verb)
    if kind is not None:
        causes = _options_causes(kind, request, dry_run, validation, manager)
        if causes:
            raise errors.invalid("meta.k8s.io", kind, "", causes)
    return queryoptions.Options(
        dry_run=bool(dry_run),
        field_manager=manager,
        field_validation=validation,
        force=flag(query.get("force")),
        user_agent=request.headers.get("User-Agent", ""),
    )


def _options_causes(
    kind: str, request: web.Request, dry_run: list[str], validation: str, manager: str
) -> list[dict[str, str]]:
    """kube's ``Validate{Create,Update,Patch,Delete}Options``, in its order: what the patch
    type requires (force only with an apply, which needs a fieldManager), fieldManager,
    dryRun, fieldValidation."""
    causes = []
    if kind == "PatchOptions":
        patch_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if patch_type not in bodies.PATCH_TYPES:
            return []  # kube refuses the content type first: the registry's 415
        if patch_type != bodies.APPLY_PATCH and "force" in request.query:
            forbidden = "may not be specified for non-apply patch"
            causes.append(errors.field_error("Forbidden", "force", forbidden))
        if patch_type == bodies.APPLY_PATCH and not manager:
            causes.append(bodies.apply_needs_a_field_manager())
    if kind != "DeleteOptions":
        if len(manager.encode()) > 128:
            causes.append(
                errors.field_error("Too long", "fieldManager", "must have at most 128 bytes")
            )
        else:
            causes += _manager_characters(manager)
    if any(value != "All" for value in dry_run):
        shown = ", ".join(gofmt.go_quote(value) for value in dry_run)
        causes.append(
            errors.cause(
                "Unsupported value",
                "dryRun",
                f'Unsupported value: []string{{{shown}}}: supported values: "All"',
            )
        )
    if kind != "DeleteOptions" and validation not in ("", "Ignore", "Strict", "Warn"):
        causes.append(
            errors.cause(
                "Unsupported value",
                "fieldValidation",
                f"Unsupported value: {gofmt.go_quote(validation)}: "
                'supported values: "", "Ignore", "Strict", "Warn"',
            )
        )
    return causes


def _manager_characters(manager: str) -> list[dict[str, str]]:
    """A fieldManager holds printable characters only; kube names the first other one."""
    position = 0
    for ch in manager:
        if not ch.isprintable():
            detail = f"invalid character U+{ord(ch):04X} (at position {position})"
            return [
                errors.cause(
                    "Invalid value",
                    "fieldManager",
                    f"Invalid value: {gofmt.go_quote(manager)}: {detail}",
                )
            ]
        position += len(ch.encode())
    return []
