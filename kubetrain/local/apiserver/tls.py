"""Credentials of the local API server: a CA, a serving certificate, a bearer token, and the
kubeconfig that ties them together for clients.

Generated once, on first start, into the state directory, and reused afterwards so that a
kubeconfig handed out earlier stays valid across restarts. Every file is written 0600 and
replaced atomically (write to a temporary file, then rename), so a reader never sees half a key.

What it must not do: serve anything or decide where the state directory is.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import secrets
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
SERVING_CERT = "apiserver.crt"
SERVING_KEY = "apiserver.key"
TOKEN = "token"
CONTEXT = "kubetrain"
VALIDITY = datetime.timedelta(days=3650)
SERVING_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
SERVING_IPS = ("127.0.0.1", "::1", "10.96.0.1")


@dataclass(frozen=True)
class Credentials:
    """Paths of the PEM files and the token's value."""

    directory: str
    token: str

    @property
    def ca_cert(self) -> str:
        return os.path.join(self.directory, CA_CERT)

    @property
    def serving_cert(self) -> str:
        return os.path.join(self.directory, SERVING_CERT)

    @property
    def serving_key(self) -> str:
        return os.path.join(self.directory, SERVING_KEY)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.serving_cert, self.serving_key)
        return context

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_cert)


def write_private(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, readable by the owner only (0600)."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _make_ca(now: datetime.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name("kubetrain-ca")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
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
    return key, cert


def _make_serving(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    now: datetime.datetime,
    *,
    common_name: str = "kubetrain-apiserver",
    names: Sequence[str] = SERVING_NAMES,
    ips: Sequence[str] = SERVING_IPS,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def ensure(directory: str) -> Credentials:
    """Load the credentials in ``directory``, generating whatever is missing."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    paths = {n: os.path.join(directory, n) for n in (CA_CERT, CA_KEY, SERVING_CERT, SERVING_KEY)}
    now = datetime.datetime.now(datetime.timezone.utc)
    if not all(os.path.exists(p) for p in paths.values()):
        ca_key, ca_cert = _make_ca(now)
        key, cert = _make_serving(ca_key, ca_cert, now)
        write_private(paths[CA_KEY], _key_pem(ca_key))
        write_private(paths[CA_CERT], ca_cert.public_bytes(serialization.Encoding.PEM))
        write_private(paths[SERVING_KEY], _key_pem(key))
        write_private(paths[SERVING_CERT], cert.public_bytes(serialization.Encoding.PEM))
    token_path = os.path.join(directory, TOKEN)
    if not os.path.exists(token_path):
        write_private(token_path, secrets.token_urlsafe(32).encode())
    with open(token_path, encoding="utf-8") as f:
        token = f.read().strip()
    return Credentials(directory, token)


def _load_ca(directory: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    with open(os.path.join(directory, CA_KEY), "rb") as f:
        ca_key = serialization.load_pem_private_key(f.read(), password=None)
    with open(os.path.join(directory, CA_CERT), "rb") as f:
        ca_cert = x509.load_pem_x509_certificate(f.read())
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise TypeError(f"the CA key in {directory} is not an EC key")
    return ca_key, ca_cert


def issue_certificate(
    directory: str, common_name: str, names: Sequence[str], ips: Sequence[str]
) -> tuple[bytes, bytes]:
    """A serving certificate and its key (PEM), signed by the CA in ``directory``; nothing is
    written. A node agent on this machine serves its endpoint with one, since the API server
    trusts no other certificate for a node (see :mod:`nodeproxy`)."""
    ca_key, ca_cert = _load_ca(directory)
    now = datetime.datetime.now(datetime.timezone.utc)
    key, cert = _make_serving(ca_key, ca_cert, now, common_name=common_name, names=names, ips=ips)
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def issue_client_certificate(
    directory: str, common_name: str, organizations: Sequence[str] = ()
) -> tuple[bytes, bytes]:
    """A client certificate and its key (PEM), signed by the CA in ``directory``: the user is
    ``common_name``, its groups ``organizations``, as kube-apiserver reads an x509 client. A
    real kube-apiserver presents one to the kubelets (``--kubelet-client-certificate``)."""
    ca_key, ca_cert = _load_ca(directory)
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def signing_key() -> tuple[bytes, bytes]:
    """A fresh EC key pair (PEM: private, public) for signing tokens, in the formats
    kube-apiserver's ``--service-account-signing-key-file`` and ``--service-account-key-file``
    read."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def kubeconfig(credentials: Credentials, server: str) -> dict:
    """A kubeconfig with one cluster, user and context, all named ``kubetrain``."""
    with open(credentials.ca_cert, "rb") as f:
        ca_data = base64.b64encode(f.read()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": CONTEXT, "cluster": {"server": server, "certificate-authority-data": ca_data}}
        ],
        "users": [{"name": CONTEXT, "user": {"token": credentials.token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str, credentials: Credentials, server: str) -> None:
    text = yaml.safe_dump(kubeconfig(credentials, server), sort_keys=False)
    write_private(path, text.encode())
