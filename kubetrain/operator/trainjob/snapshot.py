"""The runtime snapshot: the runtime a TrainJob resolved to, frozen in a ConfigMap it owns.

A TrainJob is built from its runtime on every reconcile, so without a snapshot an edit of a
ClusterTrainingRuntime would change every job already running on it (a restart would come back
different). The first reconcile therefore copies the runtime into the ConfigMap
``<trainjob>-runtime-snapshot`` (key ``runtime``, YAML), controlled by the TrainJob, and every
later reconcile reads the runtime from there. This is upstream's own mechanism (master,
``pkg/runtime/core/snapshot.go``), chosen over an annotation on the TrainJob because it leaves
the user's object untouched, is not bound by the 256 KiB annotation limit, is visible with
``kubectl get configmap``, and is garbage-collected with the job.

A snapshot is trusted only if the TrainJob controls it and it names the runtime the TrainJob
refers to; otherwise reading it fails with upstream's message. Pure: (de)serialisation and
checks; the reconciler reads and writes the ConfigMap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from kubetrain import api
from kubetrain.errors import KubetrainError

SUFFIX: Final = "-runtime-snapshot"
DATA_KEY: Final = "runtime"
KEPT_METADATA: Final = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "annotations",
)


class InvalidSnapshot(KubetrainError):
    """The snapshot ConfigMap cannot be used for this TrainJob (upstream's messages)."""


def name(trainjob_name: str) -> str:
    return trainjob_name + SUFFIX


def config_map(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot ConfigMap of ``runtime`` (a stored object) for ``trainjob``."""
    meta = trainjob.get("metadata") or {}
    runtime_meta = runtime.get("metadata") or {}
    frozen = {
        "apiVersion": runtime.get("apiVersion"),
        "kind": runtime.get("kind"),
        "metadata": {k: runtime_meta[k] for k in KEPT_METADATA if k in runtime_meta},
        "spec": runtime.get("spec") or {},
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name(str(meta.get("name"))),
            "namespace": meta.get("namespace"),
            "ownerReferences": [
                {
                    "apiVersion": trainjob.get("apiVersion") or "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {DATA_KEY: yaml.safe_dump(frozen, sort_keys=False)},
    }


def read(trainjob: Mapping[str, Any], config_map: Mapping[str, Any]) -> dict[str, Any]:
    """The runtime object frozen in ``config_map``, checked against ``trainjob``."""
    meta = config_map.get("metadata") or {}
    owner = next(
        (
            r
            for r in meta.get("ownerReferences") or []
            if isinstance(r, dict) and r.get("controller")
        ),
        None,
    )
    if owner is None or owner.get("uid") != (trainjob.get("metadata") or {}).get("uid"):
        raise InvalidSnapshot(
            "invalid runtime snapshot: a snapshot configmap exists but is owned by another object"
        )
    text = (config_map.get("data") or {}).get(DATA_KEY)
    if not isinstance(text, str):
        raise InvalidSnapshot(
            f'invalid runtime snapshot: snapshot ConfigMap missing "{DATA_KEY}" data key'
        )
    try:
        runtime = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidSnapshot(
            f"invalid runtime snapshot: unable to unmarshal the snapshot: {exc}"
        ) from exc
    if not isinstance(runtime, dict):
        raise InvalidSnapshot("invalid runtime snapshot: unable to unmarshal the snapshot")
    ref = ((trainjob.get("spec") or {}).get("runtimeRef")) or {}
    group = str(runtime.get("apiVersion") or "").rpartition("/")[0]
    found = (str((runtime.get("metadata") or {}).get("name")), group, str(runtime.get("kind")))
    wanted = (
        str(ref.get("name")),
        str(ref.get("apiGroup") or "<any>"),
        str(ref.get("kind") or "<any>"),
    )
    if (
        found[0] != wanted[0]
        or (ref.get("apiGroup") and found[1] != wanted[1])
        or (ref.get("kind") and found[2] != wanted[2])
    ):
        raise InvalidSnapshot(
            "invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a "
            "runtime with name, api group and kind of "
            f'"{wanted[0]}", "{wanted[1]}", "{wanted[2]}" but found runtime with name, api '
            f'group and kind of "{found[0]}", "{found[1]}", "{found[2]}"'
        )
    return runtime


def typed(runtime: Mapping[str, Any]) -> api.Runtime:
    """The runtime object as the defaulted API type; ``InvalidSnapshot`` if it is not valid."""
    verdict = api.review(dict(runtime))
    obj = verdict.obj
    if not verdict.ok or not isinstance(obj, api.TrainingRuntime | api.ClusterTrainingRuntime):
        raise InvalidSnapshot("invalid runtime: " + "; ".join(verdict.messages()))
    return obj
