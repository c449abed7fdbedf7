"""The component schemas of the OpenAPI documents (:mod:`openapi`): their names as kube
publishes them, the ``meta.k8s.io/v1`` types every kind refers to, a built-in kind's
permissive schema, a CRD version's schema as published, list schemas, and the swagger 2.0
form of a structural schema for ``/openapi/v2``.

Pure data and functions: no I/O. The paths and operations that refer to these schemas, and
the documents that hold both, are :mod:`openapi`'s.
"""

from __future__ import annotations

from typing import Any

Doc = dict[str, Any]


META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_BUILTIN_PACKAGES = {
    "": "io.k8s.api.core",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "apiregistration.k8s.io": "io.k8s.kube-aggregator.pkg.apis.apiregistration",
}


def definition_name(group: str, version: str, kind: str, *, builtin: bool) -> str:
    """The schema name kube publishes: ``io.k8s.api.core.v1.Pod``,
    ``io.k8s.api.coordination.v1.Lease``, and for custom resources the reversed group,
    ``org.kubeflow.v1.PyTorchJob``."""
    if builtin:
        package = _BUILTIN_PACKAGES.get(group) or "io.k8s.api." + group.split(".")[0]
    else:
        package = ".".join(reversed(group.split(".")))
    return f"{package}.{version}.{kind}"


_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers "
    "may infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#types-kinds"
)
_METADATA_DOC = (
    "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#metadata"
)


def _string(description: str = "", **extra: Any) -> Doc:
    out: Doc = {"type": "string", **extra}
    if description:
        out["description"] = description
    return out


def _string_map(description: str) -> Doc:
    return {"type": "object", "description": description, "additionalProperties": _string()}


def meta_schemas(ref: str) -> dict[str, Doc]:
    """ObjectMeta and friends, enough for ``kubectl explain <kind>.metadata``."""
    owner = {
        "type": "object",
        "description": "OwnerReference contains enough information to let you identify an "
        "owning object.",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": _string("API version of the referent."),
            "kind": _string("Kind of the referent."),
            "name": _string("Name of the referent."),
            "uid": _string("UID of the referent."),
            "controller": {
                "type": "boolean",
                "description": "If true, this reference points to the managing controller.",
            },
            "blockOwnerDeletion": {
                "type": "boolean",
                "description": "If true, the owner "
                "cannot be deleted from storage until this reference is "
                "removed.",
            },
        },
        "x-kubernetes-map-type": "atomic",
    }
    managed = {
        "type": "object",
        "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version "
        "of the resource that the fieldset applies to.",
        "properties": {
            "apiVersion": _string("The version of this resource that this field set applies to."),
            "fieldsType": _string("The format of the fields field, only FieldsV1."),
            "fieldsV1": {
                "type": "object",
                "description": "The set of fields.",
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "manager": _string("Identifier of the workflow managing these fields."),
            "operation": _string(
                "The type of operation which lead to this entry: Apply or Update."
            ),
            "subresource": _string("The subresource used to update the object."),
            "time": _string("When the operation was made.", format="date-time"),
        },
    }
    object_meta = {
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have, which "
        "includes all objects users must create.",
        "properties": {
            "annotations": _string_map(
                "Annotations is an unstructured key value map stored with a resource."
            ),
            "creationTimestamp": _string("When this object was created.", format="date-time"),
            "deletionGracePeriodSeconds": {
                "type": "integer",
                "format": "int64",
                "description": "Seconds allowed for graceful termination.",
            },
            "deletionTimestamp": _string("When this object will be deleted.", format="date-time"),
            "finalizers": {
                "type": "array",
                "items": _string(),
                "description": "Must be empty before the object is deleted from the registry.",
                "x-kubernetes-list-type": "set",
            },
            "generateName": _string("Optional prefix used to generate a unique name."),
            "generation": {
                "type": "integer",
                "format": "int64",
                "description": "A sequence number representing a generation of the desired state.",
            },
            "labels": _string_map(
                "Map of string keys and values that can be used to organize and categorize objects."
            ),
            "managedFields": {
                "type": "array",
                "items": {"$ref": ref + META + "ManagedFieldsEntry"},
                "description": "Which workflows manage which fields.",
            },
            "name": _string("Name must be unique within a namespace."),
            "namespace": _string(
                "Namespace defines the space within which each name must be unique."
            ),
            "ownerReferences": {
                "type": "array",
                "items": {"$ref": ref + META + "OwnerReference"},
                "description": "Objects depended on by this object.",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["uid"],
            },
            "resourceVersion": _string(
                "An opaque value that represents the internal version of this object."
            ),
            "selfLink": _string("Deprecated; not set."),
            "uid": _string("The unique in time and space value for this object."),
        },
    }
    list_meta = {
        "type": "object",
        "description": "ListMeta describes metadata that synthetic resources must have.",
        "properties": {
            "continue": _string("Set if the user should retrieve more results from the server."),
            "remainingItemCount": {
                "type": "integer",
                "format": "int64",
                "description": "The number of subsequent items.",
            },
            "resourceVersion": _string("The version of the list."),
            "selfLink": _string("Deprecated; not set."),
        },
    }
    status = {
        "type": "object",
        "description": "Status is a return value for calls that don't return other objects.",
        "properties": {
            "apiVersion": _string(_API_VERSION_DOC),
            "code": {
                "type": "integer",
                "format": "int32",
                "description": "Suggested HTTP return code for this status.",
            },
            "details": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "description": "Extended data associated with the reason.",
            },
            "kind": _string(_KIND_DOC),
            "message": _string("A human-readable description of the status of this operation."),
            "metadata": {"$ref": ref + META + "ListMeta"},
            "reason": _string(
                "A machine-readable description of why this operation is in the Failure status."
            ),
            "status": _string("Status of the operation: Success or Failure."),
        },
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}],
    }
    delete_options = {
        "type": "object",
        "description": "DeleteOptions may be provided when deleting an API object.",
        "properties": {
            "apiVersion": _string(_API_VERSION_DOC),
            "dryRun": {
                "type": "array",
                "items": _string(),
                "description": "When present, "
                "indicates that modifications should not be persisted.",
            },
            "gracePeriodSeconds": {
                "type": "integer",
                "format": "int64",
                "description": "The duration in seconds before the object should be deleted.",
            },
            "kind": _string(_KIND_DOC),
            "orphanDependents": {
                "type": "boolean",
                "description": "Deprecated: please use the PropagationPolicy.",
            },
            "preconditions": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "description": "Must be fulfilled before a deletion is carried out.",
            },
            "propagationPolicy": _string(
                "Whether and how garbage collection will be "
                "performed: Orphan, Background or Foreground."
            ),
        },
    }
    return {
        META + "ObjectMeta": object_meta,
        META + "ListMeta": list_meta,
        META + "OwnerReference": owner,
        META + "ManagedFieldsEntry": managed,
        META + "Status": status,
        META + "DeleteOptions": delete_options,
        META + "Patch": {
            "type": "object",
            "description": "Patch is provided to give a "
            "concrete name and type to the Kubernetes PATCH request body.",
        },
    }


SCALE = definition_name("autoscaling", "v1", "Scale", builtin=True)
SCALE_GVK = {"group": "autoscaling", "kind": "Scale", "version": "v1"}


def permissive(group: str, version: str, kind: str, ref: str) -> Doc:
    """The schema of a built-in kind: apiVersion, kind and metadata, anything else kept."""
    return {
        "type": "object",
        "description": f"{kind} ({group or 'core'}/{version}).",
        "properties": {
            "apiVersion": _string(_API_VERSION_DOC),
            "kind": _string(_KIND_DOC),
            "metadata": {"$ref": ref + META + "ObjectMeta", "description": _METADATA_DOC},
        },
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": [{"group": group, "kind": kind, "version": version}],
    }


def crd_kind_schema(crd_schema: Doc, gvk: dict[str, str], ref: str) -> Doc:
    """A CRD version's schema as published: metadata refers to ObjectMeta, apiVersion and
    kind are described, and the GVK is attached.

    Only the root is copied: below it the document shares the CRD's nodes, which neither
    side changes (documents are only encoded), since a CRD that embeds pod templates is a
    schema of megabytes and the documents are rebuilt whenever a CRD changes."""
    out = dict(crd_schema)
    props = out["properties"] = dict(out.get("properties") or {})
    props["apiVersion"] = {**_string(_API_VERSION_DOC), **(props.get("apiVersion") or {})}
    props["kind"] = {**_string(_KIND_DOC), **(props.get("kind") or {})}
    props["metadata"] = {"$ref": ref + META + "ObjectMeta", "description": _METADATA_DOC}
    out.setdefault("type", "object")
    out["x-kubernetes-group-version-kind"] = [gvk]
    return out


def list_schema(item_name: str, gvk: dict[str, str], ref: str) -> Doc:
    return {
        "type": "object",
        "description": f"{gvk['kind']} is a list of {item_name.rsplit('.', 1)[-1]}.",
        "required": ["items"],
        "properties": {
            "apiVersion": _string(_API_VERSION_DOC),
            "items": {"type": "array", "items": {"$ref": ref + item_name}},
            "kind": _string(_KIND_DOC),
            "metadata": {"$ref": ref + META + "ListMeta", "description": _METADATA_DOC},
        },
        "x-kubernetes-group-version-kind": [gvk],
    }


def v2_schema(node: Any) -> Any:
    """A structural schema in swagger 2.0 terms, as kube publishes CRDs in v2: no
    ``nullable`` (a nullable field loses its type), no junctors, no CEL rules."""
    if isinstance(node, list):
        return [v2_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("nullable", "anyOf", "allOf", "oneOf", "not", "x-kubernetes-validations"):
            continue
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace("#/components/schemas/", "#/definitions/")
        elif key in ("properties",) and isinstance(value, dict):
            out[key] = {k: v2_schema(v) for k, v in value.items()}
        else:
            out[key] = v2_schema(value)
    if node.get("nullable") is True:
        out.pop("type", None)
    return out
