"""Fixtures for the deploy tests that need an API server: the session's ``kubeconfig`` (a
fresh local control plane unless ``KUBETRAIN_TEST_KUBECONFIG`` names one), its client, and a
fresh namespace per test, shared with the API tests."""

from __future__ import annotations

from tests.apiserver.conftest import (  # noqa: F401  (fixtures, found by name)
    _hide_developer_kubeconfig,
    api_client,
    core,
    kubeconfig,
    namespace,
)
