"""Tests of kubetrain's components on a real kube-apiserver, for what only a real one shows
(how it times watches out, compacts history and answers a version it no longer has, say).
The session's control plane comes from :mod:`tests.realcluster`; a test that needs the API
server started with flags of its own starts one in its module. Without the binaries they skip,
saying what to set."""

from __future__ import annotations

from tests.realcluster import real_control_plane  # noqa: F401  (a fixture, found by name)
