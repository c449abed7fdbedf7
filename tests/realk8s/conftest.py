"""Tests of kubetrain's components on a real kube-apiserver, for what only a real one shows
(how it times watches out, compacts history and answers a version it no longer has, say).
The session's control plane comes from :mod:`tests.realcluster` (the fixture
``real_control_plane``, registered for the suite by tests/fixtures); a test that needs the API
server started with flags of its own starts one in its module. Without the binaries they skip,
saying what to set."""
