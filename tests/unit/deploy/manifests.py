"""The manifests under ``deploy/``, read the way a cluster would get them: rendered with the
real ``kubectl kustomize`` (offline), and checked against the Kubernetes API types of the
``kubernetes`` client (pydantic models that forbid unknown fields and check types).

Shared by the deploy tests here and under tests/integration/deploy. Must not: reach an API
server.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml
from kubernetes.aio import client as k8s

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
OPERATOR = DEPLOY / "operator"
RENDER_TIMEOUT = 60.0
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: the CRDs are megabytes


@functools.cache
def _render(directory: Path) -> tuple[dict[str, Any], ...]:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed (it is on CI and on our machines)")
    result = subprocess.run(
        [binary, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=RENDER_TIMEOUT,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"kubectl kustomize {directory.relative_to(ROOT)}:\n{result.stderr}")
    return tuple(doc for doc in yaml.load_all(result.stdout, Loader=_LOADER) if doc is not None)


def render(directory: Path) -> list[dict[str, Any]]:
    """What ``kubectl kustomize <directory>`` prints, one dict per object (rendered once)."""
    return list(_render(directory))


def load(path: Path) -> dict[str, Any]:
    """One YAML document from a file."""
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    assert isinstance(doc, dict), f"{path.relative_to(ROOT)}: not one YAML object"
    return doc


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """The single object of ``kind`` (and ``name``) in ``objects``."""
    found = [
        o
        for o in objects
        if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def model_of(obj: Mapping[str, Any]) -> type[pydantic.BaseModel] | None:
    """The ``kubernetes`` client model of a built-in kind (``apps/v1`` Deployment →
    ``V1Deployment``); None for a kind it does not know (a custom resource)."""
    version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    found = getattr(k8s, f"{version.capitalize()}{obj.get('kind')}", None)
    if isinstance(found, type) and issubclass(found, pydantic.BaseModel):
        return found
    return None


def problems(obj: Mapping[str, Any]) -> list[str]:
    """What the API server's schema would reject in a built-in object: unknown or misspelt
    fields, wrong types, missing required fields; [] when it is clean.

    The models also accept Python's snake_case names (``read_only_root_filesystem``), which a
    real API server does not, so the object must come back unchanged from the model too.
    """
    model = model_of(obj)
    if model is None:
        return [f"no Kubernetes model for {obj.get('apiVersion')} {obj.get('kind')}"]
    try:
        parsed = model.model_validate(obj)
    except pydantic.ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
        ]
    back = parsed.model_dump(by_alias=True, exclude_unset=True, mode="json")
    if back != obj:
        return ["fields the API server does not know (snake_case?): the object does not round-trip"]
    return []
