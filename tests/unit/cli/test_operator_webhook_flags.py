"""``kubetrain operator``'s webhook flags: in the cluster the webhooks are served on
``--webhook-server-port`` behind the Service; out of it (``--kubeconfig``) only with
``--webhook-url``; a wrong combination is refused naming the flag and what it accepts."""

from __future__ import annotations

import pytest

from kubetrain.cli import main
from kubetrain.cli import operator as operator_cli
from kubetrain.operator import process
from kubetrain.operator.webhook import settings


def options(*flags: str, environ: dict[str, str] | None = None) -> process.Options:
    args = main.build_parser().parse_args(["operator", *flags])
    return operator_cli.options(args, environ or {})


def test_in_the_cluster_the_webhooks_are_served_behind_the_service() -> None:
    webhook = options(environ={"POD_NAMESPACE": "ml-system"}).webhook
    assert webhook == settings.Settings(namespace="ml-system")
    assert webhook.address == ":9443"
    assert webhook.serving_names()[0][-1] == "kubetrain-operator.ml-system.svc.cluster.local"


def test_out_of_the_cluster_the_webhooks_need_a_url() -> None:
    assert options("--kubeconfig", "k").webhook is None
    url = options("--kubeconfig", "k", "--webhook-url", "https://127.0.0.1:8443").webhook
    assert url is not None
    assert url.out_of_cluster
    assert url.address == "127.0.0.1:8443"
    assert url.serving_names() == ((), ("127.0.0.1",))
    by_name = options("--kubeconfig", "k", "--webhook-url", "https://host.example:8443").webhook
    assert by_name is not None
    assert by_name.address == ":8443"
    assert by_name.serving_names() == (("host.example",), ())


def test_port_zero_turns_the_webhooks_off() -> None:
    assert options("--webhook-server-port", "0").webhook is None


def test_the_names_and_certificate_management_are_taken_as_given() -> None:
    webhook = options(
        "--webhook-service-name", "svc",
        "--webhook-secret-name", "cert",
        "--webhook-namespace", "ops",
        "--cert-management", "none",
    ).webhook  # fmt: skip
    assert webhook is not None
    assert (webhook.service_name, webhook.secret_name, webhook.namespace) == ("svc", "cert", "ops")
    assert webhook.cert_management == settings.NONE


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9443",
        "https://127.0.0.1",
        "https://127.0.0.1:0",
        "https://127.0.0.1:9443/prefix",
        "127.0.0.1:9443",
    ],
    ids=["plain http", "no port", "port zero", "a path", "no scheme"],
)
def test_a_webhook_url_that_cannot_be_served_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match=r"--webhook-url: .*accepted: https://HOST:PORT"):
        options("--kubeconfig", "k", "--webhook-url", url)


def test_contradicting_flags_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match=r"--webhook-url: the webhooks are off"):
        options("--webhook-url", "https://127.0.0.1:1", "--webhook-server-port", "0")
    with pytest.raises(ValueError, match=r"--webhook-server-port: 70000; accepted"):
        options("--webhook-server-port", "70000")
    with pytest.raises(ValueError, match=r"--disable-controllers: nothing would run"):
        options("--kubeconfig", "k", "--disable-controllers")


def test_with_controllers_disabled_the_manager_runs_the_webhook_alone() -> None:
    opts = options(
        "--kubeconfig", "k", "--webhook-url", "https://127.0.0.1:1", "--disable-controllers"
    )
    mgr = process.build(object(), opts)  # type: ignore[arg-type]
    assert mgr.unsynced() == [], "no informer: no controller"
    assert mgr.unready() == ["webhook not ready"]
