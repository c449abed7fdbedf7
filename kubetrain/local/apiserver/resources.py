"""The resources the local API server serves: one row per resource, read by discovery,
routing, storage and OpenAPI alike, so they cannot disagree.

Built-in rows are written here; custom resources get rows of the same shape from their CRDs
(:func:`from_crd`). What a resource *does* on write (defaults, validation, side effects) is
its strategy's business, not this table's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION_DELETE = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Subresource:
    """A subresource such as ``status`` or ``scale``: what it takes and returns, and its verbs."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""  # of ``kind`` when it differs from the parent's (e.g. autoscaling Scale)
    version: str = ""


STATUS = Subresource("status", "", ("get", "patch", "update"))


@dataclass(frozen=True)
class Resource:
    """One served resource in one group-version, e.g. pods in core/v1."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[Subresource, ...] = ()
    categories: tuple[str, ...] = ()
    storage: str = ""  # store key when it differs from plural[.group] (events.k8s.io events)
    custom: bool = False  # defined by a CRD
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        """The store key: ``pods``, ``leases.coordination.k8s.io``."""
        if self.storage:
            return self.storage
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def kind_key(self) -> str:
        """``v1/Pod``, ``coordination.k8s.io/v1/Lease``: how patches and tables name a kind."""
        return f"{self.group_version}/{self.kind}"

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    def has_status(self) -> bool:
        return self.subresource("status") is not None


def _core(kind: str, plural: str, namespaced: bool = True, **kw: Any) -> Resource:
    return Resource("", "v1", kind, plural, kind.lower(), namespaced, **kw)


BUILTIN: tuple[Resource, ...] = (
    _core(
        "Namespace",
        "namespaces",
        False,
        short_names=("ns",),
        verbs=NO_COLLECTION_DELETE,
        subresources=(STATUS, Subresource("finalize", "Namespace", ("update",))),
    ),
    _core(
        "Pod",
        "pods",
        short_names=("po",),
        categories=("all",),
        subresources=(
            STATUS,
            Subresource("binding", "Binding", ("create",)),
            Subresource("log", "Pod", ("get",)),
            Subresource("exec", "PodExecOptions", ("create", "get")),
            Subresource("portforward", "PodPortForwardOptions", ("create", "get")),
            Subresource("eviction", "Eviction", ("create",), "policy", "v1"),
        ),
    ),
    _core("Binding", "bindings", verbs=("create",)),
    _core(
        "Service",
        "services",
        short_names=("svc",),
        categories=("all",),
        subresources=(STATUS,),
    ),
    _core("Endpoints", "endpoints", short_names=("ep",)),
    _core("ConfigMap", "configmaps", short_names=("cm",)),
    _core("Secret", "secrets"),
    _core(
        "ServiceAccount",
        "serviceaccounts",
        short_names=("sa",),
        subresources=(
            Subresource("token", "TokenRequest", ("create",), "authentication.k8s.io", "v1"),
        ),
    ),
    _core("Event", "events", short_names=("ev",)),
    _core("Node", "nodes", False, short_names=("no",), subresources=(STATUS,)),
    _core(
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        short_names=("pvc",),
        subresources=(STATUS,),
    ),
    _core(
        "PersistentVolume",
        "persistentvolumes",
        False,
        short_names=("pv",),
        subresources=(STATUS,),
    ),
    _core("ResourceQuota", "resourcequotas", short_names=("quota",), subresources=(STATUS,)),
    _core("LimitRange", "limitranges", short_names=("limits",)),
    Resource("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",), storage="events"),
    Resource("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    Resource(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        "priorityclass",
        False,
        ("pc",),
    ),
    Resource(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        True,
        ("hpa",),
        subresources=(STATUS,),
        categories=("all",),
    ),
    Resource(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        "clusterrolebinding",
        False,
    ),
    Resource(
        "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False
    ),
    Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True),
    Resource("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True),
    Resource(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
        False,
        ("crd", "crds"),
        subresources=(STATUS,),
        categories=("api-extensions",),
    ),
)

# Group-version order in discovery, as kube-apiserver lists them (core first).
GROUP_ORDER = (
    "",
    "events.k8s.io",
    "autoscaling",
    "rbac.authorization.k8s.io",
    "coordination.k8s.io",
    "scheduling.k8s.io",
    "apiextensions.k8s.io",
)


def from_crd(crd: Mapping[str, Any]) -> list[Resource]:
    """The rows a CRD serves: one per served version."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    group = spec["group"]
    rows = []
    for version in spec.get("versions", []):
        if not version.get("served", True):
            continue
        subs = []
        declared = version.get("subresources") or {}
        if "status" in declared:
            subs.append(STATUS)
        if "scale" in declared:
            subs.append(
                Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1")
            )
        rows.append(
            Resource(
                group=group,
                version=version["name"],
                kind=names["kind"],
                plural=names["plural"],
                singular=names.get("singular") or names["kind"].lower(),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                subresources=tuple(subs),
                categories=tuple(names.get("categories") or ()),
                custom=True,
                extra={"crd": crd, "version": version},
            )
        )
    return rows


class Catalog:
    """Every served resource, found by (group, version, plural) or by kind; changes as CRDs
    come and go."""

    def __init__(self, rows: Iterable[Resource] = BUILTIN) -> None:
        self._builtin = tuple(rows)
        self._custom: dict[str, list[Resource]] = {}  # CRD name → its rows
        self._rebuild()

    def _rebuild(self) -> None:
        rows = list(self._builtin)
        for crd_rows in self._custom.values():
            rows.extend(crd_rows)
        self.rows: tuple[Resource, ...] = tuple(rows)
        self._by_path = {(r.group, r.version, r.plural): r for r in rows}
        self._by_kind = {(r.group, r.version, r.kind): r for r in rows}
        self._by_key: dict[str, list[Resource]] = {}
        for r in rows:
            self._by_key.setdefault(r.key, []).append(r)

    def set_crd(self, name: str, rows: list[Resource]) -> None:
        if rows:
            self._custom[name] = rows
        else:
            self._custom.pop(name, None)
        self._rebuild()

    def remove_crd(self, name: str) -> None:
        self._custom.pop(name, None)
        self._rebuild()

    def find(self, group: str, version: str, plural: str) -> Resource | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> Resource | None:
        return self._by_kind.get((group, version, kind))

    def by_key(self, key: str) -> list[Resource]:
        """Every served version of the resource stored under ``key``."""
        return self._by_key.get(key, [])

    def storage_row(self, key: str) -> Resource | None:
        """The row whose shape objects are stored in (core events before events.k8s.io)."""
        rows = self.by_key(key)
        return rows[0] if rows else None

    def group_versions(self) -> list[tuple[str, list[str]]]:
        """(group, versions) in discovery order; the first version is the preferred one."""
        order: dict[str, list[str]] = {}
        for group in GROUP_ORDER:
            order.setdefault(group, [])
        for r in self.rows:
            versions = order.setdefault(r.group, [])
            if r.version not in versions:
                versions.append(r.version)
        return [(g, _by_priority(v)) for g, v in order.items() if v]

    def in_group_version(self, group: str, version: str) -> list[Resource]:
        return [r for r in self.rows if r.group == group and r.version == version]

    def namespaced_keys(self) -> list[str]:
        """Store keys of every namespaced resource (each once)."""
        seen: dict[str, None] = {}
        for r in self.rows:
            if r.namespaced and r.verbs != ("create",):
                seen.setdefault(r.key, None)
        return list(seen)


def _by_priority(versions: list[str]) -> list[str]:
    """Kube's version priority: GA before beta before alpha, higher numbers first."""

    def rank(v: str) -> tuple[int, int, int, str]:
        m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
        if not m:
            return (3, 0, 0, v)
        stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
        return (stage, -int(m.group(1)), -int(m.group(3) or 0), v)

    return sorted(versions, key=rank)
