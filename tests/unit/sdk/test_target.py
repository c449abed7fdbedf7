"""Which API server a client talks to: the command line's rule (kubetrain.sdk._target)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubetrain.local import daemon
from kubetrain.sdk import _target

HOME = {"HOME": "/home/u"}


@pytest.mark.parametrize(
    ("given", "context", "environ", "expected"),
    [
        pytest.param(None, None, HOME, None, id="nothing: the local control plane"),
        pytest.param(
            None,
            None,
            {**HOME, "KUBECONFIG": "/k/config"},
            None,
            id="KUBECONFIG alone does not move a client off the local control plane",
        ),
        pytest.param("~/c.yaml", None, HOME, os.path.expanduser("~/c.yaml"), id="a path given"),
        pytest.param(
            None,
            None,
            {**HOME, "KUBETRAIN_KUBECONFIG": "/k/kt"},
            "/k/kt",
            id="KUBETRAIN_KUBECONFIG for a whole session",
        ),
        pytest.param(
            "/given",
            None,
            {**HOME, "KUBETRAIN_KUBECONFIG": "/k/kt"},
            "/given",
            id="a path given wins over the environment",
        ),
        pytest.param(
            None,
            "prod",
            {**HOME, "KUBECONFIG": f"/k/a{os.pathsep}/k/b"},
            "/k/a",
            id="a context alone: the first file of KUBECONFIG",
        ),
        pytest.param(
            None, "prod", HOME, "/home/u/.kube/config", id="a context alone: else ~/.kube/config"
        ),
    ],
)
def test_the_rule(
    given: str | None, context: str | None, environ: dict[str, str], expected: str | None
) -> None:
    assert _target.kubeconfig_path(given, context, environ) == expected


def test_a_local_control_plane_that_does_not_run_is_not_started_when_told_so(
    tmp_path: Path,
) -> None:
    with pytest.raises(daemon.DaemonError, match="is not running; `kubetrain up` starts it"):
        _target.ensure_local({"KUBETRAIN_HOME": str(tmp_path)}, start=False)
