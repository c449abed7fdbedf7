"""The reliability tests use the suite's fixtures (tests/fixtures): the session's API server
(a fresh local one with no scheduler, node or operator beside it, unless
``KUBETRAIN_TEST_KUBECONFIG`` names another) and a fresh namespace per test. The tests start
and kill the components they are about themselves.
"""
