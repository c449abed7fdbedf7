"""The OpenAPI documents kubectl reads: ``/openapi/v3`` (an index and one document per
group-version) and ``/openapi/v2``.

What kubectl 1.32 does with them (``k8s.io/kubectl/pkg/cmd/util/factory_client_access.go``,
``k8s.io/cli-runtime/pkg/resource/query_param_verifier_v3.go``,
``k8s.io/client-go/openapi``), and so what these documents must hold:

* ``kubectl apply``/``create``/``replace`` validate with ``--validate=strict`` by default. For
  each object, kubectl asks whether the server validates fields itself: it GETs
  ``/openapi/v3`` (``{"paths": {"apis/<group>/<version>": {"serverRelativeURL": ...}}}``),
  then the group-version's document at that URL (a URL starting ``/openapi/v3`` keeps the
  client's prefix; its ``hash`` query parameter is only a cache key), and looks through its
  ``paths`` for a ``patch`` operation whose ``x-kubernetes-group-version-kind`` is the
  object's GVK. The first such operation decides: if its ``parameters`` include
  ``fieldValidation``, kubectl skips client-side validation and sends
  ``fieldValidation=Strict``; if not, kubectl validates on the client against
  ``/openapi/v2``. So every PATCH operation of a kind, subresources included, lists
  ``fieldValidation``. If the v3 document cannot be had, kubectl asks ``/openapi/v2``
  instead, which client-go only ever requests as protobuf
  (``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``): JSON there is of no use
  to kubectl, and the server should answer that request 406, which kubectl tolerates where
  it can. The group-version is missing from the index only for a CRD whose document is not
  there; kubectl then checks the ``v1`` Namespace PATCH operation instead.
* ``kubectl apply`` updating an object computes a strategic merge patch from the v3 schema
  only if the PATCH operation accepts ``application/strategic-merge-patch+json``. These
  documents never say so: their built-in schemas are permissive (no merge keys), and
  without the content type kubectl tries ``/openapi/v2`` (protobuf; a 406 is fine), then
  falls back to its compiled-in types for built-in kinds and to a JSON merge patch for
  custom resources, both right.
* ``kubectl explain <resource>[.field]`` reads the v3 document of the resource's
  group-version: it finds the resource's collection or item path, takes the
  ``x-kubernetes-group-version-kind`` of its get/post/put/patch/delete operation, and
  renders the ``components.schemas`` entry whose ``x-kubernetes-group-version-kind`` list
  contains exactly that GVK, following ``$ref`` into ``#/components/schemas/...``.

This module owns building those documents from a resource table (:class:`ResourceInfo`)
and CRDs (their served versions' schemas): each kind's paths and operations, and the v3 and
v2 documents that hold them. It is one concept, kept whole: the operations are what kubectl
reads, and the documents differ only in how they frame them. The component schemas the
operations refer to are :mod:`openapischemas`'; built-in kinds get a permissive one
(``x-kubernetes-preserve-unknown-fields``) with apiVersion, kind and metadata. It does no
I/O; the server serves the documents and their ETags.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubetrain.local.apiserver import crdvalidation, openapischemas

Doc = dict[str, Any]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceInfo:
    """One resource a group-version serves, as the OpenAPI documents describe it.

    ``group`` is ``""`` for the core group; ``plural`` is the URL segment (``pods``);
    ``subresources`` names the ones served (``status``, ``scale``, ``binding``,
    ``eviction``, ``log``, ``exec``, ...); ``verbs`` are the discovery verbs of the main
    resource, which decide its operations.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def gv_path(group: str, version: str) -> str:
    """The key of a group-version in the ``/openapi/v3`` index: ``api/v1``,
    ``apis/kubeflow.org/v1``."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def crd_resources(crd: dict[str, Any]) -> list[ResourceInfo]:
    """A CRD's served versions as resources."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out = []
    for version in spec.get("versions") or []:
        if not version.get("served"):
            continue
        out.append(
            ResourceInfo(
                group=str(spec.get("group", "")),
                version=str(version.get("name", "")),
                kind=str(names.get("kind", "")),
                plural=str(names.get("plural", "")),
                namespaced=spec.get("scope") != "Cluster",
                subresources=tuple(sorted((version.get("subresources") or {}).keys())),
            )
        )
    return out


# --- names -------------------------------------------------------------------------------


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in text.replace("-", ".").split("."))


def _op_group(group: str) -> str:
    """``CoreV1``-style operation id part: ``""`` -> ``Core``, ``coordination.k8s.io`` ->
    ``Coordination``, ``kubeflow.org`` -> ``KubeflowOrg``."""
    if not group:
        return "Core"
    return _camel(group.removesuffix(".k8s.io"))


def _tag(group: str, version: str) -> str:
    base = _op_group(group)
    return f"{base[:1].lower()}{base[1:]}_{version}"


# Subresources and what they carry: operations, the GVK kube labels them with (None: the
# resource's own), and the schema they read and write.
_SUBRESOURCES: dict[str, tuple[tuple[str, ...], dict[str, str] | None, str | None]] = {
    "status": (("get", "put", "patch"), None, None),
    "scale": (("get", "put", "patch"), openapischemas.SCALE_GVK, openapischemas.SCALE),
    "binding": (("post",), {"group": "", "kind": "Binding", "version": "v1"}, None),
    "eviction": (("post",), {"group": "policy", "kind": "Eviction", "version": "v1"}, None),
    "log": (("get",), None, None),
    "exec": (
        ("connect-get", "connect-post"),
        {"group": "", "kind": "PodExecOptions", "version": "v1"},
        None,
    ),
    "attach": (
        ("connect-get", "connect-post"),
        {"group": "", "kind": "PodAttachOptions", "version": "v1"},
        None,
    ),
    "portforward": (
        ("connect-get", "connect-post"),
        {"group": "", "kind": "PodPortForwardOptions", "version": "v1"},
        None,
    ),
    "proxy": (("connect-get", "connect-post"), None, None),
}


# --- operations --------------------------------------------------------------------------


def _q(name: str, kind: str, description: str) -> tuple[str, str, str]:
    return (name, kind, description)


_DRY_RUN = _q(
    "dryRun",
    "string",
    "When present, indicates that modifications should not be "
    "persisted. The only valid value is All.",
)
_FIELD_MANAGER = _q(
    "fieldManager",
    "string",
    "A name associated with the actor or entity that is making these changes.",
)
_FIELD_VALIDATION = _q(
    "fieldValidation",
    "string",
    "Instructs the server how to handle objects in the request containing unknown or "
    "duplicate fields: Ignore, Warn or Strict.",
)
_FORCE = _q("force", "boolean", 'Force is going to "force" Apply requests.')
_LIST_PARAMS = [
    _q("allowWatchBookmarks", "boolean", "Requests watch events with type BOOKMARK."),
    _q("continue", "string", "The continue option from a previous list call."),
    _q("fieldSelector", "string", "A selector to restrict the objects returned by their fields."),
    _q("labelSelector", "string", "A selector to restrict the objects returned by their labels."),
    _q("limit", "integer", "The maximum number of responses to return for a list call."),
    _q(
        "resourceVersion",
        "string",
        "Sets a constraint on what resource versions a request may be served from.",
    ),
    _q("resourceVersionMatch", "string", "Determines how resourceVersion is applied."),
    _q("sendInitialEvents", "boolean", "Start a watch with synthetic ADDED events."),
    _q("timeoutSeconds", "integer", "Timeout for the list/watch call."),
    _q("watch", "boolean", "Watch for changes to the described resources."),
]
_DELETE_PARAMS = [
    _DRY_RUN,
    _q(
        "gracePeriodSeconds",
        "integer",
        "The duration in seconds before the object should be deleted.",
    ),
    _q("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."),
    _q("propagationPolicy", "string", "Whether and how garbage collection will be performed."),
]
_LOG_PARAMS = [
    _q("container", "string", "The container for which to stream logs."),
    _q("follow", "boolean", "Follow the log stream of the pod."),
    _q("limitBytes", "integer", "The number of bytes to read from the server."),
    _q("previous", "boolean", "Return previous terminated container logs."),
    _q("sinceSeconds", "integer", "A relative time in seconds before the current time."),
    _q("tailLines", "integer", "The number of lines from the end of the logs to show."),
    _q("timestamps", "boolean", "Add an RFC3339 timestamp at the beginning of every line."),
]
_EXEC_PARAMS = [
    _q("command", "string", "Command is the remote command to execute."),
    _q("container", "string", "Container in which to execute the command."),
    _q("stderr", "boolean", "Redirect the standard error stream of the pod."),
    _q("stdin", "boolean", "Redirect the standard input stream of the pod."),
    _q("stdout", "boolean", "Redirect the standard output stream of the pod."),
    _q("tty", "boolean", "Allocate a terminal for this exec call."),
]
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_RESPONSE_TYPES = ("application/json", "application/yaml")


@dataclass(frozen=True)
class _Op:
    """One operation, described once and rendered for v3 and v2."""

    method: str  # get, put, post, patch, delete
    action: str  # x-kubernetes-action
    operation_id: str
    description: str
    params: tuple[tuple[str, str, str], ...]
    gvk: dict[str, str]
    body: str | None  # a schema name, or None
    body_types: tuple[str, ...]
    response: str | None  # a schema name, or None for text
    created: bool = False  # may answer 201 Created too (create, replace, apply)


@dataclass(frozen=True)
class _PathItem:
    path: str
    path_params: tuple[str, ...]
    ops: tuple[_Op, ...]


def _paths(info: ResourceInfo, item: str, listing: str) -> list[_PathItem]:
    """Every path and operation kube serves for one resource."""
    gvk = {"group": info.group, "kind": info.kind, "version": info.version}
    prefix = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
    scope = "Namespaced" if info.namespaced else ""
    base = f"{_op_group(info.group)}{_camel(info.version)}"
    name = f"{base}{scope}{info.kind}"
    collection = (
        f"{prefix}/namespaces/{{namespace}}/{info.plural}"
        if info.namespaced
        else f"{prefix}/{info.plural}"
    )
    ns = ("namespace",) if info.namespaced else ()
    verbs = set(info.verbs)
    write = (_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION)
    out: list[_PathItem] = []

    ops = []
    if "list" in verbs:
        ops.append(
            _Op(
                "get",
                "list",
                f"list{name}",
                f"list or watch objects of kind {info.kind}",
                tuple(_LIST_PARAMS),
                gvk,
                None,
                (),
                listing,
            )
        )
    if "create" in verbs:
        ops.append(
            _Op(
                "post",
                "post",
                f"create{name}",
                f"create a {info.kind}",
                write,
                gvk,
                item,
                _RESPONSE_TYPES,
                item,
                created=True,
            )
        )
    if "deletecollection" in verbs:
        params = tuple(sorted([*_DELETE_PARAMS, *_LIST_PARAMS[1:-1]]))
        ops.append(
            _Op(
                "delete",
                "deletecollection",
                f"delete{base}Collection{scope}{info.kind}",
                f"delete collection of {info.kind}",
                params,
                gvk,
                openapischemas.META + "DeleteOptions",
                _RESPONSE_TYPES,
                openapischemas.META + "Status",
            )
        )
    if ops:
        out.append(_PathItem(collection, ns, tuple(ops)))

    ops = []
    if "get" in verbs:
        ops.append(
            _Op(
                "get",
                "get",
                f"read{name}",
                f"read the specified {info.kind}",
                (),
                gvk,
                None,
                (),
                item,
            )
        )
    if "update" in verbs:
        ops.append(
            _Op(
                "put",
                "put",
                f"replace{name}",
                f"replace the specified {info.kind}",
                write,
                gvk,
                item,
                _RESPONSE_TYPES,
                item,
                created=True,
            )
        )
    if "patch" in verbs:
        ops.append(
            _Op(
                "patch",
                "patch",
                f"patch{name}",
                f"partially update the specified {info.kind}",
                (*write, _FORCE),
                gvk,
                openapischemas.META + "Patch",
                _PATCH_TYPES,
                item,
                created=True,
            )
        )
    if "delete" in verbs:
        ops.append(
            _Op(
                "delete",
                "delete",
                f"delete{name}",
                f"delete a {info.kind}",
                tuple(_DELETE_PARAMS),
                gvk,
                openapischemas.META + "DeleteOptions",
                _RESPONSE_TYPES,
                item,
            )
        )
    if ops:
        out.append(_PathItem(f"{collection}/{{name}}", ("name", *ns), tuple(ops)))

    if info.namespaced and "list" in verbs:
        op = _Op(
            "get",
            "list",
            f"list{base}{info.kind}ForAllNamespaces",
            f"list or watch objects of kind {info.kind}",
            tuple(_LIST_PARAMS),
            gvk,
            None,
            (),
            listing,
        )
        out.append(_PathItem(f"{prefix}/{info.plural}", (), (op,)))

    for sub in info.subresources:
        out.append(_subresource_path(sub, info, collection, ns, name, item, gvk))
    return out


def _subresource_path(
    sub: str,
    info: ResourceInfo,
    collection: str,
    ns: tuple[str, ...],
    name: str,
    item: str,
    gvk: dict[str, str],
) -> _PathItem:
    methods, sub_gvk, sub_schema = _SUBRESOURCES.get(sub, (("get",), None, None))
    sub_gvk = sub_gvk or gvk
    body = sub_schema or item
    if sub in ("binding", "eviction"):
        body = openapischemas.definition_name(
            sub_gvk["group"], sub_gvk["version"], sub_gvk["kind"], builtin=True
        )
    title = _camel(sub)
    write = (_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION)
    ops = []
    for method in methods:
        if method == "get":
            params = tuple(_LOG_PARAMS) if sub == "log" else ()
            response = None if sub == "log" else body
            ops.append(
                _Op(
                    "get",
                    "get",
                    f"read{name}{title}",
                    f"read {sub} of the specified {info.kind}",
                    params,
                    sub_gvk,
                    None,
                    (),
                    response,
                )
            )
        elif method == "put":
            ops.append(
                _Op(
                    "put",
                    "put",
                    f"replace{name}{title}",
                    f"replace {sub} of the specified {info.kind}",
                    write,
                    sub_gvk,
                    body,
                    _RESPONSE_TYPES,
                    body,
                    created=True,
                )
            )
        elif method == "patch":
            ops.append(
                _Op(
                    "patch",
                    "patch",
                    f"patch{name}{title}",
                    f"partially update {sub} of the specified {info.kind}",
                    (*write, _FORCE),
                    sub_gvk,
                    openapischemas.META + "Patch",
                    _PATCH_TYPES,
                    body,
                    created=True,
                )
            )
        elif method == "post":
            ops.append(
                _Op(
                    "post",
                    "post",
                    f"create{name}{title}",
                    f"create {sub} of a {info.kind}",
                    write,
                    sub_gvk,
                    body,
                    _RESPONSE_TYPES,
                    body,
                    created=True,
                )
            )
        else:
            verb = method.split("-")[1]
            params = tuple(_EXEC_PARAMS) if sub == "exec" else ()
            ops.append(
                _Op(
                    verb,
                    "connect",
                    f"connect{_camel(verb)}{name}{title}",
                    f"connect {verb.upper()} requests to {sub} of {info.kind}",
                    params,
                    sub_gvk,
                    None,
                    (),
                    None,
                )
            )
    return _PathItem(f"{collection}/{{name}}/{sub}", ("name", *ns), tuple(ops))


def _extra_schemas(infos: Iterable[ResourceInfo], ref: str) -> dict[str, Doc]:
    """Schemas the subresources of ``infos`` refer to (Scale, Binding, Eviction)."""
    out: dict[str, Doc] = {}
    for info in infos:
        for sub in info.subresources:
            if sub == "scale":
                out[openapischemas.SCALE] = openapischemas.permissive(
                    "autoscaling", "v1", "Scale", ref
                )
            elif sub in ("binding", "eviction"):
                gvk = _SUBRESOURCES[sub][1] or {}
                name = openapischemas.definition_name(
                    gvk["group"], gvk["version"], gvk["kind"], builtin=True
                )
                out[name] = openapischemas.permissive(
                    gvk["group"], gvk["version"], gvk["kind"], ref
                )
    return out


# --- the documents -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Kind:
    info: ResourceInfo
    item: Doc
    item_name: str
    list_name: str
    list_kind: str


def _kinds(
    resources: Iterable[ResourceInfo],
    crds: Iterable[dict[str, Any]],
    ref: str,
    group_version: tuple[str, str] | None = None,
) -> list[_Kind]:
    """Every kind served, or those of ``group_version`` alone (no other schema is built)."""
    out = []
    for info in resources:
        if group_version is not None and (info.group, info.version) != group_version:
            continue
        item_name = openapischemas.definition_name(
            info.group, info.version, info.kind, builtin=True
        )
        out.append(
            _Kind(
                info,
                openapischemas.permissive(info.group, info.version, info.kind, ref),
                item_name,
                item_name + "List",
                info.kind + "List",
            )
        )
    for crd in crds:
        names = (crd.get("spec") or {}).get("names") or {}
        for info in crd_resources(crd):
            if group_version is not None and (info.group, info.version) != group_version:
                continue
            crd_schema = crdvalidation.version_schema(crd, info.version) or {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            }
            gvk = {"group": info.group, "kind": info.kind, "version": info.version}
            item_name = openapischemas.definition_name(
                info.group, info.version, info.kind, builtin=False
            )
            list_kind = str(names.get("listKind") or info.kind + "List")
            out.append(
                _Kind(
                    info,
                    openapischemas.crd_kind_schema(crd_schema, gvk, ref),
                    item_name,
                    openapischemas.definition_name(
                        info.group, info.version, list_kind, builtin=False
                    ),
                    list_kind,
                )
            )
    return out


def _v3_op(op: _Op, tag: str) -> Doc:
    ref = "#/components/schemas/"
    out: Doc = {"tags": [tag], "description": op.description, "operationId": op.operation_id}
    if op.params:
        out["parameters"] = [
            {
                "name": name,
                "in": "query",
                "description": description,
                "schema": {"type": kind, "uniqueItems": True},
            }
            for name, kind, description in op.params
        ]
    if op.body:
        out["requestBody"] = {
            "content": {t: {"schema": {"$ref": ref + op.body}} for t in op.body_types},
            "required": op.method != "delete",
        }
    if op.response:
        content = {t: {"schema": {"$ref": ref + op.response}} for t in _RESPONSE_TYPES}
    else:
        content = {"*/*": {"schema": {"type": "string"}}}
    responses: Doc = {"200": {"description": "OK", "content": content}}
    if op.created:
        responses["201"] = {"description": "Created", "content": content}
    responses["401"] = {"description": "Unauthorized"}
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = dict(op.gvk)
    return out


def _v3_path_params(names: tuple[str, ...]) -> list[Doc]:
    params = [
        {
            "name": name,
            "in": "path",
            "description": f"{name} of the {'object' if name == 'name' else 'namespace'}",
            "required": True,
            "schema": {"type": "string", "uniqueItems": True},
        }
        for name in names
    ]
    params.append(
        {
            "name": "pretty",
            "in": "query",
            "description": "If 'true', then the output is pretty printed.",
            "schema": {"type": "string", "uniqueItems": True},
        }
    )
    return params


def v3_document(
    group: str,
    version: str,
    resources: Iterable[ResourceInfo],
    crds: Iterable[dict[str, Any]],
) -> Doc | None:
    """The OpenAPI v3 document of one group-version (``/openapi/v3/apis/<group>/<version>``,
    ``/openapi/v3/api/v1``), or None if nothing is served there.

    ``resources`` are the built-in resources; a CRD's resources come from its served
    versions. Every resource gets its collection, item, all-namespaces and subresource
    paths with kube's operations and parameters, and every kind its schema in
    ``components.schemas`` (plus its list kind and the meta schemas they refer to).
    """
    ref = "#/components/schemas/"
    return _v3_document_of(group, version, _kinds(resources, crds, ref, (group, version)), ref)


def _v3_document_of(group: str, version: str, kinds: list[_Kind], ref: str) -> Doc | None:
    if not kinds:
        return None
    tag = _tag(group, version)
    paths: Doc = {}
    components: dict[str, Doc] = openapischemas.meta_schemas(ref)
    for kind in kinds:
        components[kind.item_name] = kind.item
        list_gvk = {"group": group, "kind": kind.list_kind, "version": version}
        components[kind.list_name] = openapischemas.list_schema(kind.item_name, list_gvk, ref)
        for item in _paths(kind.info, kind.item_name, kind.list_name):
            entry: Doc = {op.method: _v3_op(op, tag) for op in item.ops}
            entry["parameters"] = _v3_path_params(item.path_params)
            paths[item.path] = entry
    components.update(_extra_schemas((k.info for k in kinds), ref))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(components.items())),
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
    }


def document_hash(document: Doc) -> str:
    """The ``hash`` kube puts in ``serverRelativeURL``: upper-case hex SHA-512 of the
    document's JSON; it changes exactly when the document does."""
    data = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(data).hexdigest().upper()


def v3_index(resources: Iterable[ResourceInfo], crds: Iterable[dict[str, Any]]) -> Doc:
    """``/openapi/v3``: every served group-version and the URL of its document,
    ``{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}}}``."""
    ref = "#/components/schemas/"
    by_group_version: dict[tuple[str, str], list[_Kind]] = {}
    for kind in _kinds(resources, crds, ref):
        by_group_version.setdefault((kind.info.group, kind.info.version), []).append(kind)
    index: Doc = {}
    for group, version in sorted(by_group_version):
        document = _v3_document_of(group, version, by_group_version[(group, version)], ref)
        key = gv_path(group, version)
        index[key] = {
            "serverRelativeURL": f"/openapi/v3/{key}?hash={document_hash(document or {})}"
        }
    return {"paths": index}


# --- OpenAPI v2 --------------------------------------------------------------------------


def _v2_op(op: _Op, tag: str) -> Doc:
    ref = "#/definitions/"
    params: list[Doc] = []
    if op.body:
        params.append(
            {
                "name": "body",
                "in": "body",
                "required": op.method != "delete",
                "schema": {"$ref": ref + op.body},
            }
        )
    for name, kind, description in op.params:
        params.append(
            {
                "uniqueItems": True,
                "type": kind,
                "description": description,
                "name": name,
                "in": "query",
            }
        )
    out: Doc = {
        "description": op.description,
        "consumes": list(op.body_types) or ["*/*"],
        "produces": list(_RESPONSE_TYPES) if op.response else ["*/*"],
        "schemes": ["https"],
        "tags": [tag],
        "operationId": op.operation_id,
    }
    if params:
        out["parameters"] = params
    ok: Doc = {
        "description": "OK",
        "schema": {"$ref": ref + op.response} if op.response else {"type": "string"},
    }
    responses: Doc = {"200": ok}
    if op.created:
        responses["201"] = {**ok, "description": "Created"}
    responses["401"] = {"description": "Unauthorized"}
    out["responses"] = responses
    out["x-kubernetes-action"] = op.action
    out["x-kubernetes-group-version-kind"] = dict(op.gvk)
    return out


def v2_document(resources: Iterable[ResourceInfo], crds: Iterable[dict[str, Any]]) -> Doc:
    """``/openapi/v2`` as JSON (swagger 2.0): the same paths and schemas as the v3
    documents, for every group-version, with ``definitions`` keyed like
    ``io.k8s.api.core.v1.Pod``. kubectl itself reads v2 only as protobuf (see above);
    this serves other clients and ``Accept: application/json``."""
    resources, crds = list(resources), list(crds)
    ref = "#/definitions/"
    kinds = _kinds(resources, crds, ref)
    paths: Doc = {}
    definitions: dict[str, Doc] = {
        k: openapischemas.v2_schema(v) for k, v in openapischemas.meta_schemas(ref).items()
    }
    for kind in kinds:
        info = kind.info
        tag = _tag(info.group, info.version)
        definitions[kind.item_name] = openapischemas.v2_schema(kind.item)
        list_gvk = {"group": info.group, "kind": kind.list_kind, "version": info.version}
        definitions[kind.list_name] = openapischemas.v2_schema(
            openapischemas.list_schema(kind.item_name, list_gvk, ref)
        )
        for item in _paths(info, kind.item_name, kind.list_name):
            entry: Doc = {op.method: _v2_op(op, tag) for op in item.ops}
            entry["parameters"] = [
                {
                    "uniqueItems": True,
                    "type": "string",
                    "description": f"{name} of the resource",
                    "name": name,
                    "in": "path",
                    "required": True,
                }
                for name in item.path_params
            ] + [
                {
                    "uniqueItems": True,
                    "type": "string",
                    "description": "If 'true', then the output is pretty printed.",
                    "name": "pretty",
                    "in": "query",
                }
            ]
            paths[item.path] = entry
    definitions.update(
        {
            k: openapischemas.v2_schema(v)
            for k, v in _extra_schemas((k.info for k in kinds), ref).items()
        }
    )
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
            }
        },
        "security": [{"BearerToken": []}],
    }
