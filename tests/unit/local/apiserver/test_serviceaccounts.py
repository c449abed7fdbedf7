"""The ServiceAccount admission's rules (kube's ``plugin/pkg/admission/serviceaccount``
tests): whose word decides the automount, which containers get the token mount, when the
volume is added or reused; and the TokenRequest's answers, over a registry stand-in."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from kubetrain.local.apiserver import errors, serviceaccounts, store

AUTOMOUNT = {
    "nobody says: yes": ({}, {}, True),
    "the account says no": ({"automountServiceAccountToken": False}, {}, False),
    "the pod says no": ({}, {"automountServiceAccountToken": False}, False),
    "the pod's yes beats the account's no": (
        {"automountServiceAccountToken": False},
        {"automountServiceAccountToken": True},
        True,
    ),
    "the pod's no beats the account's yes": (
        {"automountServiceAccountToken": True},
        {"automountServiceAccountToken": False},
        False,
    ),
}


@pytest.mark.parametrize(("account", "spec", "mounted"), AUTOMOUNT.values(), ids=AUTOMOUNT.keys())
def test_whose_word_decides_the_automount(account: Any, spec: Any, mounted: bool) -> None:
    assert serviceaccounts.should_automount(account, spec) is mounted


def container(name: str, *mounts: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "image": "x", "volumeMounts": list(mounts)}


TOKEN_MOUNT = {
    "name": "kube-api-access-abcde",
    "readOnly": True,
    "mountPath": serviceaccounts.MOUNT_PATH,
}


def test_every_container_without_a_mount_there_gets_the_token() -> None:
    own = {"name": "mine", "mountPath": serviceaccounts.MOUNT_PATH}
    spec: dict[str, Any] = {
        "initContainers": [container("init")],
        "containers": [
            container("keeps", own),
            container("gets", {"name": "d", "mountPath": "/d"}),
        ],
        "volumes": [{"name": "mine", "emptyDir": {}}],
    }
    serviceaccounts.mount_token(spec, suffix="abcde")
    assert spec["initContainers"][0]["volumeMounts"] == [TOKEN_MOUNT]
    assert spec["containers"][0]["volumeMounts"] == [own]
    assert spec["containers"][1]["volumeMounts"][-1] == TOKEN_MOUNT
    assert [v["name"] for v in spec["volumes"]] == ["mine", "kube-api-access-abcde"]
    assert spec["volumes"][1] == serviceaccounts.token_volume("kube-api-access-abcde")


def test_no_container_needing_it_adds_no_volume() -> None:
    own = {"name": "mine", "mountPath": serviceaccounts.MOUNT_PATH}
    spec: dict[str, Any] = {"containers": [container("keeps", own)]}
    serviceaccounts.mount_token(spec, suffix="abcde")
    assert "volumes" not in spec


def test_an_existing_token_volume_is_reused() -> None:
    existing = {"name": "kube-api-access-zzzzz", "emptyDir": {}}
    spec: dict[str, Any] = {"containers": [container("main")], "volumes": [existing]}
    serviceaccounts.mount_token(spec, suffix="abcde")
    assert spec["volumes"] == [existing]
    assert spec["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-zzzzz"


def test_a_new_volume_name_has_five_characters_of_kubes_alphabet() -> None:
    spec: dict[str, Any] = {"containers": [container("main")]}
    serviceaccounts.mount_token(spec)
    suffix = spec["volumes"][0]["name"].removeprefix(serviceaccounts.VOLUME_PREFIX)
    assert len(suffix) == 5
    assert set(suffix) <= set("bcdfghjklmnpqrstvwxz2456789")


class Registry:
    """What request_token reads: ``reg.store.get``."""

    def __init__(self, *items: tuple[str, str, str, dict[str, Any]]) -> None:
        self.objects = {store.Key(p, ns, n): obj for p, ns, n, obj in items}
        self.store = self

    def get(self, key: store.Key) -> Any:
        obj = self.objects.get(key)
        return None if obj is None else store.Item(key, 1, obj, b"")


NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
POD = {"metadata": {"uid": "pod-uid"}, "spec": {"serviceAccountName": "runner"}}
REG = Registry(
    ("serviceaccounts", "ns", "runner", {"metadata": {"uid": "sa"}}),
    ("serviceaccounts", "ns", "other", {"metadata": {"uid": "sa2"}}),
    ("pods", "ns", "p", POD),
)


def ask(name: str = "runner", **spec: Any) -> dict[str, Any]:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    return serviceaccounts.request_token(REG, "ns", name, body, token="T", now=NOW)


def test_a_token_request_is_answered_with_the_token_and_its_expiry() -> None:
    answer = ask(expirationSeconds=1800, audiences=["api"])
    assert answer["status"] == {"token": "T", "expirationTimestamp": "2025-01-02T03:34:05Z"}
    assert answer["spec"] == {
        "audiences": ["api"],
        "expirationSeconds": 1800,
        "boundObjectRef": None,
    }
    assert answer["metadata"] == {
        "name": "runner",
        "namespace": "ns",
        "creationTimestamp": "2025-01-02T03:04:05Z",
    }
    defaulted = ask()
    assert defaulted["spec"]["expirationSeconds"] == 3600
    assert defaulted["spec"]["audiences"] == list(serviceaccounts.DEFAULT_AUDIENCES)


REFUSED = {
    "a missing account": (dict(name="ghost"), 404, 'serviceaccounts "ghost" not found'),
    "under ten minutes": (
        dict(expirationSeconds=599),
        422,
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: '
        "599: may not specify a duration less than 10 minutes",
    ),
    "over 2^32 seconds": (
        dict(expirationSeconds=(1 << 32) + 1),
        422,
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: '
        "4294967297: may not specify a duration larger than 2^32 seconds",
    ),
    "a pod of another account": (
        dict(name="other", boundObjectRef={"apiVersion": "v1", "kind": "Pod", "name": "p"}),
        400,
        'cannot bind token for serviceaccount "other" to pod running with different '
        "serviceaccount name.",
    ),
    "a stale uid": (
        dict(boundObjectRef={"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "old"}),
        409,
        'Operation cannot be fulfilled on Pod "p": the UID in the bound object reference (old) '
        "does not match the UID in record. The object might have been deleted and then recreated",
    ),
    "a kind tokens cannot be bound to": (
        dict(boundObjectRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}),
        400,
        "cannot bind token to object of type apps/v1, Kind=Deployment",
    ),
    "a missing pod": (
        dict(boundObjectRef={"apiVersion": "v1", "kind": "Pod", "name": "gone"}),
        404,
        'pods "gone" not found',
    ),
}


@pytest.mark.parametrize(("given", "code", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_what_a_token_request_refuses(given: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(errors.ApiError) as info:
        ask(**given)
    assert (info.value.code, info.value.message) == (code, message)


def test_a_token_bound_to_its_pod_by_uid_is_issued() -> None:
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid"}
    assert ask(boundObjectRef=ref)["spec"]["boundObjectRef"] == ref
