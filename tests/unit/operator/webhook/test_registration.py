"""Where kube-apiserver learns the webhook's CA and address: in the cluster, only the
``caBundle`` of the deployed configurations is written, and only when it differs; out of it,
the configurations are registered with the operator's URL and removed on a clean stop only
when the operator's kind made them and they still call this operator."""

from __future__ import annotations

import copy
from typing import Any, cast

from kubetrain import kube
from kubetrain.operator.webhook import cabundle, configurations, registration
from tests.unit.operator.runtime.fakes import Call, FakeClient, run

URL = "https://127.0.0.1:9443"
VALIDATING = ("validatingwebhookconfigurations", None, configurations.VALIDATING)
MUTATING = ("mutatingwebhookconfigurations", None, configurations.MUTATING)


class Client(FakeClient):
    """The fake, with deletes (and their preconditions) and uids."""

    async def create(
        self, resource: kube.Resource, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        body = copy.deepcopy(body)
        body["metadata"].setdefault("uid", f"uid-{self.version + 1}")
        return await super().create(resource, body, namespace=namespace)

    async def delete(
        self, resource: kube.Resource, name: str, *, preconditions: dict[str, str]
    ) -> dict[str, Any]:
        self.calls.append(Call("delete", resource.plural, None, name, dict(preconditions)))
        key = (resource.plural, None, name)
        current = self.objects.get(key)
        if current is None:
            raise kube.NotFound(f"{name} not found", code=404)
        meta = current["metadata"]
        if (meta["uid"], meta["resourceVersion"]) != (
            preconditions["uid"],
            preconditions["resourceVersion"],
        ):
            raise kube.Conflict(f"{name} changed", code=409, reason="Conflict")
        return self.objects.pop(key)


def deployed(client: FakeClient) -> None:
    """The configurations as `kubectl apply -k deploy/` creates them (a Service, no CA)."""
    for key, mutating in ((VALIDATING, False), (MUTATING, True)):
        body = configurations.configuration(mutating, service=("kubeflow", "kubetrain-operator"))
        body["metadata"].update(resourceVersion="1", uid=f"deployed-{key[2]}")
        client.objects[key] = body


def bundles(obj: dict[str, Any]) -> set[str | None]:
    return {w["clientConfig"].get("caBundle") for w in obj["webhooks"]}


# -- in the cluster -------------------------------------------------------------------------


def test_the_ca_is_written_into_every_webhook_of_both_configurations_once() -> None:
    client = FakeClient()
    deployed(client)
    injector = cabundle.Injector(cast(kube.Client, client))
    assert run(lambda: injector.inject("Q0E=")) == [
        configurations.VALIDATING,
        configurations.MUTATING,
    ]
    for key in (VALIDATING, MUTATING):
        assert bundles(client.objects[key]) == {"Q0E="}
        assert client.objects[key]["webhooks"][0]["clientConfig"]["service"]["port"] == 443
    client.calls.clear()
    assert run(lambda: injector.inject("Q0E=")) == []
    assert client.verbs() == ["get", "get"], "nothing written when nothing differs"


def test_a_missing_configuration_is_looked_for_again_without_failing() -> None:
    client = FakeClient()
    injector = cabundle.Injector(cast(kube.Client, client))
    assert run(lambda: injector.inject("Q0E=")) == []
    deployed(client)
    assert len(run(lambda: injector.inject("Q0E="))) == 2


def test_a_configuration_changed_meanwhile_is_written_at_the_next_check() -> None:
    client = FakeClient()
    deployed(client)
    client.fail["replace"] = [kube.Conflict("changed", code=409, reason="Conflict")]
    injector = cabundle.Injector(cast(kube.Client, client))
    assert run(lambda: injector.inject("Q0E=")) == [configurations.MUTATING]
    assert run(lambda: injector.inject("Q0E=")) == [configurations.VALIDATING]


# -- out of the cluster ---------------------------------------------------------------------


def test_out_of_the_cluster_both_configurations_are_registered_with_the_url() -> None:
    client = Client()
    registrar = registration.Registrar(cast(kube.Client, client), URL + "/")
    assert len(run(lambda: registrar.register("Q0E="))) == 2
    validating = client.objects[VALIDATING]
    assert validating["metadata"]["labels"] == registration.LABELS
    urls = [w["clientConfig"]["url"] for w in validating["webhooks"]]
    assert URL + "/validate-kubeflow-org-v1-pytorchjob" in urls
    assert bundles(validating) == {"Q0E="}
    client.calls.clear()
    assert run(lambda: registrar.register("Q0E=")) == [], "a restart with the same CA"
    assert client.verbs() == ["get", "get"]


def test_a_clean_stop_removes_what_was_registered() -> None:
    client = Client()
    registrar = registration.Registrar(cast(kube.Client, client), URL)
    run(lambda: registrar.register("Q0E="))
    assert len(run(registrar.unregister)) == 2
    assert VALIDATING not in client.objects
    assert MUTATING not in client.objects


def test_configurations_made_by_others_are_taken_over_but_never_removed() -> None:
    client = Client()
    deployed(client)
    registrar = registration.Registrar(cast(kube.Client, client), URL)
    assert len(run(lambda: registrar.register("Q0E="))) == 2
    assert (
        client.objects[VALIDATING]["metadata"].get("labels", {}).get(registration.MANAGED_BY)
        != registration.LABELS[registration.MANAGED_BY]
    )
    assert run(registrar.unregister) == []
    assert VALIDATING in client.objects
    assert MUTATING in client.objects


def test_an_operator_at_another_url_leaves_the_registration_alone() -> None:
    client = Client()
    run(lambda: registration.Registrar(cast(kube.Client, client), URL).register("Q0E="))
    other = registration.Registrar(cast(kube.Client, client), "https://127.0.0.1:9999")
    assert run(other.unregister) == []
    assert VALIDATING in client.objects
