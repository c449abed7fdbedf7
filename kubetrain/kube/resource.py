"""Which REST collection an object lives in, and the URL paths that address it.

Owns: :class:`Resource` (group, version, plural, scope) and building request paths from it.
Must not: do I/O or guess plurals from kinds; the mapping from a kind to its resource comes
from discovery (:mod:`kubetrain.kube.discovery`), as kubectl and client-go do it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    """A served resource, e.g. ``Resource("", "v1", "configmaps")`` or
    ``Resource("kubeflow.org", "v1", "pytorchjobs")``.

    Identity is (group, version, plural, namespaced); ``kind`` and ``verbs`` come along from
    discovery and do not take part in equality, so a hand-written value and a discovered one
    compare equal.
    """

    group: str
    version: str
    plural: str
    namespaced: bool = True
    kind: str = field(default="", compare=False)
    verbs: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, else ``group/version``, as objects spell it."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``plural.group`` (``configmaps`` for the core group), as kube names a resource in
        messages and RBAC."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The URL path: the collection when ``name`` is None (across all namespaces when
        ``namespace`` is None too), else the object or one of its subresources."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{_segment(namespace)}"
        elif not self.namespaced and namespace is not None:
            raise ValueError(f"{self.group_resource} is cluster-scoped; no namespace applies")
        if name is None:
            if subresource is not None:
                raise ValueError("a subresource needs an object name")
            return f"{base}/{self.plural}"
        if self.namespaced and namespace is None:
            raise ValueError(f"{self.group_resource} is namespaced; name a namespace")
        path = f"{base}/{self.plural}/{_segment(name)}"
        return f"{path}/{subresource}" if subresource else path


def _segment(value: str) -> str:
    if not value or value in (".", ".."):
        raise ValueError(f"not a valid path segment: {value!r}")
    return quote(value, safe="")


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` → ``("apps", "v1")``; ``v1`` → ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")
PODS = Resource("", "v1", "pods", kind="Pod")
