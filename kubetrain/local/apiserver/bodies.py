"""Request bodies: an object decoded for a resource, and patch documents of each patch type,
each checked before any recursive code reads it.

kube's decoders fill in or check ``apiVersion`` and ``kind``, match the namespace to the URL,
and refuse a body that is not an object; here too, in kube's words. Every body is bounded in
depth and size (:func:`check_depth`), since everything that reads one (server-side apply,
field sets, schema defaulting and validation, patches, admission models, deepcopy, encoding)
recurses.

What it must not do: read the store, or decide what a write does with the object.
"""

from __future__ import annotations

import json
import math
from typing import Any

from kubetrain import patches
from kubetrain.local.apiserver import errors, queryoptions, resources

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
PATCH_NOT_APPLIED = "the server rejected our request due to an error in our request"

# How deeply a request body may nest objects and arrays. kube-apiserver's decoders stop at
# 10000; here everything that reads a body recurses (server-side apply, field sets, CRD schema
# defaulting and validation, patches, admission models, deepcopy, encoding), some with a few
# Python frames per level on top of the server's own, against Python's limit of 1000 frames.
# 100 levels keep all of them well inside it and are far beyond real objects: the deepest
# kubetrain serves, its CRDs' schemas, nest about 35 levels. (The CLI's limit is the same.)
MAX_DEPTH = 100
# managedFields describe the object's fields this much deeper (metadata.managedFields[i].fieldsV1),
# so an object the server stored may nest this much deeper than the body it came from.
MANAGED_FIELDS_NESTING = 4
# More objects and arrays than a body of the server's size limit can spell out: only YAML
# aliases (one object referred to many times) reach it, and copying or encoding such a body
# would expand every reference.
MAX_CONTAINERS = 2_000_000


def decode_object(
    catalog: resources.Catalog,
    r: resources.Resource,
    body: Any,
    namespace: str | None,
    *,
    kind: str = "",
) -> dict[str, Any]:
    """The request body as an object of ``r``: apiVersion and kind checked (filled in
    when absent, as kube's decoder does), namespace matched to the URL, nesting bounded
    (:func:`check_depth`)."""
    check_depth(body)
    return object_of(catalog, r, body, namespace, kind=kind)


def object_of(
    catalog: resources.Catalog,
    r: resources.Resource,
    body: Any,
    namespace: str | None,
    *,
    kind: str = "",
) -> dict[str, Any]:
    """:func:`decode_object` for a body already bounded in depth (an apply's result)."""
    kind = kind or r.kind
    if body is None and not r.custom:
        body = {}  # kube's typed decoders read null as an empty object (unstructured: no)
    if not isinstance(body, dict):
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): "
            f"expected an object, got {json_kind(body)}"
        )
    obj = body
    api_version = obj.get("apiVersion")
    obj_kind = obj.get("kind")
    if api_version in (None, "") and obj_kind in (None, ""):
        obj["apiVersion"], obj["kind"] = r.api_version, kind
    elif not isinstance(api_version, str) or not isinstance(obj_kind, str):
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): "
            "apiVersion and kind must be strings"
        )
    elif obj_kind != kind:
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): "
            f"kind is {json.dumps(obj_kind)}"
        )
    elif api_version != r.api_version:
        served = catalog.find(r.group, api_version.rpartition("/")[2], r.plural)
        if api_version.rpartition("/")[0] != r.group or served is None:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({r.api_version})"
            )
        obj["apiVersion"] = r.api_version
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise errors.bad_request(
            f"{kind} in version {json.dumps(r.version)} cannot be handled as a {kind}: "
            "metadata must be an object"
        )
    bad = [
        k
        for k in ("name", "namespace", "generateName", "resourceVersion", "uid")
        if meta.get(k) is not None and not isinstance(meta.get(k), str)
    ]
    if bad:
        raise errors.bad_request(
            f"{kind} in version {json.dumps(r.version)} cannot be handled as a {kind}: "
            f"metadata.{bad[0]} must be a string"
        )
    if r.namespaced:
        given = meta.get("namespace") or ""
        if namespace and given and given != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )
        if namespace:
            meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    return obj


def apply_needs_a_field_manager() -> dict[str, str]:
    """The cause of kube's 422 for an apply without ``fieldManager`` (PatchOptions)."""
    return errors.field_error("Required value", "fieldManager", "is required for apply patch")


def too_deep(what: str = "the request body", limit: int = MAX_DEPTH) -> errors.ApiError:
    """The answer to a body nested deeper than ``limit``."""
    return errors.bad_request(
        f"{what} is nested too deeply: at most {limit} levels of objects and arrays are accepted"
    )


def check_depth(body: Any, *, limit: int = MAX_DEPTH, what: str = "the request body") -> None:
    """A 400 for a body nested deeper than ``limit`` (or holding more than
    :data:`MAX_CONTAINERS` objects and arrays), before any recursive code reads it.

    Objects pass here in :func:`decode_object`, patch documents as they are decoded, and what
    a JSON patch makes of the stored object (with its managedFields, hence the larger limit);
    other bodies (delete options, bindings, evictions) are only looked into, never walked.
    The walk does not recurse, and ends on bodies that contain themselves (recursive YAML
    aliases), since those nest without end.

    It also refuses what no stored object (UTF-8 JSON) can hold: text that is not Unicode
    (JSON's ``\\ud800`` and YAML's escapes spell lone UTF-16 surrogates) and numbers that are
    not finite (``1e400`` overflows to infinity; YAML has ``.inf`` and ``.nan``), which would
    be written out as ``Infinity``, breaking every client that reads the object.
    """
    level = [body] if isinstance(body, dict | list) else []
    depth = seen = 0
    read: set[int] = set()  # nodes whose values were checked (YAML aliases repeat nodes)
    while level:
        depth += 1
        if depth > limit:
            raise too_deep(what, limit)
        seen += len(level)
        below: list[Any] = []
        for node in level:
            if id(node) not in read:
                read.add(id(node))
                _check_values(node, what)
            below.extend(
                child
                for child in (node.values() if isinstance(node, dict) else node)
                if isinstance(child, dict | list)
            )
            if seen + len(below) > MAX_CONTAINERS:
                raise errors.bad_request(
                    f"the request body holds more than {MAX_CONTAINERS} objects and arrays"
                )
        level = below


def _check_values(node: dict[Any, Any] | list[Any], what: str) -> None:
    values = [*node.keys(), *node.values()] if isinstance(node, dict) else node
    for value in values:
        if isinstance(value, str):
            try:
                value.encode()
            except UnicodeEncodeError as exc:
                bad = value[exc.start : exc.end].encode("unicode_escape").decode()
                raise errors.bad_request(
                    f"{what} holds text that is not valid Unicode: {exc.reason} ({bad})"
                ) from exc
        elif isinstance(value, float) and not math.isfinite(value):
            raise errors.bad_request(f"{what} holds a number out of range: {value}")


def _check_patched_depth(obj: Any) -> None:
    """What a JSON patch made of an object nests no deeper than a body may, but for
    managedFields, which describe the object's fields :data:`MANAGED_FIELDS_NESTING` deeper."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict) and "managedFields" in meta:
        without = {k: v for k, v in meta.items() if k != "managedFields"}
        check_depth({**obj, "metadata": without}, what="the patched object")
        check_depth(
            obj, limit=MAX_DEPTH + MANAGED_FIELDS_NESTING, what="the patched object's metadata"
        )
    else:
        check_depth(obj, what="the patched object")


def _decode_apply(body: bytes) -> Any:
    """An apply configuration: YAML, which kubectl and client-go send as JSON. JSON is read as
    JSON, since a CRD's configuration is megabytes, which the YAML parser takes seconds over;
    anything else as YAML (PyYAML's Python parser: it stops at Python's recursion limit, where
    libyaml's would overflow the C stack on a deep enough document)."""
    import yaml

    try:
        return json.loads(body)
    except RecursionError as exc:
        raise too_deep() from exc
    except ValueError:
        pass  # not JSON: YAML
    try:
        return yaml.safe_load(body.decode("utf-8"))
    except RecursionError as exc:
        raise too_deep() from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from exc


def decode_patch(patch_type: str, body: bytes) -> Any:
    """The patch document of a PATCH request, checked for its type's shape and bounded."""
    if patch_type == APPLY_PATCH:
        document = _decode_apply(body)
        check_depth(document)
        return document
    try:
        document = json.loads(body)
    except RecursionError as exc:
        raise too_deep() from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from exc
    check_depth(document)
    if patch_type == JSON_PATCH and not isinstance(document, list):
        raise errors.bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    if patch_type in (MERGE_PATCH, STRATEGIC_PATCH) and not isinstance(document, dict):
        raise errors.bad_request(
            f"json: cannot unmarshal {json_kind(document)} into Go value of type "
            "map[string]interface {}"
        )
    return document


def patched(r: resources.Resource, target: dict[str, Any], patch_type: str, document: Any) -> Any:
    """``target`` with a JSON, merge or strategic patch ``document`` applied, as a new object:
    a 400 for a malformed patch, a 422 for one that does not apply to ``target``."""
    try:
        if patch_type == MERGE_PATCH:
            return patches.merge_patch(target, document)
        if patch_type == JSON_PATCH:
            # the one patch that can nest deeper than its inputs (add or copy at a deep path)
            result = patches.json_patch(target, document)
            _check_patched_depth(result)
            return result
        return patches.strategic_merge_patch(target, document, r.kind_key)
    except patches.PatchFormatError as exc:  # the patch is malformed: kube's NewBadRequest
        raise errors.bad_request(str(exc)) from exc
    except patches.PatchError as exc:  # well formed, but it does not apply to this object
        # kube's NewGenericServerResponse(422): its message, which we follow with the reason
        raise errors.ApiError(422, "Invalid", f"{PATCH_NOT_APPLIED}: {exc}") from exc


def rv_in_patch(patch_type: str, document: Any) -> int | None:
    """A resourceVersion a merge or strategic patch sets makes the patch conditional."""
    if patch_type in (MERGE_PATCH, STRATEGIC_PATCH) and isinstance(document, dict):
        meta = document.get("metadata")
        if isinstance(meta, dict) and meta.get("resourceVersion"):
            return queryoptions.parse_rv(str(meta["resourceVersion"]))
    return None


def json_kind(value: Any) -> str:
    """The JSON type of a decoded value, in the words of Go's decoder errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
