"""What the MPI end-to-end test needs beyond the e2e control plane (tests/e2e/conftest.py):
Open MPI's ``mpirun`` on this machine, ``mpi4py`` in kubetrain's environment (the pods' Python),
and ``kubectl``, which the launcher's kubexec.sh runs. Missing any, the test skips and says
which and how to get it (``make test`` installs all three on our machines and CI)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

NEEDED = (
    ("mpirun", "Open MPI (apt-get install openmpi-bin libopenmpi-dev)"),
    ("mpi4py", "mpi4py (pip install -e '.[mpi]')"),
    ("kubectl", "kubectl (the MPI launcher starts its ranks with kubectl exec)"),
)


def missing() -> list[str]:
    found = {
        "mpirun": shutil.which("mpirun") is not None,
        "mpi4py": importlib.util.find_spec("mpi4py") is not None,
        "kubectl": shutil.which("kubectl") is not None,
    }
    return [how for what, how in NEEDED if not found[what]]


@pytest.fixture
def mpi_installed() -> None:
    """Skip, naming what is not installed, unless MPI jobs can run on this machine."""
    absent = missing()
    if absent:
        pytest.skip("an MPIJob cannot run here; not installed: " + ", ".join(absent))
