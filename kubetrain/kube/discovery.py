"""What an API server serves, from its discovery documents (``/api``, ``/apis`` and one
``APIResourceList`` per group-version).

Owns: turning those documents into :class:`Resource` values, the kind → resource mapping, and
the "preferred version" choice. Must not: do I/O (:meth:`kubetrain.kube.client.Client.discover`
fetches and caches the documents) or invent resources the server did not list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubetrain.kube.resource import Resource, split_api_version


@dataclass(frozen=True)
class GroupVersions:
    """Every served group-version (``v1``, ``apps/v1``, ...) in the server's order, and each
    group's preferred version."""

    api_versions: tuple[str, ...]
    preferred: Mapping[str, str]


def group_versions(core: Mapping[str, Any], groups: Mapping[str, Any]) -> GroupVersions:
    """From the ``APIVersions`` body of ``/api`` and the ``APIGroupList`` body of ``/apis``."""
    versions: list[str] = []
    preferred: dict[str, str] = {}
    core_versions = [v for v in core.get("versions") or [] if isinstance(v, str)]
    versions.extend(core_versions)
    if core_versions:
        preferred[""] = core_versions[0]
    for group in groups.get("groups") or []:
        name = group.get("name")
        if not isinstance(name, str) or not name:
            continue
        listed = [v.get("version") for v in group.get("versions") or [] if isinstance(v, Mapping)]
        listed = [v for v in listed if isinstance(v, str) and v]
        versions.extend(f"{name}/{v}" for v in listed)
        choice = (group.get("preferredVersion") or {}).get("version")
        if isinstance(choice, str) and choice in listed:
            preferred[name] = choice
        elif listed:
            preferred[name] = listed[0]
    return GroupVersions(tuple(versions), preferred)


def parse_resource_list(doc: Mapping[str, Any]) -> tuple[list[Resource], dict[str, set[str]]]:
    """The main resources of one ``APIResourceList``, and each one's subresources
    (``pods/status`` → ``{"pods": {"status"}}``)."""
    group, version = split_api_version(str(doc.get("groupVersion") or "v1"))
    found: list[Resource] = []
    subresources: dict[str, set[str]] = {}
    for entry in doc.get("resources") or []:
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            continue
        if "/" in name:
            main, _, sub = name.partition("/")
            subresources.setdefault(main, set()).add(sub)
            continue
        found.append(
            Resource(
                group=entry.get("group") or group,
                version=entry.get("version") or version,
                plural=name,
                namespaced=bool(entry.get("namespaced")),
                kind=str(entry.get("kind") or ""),
                verbs=frozenset(v for v in entry.get("verbs") or [] if isinstance(v, str)),
            )
        )
    return found, subresources


@dataclass(frozen=True)
class Discovery:
    """A snapshot of what one API server serves."""

    resources: tuple[Resource, ...]
    preferred_versions: Mapping[str, str]
    subresources: Mapping[Resource, frozenset[str]] = field(default_factory=dict)
    failed: tuple[str, ...] = ()  # group-versions whose list could not be read

    @classmethod
    def build(
        cls,
        versions: GroupVersions,
        lists: Iterable[Mapping[str, Any]],
        failed: Iterable[str] = (),
    ) -> Discovery:
        resources: list[Resource] = []
        subs: dict[Resource, frozenset[str]] = {}
        for doc in lists:
            found, subresources = parse_resource_list(doc)
            for r in found:
                resources.append(r)
                if r.plural in subresources:
                    subs[r] = frozenset(subresources[r.plural])
        return cls(tuple(resources), dict(versions.preferred), subs, tuple(failed))

    def preferred(self) -> list[Resource]:
        """One version of each resource: its group's preferred version, or the first version
        that serves it when the preferred one does not (client-go's ServerPreferredResources)."""
        chosen: dict[tuple[str, str], Resource] = {}
        for r in self.resources:
            key = (r.group, r.plural)
            current = chosen.get(key)
            if current is None or (
                r.version == self.preferred_versions.get(r.group) and current.version != r.version
            ):
                chosen[key] = r
        return list(chosen.values())

    def find_kind(self, api_version: str, kind: str) -> Resource | None:
        """The resource that holds objects of ``kind`` in ``api_version`` (REST mapping)."""
        group, version = split_api_version(api_version)
        for r in self.resources:
            if r.group == group and r.version == version and r.kind == kind:
                return r
        return None

    def find(self, group: str, plural: str, version: str | None = None) -> Resource | None:
        """A resource by group and plural, in ``version`` or else the preferred one."""
        matches = [r for r in self.resources if r.group == group and r.plural == plural]
        wanted = version or self.preferred_versions.get(group)
        for r in matches:
            if r.version == wanted:
                return r
        return None if version else (matches[0] if matches else None)
