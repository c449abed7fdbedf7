"""The deploy tests that need an API server use the suite's fixtures (tests/fixtures): the
session's ``kubeconfig`` (a fresh local control plane unless ``KUBETRAIN_TEST_KUBECONFIG``
names one), its client, and a fresh namespace per test."""
