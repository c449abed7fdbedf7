"""The admission webhooks of ``deploy/`` (rendered by the real ``kubectl kustomize``) are the
ones the operator serves and registers: the same webhooks, paths and rules as the code builds,
called through the Service whose port reaches the webhook server, trusting the certificate of
the Secret the operator keeps; and the cert-manager overlay differs from ``deploy/`` only in
who makes that certificate."""

from __future__ import annotations

from typing import Any

from kubetrain.cli import main
from kubetrain.cli import operator as operator_cli
from kubetrain.operator.webhook import configurations
from kubetrain.operator.webhook import settings as webhook_settings
from tests.integration.deploy.test_deployment import container, container_port, parsed, pod_environ
from tests.unit.deploy.manifests import DEPLOY, OPERATOR, one, render

INJECT_CA = "cert-manager.io/inject-ca-from"


def webhook_settings_of(args: list[str]) -> webhook_settings.Settings:
    options = operator_cli.options(main.build_parser().parse_args(args), pod_environ())
    assert options.webhook is not None
    return options.webhook


def deployed() -> webhook_settings.Settings:
    return webhook_settings_of(container()["args"])


def configuration_objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        one(objects, "ValidatingWebhookConfiguration", configurations.VALIDATING),
        one(objects, "MutatingWebhookConfiguration", configurations.MUTATING),
    ]


def test_the_deployed_configurations_are_the_ones_the_code_builds() -> None:
    settings = deployed()
    service = (settings.namespace, settings.service_name)
    written_objects = configuration_objects(render(OPERATOR))
    for written, mutating in zip(written_objects, (False, True), strict=True):
        built = configurations.configuration(mutating, service=service)
        assert written["webhooks"] == built["webhooks"]
        assert (written["apiVersion"], written["kind"]) == (built["apiVersion"], built["kind"])


def test_kube_apiserver_reaches_the_webhook_server_through_the_service() -> None:
    settings = deployed()
    objects = render(OPERATOR)
    service = one(objects, "Service")
    assert (service["metadata"]["name"], service["metadata"]["namespace"]) == (
        settings.service_name,
        settings.namespace,
    )
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == configurations.SERVICE_PORT]
    assert container_port(port["targetPort"]) == settings.port
    assert settings.address == f":{settings.port}"


def test_the_serving_certificate_names_the_host_kube_apiserver_asks_for() -> None:
    settings = deployed()
    names, ips = settings.serving_names()
    assert f"{settings.service_name}.{settings.namespace}.svc" in names  # the TLS ServerName
    assert ips == ()


def test_the_webhook_role_lives_where_the_secret_is() -> None:
    settings = deployed()
    role = one(render(OPERATOR), "Role", "kubetrain-operator-webhook")
    assert role["metadata"]["namespace"] == settings.namespace
    names = {n for rule in role["rules"] for n in rule.get("resourceNames", [])}
    assert names == {settings.secret_name}
    assert settings.cert_management == webhook_settings.INTERNAL


def test_the_readiness_probe_waits_for_the_webhook() -> None:
    args = parsed()
    assert args.webhook_server_port == webhook_settings.PORT
    assert not args.kubeconfig  # in the cluster, so the webhook is served


def overlay() -> list[dict[str, Any]]:
    return render(DEPLOY / "cert-manager")


def test_cert_manager_issues_the_secret_the_operator_serves_from() -> None:
    objects = overlay()
    deployment = one(objects, "Deployment")
    (operator,) = deployment["spec"]["template"]["spec"]["containers"]
    settings = webhook_settings_of(operator["args"])
    assert settings.cert_management == webhook_settings.NONE
    certificate = one(objects, "Certificate")
    assert certificate["spec"]["secretName"] == settings.secret_name
    assert certificate["metadata"]["namespace"] == settings.namespace
    names, _ = settings.serving_names()
    assert f"{settings.service_name}.{settings.namespace}.svc" in certificate["spec"]["dnsNames"]
    assert set(certificate["spec"]["dnsNames"]) <= set(names)
    issuer = certificate["spec"]["issuerRef"]
    assert one(objects, issuer["kind"], issuer["name"])["metadata"]["namespace"] == (
        settings.namespace
    )
    where = f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
    for configuration in configuration_objects(objects):
        assert configuration["metadata"]["annotations"] == {INJECT_CA: where}


def test_the_overlay_changes_nothing_else() -> None:
    def key(obj: dict[str, Any]) -> tuple[str, str]:
        return obj["kind"], obj["metadata"]["name"]

    base = {key(o): o for o in render(DEPLOY)}
    changed = {key(o) for o in overlay() if base.get(key(o)) != o}
    assert changed == {
        ("Deployment", "kubetrain-operator"),
        ("ValidatingWebhookConfiguration", configurations.VALIDATING),
        ("MutatingWebhookConfiguration", configurations.MUTATING),
        ("Issuer", "kubetrain-selfsigned"),
        ("Certificate", "kubetrain-operator-webhook-cert"),
    }
    assert {key(o) for o in overlay()} >= set(base)
