"""Port-forward's port checks and the kubelet's words for what it refuses; the forwarding
itself, over SPDY to a real local echo server, is tested in
tests/integration/node/test_portforward.py."""

from __future__ import annotations

import pytest

from kubetrain.local.node import portforward


def test_ports_are_checked_with_the_kubelets_words() -> None:
    assert portforward.parse_port("6006") == 6006
    for text, why in (("0", "out of range"), ("65536", "out of range"), ("x", "invalid syntax")):
        with pytest.raises(ValueError, match=why):
            portforward.parse_port(text)
