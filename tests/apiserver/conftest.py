"""API behaviour tests run on both servers: every test here that reaches a server runs twice,
once per target (``[local]`` and ``[kube-apiserver]`` in its id), unless
``KUBETRAIN_TEST_KUBECONFIG`` names one. The servers, clients, kubectl and namespaces are the
suite's fixtures (:mod:`tests.fixtures.cluster`); tests elsewhere that use them get the local
target alone.

Where the two servers differ, kube-apiserver is right, unless its answer is a defect (a 500 for
a client error): a test that checks kubetrain's better answer asks for
:func:`tests.fixtures.cluster.local_only`.
"""

from __future__ import annotations

import pytest

from tests.fixtures import cluster
from tests.fixtures.waits import wait_for  # noqa: F401  (for modules that still import it here)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    cluster.parametrize_targets(metafunc)
