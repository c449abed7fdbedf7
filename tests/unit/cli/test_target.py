"""Which kubeconfig a command uses (kubetrain.cli.target.kubeconfig_path)."""

from __future__ import annotations

import argparse

import pytest

from kubetrain.cli import target


def args(**given: str) -> argparse.Namespace:
    return argparse.Namespace(kubeconfig=given.get("kubeconfig"), context=given.get("context"))


CASES = [
    pytest.param(args(), {}, None, id="nothing given means the local control plane"),
    pytest.param(args(), {"KUBECONFIG": "/k"}, None, id="KUBECONFIG alone does not move commands"),
    pytest.param(args(kubeconfig="/a"), {"KUBETRAIN_KUBECONFIG": "/b"}, "/a", id="the option wins"),
    pytest.param(args(), {"KUBETRAIN_KUBECONFIG": "/b"}, "/b", id="then KUBETRAIN_KUBECONFIG"),
    pytest.param(
        args(context="c"), {"KUBECONFIG": "/x:/y"}, "/x", id="a context alone reads KUBECONFIG"
    ),
    pytest.param(args(context="c"), {"HOME": "/h"}, "/h/.kube/config", id="else ~/.kube/config"),
]


@pytest.mark.parametrize(("parsed", "environ", "expected"), CASES)
def test_kubeconfig_path(
    parsed: argparse.Namespace, environ: dict[str, str], expected: str | None
) -> None:
    assert target.kubeconfig_path(parsed, environ) == expected
