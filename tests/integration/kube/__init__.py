"""Tests of the Kubernetes client layer against a fake API server on a loopback port."""
