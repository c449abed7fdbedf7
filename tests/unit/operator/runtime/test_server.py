"""Bind addresses as the upstream flags spell them (``--metrics-bind-address :8080``;
``0`` turns the endpoint off)."""

from __future__ import annotations

import pytest

from kubetrain.operator.runtime import server


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        pytest.param(":8080", (None, 8080), id="a bare port listens on every interface"),
        pytest.param("127.0.0.1:0", ("127.0.0.1", 0), id="port 0 picks a free port"),
        pytest.param("[::1]:8081", ("::1", 8081), id="an IPv6 host in brackets"),
        pytest.param("0", None, id="0 turns it off"),
        pytest.param("", None, id="empty turns it off"),
    ],
)
def test_parse_address(address: str, expected: tuple[str | None, int] | None) -> None:
    assert server.parse_address(address) == expected


@pytest.mark.parametrize("address", ["8080", "host:", "host:port", ":99999"])
def test_a_bad_address_is_refused_with_an_example(address: str) -> None:
    with pytest.raises(ValueError, match=r"e\.g\. :8080"):
        server.parse_address(address)
