"""The reliable watch, as python-operator-stack.md §3 and the Kubernetes API concepts page
("Efficient detection of changes", "Watch bookmarks", "410 Gone responses") describe it: list
then watch from the list's version, resume from the last version seen, bookmarks advance the
version silently, 410 means list again, a silent connection is abandoned, and errors back
off."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest
from kubernetes.aio.client import Configuration

from kubetrain import _aio, kube
from kubetrain.kube import watch
from tests.unit.kube.fakeapi import (
    STALL,
    FakeApi,
    answer,
    bookmark,
    configmap_list,
    event,
    fail,
    gone_event,
    run,
    serving,
    stream,
)

PATH = "/api/v1/namespaces/ns/configmaps"
CONFIGMAPS = kube.Resource("", "v1", "configmaps", kind="ConfigMap")
FAST = watch.Settings(
    timeout_seconds=30, inactivity=2.0, backoff_initial=0.01, backoff_max=0.05, jitter=0.0
)


async def take(w: kube.Watch, count: int, timeout: float = 5.0) -> list[kube.Event]:
    """The first ``count`` events, or fail after ``timeout`` seconds."""
    got: list[kube.Event] = []
    async with _aio.timeout(timeout), contextlib.aclosing(aiter(w)) as events:
        async for e in events:
            got.append(e)
            if len(got) == count:
                break
    return got


def names(events: list[kube.Event]) -> list[tuple[str, str]]:
    return [
        (e.type, e.object["metadata"].get("name", e.object["metadata"].get("resourceVersion")))
        for e in events
    ]


def test_a_watch_lists_first_then_watches_from_the_lists_resource_version() -> None:
    fake = FakeApi()
    fake.on("GET", PATH, answer(configmap_list(10, "a", "b")))
    fake.on(
        "WATCH",
        PATH,
        stream(event("ADDED", "c", 11), event("MODIFIED", "a", 12)),
        stream(STALL),
    )

    async def scenario() -> list[kube.Event]:
        async with serving(fake) as client:
            w = client.watch(CONFIGMAPS, namespace="ns", settings=FAST)
            events = await take(w, 3)
            assert w.resource_version == "12"
            return events

    events = run(scenario())
    assert events[0].type == watch.SYNC
    assert [i["metadata"]["name"] for i in events[0].object["items"]] == ["a", "b"]
    assert events[0].object["items"][0]["kind"] == "ConfigMap"  # filled in, as client-go does
    assert names(events[1:]) == [("ADDED", "c"), ("MODIFIED", "a")]
    first = fake.watches(PATH)[0].query
    assert first["resourceVersion"] == "10"
    assert first["allowWatchBookmarks"] == "true"
    assert 1 <= int(first["timeoutSeconds"]) <= 30


def test_a_watch_that_ends_normally_is_reopened_from_the_last_version_seen() -> None:
    fake = FakeApi()
    fake.on("GET", PATH, answer(configmap_list(10)))
    fake.on("WATCH", PATH, stream(event("ADDED", "a", 11)), stream(event("ADDED", "b", 15)))

    async def scenario() -> list[kube.Event]:
        async with serving(fake) as client:
            return await take(client.watch(CONFIGMAPS, namespace="ns", settings=FAST), 3)

    events = run(scenario())
    assert names(events[1:]) == [("ADDED", "a"), ("ADDED", "b")]
    assert [w.query["resourceVersion"] for w in fake.watches(PATH)] == ["10", "11"]
    assert len(fake.seen("GET", PATH)) == 1  # no second list


def test_bookmarks_advance_the_version_but_are_not_yielded() -> None:
    fake = FakeApi()
    fake.on("GET", PATH, answer(configmap_list(10)))
    fake.on("WATCH", PATH, stream(bookmark(20)), stream(event("ADDED", "a", 21)))

    async def scenario() -> list[kube.Event]:
        async with serving(fake) as client:
            return await take(client.watch(CONFIGMAPS, namespace="ns", settings=FAST), 2)

    events = run(scenario())
    assert names(events) == [("SYNC", "10"), ("ADDED", "a")]
    assert [w.query["resourceVersion"] for w in fake.watches(PATH)] == ["10", "20"]


def test_a_410_error_event_makes_it_list_again_and_yield_a_new_sync() -> None:
    fake = FakeApi()
    fake.on("GET", PATH, answer(configmap_list(10, "a")), answer(configmap_list(30, "b")))
    fake.on("WATCH", PATH, stream(gone_event()), stream(event("ADDED", "c", 31)))

    async def scenario() -> tuple[list[kube.Event], kube.Watch]:
        async with serving(fake) as client:
            w = client.watch(CONFIGMAPS, namespace="ns", settings=FAST)
            return await take(w, 3), w

    events, w = run(scenario())
    assert [e.type for e in events] == ["SYNC", "SYNC", "ADDED"]
    assert [i["metadata"]["name"] for i in events[1].object["items"]] == ["b"]
    assert [r.query["resourceVersion"] for r in fake.watches(PATH)] == ["10", "30"]
    assert w.relists == 1


def test_a_410_answer_to_the_watch_request_also_lists_again() -> None:
    fake = FakeApi()
    fake.on("GET", PATH, answer(configmap_list(30, "b")))
    fake.on("WATCH", PATH, fail(410, "Expired", "too old"), stream(event("ADDED", "c", 31)))

    async def scenario() -> tuple[list[kube.Event], kube.Watch]:
        async with serving(fake) as client:
            w = client.watch(CONFIGMAPS, namespace="ns", resource_version="5", settings=FAST)
            return await take(w, 2), w

    events, w = run(scenario())
    assert names(events) == [("SYNC", "30"), ("ADDED", "c")]
    assert [r.query["resourceVersion"] for r in fake.watches(PATH)] == ["5", "30"]
    assert w.relists == 1  # a resumed watch's first list is a relist: its version was lost


def test_a_given_resource_version_resumes_without_a_list() -> None:
    fake = FakeApi()
    fake.on("WATCH", PATH, stream(event("MODIFIED", "a", 43)))

    async def scenario() -> list[kube.Event]:
        async with serving(fake) as client:
            w = client.watch(CONFIGMAPS, namespace="ns", resource_version="42", settings=FAST)
            return await take(w, 1)

    assert names(run(scenario())) == [("MODIFIED", "a")]
    assert fake.seen("GET", PATH) == []
    assert fake.watches(PATH)[0].query["resourceVersion"] == "42"


def test_a_silent_connection_is_abandoned_by_the_watchdog_and_resumed() -> None:
    fake = FakeApi()
    fake.on("GET", PATH, answer(configmap_list(10)))
    fake.on("WATCH", PATH, stream(event("ADDED", "a", 11), STALL), stream(event("ADDED", "b", 12)))
    settings = watch.Settings(inactivity=0.2, backoff_initial=0.01, jitter=0.0)

    async def scenario() -> tuple[list[kube.Event], float]:
        async with serving(fake) as client:
            start = asyncio.get_running_loop().time()
            events = await take(client.watch(CONFIGMAPS, namespace="ns", settings=settings), 3)
            return events, asyncio.get_running_loop().time() - start

    events, elapsed = run(scenario())
    assert names(events[1:]) == [("ADDED", "a"), ("ADDED", "b")]
    assert [r.query["resourceVersion"] for r in fake.watches(PATH)] == ["10", "11"]
    assert elapsed >= 0.2


@pytest.mark.parametrize(
    ("code", "reason"),
    [(500, "InternalError"), (503, "ServiceUnavailable"), (429, "TooManyRequests")],
    ids=["500 retried", "503 retried", "429 retried"],
)
def test_server_errors_back_off_then_resume_from_the_same_version(code: int, reason: str) -> None:
    fake = FakeApi()
    fake.on("GET", PATH, answer(configmap_list(10)))
    fake.on(
        "WATCH",
        PATH,
        fail(code, reason),
        fail(code, reason),
        stream(event("ADDED", "a", 11)),
    )
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    settings = watch.Settings(backoff_initial=1.0, backoff_max=30.0, jitter=0.0)

    async def scenario() -> list[kube.Event]:
        async with serving(fake) as client:
            w = kube.Watch(client, CONFIGMAPS, namespace="ns", settings=settings, sleep=sleep)
            return await take(w, 2)

    events = run(scenario())
    assert names(events) == [("SYNC", "10"), ("ADDED", "a")]
    assert delays == [1.0, 2.0]  # exponential
    assert [r.query["resourceVersion"] for r in fake.watches(PATH)] == ["10", "10", "10"]


def test_the_servers_retry_after_is_honoured_when_longer_than_the_backoff() -> None:
    fake = FakeApi()
    fake.on(
        "WATCH",
        PATH,
        fail(429, "TooManyRequests", retryAfterSeconds=7),
        stream(event("ADDED", "a", 11)),
    )
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    async def scenario() -> list[kube.Event]:
        async with serving(fake) as client:
            w = kube.Watch(
                client,
                CONFIGMAPS,
                namespace="ns",
                resource_version="10",
                settings=FAST,
                sleep=sleep,
            )
            return await take(w, 1)

    run(scenario())
    assert delays == [7.0]


def test_errors_that_retrying_cannot_fix_end_the_watch() -> None:
    fake = FakeApi()
    fake.on("WATCH", PATH, fail(403, "Forbidden", 'configmaps is forbidden: User "x"'))

    async def scenario() -> None:
        async with serving(fake) as client:
            await take(client.watch(CONFIGMAPS, namespace="ns", resource_version="1"), 1)

    with pytest.raises(kube.Forbidden, match="forbidden"):
        run(scenario())


def test_an_unreachable_server_is_retried_with_growing_delays() -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise asyncio.CancelledError  # the caller stops the watch

    async def scenario() -> None:
        async with kube.Client(Configuration(host=f"http://127.0.0.1:{closed_port()}")) as c:
            w = kube.Watch(c, CONFIGMAPS, namespace="ns", resource_version="1", sleep=sleep)
            await take(w, 1)

    with pytest.raises(asyncio.CancelledError):
        run(scenario())
    assert sleeps[0] < sleeps[1] < sleeps[2]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
