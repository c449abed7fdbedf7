"""The addresses a Node reports: the ones with which kube-apiserver's default preference
(Hostname first) reaches the node's endpoint, and a certificate that covers them."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubetrain.local import tls
from kubetrain.local.node import addresses


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = str(tmp_path_factory.mktemp("ca"))
    tls.ensure(directory)
    return directory


def test_a_certificate_covers_its_names_and_addresses(ca: str) -> None:
    cert, _ = tls.issue_certificate(ca, "n1", ["n1", "*.nodes.example"], ["10.0.0.5", "::1"])
    covered = addresses.Covered.of(cert)
    assert covered("n1")
    assert covered("N1.")
    assert covered("a.nodes.example")
    assert not covered("a.b.nodes.example")  # a wildcard stands for one label only
    assert covered("10.0.0.5")
    assert covered("0:0::1")
    assert not covered("10.0.0.6")
    assert not covered("n2")


def test_the_hostname_is_reported_only_when_it_reaches_the_node() -> None:
    def everything(host: str) -> bool:
        return True

    both = addresses.node_addresses("n1", "10.0.0.5", resolves=True, covered=everything)
    assert both == [
        {"type": "InternalIP", "address": "10.0.0.5"},
        {"type": "Hostname", "address": "n1"},
    ]
    elsewhere = addresses.node_addresses("n1", "10.0.0.5", resolves=False, covered=everything)
    assert elsewhere == [{"type": "InternalIP", "address": "10.0.0.5"}]
    assert addresses.dialed(elsewhere) == "10.0.0.5"

    def ip_only(host: str) -> bool:
        return host == "10.0.0.5"

    uncovered = addresses.node_addresses("n1", "10.0.0.5", resolves=True, covered=ip_only)
    assert uncovered == [{"type": "InternalIP", "address": "10.0.0.5"}]


def test_the_api_server_dials_the_hostname_first_by_default() -> None:
    found = [
        {"type": "InternalIP", "address": "10.0.0.5"},
        {"type": "Hostname", "address": "n1"},
    ]
    assert addresses.dialed(found) == "n1"
    assert addresses.dialed(found, ("InternalIP", "Hostname")) == "10.0.0.5"
    assert addresses.dialed([], addresses.PREFERRED) is None


def test_resolving_compares_addresses_not_text() -> None:
    assert addresses.resolves_to("localhost", "127.0.0.1") or addresses.resolves_to(
        "localhost", "::1"
    )
    assert not addresses.resolves_to("localhost", "192.0.2.1")  # TEST-NET-1: nobody's
    assert not addresses.resolves_to("localhost", "not-an-address")
    assert not addresses.resolves_to("no-such-host.invalid", "127.0.0.1")


def test_a_certificate_without_alternative_names_covers_nothing() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "n1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    covered = addresses.Covered.of(cert.public_bytes(serialization.Encoding.PEM))
    assert not covered("n1")  # the common name does not count
