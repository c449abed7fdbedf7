"""Loading a kubeconfig as kubectl reads it ("Organizing Cluster Access Using kubeconfig
Files"): the current context or a named one, its namespace, a bearer token, certificate paths
relative to the file, inline certificate data; and in-cluster configuration from the service
account directory. Nothing is read from the environment or the default location."""

from __future__ import annotations

import base64
import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubetrain import kube
from kubetrain.kube import config
from tests.unit.kube.fakeapi import run


def self_signed() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


CA = self_signed()


def kubeconfig(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "local",
        "clusters": [
            {
                "name": "here",
                "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority": "ca.crt"},
            },
            {
                "name": "there",
                "cluster": {"server": "https://10.0.0.1:443/", "insecure-skip-tls-verify": True},
            },
        ],
        "users": [
            {"name": "me", "user": {"token": "secret-token"}},
            {"name": "other", "user": {"token": "other-token"}},
        ],
        "contexts": [
            {"name": "local", "context": {"cluster": "here", "user": "me", "namespace": "team-a"}},
            {"name": "remote", "context": {"cluster": "there", "user": "other"}},
        ],
    }
    doc.update(overrides)
    return doc


def write(tmp_path: Path, doc: Any) -> Path:
    (tmp_path / "ca.crt").write_text(CA)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return path


def auth_header(cluster: kube.ClusterConfig) -> str:
    async def header() -> str:
        settings = await cluster.configuration.auth_settings()
        return settings["BearerToken"]["value"]

    return run(header())


def test_the_current_context_gives_server_token_namespace_and_ca(tmp_path: Path) -> None:
    cluster = run(config.from_kubeconfig(write(tmp_path, kubeconfig())))
    assert cluster.host == "https://127.0.0.1:6443"
    assert cluster.namespace == "team-a"
    assert cluster.context == "local"
    assert auth_header(cluster) == "Bearer secret-token"
    assert cluster.configuration.ssl_ca_cert == str(tmp_path / "ca.crt")  # relative to the file


def test_a_named_context_is_used_instead_and_its_namespace_defaults(tmp_path: Path) -> None:
    cluster = run(config.from_kubeconfig(write(tmp_path, kubeconfig()), context="remote"))
    assert cluster.host == "https://10.0.0.1:443"
    assert cluster.namespace == "default"
    assert auth_header(cluster) == "Bearer other-token"
    assert cluster.configuration.verify_ssl is False


def test_inline_certificate_data_is_usable(tmp_path: Path) -> None:
    doc = kubeconfig()
    doc["clusters"][0]["cluster"] = {
        "server": "https://127.0.0.1:6443",
        "certificate-authority-data": base64.b64encode(CA.encode()).decode(),
    }
    cluster = run(config.from_kubeconfig(write(tmp_path, doc)))
    with open(cluster.configuration.ssl_ca_cert, encoding="utf-8") as f:
        assert f.read() == CA


def test_a_client_built_from_a_kubeconfig_keeps_its_namespace(tmp_path: Path) -> None:
    async def scenario() -> tuple[str, str]:
        async with await kube.Client.from_kubeconfig(str(write(tmp_path, kubeconfig()))) as c:
            return c.host, c.namespace

    assert run(scenario()) == ("https://127.0.0.1:6443", "team-a")


@pytest.mark.parametrize(
    ("doc", "context", "message"),
    [
        (kubeconfig(), "nowhere", "nowhere"),
        ("clusters: [unclosed", None, "not valid YAML"),
        (["a", "list"], None, "mapping"),
        (kubeconfig(contexts=[{"name": "local", "context": {"cluster": "gone"}}]), None, "gone"),
    ],
    ids=["unknown context", "not yaml", "not a mapping", "context names a missing cluster"],
)
def test_a_bad_kubeconfig_is_a_config_error_naming_the_problem(
    tmp_path: Path, doc: Any, context: str | None, message: str
) -> None:
    path = write(tmp_path, doc)
    with pytest.raises(kube.ConfigError, match=message):
        run(config.from_kubeconfig(path, context=context))


def test_an_unusable_ca_certificate_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, kubeconfig())
    (tmp_path / "ca.crt").write_text("not a certificate")

    async def scenario() -> None:
        async with await kube.Client.from_kubeconfig(str(path)):
            pass

    with pytest.raises(kube.ConfigError, match="certificate"):
        run(scenario())


def test_a_missing_file_is_a_config_error_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(kube.ConfigError, match=r"cannot read kubeconfig .*absent"):
        run(config.from_kubeconfig(tmp_path / "absent"))


def test_in_cluster_reads_the_service_account_and_the_given_environment(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text(CA)
    (tmp_path / "namespace").write_text("kubeflow\n")
    environ = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    cluster = run(config.from_incluster(environ, directory=str(tmp_path)))
    assert cluster.host == "https://10.96.0.1:443"
    assert cluster.namespace == "kubeflow"
    assert cluster.context is None
    assert auth_header(cluster).lower() == "bearer sa-token"


def test_in_cluster_without_the_service_variables_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(kube.ConfigError, match="in-cluster"):
        run(config.from_incluster({}, directory=str(tmp_path)))
