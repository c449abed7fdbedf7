"""Watch, as kube-apiserver documents it: events in order, resume from a resourceVersion,
synthetic ADDED events for the current state when no version is given, bookmarks,
timeoutSeconds, selectors (an object that stops matching arrives as DELETED), and 410 Gone as
an ERROR event when the version asked for is too old."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.fixtures.cluster import LOCAL

LIVE_TIMEOUT = 30  # seconds: the watch the live-events test opens ends after this


def configmap(name: str, **meta: Any) -> dict:
    return {"metadata": {"name": name, **meta}, "data": {"k": "v"}}


def raw_watch(api_client: client.ApiClient, path: str, **query: Any) -> Iterator[dict[str, Any]]:
    """The watch stream as the server sends it: one decoded event per line."""
    params = [
        ("watch", "true"),
        *((k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in query.items()),
    ]
    response = api_client.call_api(
        *api_client.param_serialize(
            "GET",
            path,
            query_params=params,
            auth_settings=["BearerToken"],
            header_params={"Accept": "application/json"},
        ),
        _request_timeout=60,
    )
    if response.status >= 400:
        response.read()
        raise ApiException(http_resp=response)
    buffer = b""
    try:
        for chunk in response.response.stream(4096, decode_content=False):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line)
    finally:
        response.response.close()  # a watch left before its end holds no connection
    if buffer.strip():
        yield json.loads(buffer)


def events(api_client: client.ApiClient, namespace: str, **query: Any) -> list[dict[str, Any]]:
    return list(raw_watch(api_client, f"/api/v1/namespaces/{namespace}/configmaps", **query))


def test_a_watch_from_a_resource_version_replays_what_happened_since(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, configmap("a"))
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "2"}})
    core.delete_namespaced_config_map("a", namespace)
    got = events(api_client, namespace, resourceVersion=start, timeoutSeconds=1)
    assert [e["type"] for e in got] == ["ADDED", "MODIFIED", "DELETED"]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in got]
    assert versions == sorted(versions)
    assert versions[0] > int(start)
    assert got[1]["object"]["data"] == {"k": "2"}
    assert got[0]["object"]["kind"] == "ConfigMap"


def test_resuming_from_the_last_seen_version_misses_nothing_and_repeats_nothing(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, configmap("one"))
    first = events(api_client, namespace, resourceVersion=start, timeoutSeconds=1)
    last = first[-1]["object"]["metadata"]["resourceVersion"]
    core.create_namespaced_config_map(namespace, configmap("two"))
    second = events(api_client, namespace, resourceVersion=last, timeoutSeconds=1)
    assert [e["object"]["metadata"]["name"] for e in first] == ["one"]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in second] == [("ADDED", "two")]


def test_a_replay_of_many_large_events_arrives_whole_and_in_order(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    # 300 events of about 2 KB: more than one of the server's batched writes of a stream
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    names = [f"big-{i:03d}" for i in range(300)]
    for name in names:
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": name}, "data": {"k": name * 250}}
        )
    got = events(api_client, namespace, resourceVersion=start, timeoutSeconds=2)
    assert [e["object"]["metadata"]["name"] for e in got] == names
    assert all(e["object"]["data"]["k"] == e["object"]["metadata"]["name"] * 250 for e in got)
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in got]
    assert versions == sorted(set(versions))


def test_a_watch_without_a_version_starts_with_the_current_state(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, configmap("x"))
    core.create_namespaced_config_map(namespace, configmap("y"))
    for version in ("", "0"):
        query: dict[str, Any] = {"timeoutSeconds": 1}
        if version:
            query["resourceVersion"] = version
        got = events(api_client, namespace, **query)
        got = [e for e in got if e["object"]["metadata"]["name"] != "kube-root-ca.crt"]
        assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in got) == [
            ("ADDED", "x"),
            ("ADDED", "y"),
        ]


def test_live_events_arrive_while_the_watch_is_open(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    # No resourceVersion: the watch starts at the current state, so its synthetic ADDED for
    # the marker says it is open; what was written after that can only come live, and long
    # before the server would end the watch.
    labels = {"test": "live"}  # not the namespace's own kube-root-ca.crt
    core.create_namespaced_config_map(namespace, configmap("marker", labels=labels))
    stream = raw_watch(
        api_client,
        f"/api/v1/namespaces/{namespace}/configmaps",
        labelSelector="test=live",
        timeoutSeconds=LIVE_TIMEOUT,
    )
    first = next(stream)
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "marker")
    written = time.monotonic()
    core.create_namespaced_config_map(namespace, configmap("live", labels=labels))
    core.delete_namespaced_config_map("live", namespace)
    received = [next(stream, None), next(stream, None)]
    waited = time.monotonic() - written
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in received if e] == [
        ("ADDED", "live"),
        ("DELETED", "live"),
    ]
    assert waited < LIVE_TIMEOUT / 2, f"the events came only as the watch ended ({waited:.1f}s)"
    stream.close()


def test_a_compacted_resource_version_is_410_gone_as_an_error_event(
    api_client: client.ApiClient, namespace: str, target: str
) -> None:
    got = events(api_client, namespace, resourceVersion="1", timeoutSeconds=1)
    if target != LOCAL and got[0]["type"] != "ERROR":
        # kube-apiserver's watch cache keeps every event since it started until its buffer
        # wraps (it grows with the event rate): on a young cluster version 1 is not gone yet,
        # and the watch replays from it
        assert {e["type"] for e in got} <= {"ADDED", "MODIFIED", "DELETED"}
        versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in got]
        assert versions == sorted(versions)
        assert versions[0] > 1
        return
    assert len(got) == 1
    assert got[0]["type"] == "ERROR"
    status = got[0]["object"]
    assert status["kind"] == "Status"
    assert status["code"] == 410
    assert status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version: 1 (")


def test_bookmarks_are_sent_when_asked_for_and_carry_only_a_resource_version(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    """A bookmark tells a watcher how far the server has got when nothing it watches changed.

    kube-apiserver's watch cache sends one about 2 s before ``timeoutSeconds`` ends the watch
    (and about every minute), and only once the resource changed after the version the watch
    started from (a watch without a version is served by etcd and gets none); the local
    server sends one as the watch ends, and every minute while idle. So: a watch from a
    version, a change it does not see, and a timeout the real server's bookmark fits in."""
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, configmap("b", labels={"pick": "me"}))
    got: list[dict[str, Any]] = []
    unseen = ""
    for event in raw_watch(
        api_client,
        f"/api/v1/namespaces/{namespace}/configmaps",
        resourceVersion=start,
        timeoutSeconds=8,
        allowWatchBookmarks=True,
        labelSelector="pick=me",
    ):
        got.append(event)
        if len(got) == 1:  # the watch is open: change what it does not select
            unseen = core.create_namespaced_config_map(
                namespace, configmap("not-picked")
            ).metadata.resource_version
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in got[:1]] == [("ADDED", "b")]
    bookmarks = [e["object"] for e in got if e["type"] == "BOOKMARK"]
    assert bookmarks, "a bookmark comes before the watch ends"
    assert all(e["type"] == "BOOKMARK" for e in got[1:]), "the unselected object never shows"
    for bookmark in bookmarks:
        assert bookmark["kind"] == "ConfigMap"
        assert set(bookmark["metadata"]) <= {"resourceVersion", "creationTimestamp"}
    assert int(bookmarks[-1]["metadata"]["resourceVersion"]) >= int(unseen)


def test_no_bookmarks_unless_asked(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    got = events(api_client, namespace, resourceVersion=start, timeoutSeconds=1)
    assert [e for e in got if e["type"] == "BOOKMARK"] == []


def test_timeout_seconds_ends_the_watch(api_client: client.ApiClient, namespace: str) -> None:
    started = time.monotonic()
    events(api_client, namespace, timeoutSeconds=1)
    assert 0.5 < time.monotonic() - started < 10


def test_a_selector_watch_sees_objects_enter_and_leave_the_selection(
    api_client: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, configmap("s"))
    core.patch_namespaced_config_map("s", namespace, {"metadata": {"labels": {"pick": "me"}}})
    core.patch_namespaced_config_map("s", namespace, {"data": {"k": "2"}})
    core.patch_namespaced_config_map("s", namespace, {"metadata": {"labels": {"pick": None}}})
    got = events(
        api_client, namespace, resourceVersion=start, timeoutSeconds=1, labelSelector="pick=me"
    )
    assert [e["type"] for e in got] == ["ADDED", "MODIFIED", "DELETED"]
    # kube's cacheWatcher: the object as the watcher last saw it (still selected), at the
    # version of the change that took it out
    left = got[-1]["object"]
    assert left["metadata"]["labels"] == {"pick": "me"}
    assert left["data"] == {"k": "2"}
    now = core.read_namespaced_config_map("s", namespace).metadata.resource_version
    assert left["metadata"]["resourceVersion"] == now


def test_the_official_client_watch_helper_works(core: client.CoreV1Api, namespace: str) -> None:
    from kubernetes import watch

    core.create_namespaced_config_map(namespace, configmap("w"))
    seen = []
    stream = watch.Watch().stream(core.list_namespaced_config_map, namespace, timeout_seconds=1)
    for event in stream:
        if event["object"].metadata.name != "kube-root-ca.crt":
            seen.append((event["type"], event["object"].metadata.name))
    assert seen == [("ADDED", "w")]


@pytest.mark.parametrize("value", ["abc", "-5"])
def test_a_malformed_resource_version_is_400(
    api_client: client.ApiClient, namespace: str, value: str, target: str
) -> None:
    with pytest.raises(ApiException) as info:
        events(api_client, namespace, resourceVersion=value, timeoutSeconds=1)
    if target == LOCAL:
        assert info.value.status == 400
    else:  # kube-apiserver answers 500 here, a defect (strconv.ParseUint: invalid syntax)
        assert info.value.status >= 400
