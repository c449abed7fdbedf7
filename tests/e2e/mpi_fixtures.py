"""What the MPI end-to-end tests need beyond the e2e control plane (tests/e2e/conftest.py):
Open MPI's ``mpirun`` on this machine, ``mpi4py`` in kubetrain's environment (the pods' Python),
and, for the MPIJob, ``kubectl``, which its launcher's kubexec.sh runs (a TrainJob's launcher
reaches its nodes through the node's ssh stand-in instead). Missing any, the test skips and
says which and how to get it (``make test`` installs all three on our machines and CI)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

NEEDED = (
    ("mpirun", "Open MPI (apt-get install openmpi-bin libopenmpi-dev)"),
    ("mpi4py", "mpi4py (pip install -e '.[mpi]')"),
    ("kubectl", "kubectl (the MPI launcher starts its ranks with kubectl exec)"),
)


def missing(needed: tuple[tuple[str, str], ...] = NEEDED) -> list[str]:
    found = {
        "mpirun": shutil.which("mpirun") is not None,
        "mpi4py": importlib.util.find_spec("mpi4py") is not None,
        "kubectl": shutil.which("kubectl") is not None,
    }
    return [how for what, how in needed if not found[what]]


@pytest.fixture
def mpi_installed() -> None:
    """Skip, naming what is not installed, unless MPI jobs can run on this machine."""
    absent = missing()
    if absent:
        pytest.skip("an MPIJob cannot run here; not installed: " + ", ".join(absent))


@pytest.fixture
def mpirun_installed() -> None:
    """Skip, naming what is not installed, unless an MPI TrainJob can run on this machine."""
    absent = missing(NEEDED[:2])
    if absent:
        pytest.skip("an MPI TrainJob cannot run here; not installed: " + ", ".join(absent))
