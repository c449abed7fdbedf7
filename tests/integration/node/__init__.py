"""Tests of the node's pieces that start real processes or serve on loopback ports: the
runtime, the shim, the per-pod views and the node's HTTPS server, without an API server."""
