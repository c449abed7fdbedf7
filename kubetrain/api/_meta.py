"""Object metadata: the few fields kubetrain reads, plus whatever else the user or server set."""

from __future__ import annotations

from pydantic import StrictStr

from kubetrain.api._model import KubeObject, OpenModel


class ObjectMeta(OpenModel):
    """``metadata``; server-set fields (uid, resourceVersion, ...) pass through untouched."""

    name: StrictStr | None = None
    generate_name: StrictStr | None = None
    namespace: StrictStr | None = None
    labels: dict[str, StrictStr] | None = None
    annotations: dict[str, StrictStr] | None = None
    uid: StrictStr | None = None
    resource_version: StrictStr | None = None
    generation: int | None = None
    creation_timestamp: StrictStr | None = None
    deletion_timestamp: StrictStr | None = None
    owner_references: list[KubeObject] | None = None
    finalizers: list[StrictStr] | None = None
