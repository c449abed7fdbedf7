"""Unit tests run without the developer's cluster or control plane (tests/fixtures/environment):
whatever the shell that started pytest had set."""

from __future__ import annotations

import os
from pathlib import Path


def test_no_kubeconfig_or_kubetrain_setting_of_the_shell_reaches_a_unit_test() -> None:
    assert not Path(os.environ["KUBECONFIG"]).exists()
    home = Path(os.environ["KUBETRAIN_HOME"])
    assert home.parent == Path(os.environ["KUBECONFIG"]).parent  # the session's empty place
    leaked = [
        name
        for name in os.environ
        if name.startswith("KUBETRAIN_")
        and name != "KUBETRAIN_HOME"
        and not name.startswith("KUBETRAIN_TEST_")
    ]
    assert leaked == []
