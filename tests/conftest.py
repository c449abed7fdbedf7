"""The suite's one fixtures plugin (tests/fixtures: environment, servers and clients, CRDs,
operator settings, a container engine), registered here for every directory, and session-wide
reporting: one line at the end of a run whose tests meant for a real kube-apiserver could not
run on one, saying what to set."""

from __future__ import annotations

import pytest

from tests import realcluster

pytest_plugins = [
    "tests.fixtures.environment",
    "tests.fixtures.cluster",
    "tests.fixtures.crds",
    "tests.fixtures.operator",
    "tests.fixtures.containers",
]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for reason in sorted(realcluster.missing):
        terminalreporter.write_line(f"tests on a real kube-apiserver did not run: {reason}")
