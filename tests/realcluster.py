"""The session's real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler from ``KUBEBUILDER_ASSETS``, through :mod:`kubetrain.envtest`), with kubetrain's
CRDs installed as users install them (``kubectl apply --server-side -k deploy/crds``), shared
by every test that asks for it: the API behaviour tests' second target and the end-to-end
scenarios on a real cluster. Started on first use, stopped at the end of the session; where
the binaries are not there, the tests that need it skip, saying what to set.

A conftest that wants it imports :func:`real_control_plane` by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrain import envtest

# kube-controller-manager's node-lifecycle controller marks a silent node NotReady after this
# long (its default is 40 s): short, so that a test sees the controller act on a node that
# stops reporting, long enough for a node agent on 2 busy cores.
NODE_MONITOR_GRACE = "20s"
CRDS = Path(__file__).resolve().parent.parent / "deploy" / "crds"

# Why tests meant for a real kube-apiserver did not run on one, for the session's summary
# (tests/conftest.py): one line, however many tests it concerns.
missing: set[str] = set()


def available() -> bool:
    """Whether a real control plane can start here; when not, the reason is noted."""
    try:
        envtest.find_assets()
    except envtest.AssetsMissing as exc:
        missing.add(str(exc))
        return False
    return True


# The session's one plane. Each conftest that imports the fixture registers a fixture of its own
# (pytest keeps one instance per registration), so the plane is kept here: started by the first
# that asks, stopped when the session ends, after every fixture that uses it.
_started: dict[str, envtest.ControlPlane] = {}


@pytest.fixture(scope="session")
def real_control_plane(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> envtest.ControlPlane:
    if "plane" in _started:
        return _started["plane"]
    try:
        assets = envtest.find_assets()
    except envtest.AssetsMissing as exc:
        missing.add(str(exc))
        pytest.skip(f"no real Kubernetes control plane: {exc}")
    plane = envtest.ControlPlane(
        assets,
        tmp_path_factory.mktemp("kube-apiserver"),
        controllers=True,
        scheduler=True,
        controller_flags=(f"--node-monitor-grace-period={NODE_MONITOR_GRACE}",),
        crds=(CRDS,),
    )
    try:
        plane.start()
    except RuntimeError as exc:
        pytest.fail(f"the real control plane did not start: {exc}")
    request.config.add_cleanup(plane.stop)
    _started["plane"] = plane
    return plane
