"""The webhook's certificate in its Secret: made once and then reused (by a restarted
operator too), renewed under the same CA before it expires or when the hosts change, a new
CA made only when the CA itself must go; replicas racing to write agree on one; and, left to
cert-manager, only read."""

from __future__ import annotations

import base64
import datetime
from typing import Any, cast

import pytest

from kubetrain import kube, pki
from kubetrain.operator.webhook import certs
from kubetrain.operator.webhook import settings as settings_
from tests.unit.operator.runtime.fakes import FakeClient, run

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
DAY = datetime.timedelta(days=1)
SETTINGS = settings_.Settings(namespace="kubeflow")
KEY = ("secrets", "kubeflow", settings_.SECRET_NAME)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime.datetime:
        return self.now


def keeper(
    client: FakeClient, settings: settings_.Settings = SETTINGS, clock: Clock | None = None
) -> certs.Keeper:
    return certs.Keeper(cast(kube.Client, client), settings, clock=clock or Clock())


def stored(client: FakeClient) -> certs.Bundle:
    found = certs.read(client.objects[KEY])
    assert found is not None
    return found


def test_the_first_start_makes_a_ca_and_a_serving_certificate_in_the_secret() -> None:
    client = FakeClient()
    bundle = run(keeper(client).ensure)
    secret = client.objects[KEY]
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    assert stored(client) == bundle
    facts = pki.facts(bundle.serving.cert)
    assert "kubetrain-operator.kubeflow.svc" in facts.names
    assert pki.signed_by(bundle.serving.cert, bundle.ca.cert)
    assert base64.b64decode(bundle.ca_bundle) == bundle.ca.cert


def test_a_restart_serves_what_the_secret_holds_and_writes_nothing() -> None:
    client = FakeClient()
    first = run(keeper(client).ensure)
    client.calls.clear()
    assert run(keeper(client).ensure) == first
    assert client.verbs() == ["get"]


def test_a_certificate_near_its_end_is_renewed_under_the_same_ca() -> None:
    client, clock = FakeClient(), Clock()
    first = run(keeper(client, clock=clock).ensure)
    validity = SETTINGS.validity
    clock.now = START + validity.serving - validity.renew_serving_before - DAY
    assert run(keeper(client, clock=clock).ensure) == first, "not due yet"
    clock.now += 2 * DAY
    renewed = run(keeper(client, clock=clock).ensure)
    assert renewed.serving != first.serving
    assert renewed.ca == first.ca, "the caBundle kube-apiserver holds stays valid"
    assert pki.facts(renewed.serving.cert).not_after == clock.now + validity.serving
    assert stored(client) == renewed


def test_a_ca_near_its_end_is_replaced_with_the_certificate() -> None:
    client, clock = FakeClient(), Clock()
    first = run(keeper(client, clock=clock).ensure)
    clock.now = START + SETTINGS.validity.ca - SETTINGS.validity.renew_ca_before + DAY
    renewed = run(keeper(client, clock=clock).ensure)
    assert renewed.ca != first.ca
    assert pki.signed_by(renewed.serving.cert, renewed.ca.cert)


def test_other_hosts_get_a_certificate_naming_them() -> None:
    client = FakeClient()
    first = run(keeper(client).ensure)
    url = settings_.Settings(namespace="kubeflow", url="https://127.0.0.1:9443")
    moved = run(keeper(client, url).ensure)
    assert moved.ca == first.ca
    assert pki.facts(moved.serving.cert).ips == {"127.0.0.1"}


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param({"tls.key": "b3RoZXI="}, id="a key that is not the certificate's"),
        pytest.param({"tls.crt": ""}, id="an empty certificate"),
        pytest.param({"ca.crt": "bm90IGEgY2VydA=="}, id="a CA that is not a certificate"),
    ],
)
def test_a_broken_secret_is_repaired(damage: dict[str, str]) -> None:
    client = FakeClient()
    run(keeper(client).ensure)
    client.objects[KEY]["data"].update(damage)
    repaired = run(keeper(client).ensure)
    assert pki.matches(repaired.serving)
    assert pki.signed_by(repaired.serving.cert, repaired.ca.cert)
    assert stored(client) == repaired


def test_replicas_racing_to_create_agree_on_the_winners_certificate() -> None:
    client = FakeClient()
    winner = run(keeper(FakeClient()).ensure)
    # the other replica's create lands between this one's read and its create
    client.fail["create"] = [kube.AlreadyExists("exists", code=409, reason="AlreadyExists")]
    client.objects[KEY] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": settings_.SECRET_NAME,
            "namespace": "kubeflow",
            "resourceVersion": "7",
        },
        "type": "kubernetes.io/tls",
        "data": certs.encode(winner),
    }
    original_get = client.get
    gets = 0

    async def get_missing_once(*args: Any, **kwargs: Any) -> dict[str, Any]:
        nonlocal gets
        gets += 1
        if gets == 1:
            raise kube.NotFound("not yet", code=404)
        return await original_get(*args, **kwargs)

    client.get = get_missing_once  # type: ignore[method-assign]
    assert run(keeper(client).ensure) == winner
    assert gets == 2


def test_left_to_cert_manager_the_secret_is_only_read() -> None:
    client = FakeClient()
    none = settings_.Settings(namespace="kubeflow", cert_management=settings_.NONE)
    with pytest.raises(certs.NotReady, match="cert-manager issues them"):
        run(keeper(client, none).ensure)
    issued = run(keeper(FakeClient()).ensure)
    data = certs.encode(issued)
    del data["ca.key"]  # cert-manager writes no CA key
    client.objects[KEY] = {"metadata": {"name": "x", "resourceVersion": "1"}, "data": data}
    clock = Clock()
    clock.now = START + 100 * SETTINGS.validity.serving  # long expired: not ours to renew
    got = run(keeper(client, none, clock).ensure)
    assert got.serving == issued.serving
    assert "create" not in client.verbs()
    assert "replace" not in client.verbs()
