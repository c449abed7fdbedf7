"""Certificates made in memory: a self-signed CA, and the serving and client certificates it
signs, as PEM bytes.

Two components need them and may not import each other: the local API server (its CA, its
serving certificate, the client certificate a real kube-apiserver presents to kubelets) and
the operator's admission webhook (its CA and serving certificate, kept in a Secret). Keys are
ECDSA P-256, the certificates SHA-256 signed, and every certificate is valid from five
minutes before it was made, so a peer whose clock runs a little behind accepts it.

Owns: building, reading and checking certificates. Must not: write files, talk to an API
server, or decide how long anything lives (callers pass the validity).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

BACKDATE = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class Pair:
    """A certificate and its private key, both PEM."""

    cert: bytes
    key: bytes


def new_ca(common_name: str, now: datetime.datetime, validity: datetime.timedelta) -> Pair:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        _builder(name, name, key.public_key(), now, validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Pair(_cert_pem(cert), _key_pem(key))


def issue_serving(
    ca: Pair,
    common_name: str,
    now: datetime.datetime,
    validity: datetime.timedelta,
    *,
    names: Sequence[str] = (),
    ips: Sequence[str] = (),
) -> Pair:
    """A server certificate signed by ``ca`` for the DNS ``names`` and IP addresses ``ips``."""
    ca_key, ca_cert = _load(ca)
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    builder = _builder(_name(common_name), ca_cert.subject, key.public_key(), now, validity)
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    cert = (
        builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Pair(_cert_pem(cert), _key_pem(key))


def issue_client(
    ca: Pair,
    common_name: str,
    now: datetime.datetime,
    validity: datetime.timedelta,
    *,
    organizations: Sequence[str] = (),
) -> Pair:
    """A client certificate signed by ``ca``: kube-apiserver reads ``common_name`` as the user
    and ``organizations`` as its groups."""
    ca_key, ca_cert = _load(ca)
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    cert = (
        _builder(x509.Name(attributes), ca_cert.subject, key.public_key(), now, validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Pair(_cert_pem(cert), _key_pem(key))


@dataclass(frozen=True)
class Facts:
    """What a certificate says about itself."""

    not_before: datetime.datetime
    not_after: datetime.datetime
    names: frozenset[str]  # DNS subject alternative names
    ips: frozenset[str]  # IP subject alternative names, as ipaddress prints them
    is_ca: bool


def facts(cert_pem: bytes) -> Facts:
    """Read ``cert_pem``; ValueError when it is not a PEM certificate."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = frozenset(alt.get_values_for_type(x509.DNSName))
        ips = frozenset(str(ip) for ip in alt.get_values_for_type(x509.IPAddress))
    except x509.ExtensionNotFound:
        names, ips = frozenset(), frozenset()
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    return Facts(cert.not_valid_before_utc, cert.not_valid_after_utc, names, ips, is_ca)


def signed_by(cert_pem: bytes, ca_cert_pem: bytes) -> bool:
    """Whether ``ca_cert_pem`` issued ``cert_pem`` (its name and its signature)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        ca = x509.load_pem_x509_certificate(ca_cert_pem)
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def matches(pair: Pair) -> bool:
    """Whether ``pair.key`` is the private key of ``pair.cert``."""
    try:
        cert = x509.load_pem_x509_certificate(pair.cert)
        key = serialization.load_pem_private_key(pair.key, password=None)
    except (ValueError, TypeError):
        return False
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    encoding = serialization.Encoding.DER
    return bool(
        key.public_key().public_bytes(encoding, public)
        == cert.public_key().public_bytes(encoding, public)
    )


def _load(ca: Pair) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = serialization.load_pem_private_key(ca.key, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise TypeError("the CA key is not an EC key")
    return key, x509.load_pem_x509_certificate(ca.cert)


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
    validity: datetime.timedelta,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
