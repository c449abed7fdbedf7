"""Session-wide reporting: one line at the end of a run that says whether the tests on a real
kube-apiserver ran, and what to set when they could not."""

from __future__ import annotations

import pytest

from kubetrain import envtest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    try:
        envtest.find_assets()
    except envtest.AssetsMissing as exc:
        terminalreporter.write_line(f"tests on a real kube-apiserver did not run: {exc}")
