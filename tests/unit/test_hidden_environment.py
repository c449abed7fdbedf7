"""Unit tests run without the developer's cluster or control plane (tests/fixtures/environment):
whatever the shell that started pytest had set, and without starting a process or opening a
socket."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest


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


def test_a_unit_test_can_start_no_process_and_open_no_socket() -> None:
    for start in (
        lambda: subprocess.run(["true"], check=False),
        lambda: socket.create_connection(("127.0.0.1", 9)),
        lambda: socket.socket(socket.AF_UNIX),
    ):
        with pytest.raises(pytest.fail.Exception, match="tests/integration"):
            start()
    left, right = socket.socketpair()  # in-process: asyncio's event loops need one
    with left, right:
        left.sendall(b"x")
        assert right.recv(1) == b"x"
