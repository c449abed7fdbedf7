"""Credentials of the local API server: a CA, a serving certificate, a bearer token, and the
kubeconfig that ties them together for clients.

Generated once, on first start, into the state directory, and reused afterwards so that a
kubeconfig handed out earlier stays valid across restarts. Every file is written 0600 and
replaced atomically (write to a temporary file, then rename), so a reader never sees half a key.

What it must not do: serve anything or decide where the state directory is. The certificates
themselves are made by :mod:`kubetrain.pki`, which the operator's webhook shares.
"""

from __future__ import annotations

import base64
import datetime
import os
import secrets
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kubetrain import pki

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


def _make_ca(now: datetime.datetime) -> pki.Pair:
    return pki.new_ca("kubetrain-ca", now, VALIDITY)


def _make_serving(
    ca: pki.Pair,
    now: datetime.datetime,
    *,
    common_name: str = "kubetrain-apiserver",
    names: Sequence[str] = SERVING_NAMES,
    ips: Sequence[str] = SERVING_IPS,
) -> pki.Pair:
    return pki.issue_serving(ca, common_name, now, VALIDITY, names=names, ips=ips)


def ensure(directory: str) -> Credentials:
    """Load the credentials in ``directory``, generating whatever is missing."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    paths = {n: os.path.join(directory, n) for n in (CA_CERT, CA_KEY, SERVING_CERT, SERVING_KEY)}
    now = datetime.datetime.now(datetime.timezone.utc)
    if not all(os.path.exists(p) for p in paths.values()):
        ca = _make_ca(now)
        serving = _make_serving(ca, now)
        write_private(paths[CA_KEY], ca.key)
        write_private(paths[CA_CERT], ca.cert)
        write_private(paths[SERVING_KEY], serving.key)
        write_private(paths[SERVING_CERT], serving.cert)
    token_path = os.path.join(directory, TOKEN)
    if not os.path.exists(token_path):
        write_private(token_path, secrets.token_urlsafe(32).encode())
    with open(token_path, encoding="utf-8") as f:
        token = f.read().strip()
    return Credentials(directory, token)


def _load_ca(directory: str) -> pki.Pair:
    with open(os.path.join(directory, CA_KEY), "rb") as f:
        key = f.read()
    with open(os.path.join(directory, CA_CERT), "rb") as f:
        cert = f.read()
    return pki.Pair(cert, key)


def issue_certificate(
    directory: str, common_name: str, names: Sequence[str], ips: Sequence[str]
) -> tuple[bytes, bytes]:
    """A serving certificate and its key (PEM), signed by the CA in ``directory``; nothing is
    written. A node agent on this machine serves its endpoint with one, since the API server
    trusts no other certificate for a node (see :mod:`nodeproxy`)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    made = _make_serving(_load_ca(directory), now, common_name=common_name, names=names, ips=ips)
    return made.cert, made.key


def issue_client_certificate(
    directory: str, common_name: str, organizations: Sequence[str] = ()
) -> tuple[bytes, bytes]:
    """A client certificate and its key (PEM), signed by the CA in ``directory``: the user is
    ``common_name``, its groups ``organizations``, as kube-apiserver reads an x509 client. A
    real kube-apiserver presents one to the kubelets (``--kubelet-client-certificate``)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    made = pki.issue_client(
        _load_ca(directory), common_name, now, VALIDITY, organizations=organizations
    )
    return made.cert, made.key


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
