"""``kubetrain dashboard``'s mistakes, each one line that says what to do: a port in use, an
address this machine does not have, a token of the user's that would not survive an address."""

from __future__ import annotations

import socket

import pytest

from kubetrain.cli import main


def test_a_port_in_use_says_how_to_pick_another(
    kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main.main(["dashboard", "--kubeconfig", kubeconfig, "--port", str(port)])
    assert code == 1
    assert capsys.readouterr().err == (
        f"kubetrain: --port {port}: the port is in use on 127.0.0.1; pick another "
        "(--port 0 picks a free one)\n"
    )


def test_an_address_of_no_interface_is_refused(
    kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main.main(["dashboard", "--kubeconfig", kubeconfig, "--address", "192.0.2.1"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("kubetrain: warning: --address 192.0.2.1: the dashboard is reachable")
    assert err.endswith("kubetrain: --address 192.0.2.1: no interface of this machine has it\n")


@pytest.mark.parametrize("token", ["short", "has spaces in it, quite long", "a&b=c#d" * 4])
def test_a_token_that_would_not_fit_an_address_is_refused(
    kubeconfig: str,
    token: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBETRAIN_DASHBOARD_TOKEN", token)
    assert main.main(["dashboard", "--kubeconfig", kubeconfig]) == 1
    assert capsys.readouterr().err.startswith(
        "kubetrain: KUBETRAIN_DASHBOARD_TOKEN: a token is at least 16 of A-Z, a-z, 0-9"
    )
