"""Session-wide reporting: one line at the end of a run whose tests meant for a real
kube-apiserver could not run on one, saying what to set."""

from __future__ import annotations

import pytest

from tests import realcluster


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for reason in sorted(realcluster.missing):
        terminalreporter.write_line(f"tests on a real kube-apiserver did not run: {reason}")
