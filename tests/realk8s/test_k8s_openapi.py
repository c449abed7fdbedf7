"""The Kubernetes definitions kubetrain keeps (kubetrain/api/_k8sopenapi.py) are the ones a real
kube-apiserver of the pinned version serves: fetched and trimmed as ``make k8s-openapi`` does,
they are equal to the kept ones. Against another version the test skips, naming both."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from kubetrain import envtest
from kubetrain.api import _k8sopenapi

GENERATOR = Path(__file__).parents[2] / "tools" / "k8s_openapi.py"


def test_the_kept_definitions_are_the_servers(real_control_plane: envtest.ControlPlane) -> None:
    tool = runpy.run_path(str(GENERATOR))
    version, definitions = tool["fetch"](real_control_plane.kubeconfig)
    if version != _k8sopenapi.KUBERNETES:
        pytest.skip(
            f"the server is Kubernetes {version}; the kept definitions are "
            f"{_k8sopenapi.KUBERNETES}'s"
        )
    trimmed = tool["trim"](definitions, _k8sopenapi.ROOTS)
    assert trimmed == json.loads(_k8sopenapi.DEFINITIONS), "run `make k8s-openapi`"
