"""``kubetrain node``'s kubelet flags: the serving certificate and key go together, replace the
certificate issued from --ca-cert/--ca-key (and the CA found beside the kubeconfig), and
every file named must be readable; a mistake exits naming the flag."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kubetrain.cli import node


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    node.register(parser.add_subparsers())
    return parser.parse_args(["node", *argv])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    out = {}
    for name in ("node.crt", "node.key", "ca.crt"):
        (tmp_path / name).write_text("x")
        out[name] = str(tmp_path / name)
    return out


def test_the_kubelet_flags_are_taken_with_absolute_paths(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    args = parse(
        "--tls-cert-file",
        "node.crt",
        "--tls-private-key-file",
        "node.key",
        "--client-ca-file",
        "ca.crt",
    )
    node._check_tls(args)
    assert (args.tls_cert_file, args.tls_private_key_file, args.client_ca_file) == (
        files["node.crt"],
        files["node.key"],
        files["ca.crt"],
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tls-cert-file", "{crt}"], "--tls-cert-file and --tls-private-key-file go"),
        (["--tls-private-key-file", "{key}"], "--tls-cert-file and --tls-private-key-file"),
        (
            [
                *("--tls-cert-file", "{crt}", "--tls-private-key-file", "{key}"),
                *("--ca-cert", "{ca}", "--ca-key", "{key}"),
            ],
            "give one or the other",
        ),
        (["--client-ca-file", "/nonexistent/ca.crt"], "--client-ca-file /nonexistent/ca.crt"),
    ],
)
def test_mistakes_name_the_flag(files: dict[str, str], argv: list[str], message: str) -> None:
    names = {"crt": files["node.crt"], "key": files["node.key"], "ca": files["ca.crt"]}
    args = parse(*(a.format(**names) for a in argv))
    with pytest.raises(SystemExit) as stopped:
        node._check_tls(args)
    assert message in str(stopped.value)


def test_a_serving_certificate_of_ones_own_skips_the_ca_beside_the_kubeconfig(
    files: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "pki").mkdir()
    for name in ("ca.crt", "ca.key"):
        (tmp_path / "pki" / name).write_text("x")
    kubeconfig = str(tmp_path / "kubeconfig")
    assert node._ca(parse(), kubeconfig) == (
        str(tmp_path / "pki" / "ca.crt"),
        str(tmp_path / "pki" / "ca.key"),
    )
    own = parse("--tls-cert-file", files["node.crt"], "--tls-private-key-file", files["node.key"])
    assert node._ca(own, kubeconfig) == ("", "")
