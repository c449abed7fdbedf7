"""ServiceAccount credentials, as kube-apiserver documents them ("Configure Service Accounts
for Pods", "Managing Service Accounts", the TokenRequest API): the ServiceAccount admission
gives every pod a ``kube-api-access-*`` projected volume (token, ``kube-root-ca.crt``'s CA,
the namespace) mounted read-only in every container unless ``automountServiceAccountToken``
says no; ``serviceaccounts/<name>/token`` issues tokens that authenticate."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.fixtures.cluster import Kubectl

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_NAME = re.compile(r"kube-api-access-[a-z0-9]{5}")
TOKEN_VOLUME_SOURCES = [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {
        "downwardAPI": {
            "items": [
                {
                    "path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                }
            ]
        }
    },
]


def status_of(exc: ApiException) -> dict[str, Any]:
    return dict(json.loads(exc.body))


def pod(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
            "restartPolicy": "Never",
        },
    }
    body["spec"].update(spec)
    return body


def created_pod(api_client: client.ApiClient, namespace: str, body: dict[str, Any]) -> Any:
    made = client.CoreV1Api(api_client).create_namespaced_pod(namespace, body)
    return api_client.sanitize_for_serialization(made)


def token_request(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_pod_gets_the_token_volume_in_every_container(
    api_client: client.ApiClient, namespace: str
) -> None:
    body = pod("creds")
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "command": ["true"]}]
    made = created_pod(api_client, namespace, body)
    spec = made["spec"]
    assert spec["serviceAccountName"] == "default"
    [volume] = spec["volumes"]
    assert VOLUME_NAME.fullmatch(volume["name"]), volume["name"]
    assert volume["projected"] == {"defaultMode": 420, "sources": TOKEN_VOLUME_SOURCES}
    for container in [*spec["initContainers"], *spec["containers"]]:
        assert container["volumeMounts"] == [
            {"name": volume["name"], "mountPath": MOUNT_PATH, "readOnly": True}
        ], container["name"]


def test_automount_false_on_the_pod_or_its_account_means_no_volume(
    core: client.CoreV1Api, api_client: client.ApiClient, namespace: str
) -> None:
    off = created_pod(api_client, namespace, pod("off", automountServiceAccountToken=False))
    assert not off["spec"].get("volumes")
    assert not off["spec"]["containers"][0].get("volumeMounts")

    core.create_namespaced_service_account(
        namespace, {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False}
    )
    quiet = created_pod(api_client, namespace, pod("quiet", serviceAccountName="quiet"))
    assert not quiet["spec"].get("volumes")
    # the pod's word wins over its account's
    asked = pod("asked", serviceAccountName="quiet", automountServiceAccountToken=True)
    loud = created_pod(api_client, namespace, asked)
    assert [VOLUME_NAME.fullmatch(v["name"]) is not None for v in loud["spec"]["volumes"]] == [True]


def test_a_container_with_its_own_mount_there_keeps_it(
    api_client: client.ApiClient, namespace: str
) -> None:
    own = {"name": "mine", "mountPath": MOUNT_PATH}
    body = pod("own", volumes=[{"name": "mine", "emptyDir": {}}])
    body["spec"]["containers"] = [
        {"name": "keeps", "image": "busybox", "command": ["true"], "volumeMounts": [own]},
        {"name": "gets", "image": "busybox", "command": ["true"]},
    ]
    made = created_pod(api_client, namespace, body)
    keeps, gets = made["spec"]["containers"]
    assert keeps["volumeMounts"] == [own]
    assert [m["mountPath"] for m in gets["volumeMounts"]] == [MOUNT_PATH]
    names = [v["name"] for v in made["spec"]["volumes"]]
    assert len(names) == 2
    assert names[0] == "mine"
    assert VOLUME_NAME.fullmatch(names[1])


def test_a_token_request_issues_a_token_that_authenticates(
    core: client.CoreV1Api, api_client: client.ApiClient, namespace: str
) -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    answer = core.create_namespaced_service_account_token(
        "default", namespace, token_request(expirationSeconds=1200)
    )
    after = datetime.now(timezone.utc)
    token = answer.status.token
    assert token
    assert answer.spec.expiration_seconds == 1200
    assert answer.spec.audiences, "the API server's own audiences when none are asked for"
    expires = answer.status.expiration_timestamp
    assert before + timedelta(seconds=1200) <= expires <= after + timedelta(seconds=1201)

    def version_with(bearer: str) -> int:
        probe = client.Configuration()
        probe.host = api_client.configuration.host
        probe.ssl_ca_cert = api_client.configuration.ssl_ca_cert
        probe.verify_ssl = api_client.configuration.verify_ssl
        probe.api_key = {"authorization": f"Bearer {bearer}"}
        with client.ApiClient(probe) as other:
            try:
                client.VersionApi(other).get_code()
            except ApiException as exc:
                return int(exc.status)
        return 200

    assert version_with(token) == 200
    assert version_with("not-a-token") == 401


def test_the_default_lifetime_is_an_hour_and_a_shorter_one_than_ten_minutes_is_refused(
    core: client.CoreV1Api, namespace: str
) -> None:
    answer = core.create_namespaced_service_account_token("default", namespace, token_request())
    assert answer.spec.expiration_seconds == 3600
    with pytest.raises(ApiException) as info:
        core.create_namespaced_service_account_token(
            "default", namespace, token_request(expirationSeconds=599)
        )
    assert info.value.status == 422
    status = status_of(info.value)
    assert status["reason"] == "Invalid"
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 599: may not specify a duration less than 10 minutes",
            "field": "spec.expirationSeconds",
        }
    ]


def test_a_token_for_a_missing_account_is_404(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as info:
        core.create_namespaced_service_account_token("ghost", namespace, token_request())
    assert info.value.status == 404
    assert status_of(info.value)["message"] == 'serviceaccounts "ghost" not found'


def test_a_token_bound_to_a_pod_checks_the_pods_account_and_uid(
    core: client.CoreV1Api, api_client: client.ApiClient, namespace: str
) -> None:
    made = created_pod(api_client, namespace, pod("bound"))
    uid = made["metadata"]["uid"]

    def bound(account: str, ref_uid: str) -> Callable[[], Any]:
        ref = {"apiVersion": "v1", "kind": "Pod", "name": "bound", "uid": ref_uid}
        body = token_request(boundObjectRef=ref)
        return lambda: core.create_namespaced_service_account_token(account, namespace, body)

    answer = bound("default", uid)()
    assert answer.status.token
    assert answer.spec.bound_object_ref.uid == uid

    with pytest.raises(ApiException) as stale:
        bound("default", "00000000-0000-0000-0000-000000000000")()
    assert stale.value.status == 409

    core.create_namespaced_service_account(namespace, {"metadata": {"name": "other"}})
    with pytest.raises(ApiException) as other:
        bound("other", uid)()
    assert other.value.status == 400
    assert "different serviceaccount name" in status_of(other.value)["message"]


def test_kubectl_create_token(kubectl: Kubectl, namespace: str) -> None:
    given = kubectl("create", "token", "default", "-n", namespace, "--duration", "15m")
    assert given.stdout.strip()
    refused = kubectl(
        "create", "token", "default", "-n", namespace, "--duration", "5m", check=False
    )
    assert refused.returncode != 0
    assert "may not specify a duration less than 10 minutes" in refused.stderr


def kubernetes_service(core: client.CoreV1Api, timeout: float) -> Any:
    """The ``kubernetes`` Service once the bootstrap controller has made it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return core.read_namespaced_service("kubernetes", "default")
        except ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_kubernetes_service_exists_in_the_default_namespace(core: client.CoreV1Api) -> None:
    service = kubernetes_service(core, timeout=10)
    assert service.spec.cluster_ip
    [port] = service.spec.ports
    assert (port.name, port.port, port.protocol) == ("https", 443, "TCP")


def test_a_deleted_kubernetes_service_comes_back_with_its_address(core: client.CoreV1Api) -> None:
    if os.environ.get("KUBETRAIN_TEST_KUBECONFIG"):
        pytest.skip("deleting the kubernetes Service would disturb the cluster's other clients")
    before = kubernetes_service(core, timeout=10)
    core.delete_namespaced_service("kubernetes", "default")
    # kube-apiserver's bootstrap controller looks every 10 seconds
    after = kubernetes_service(core, timeout=30)
    assert after.metadata.uid != before.metadata.uid
    assert after.spec.cluster_ip == before.spec.cluster_ip
