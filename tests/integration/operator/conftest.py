"""Fixtures for the operator's integration tests: the API server under test (the session's
``kubeconfig``, a fresh local control plane unless ``KUBETRAIN_TEST_KUBECONFIG`` names one),
a fresh namespace per test, and manager settings that suit tests (free ports, short leases).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from kubetrain import kube
from kubetrain.operator.runtime import manager
from tests.apiserver.conftest import (  # noqa: F401  (fixtures, shared with the API tests)
    _hide_developer_kubeconfig,
    api_client,
    core,
    kubeconfig,
    namespace,
)

FAST_WATCH = kube.watch.Settings(timeout_seconds=60, inactivity=30.0, backoff_initial=0.05)


@pytest.fixture
def manager_settings(namespace: str) -> Callable[..., manager.Settings]:  # noqa: F811
    """``manager_settings(**overrides)``: Settings that watch only this test's namespace,
    serve metrics and probes on free local ports, and keep any Lease in the namespace with
    leases short enough for a test (2 s, renew deadline 1.5 s, retries every 0.2 s). Leader
    election is off unless asked for."""

    def make(**overrides: Any) -> manager.Settings:
        base = manager.Settings(
            namespace=namespace,
            leader_election=False,
            lease_namespace=namespace,
            lease_name="kubetrain-test",
            lease_duration=2.0,
            renew_deadline=1.5,
            retry_period=0.2,
            metrics_address="127.0.0.1:0",
            probe_address="127.0.0.1:0",
            workers=2,
            reconcile_timeout=20.0,
            watch=FAST_WATCH,
        )
        return dataclasses.replace(base, **overrides)

    return make
