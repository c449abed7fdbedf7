"""What a local pod gets to reach the API server with in-cluster configuration, the kubelet's
way: the ``serviceAccountToken`` projection filled from the TokenRequest the node made for it
(or the kubelet's FailedMount wording when the API issued none), the ``KUBERNETES_*``
variables naming the API server's real address, the ServiceAccount mount left out where the
node cannot show it, and the program that stands in for an image's entrypoint."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubetrain.local.apiserver import serviceaccounts
from kubetrain.local.node import podspec, tokens, tools

HOST = podspec.Host(
    "node-a",
    "127.0.0.1",
    base_env=(("PATH", "/usr/bin:/bin"),),
    api=("127.0.0.1", 40123),
    entrypoints=tools.ENTRYPOINTS,
)


def pod_with_token_volume(**spec: Any) -> dict[str, Any]:
    """A pod as the API server's admission leaves it: the kube-api-access volume mounted."""
    body: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "serviceAccountName": "runner",
            "containers": [{"name": "main", "image": "python:3", "command": ["true"]}],
            **spec,
        },
    }
    serviceaccounts.mount_token(body["spec"], suffix="abcde")
    return body


NEED = podspec.TokenNeed("runner", "", 3607, "p", "u-1")
CA = {"data": {"ca.crt": "PEM"}}


def test_the_admission_volume_needs_a_token_bound_to_the_pod_and_the_root_ca() -> None:
    needs = podspec.needs(pod_with_token_volume())
    assert needs.tokens == {NEED}
    assert needs.configmaps == {"kube-root-ca.crt"}


def test_the_token_volume_holds_token_ca_and_namespace() -> None:
    sources = podspec.Sources(configmaps={"kube-root-ca.crt": CA}, tokens={NEED: "t0ken"})
    sandbox = podspec.sandbox(pod_with_token_volume(), sources, HOST, "")
    [volume] = sandbox.volumes
    assert volume.name == "kube-api-access-abcde"
    files = {f.path: (f.data, f.mode) for f in volume.files}
    assert files == {
        "token": (b"t0ken", 0o644),
        "ca.crt": (b"PEM", 0o644),
        "namespace": (b"ns", 0o644),
    }


def test_a_token_the_api_refused_fails_the_mount_in_the_kubelets_words() -> None:
    sources = podspec.Sources(
        configmaps={"kube-root-ca.crt": CA},
        token_errors={NEED: 'serviceaccounts "runner" not found'},
    )
    with pytest.raises(podspec.SpecError) as info:
        podspec.sandbox(pod_with_token_volume(), sources, HOST, "")
    assert info.value.reason == podspec.FAILED_MOUNT
    assert info.value.message == (
        'MountVolume.SetUp failed for volume "kube-api-access-abcde" : failed to fetch token: '
        'serviceaccounts "runner" not found'
    )


def test_a_projection_with_its_own_audience_and_lifetime_is_its_own_request() -> None:
    token = {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 7200, "path": "t"}}
    pod = pod_with_token_volume(volumes=[{"name": "v", "projected": {"sources": [token]}}])
    assert podspec.TokenNeed("runner", "vault", 7200, "p", "u-1") in podspec.needs(pod).tokens


API_ENV = {
    "KUBERNETES_SERVICE_HOST": "127.0.0.1",
    "KUBERNETES_SERVICE_PORT": "40123",
    "KUBERNETES_SERVICE_PORT_HTTPS": "40123",
    "KUBERNETES_PORT": "tcp://127.0.0.1:40123",
    "KUBERNETES_PORT_40123_TCP": "tcp://127.0.0.1:40123",
    "KUBERNETES_PORT_40123_TCP_PROTO": "tcp",
    "KUBERNETES_PORT_40123_TCP_PORT": "40123",
    "KUBERNETES_PORT_40123_TCP_ADDR": "127.0.0.1",
}


def test_every_container_is_told_where_the_api_server_is() -> None:
    container = {
        "name": "main",
        "command": ["echo", "$(KUBERNETES_SERVICE_HOST)"],
        "env": [
            {
                "name": "URL",
                "value": "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
            },
            {"name": "KUBERNETES_SERVICE_PORT", "value": "1"},  # the pod's own value wins
        ],
    }
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [container]}}
    spec, _ = podspec.container_spec(pod, container, podspec.Sources(), HOST)
    env = dict(spec.env)
    assert env["URL"] == "https://127.0.0.1:40123"
    assert env["KUBERNETES_SERVICE_PORT"] == "1"
    assert {k: v for k, v in env.items() if k.startswith("KUBERNETES_")} == {
        **API_ENV,
        "KUBERNETES_SERVICE_PORT": "1",
    }
    assert spec.argv == ("echo", "127.0.0.1")


def test_an_ipv6_api_server_is_bracketed_in_urls() -> None:
    env = dict(podspec.api_service_env(("::1", 6443)))
    assert env["KUBERNETES_SERVICE_HOST"] == "::1"
    assert env["KUBERNETES_PORT"] == "tcp://[::1]:6443"


def test_a_node_that_cannot_show_the_mount_leaves_only_that_mount_out() -> None:
    pod = pod_with_token_volume()
    pod["spec"]["containers"][0]["volumeMounts"].insert(0, {"name": "data", "mountPath": "/data"})
    container = pod["spec"]["containers"][0]
    with_mount, _ = podspec.container_spec(pod, container, podspec.Sources(), HOST)
    assert [m.mount_path for m in with_mount.mounts] == ["/data", podspec.API_ACCESS_PATH]
    bare = dataclasses.replace(HOST, api_credentials=False)
    without, _ = podspec.container_spec(pod, container, podspec.Sources(), bare)
    assert [m.mount_path for m in without.mounts] == ["/data"]


IMAGES = {
    "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest": "kubectl-delivery",
    "mpioperator/kubectl-delivery@sha256:0123": "kubectl-delivery",
    "localhost:5000/team/kubectl-delivery:v1": "kubectl-delivery",
    "busybox": "busybox",
}


@pytest.mark.parametrize(("image", "name"), IMAGES.items(), ids=IMAGES.keys())
def test_an_images_name_is_its_last_path_part_without_tag_or_digest(image: str, name: str) -> None:
    assert podspec.image_name(image) == name


def test_a_known_image_without_command_runs_the_nodes_stand_in() -> None:
    container = {"name": "kubectl-delivery", "image": "mpioperator/kubectl-delivery:latest"}
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"initContainers": [container]}}
    spec, _ = podspec.container_spec(pod, container, podspec.Sources(), HOST, init=True)
    assert spec.argv == ("kubectl-delivery",)
    other = {"name": "c", "image": "busybox"}
    with pytest.raises(podspec.NoCommand):
        podspec.container_spec(pod, other, podspec.Sources(), HOST, init=True)


ADDRESSES = {
    "an https URL with a port": ("https://127.0.0.1:6443", ("127.0.0.1", 6443)),
    "https without a port is 443": ("https://api.example.com", ("api.example.com", 443)),
    "an IPv6 host": ("https://[::1]:8443", ("::1", 8443)),
    "no host": ("/just/a/path", None),
}


@pytest.mark.parametrize(("url", "expected"), ADDRESSES.values(), ids=ADDRESSES.keys())
def test_the_api_address_comes_from_the_nodes_own_server_url(url: str, expected: Any) -> None:
    assert tokens.api_address(url) == expected


def test_the_mount_needs_a_private_mount_namespace() -> None:
    assert "private mount namespace" in tokens.credentials_mountable("none")
    assert tokens.credentials_mountable("namespace") == ""


class FakeTokens:
    """A client whose TokenRequests answer with a new token each time."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    async def create(self, resource: Any, body: dict[str, Any], **where: Any) -> dict[str, Any]:
        self.asked.append({"body": body, **where})
        seconds = body["spec"]["expirationSeconds"]
        expires = datetime.now(timezone.utc) + timedelta(seconds=seconds)
        return {
            "status": {
                "token": f"t{len(self.asked)}",
                "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        }


def test_a_token_is_requested_bound_to_its_pod_and_reused_until_refresh() -> None:
    fake = FakeTokens()
    cache = tokens.Tokens(fake)  # type: ignore[arg-type]

    async def body() -> None:
        assert await cache.get("ns", NEED) == "t1"
        assert await cache.get("ns", NEED) == "t1", "reused while fresh"
        [asked] = fake.asked
        assert asked["name"] == "runner"
        assert asked["subresource"] == "token"
        assert asked["body"]["spec"] == {
            "expirationSeconds": 3607,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1"},
        }
        held, _ = cache._held[NEED]
        cache._held[NEED] = (held, datetime.now(timezone.utc) - timedelta(seconds=1))
        assert await cache.get("ns", NEED) == "t2", "asked again once 80% of its life is over"
        cache.forget("u-1")
        assert await cache.get("ns", NEED) == "t3", "forgotten with its pod"

    asyncio.run(body())
