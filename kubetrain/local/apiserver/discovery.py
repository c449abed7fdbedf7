"""Discovery documents: what kubectl and client libraries read to learn the served resources.

Both forms kube-apiserver serves are built from the one resource table (:mod:`resources`),
followed by the groups the server answers without storing anything (:data:`UNSTORED`: the
``metrics.k8s.io`` of :mod:`metrics`, listed last, where kube lists an aggregated API):

- the legacy documents (``/api`` APIVersions, ``/apis`` APIGroupList, ``/apis/<g>``
  APIGroup, ``/api/v1`` and ``/apis/<g>/<v>`` APIResourceList);
- the aggregated ``apidiscovery.k8s.io/v2`` APIGroupDiscoveryList, which kubectl 1.30+ asks
  for first (``Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``),
  so one request replaces one per group-version.

Pure functions of the catalog; what it must not do is route or authenticate.
"""

from __future__ import annotations

from typing import Any

from kubetrain.local.apiserver import metrics, resources

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
UNSTORED: tuple[resources.Resource, ...] = metrics.ROWS


def group_versions(catalog: resources.Catalog) -> list[tuple[str, list[str]]]:
    """The catalog's (group, versions), then those of :data:`UNSTORED`."""
    found = catalog.group_versions()
    for r in UNSTORED:
        for group, versions in found:
            if group == r.group:
                if r.version not in versions:
                    versions.append(r.version)
                break
        else:
            found.append((r.group, [r.version]))
    return found


def in_group_version(
    catalog: resources.Catalog, group: str, version: str
) -> list[resources.Resource]:
    """The catalog's resources in a group-version, then those of :data:`UNSTORED`."""
    rows = catalog.in_group_version(group, version)
    return rows + [r for r in UNSTORED if r.group == group and r.version == version]


def wants_aggregated(accept: str) -> bool:
    """Whether an Accept header asks for aggregated discovery v2 (kubectl's first choice)."""
    for part in accept.split(","):
        params = {
            k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])
        }
        if (
            params.get("g") == "apidiscovery.k8s.io"
            and params.get("v") == "v2"
            and params.get("as") == "APIGroupDiscoveryList"
        ):
            return True
    return False


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(catalog: resources.Catalog) -> dict[str, Any]:
    groups = [_group_doc(g, vs) for g, vs in group_versions(catalog) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(catalog: resources.Catalog, group: str) -> dict[str, Any] | None:
    for g, versions in group_versions(catalog):
        if g == group and g:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(g, versions)}
    return None


def api_resource_list(
    catalog: resources.Catalog, group: str, version: str
) -> dict[str, Any] | None:
    rows = in_group_version(catalog, group, version)
    if not rows:
        return None
    out: list[dict[str, Any]] = []
    for r in rows:
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        out.append(entry)
        for sub in r.subresources:
            sub_entry: dict[str, Any] = {
                "name": f"{r.plural}/{sub.name}",
                "singularName": "",
                "namespaced": r.namespaced,
            }
            if sub.group or sub.version:
                sub_entry["group"] = sub.group
                sub_entry["version"] = sub.version or "v1"
            sub_entry["kind"] = sub.kind or r.kind
            sub_entry["verbs"] = list(sub.verbs)
            out.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": out,
    }


def _v2_resource(r: resources.Resource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    if r.subresources:
        entry["subresources"] = [
            {
                "subresource": sub.name,
                "responseKind": {
                    "group": sub.group if sub.kind else r.group,
                    "version": (sub.version or "v1") if sub.group else r.version,
                    "kind": sub.kind or r.kind,
                },
                "verbs": list(sub.verbs),
            }
            for sub in r.subresources
        ]
    return entry


def aggregated(catalog: resources.Catalog, *, core: bool) -> dict[str, Any]:
    """APIGroupDiscoveryList for ``/api`` (core) or ``/apis`` (every named group)."""
    items = []
    for group, versions in group_versions(catalog):
        if bool(group) == core:
            continue
        items.append(
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {
                        "version": v,
                        "resources": [_v2_resource(r) for r in in_group_version(catalog, group, v)],
                        "freshness": "Current",
                    }
                    for v in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
