"""Certificates made in memory: what they say about themselves is what was asked for, and
the checks used to decide a rotation tell a certificate's own CA and key from others."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import pytest

from kubetrain import pki

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
YEAR = datetime.timedelta(days=365)


@pytest.fixture(scope="module")
def ca() -> pki.Pair:
    return pki.new_ca("test-ca", NOW, 10 * YEAR)


def test_a_ca_is_a_ca_valid_from_just_before_now(ca: pki.Pair) -> None:
    read = pki.facts(ca.cert)
    assert read.is_ca
    assert read.not_before == NOW - pki.BACKDATE
    assert read.not_after == NOW + 10 * YEAR
    assert pki.signed_by(ca.cert, ca.cert)  # self-signed
    assert pki.matches(ca)


def test_a_serving_certificate_names_its_hosts_and_is_signed_by_its_ca(ca: pki.Pair) -> None:
    serving = pki.issue_serving(
        ca, "svc", NOW, YEAR, names=["svc.ns.svc", "svc.ns"], ips=["127.0.0.1"]
    )
    read = pki.facts(serving.cert)
    assert not read.is_ca
    assert read.names == {"svc.ns.svc", "svc.ns"}
    assert read.ips == {"127.0.0.1"}
    assert read.not_after == NOW + YEAR
    assert pki.signed_by(serving.cert, ca.cert)
    assert pki.matches(serving)


def test_another_ca_or_another_key_is_told_apart(ca: pki.Pair) -> None:
    other = pki.new_ca("test-ca", NOW, YEAR)  # the same name, another key
    serving = pki.issue_serving(ca, "svc", NOW, YEAR, names=["svc"])
    assert not pki.signed_by(serving.cert, other.cert)
    assert not pki.matches(pki.Pair(serving.cert, other.key))
    assert not pki.signed_by(b"not a certificate", ca.cert)


def test_a_client_certificate_carries_its_user_and_groups(ca: pki.Pair) -> None:
    client = pki.issue_client(ca, "someone", NOW, YEAR, organizations=["system:masters"])
    assert pki.signed_by(client.cert, ca.cert)
    assert pki.facts(client.cert).names == frozenset()


def test_ssl_loads_the_pem_it_makes(ca: pki.Pair, tmp_path: Path) -> None:
    serving = pki.issue_serving(ca, "svc", NOW, YEAR, names=["localhost"])
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(serving.cert)
    key.write_bytes(serving.key)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    ssl.create_default_context(cadata=ca.cert.decode())
