"""A real Kubernetes control plane for the benchmarks: etcd and kube-apiserver (and, when
asked, kube-controller-manager) from ``KUBEBUILDER_ASSETS`` through :mod:`kubetrain.envtest`,
with kubetrain's CRDs installed as users install them (``kubectl apply --server-side -k
deploy/crds``), in a temporary directory removed at the end.

A benchmark imports this as a sibling module (``import _realcluster``), as it does
``_processes``. Owns: starting, readying and stopping that control plane for a benchmark.
Must not: measure anything.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from kubetrain import envtest

CRDS = Path(__file__).resolve().parent.parent / "deploy" / "crds"


class Unavailable(Exception):
    """No real control plane here (binaries or kubectl missing, or it failed to start): the
    message says what to set or what went wrong."""


def assets() -> envtest.Assets:
    """The binaries, or :class:`Unavailable` naming what to set."""
    try:
        return envtest.find_assets()
    except envtest.AssetsMissing as exc:
        raise Unavailable(f"no real kube-apiserver: {exc}") from exc


def version(found: envtest.Assets | None = None) -> str:
    """What ``kube-apiserver --version`` says (``Kubernetes v1.28.7``)."""
    binary = (found or assets()).kube_apiserver
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() or "kube-apiserver (version unknown)"


@contextlib.contextmanager
def control_plane(
    *, controllers: bool = False, apiserver_flags: Sequence[str] = (), crds: bool = True
) -> Iterator[envtest.ControlPlane]:
    """A fresh control plane (kube-controller-manager too when ``controllers``), with the
    CRDs unless told otherwise; stopped and its directory removed however the block ends."""
    found = assets()
    with tempfile.TemporaryDirectory(prefix="kubetrain-bench-kube-") as directory:
        plane = envtest.ControlPlane(
            found,
            Path(directory),
            controllers=controllers,
            apiserver_flags=apiserver_flags,
            crds=(CRDS,) if crds else (),
        )
        try:
            plane.start()  # installs the CRDs with kubectl, as users do
        except RuntimeError as exc:
            raise Unavailable(f"the real control plane did not start: {exc}") from exc
        try:
            yield plane
        finally:
            plane.stop()
