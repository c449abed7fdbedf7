"""The client on the wire, as the Kubernetes API conventions describe requests: paths per
group, version and scope; the content type of each patch kind and of server-side apply;
DeleteOptions in the body; limit/continue pagination; discovery; and failures as typed
errors, including no answer at all within the default timeout."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest
from aiohttp import web
from kubernetes.aio.client import Configuration, V1OwnerReference

from kubetrain import kube
from tests.unit.kube.fakeapi import FakeApi, answer, configmap_list, fail, run, serving

CONFIGMAPS = kube.Resource("", "v1", "configmaps", kind="ConfigMap")
JOBS = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
NODES = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")


@pytest.mark.parametrize(
    ("resource", "namespace", "name", "sub", "path"),
    [
        (CONFIGMAPS, "ns", None, None, "/api/v1/namespaces/ns/configmaps"),
        (CONFIGMAPS, None, None, None, "/api/v1/configmaps"),
        (CONFIGMAPS, "ns", "a", None, "/api/v1/namespaces/ns/configmaps/a"),
        (JOBS, "ns", "j", "status", "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/j/status"),
        (NODES, None, "n1", None, "/api/v1/nodes/n1"),
        (kube.resource.NAMESPACES, None, "x", "finalize", "/api/v1/namespaces/x/finalize"),
    ],
    ids=[
        "namespaced collection",
        "all namespaces",
        "namespaced object",
        "custom resource subresource",
        "cluster-scoped object",
        "namespace finalize",
    ],
)
def test_resource_paths(
    resource: kube.Resource, namespace: str | None, name: str | None, sub: str | None, path: str
) -> None:
    assert resource.path(namespace, name, sub) == path


def test_a_name_that_is_not_a_path_segment_is_refused() -> None:
    with pytest.raises(ValueError, match="path segment"):
        CONFIGMAPS.path("ns", "..")
    assert CONFIGMAPS.path("ns", "a/b") == "/api/v1/namespaces/ns/configmaps/a%2Fb"


def test_a_namespaced_object_without_a_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match="namespaced"):
        CONFIGMAPS.path(None, "a")
    with pytest.raises(ValueError, match="cluster-scoped"):
        NODES.path("ns", "n1")


def test_get_returns_the_object_as_a_dict() -> None:
    fake = FakeApi()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    fake.on("GET", "/api/v1/namespaces/ns/configmaps/a", answer(cm))

    async def scenario() -> dict[str, Any]:
        async with serving(fake) as client:
            return await client.get(CONFIGMAPS, "a", namespace="ns")

    assert run(scenario()) == cm
    request = fake.requests[0]
    assert request.headers["Accept"] == "application/json"
    assert request.headers["User-Agent"].startswith("kubetrain/")


@pytest.mark.parametrize(
    ("kind", "patch", "content_type"),
    [
        ("merge", {"data": {"k": "v"}}, "application/merge-patch+json"),
        ("json", [{"op": "add", "path": "/data/k", "value": "v"}], "application/json-patch+json"),
        ("strategic", {"data": {"k": "v"}}, "application/strategic-merge-patch+json"),
    ],
    ids=["merge", "json", "strategic"],
)
def test_each_patch_kind_has_its_content_type(kind: str, patch: Any, content_type: str) -> None:
    fake = FakeApi()
    fake.on("PATCH", "/api/v1/namespaces/ns/configmaps/a", answer({"metadata": {"name": "a"}}))

    async def scenario() -> None:
        async with serving(fake) as client:
            await client.patch(CONFIGMAPS, "a", patch, namespace="ns", type=kind)  # type: ignore[arg-type]

    run(scenario())
    request = fake.requests[0]
    assert request.content_type == content_type
    assert request.body == patch


def test_a_json_patch_must_be_a_list_of_operations() -> None:
    async def scenario() -> None:
        async with serving(FakeApi()) as client:
            await client.patch(CONFIGMAPS, "a", {"op": "add"}, namespace="ns", type="json")

    with pytest.raises(ValueError, match="list of operations"):
        run(scenario())


def test_apply_is_a_server_side_apply_patch_with_field_manager_and_force() -> None:
    fake = FakeApi()
    fake.on("PATCH", "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/j", answer({}))

    async def scenario() -> None:
        async with serving(fake, field_manager="training-operator") as client:
            await client.apply(JOBS, {"metadata": {"name": "j", "namespace": "ns"}}, force=True)

    run(scenario())
    request = fake.requests[0]
    assert request.content_type == "application/apply-patch+yaml"
    assert request.query == {
        "fieldManager": "training-operator",
        "force": "true",
        "fieldValidation": "Strict",
    }
    assert request.body["apiVersion"] == "kubeflow.org/v1"
    assert request.body["kind"] == "PyTorchJob"


def test_create_posts_to_the_collection_of_the_objects_namespace() -> None:
    fake = FakeApi()
    fake.on("POST", "/api/v1/namespaces/ns/configmaps", answer({"metadata": {"name": "a"}}, 201))

    async def scenario() -> None:
        async with serving(fake) as client:
            await client.create(
                CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}}, dry_run=True
            )

    run(scenario())
    assert fake.requests[0].query == {"dryRun": "All", "fieldValidation": "Strict"}


def test_delete_sends_delete_options_with_policy_and_preconditions() -> None:
    fake = FakeApi()
    fake.on("DELETE", "/api/v1/namespaces/ns/configmaps/a", answer({"kind": "Status"}))

    async def scenario() -> None:
        async with serving(fake) as client:
            await client.delete(
                CONFIGMAPS,
                "a",
                namespace="ns",
                propagation_policy="Foreground",
                preconditions={"uid": "u-1"},
            )

    run(scenario())
    assert fake.requests[0].body == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u-1"},
    }


def test_delete_collection_sends_selectors_and_policy_and_leaves_the_answer_undecoded() -> None:
    fake = FakeApi()
    # an answer that is not JSON: decoding it would fail the call
    fake.on("DELETE", "/api/v1/namespaces/ns/configmaps", answer_raw(b"not json"))

    async def scenario() -> Any:
        async with serving(fake) as client:
            return await client.delete_collection(
                CONFIGMAPS, namespace="ns", label_selector="x=1", propagation_policy="Background"
            )

    assert run(scenario()) is None
    request = fake.requests[0]
    assert request.query == {"labelSelector": "x=1"}
    assert request.body["propagationPolicy"] == "Background"


def answer_raw(body: bytes) -> Any:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")

    return handler


def test_after_a_burst_a_trickle_of_calls_reuses_one_connection() -> None:
    """The pool hands out its newest idle connection first, so the connections a burst
    opened and a trickle does not need sit idle, and close after the keep-alive timeout.
    (aiohttp alone reuses the oldest first: each call would take the next connection in
    turn, and a call every few seconds would keep them all open for good.)"""
    fake = FakeApi()
    ports: list[int] = []
    burst = 4

    async def scenario() -> None:
        everyone_in = asyncio.Event()

        async def handler(request: web.Request) -> web.StreamResponse:
            ports.append(request.transport.get_extra_info("peername")[1])
            if len(ports) <= burst:  # hold the burst's calls until all of them are in
                if len(ports) == burst:
                    everyone_in.set()
                await everyone_in.wait()
            return web.json_response({"major": "1"})

        fake.on("GET", "/version", handler)
        async with serving(fake) as client:
            await asyncio.gather(*(client.request("GET", "/version") for _ in range(burst)))
            for _ in range(6):
                await client.request("GET", "/version")

    run(scenario())
    assert len(set(ports[:burst])) == burst  # the burst opened a connection each
    assert len(set(ports[burst:])) == 1


def test_query_values_are_percent_encoded_as_the_kubernetes_library_encodes_them() -> None:
    fake = FakeApi()
    fake.on("GET", "/api/v1/namespaces/ns/configmaps", answer(configmap_list(1)))
    selector = "app in (a, b),!canary,tier=web"

    async def scenario() -> None:
        async with serving(fake) as client:
            await client.list(
                CONFIGMAPS, namespace="ns", label_selector=selector, limit=5, continue_token="e+/="
            )

    run(scenario())
    request = fake.requests[0]
    assert request.query == {"labelSelector": selector, "limit": "5", "continue": "e+/="}
    assert request.query_string == (
        "labelSelector=app%20in%20(a,%20b),!canary,tier%3Dweb&limit=5&continue=e%2B/%3D"
    )


def test_library_objects_and_datetimes_in_a_body_are_sent_as_the_library_sends_them() -> None:
    fake = FakeApi()
    fake.on("POST", "/api/v1/namespaces/ns/configmaps", answer({"metadata": {"name": "a"}}, 201))
    owner = V1OwnerReference(api_version="v1", kind="Pod", name="p", uid="u-1")
    when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    body = {"metadata": {"name": "a", "ownerReferences": [owner]}, "data": {"at": when}}

    async def scenario() -> None:
        async with serving(fake) as client:
            await client.create(CONFIGMAPS, body, namespace="ns")

    run(scenario())
    request = fake.requests[0]
    assert request.content_type == "application/json"
    assert request.body == {
        "metadata": {
            "name": "a",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1"}],
        },
        "data": {"at": "2024-01-02T03:04:05+00:00"},
    }


def test_a_get_carries_no_body_and_the_token_is_read_again_for_every_call() -> None:
    fake = FakeApi()
    fake.on("GET", "/version", answer({"gitVersion": "v1.31.0"}))
    tokens = iter(["Bearer first", "Bearer second"])

    def refresh(configuration: Configuration) -> None:  # a rotated service-account token
        configuration.api_key["authorization"] = next(tokens)

    def configure(configuration: Configuration) -> None:
        configuration.api_key["authorization"] = "Bearer stale"
        configuration.refresh_api_key_hook = refresh

    async def scenario() -> None:
        async with serving(fake, configure) as client:
            await client.request("GET", "/version", body={"ignored": True})
            await client.request("GET", "/version")

    run(scenario())
    assert [r.headers["Authorization"] for r in fake.requests] == ["Bearer first", "Bearer second"]
    assert [r.body for r in fake.requests] == [None, None]


def test_list_all_follows_continue_tokens_and_keeps_the_first_pages_version() -> None:
    fake = FakeApi()
    fake.on(
        "GET",
        "/api/v1/namespaces/ns/configmaps",
        answer(configmap_list(7, "a", "b", continue_token="t1")),
        answer(configmap_list(7, "c", continue_token="t2")),
        answer(configmap_list(7, "d")),
    )

    async def scenario() -> dict[str, Any]:
        async with serving(fake) as client:
            return await client.list_all(
                CONFIGMAPS, namespace="ns", page_size=2, label_selector="app=x"
            )

    listed = run(scenario())
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b", "c", "d"]
    assert listed["metadata"] == {"resourceVersion": "7"}
    assert [r.query.get("continue") for r in fake.requests] == [None, "t1", "t2"]
    assert all(
        r.query["limit"] == "2" and r.query["labelSelector"] == "app=x" for r in fake.requests
    )


def test_an_expired_continue_token_falls_back_to_one_full_list() -> None:
    fake = FakeApi()
    fake.on(
        "GET",
        "/api/v1/namespaces/ns/configmaps",
        answer(configmap_list(7, "a", continue_token="t1")),
        fail(410, "Expired", "The provided continue parameter is too old"),
        answer(configmap_list(9, "a", "b")),
    )

    async def scenario() -> dict[str, Any]:
        async with serving(fake) as client:
            return await client.list_all(CONFIGMAPS, namespace="ns", page_size=1)

    listed = run(scenario())
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    assert "limit" not in fake.requests[-1].query


def test_failures_arrive_as_typed_errors_with_the_status_kept() -> None:
    fake = FakeApi()
    fake.on(
        "POST",
        "/api/v1/namespaces/ns/configmaps",
        fail(409, "AlreadyExists", 'configmaps "a" already exists', name="a", kind="configmaps"),
    )

    async def scenario() -> None:
        async with serving(fake) as client:
            await client.create(CONFIGMAPS, {"metadata": {"name": "a"}}, namespace="ns")

    with pytest.raises(kube.AlreadyExists) as caught:
        run(scenario())
    assert caught.value.details == {"name": "a", "kind": "configmaps"}


def test_a_server_that_does_not_answer_in_time_is_unavailable() -> None:
    fake = FakeApi()

    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(5)
        return web.json_response({})

    fake.on("GET", "/version", slow)

    async def scenario() -> None:
        async with serving(fake, timeout=0.2) as client:
            await client.request("GET", "/version")

    with pytest.raises(kube.Unavailable, match=r"no answer within 0\.2s"):
        run(scenario())


def test_a_per_call_timeout_overrides_the_clients() -> None:
    fake = FakeApi()

    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.3)
        return web.json_response({"ok": True})

    fake.on("GET", "/version", slow)

    async def scenario() -> Any:
        async with serving(fake, timeout=0.05) as client:
            return await client.request("GET", "/version", timeout=2.0)

    assert run(scenario()) == {"ok": True}


def discovery_api() -> FakeApi:
    fake = FakeApi()
    fake.on("GET", "/api", answer({"kind": "APIVersions", "versions": ["v1"]}))
    fake.on(
        "GET",
        "/apis",
        answer(
            {
                "kind": "APIGroupList",
                "groups": [
                    {
                        "name": "kubeflow.org",
                        "versions": [
                            {"groupVersion": "kubeflow.org/v1", "version": "v1"},
                            {"groupVersion": "kubeflow.org/v1beta1", "version": "v1beta1"},
                        ],
                        "preferredVersion": {"groupVersion": "kubeflow.org/v1", "version": "v1"},
                    },
                    {
                        "name": "metrics.k8s.io",
                        "versions": [
                            {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}
                        ],
                        "preferredVersion": {
                            "groupVersion": "metrics.k8s.io/v1beta1",
                            "version": "v1beta1",
                        },
                    },
                ],
            }
        ),
    )
    fake.on(
        "GET",
        "/api/v1",
        answer(
            {
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": [
                    {
                        "name": "configmaps",
                        "namespaced": True,
                        "kind": "ConfigMap",
                        "verbs": ["get", "list", "watch", "delete"],
                    },
                    {
                        "name": "namespaces",
                        "namespaced": False,
                        "kind": "Namespace",
                        "verbs": ["get", "list"],
                    },
                    {
                        "name": "namespaces/finalize",
                        "namespaced": False,
                        "kind": "Namespace",
                        "verbs": ["update"],
                    },
                ],
            }
        ),
    )
    for version in ("v1", "v1beta1"):
        fake.on(
            "GET",
            f"/apis/kubeflow.org/{version}",
            answer(
                {
                    "kind": "APIResourceList",
                    "groupVersion": f"kubeflow.org/{version}",
                    "resources": [
                        {
                            "name": "pytorchjobs",
                            "namespaced": True,
                            "kind": "PyTorchJob",
                            "verbs": ["list"],
                        }
                    ],
                }
            ),
        )
    fake.on(
        "GET",
        "/apis/metrics.k8s.io/v1beta1",
        fail(503, "ServiceUnavailable", "the server is currently unable to handle the request"),
    )
    return fake


def test_discovery_lists_resources_maps_kinds_and_prefers_the_preferred_version() -> None:
    fake = discovery_api()

    async def scenario() -> kube.Discovery:
        async with serving(fake) as client:
            return await client.discover()

    found = run(scenario())
    assert found.find_kind("v1", "ConfigMap") == CONFIGMAPS
    assert found.find_kind("kubeflow.org/v1beta1", "PyTorchJob") == kube.Resource(
        "kubeflow.org", "v1beta1", "pytorchjobs"
    )
    assert found.find("kubeflow.org", "pytorchjobs") == JOBS
    assert sorted(r.group_resource for r in found.preferred()) == [
        "configmaps",
        "namespaces",
        "pytorchjobs.kubeflow.org",
    ]
    assert [r.version for r in found.preferred() if r.group == "kubeflow.org"] == ["v1"]
    namespaces = found.find("", "namespaces")
    assert namespaces is not None
    assert not namespaces.namespaced
    assert found.subresources[namespaces] == {"finalize"}
    assert found.failed == ("metrics.k8s.io/v1beta1",)  # left out, not fatal


def test_discovery_is_cached_until_refreshed() -> None:
    fake = discovery_api()

    async def scenario() -> None:
        async with serving(fake) as client:
            await client.discover()
            await client.discover()
            assert len(fake.seen("GET", "/api")) == 1
            await client.discover(refresh=True)
            assert len(fake.seen("GET", "/api")) == 2

    run(scenario())


def test_discovery_asks_for_a_few_group_versions_at_a_time() -> None:
    fake = discovery_api()
    at_once = [0, 0]  # now, most

    def slowed(handlers: list[Any]) -> Any:
        async def handler(request: web.Request) -> web.StreamResponse:
            at_once[0] += 1
            at_once[1] = max(at_once[1], at_once[0])
            try:
                await asyncio.sleep(0.02)
                return await handlers[0](request)
            finally:
                at_once[0] -= 1

        return handler

    for route, handlers in list(fake.routes.items()):
        if route[1] not in ("/api", "/apis"):
            fake.on(*route, slowed(handlers))  # type: ignore[arg-type]

    async def scenario() -> kube.Discovery:
        async with serving(fake) as client:
            return await client.discover()

    found = run(scenario())
    assert at_once[1] == kube.client.DISCOVERY_CONCURRENCY  # 4 group-versions to ask for
    assert found.find_kind("kubeflow.org/v1beta1", "PyTorchJob") is not None


@pytest.mark.parametrize(
    ("environ", "proxy"),
    [
        ({"HTTPS_PROXY": "http://proxy.example:3128"}, "http://proxy.example:3128"),
        ({"HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": "api.example"}, None),
        ({"HTTP_PROXY": "http://proxy.example:3128"}, None),
        ({}, None),
    ],
    ids=[
        "an https proxy applies to an https API server",
        "NO_PROXY naming the host bypasses it",
        "an http proxy does not apply to https",
        "no proxy variables, no proxy",
    ],
)
def test_the_proxy_is_decided_once_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], proxy: str | None
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    configuration = kube.config.Configuration(host="https://api.example:6443")

    async def scenario() -> None:
        async with kube.Client(configuration):
            pass

    run(scenario())
    assert configuration.proxy == proxy
    # Per-request environment lookups (a worker thread per call) are off.
    assert configuration.client_session_kwargs == {"trust_env": False}
