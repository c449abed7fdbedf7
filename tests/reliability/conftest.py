"""Fixtures for the reliability tests: the session's API server (tests/apiserver/conftest.py:
a fresh local one with no scheduler, node or operator beside it, unless
``KUBETRAIN_TEST_KUBECONFIG`` names another) and a fresh namespace per test. The tests start
and kill the components they are about themselves.
"""

from __future__ import annotations

from tests.apiserver import conftest as api_fixtures

# Found by name: the session's API server, clients and a fresh namespace per test.
_hide_developer_kubeconfig = api_fixtures._hide_developer_kubeconfig
kubeconfig = api_fixtures.kubeconfig
api_client = api_fixtures.api_client
core = api_fixtures.core
namespace = api_fixtures.namespace
