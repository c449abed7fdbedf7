"""The fault proxy does what the fault tests take it to do: without faults it is invisible
(TLS or plain HTTP, requests, watches), and each fault reaches a kubetrain client as the
failure a real server or network would cause — a ``lost`` create really created the object,
a ``cut`` one did not, a ``gone`` watch lists again, a dropped one resumes.

Each case sends every request through one fault (rate 1) against the session's API server.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from kubetrain import _aio, kube
from kubetrain.kube import watch
from tests.apiserver.cascade import eventually, run
from tests.reliability import fault_fixtures, faultproxy

CONFIGMAPS = kube.resource.CONFIGMAPS


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


@contextlib.asynccontextmanager
async def through(
    kubeconfig: str, tmp_path: Path, faults: faultproxy.Faults, *, tls: bool = True
) -> Any:
    """A client whose every request goes through a proxy with ``faults``; yields both."""
    pki = fault_fixtures.local_pki(kubeconfig)
    url, upstream_tls = fault_fixtures.upstream_of(kubeconfig)
    serving = fault_fixtures.serving_tls(pki) if tls else None
    async with faultproxy.running(url, upstream_tls, faults, serving_tls=serving) as proxy:
        path = proxy.write_kubeconfig(kubeconfig, tmp_path / f"proxied-{secrets.token_hex(3)}")
        async with await kube.Client.from_kubeconfig(path, timeout=10) as client:
            yield proxy, client


def only(kind: str, **options: Any) -> faultproxy.Faults:
    return faultproxy.Faults(rate=1.0, weights={kind: 1.0}, watch_drop=0.0, **options)


@pytest.mark.parametrize("tls", [True, False], ids=["tls", "http"])
def test_without_faults_the_proxy_is_invisible(
    kubeconfig: str, namespace: str, tmp_path: Path, tls: bool
) -> None:
    async def body() -> None:
        faults = faultproxy.Faults(rate=0.0, watch_drop=0.0)
        async with through(kubeconfig, tmp_path, faults, tls=tls) as (proxy, client):
            assert proxy.url.startswith("https://" if tls else "http://")
            events: list[str] = []

            async def follow() -> None:
                async for event in client.watch(CONFIGMAPS, namespace=namespace):
                    events.append(event.object["metadata"].get("name", event.type))

            async def listed() -> bool:
                return bool(events)

            async with _aio.TaskGroup() as group:
                task = group.create_task(follow(), name="follow")
                await eventually(listed, "the watch's first list through the proxy")
                made = await client.create(CONFIGMAPS, configmap("plain"), namespace=namespace)
                assert made["metadata"]["name"] == "plain"

                async def seen() -> bool:
                    return "plain" in events

                await eventually(seen, "the watch through the proxy delivered the create")
                task.cancel()
            assert proxy.counts == {}
            assert proxy.requests >= 3  # list, watch, create

    run(body())


STATUS_FAULTS = [
    ("conflict", kube.Conflict, 409),
    ("throttle", kube.TooManyRequests, 429),
    ("error", kube.ServerError, 500),
    ("unavailable", kube.ServerError, 503),
]


@pytest.mark.parametrize(
    ("kind", "error", "code"), STATUS_FAULTS, ids=[k for k, *_ in STATUS_FAULTS]
)
def test_an_answered_fault_is_the_servers_error(
    kubeconfig: str, namespace: str, tmp_path: Path, kind: str, error: type, code: int
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as direct:
            await direct.create(CONFIGMAPS, configmap("target"), namespace=namespace)
        async with through(kubeconfig, tmp_path, only(kind)) as (proxy, client):
            with pytest.raises(error) as caught:
                await client.patch(CONFIGMAPS, "target", {"data": {"k": "v"}}, namespace=namespace)
            assert caught.value.code == code
            if kind == "throttle":
                assert caught.value.retry_after == 1
            assert proxy.counts == {kind: 1}

    run(body())


def test_a_conflict_is_only_answered_to_updates(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    async def body() -> None:
        async with through(kubeconfig, tmp_path, only("conflict")) as (proxy, client):
            made = await client.create(CONFIGMAPS, configmap("fresh"), namespace=namespace)
            assert made["metadata"]["name"] == "fresh"
            assert proxy.counts == {}

    run(body())


def test_a_cut_create_did_not_happen_and_a_lost_one_did(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as direct:
            for kind in ("cut", "lost"):
                async with through(kubeconfig, tmp_path, only(kind)) as (proxy, client):
                    with pytest.raises(kube.Unavailable):
                        await client.create(CONFIGMAPS, configmap(kind), namespace=namespace)
                    assert proxy.counts == {kind: 1}
                listed = await direct.list(CONFIGMAPS, namespace=namespace)
                names = {i["metadata"]["name"] for i in listed["items"]}
                assert (kind in names) == (kind == "lost"), names

    run(body())


def test_a_delay_delays(kubeconfig: str, namespace: str, tmp_path: Path) -> None:
    async def body() -> None:
        faults = only("delay", delay=(0.3, 0.3))
        async with through(kubeconfig, tmp_path, faults) as (proxy, client):
            started = time.monotonic()
            await client.list(CONFIGMAPS, namespace=namespace)
            assert time.monotonic() - started >= 0.3
            assert proxy.counts == {"delay": 1}

    run(body())


def test_a_gone_watch_lists_again_and_a_dropped_one_resumes(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    settings = watch.Settings(backoff_initial=0.01, backoff_max=0.05)

    async def body() -> None:
        gone = faultproxy.Faults(rate=1.0, weights={"gone": 1.0}, watch_drop=0.0)
        async with through(kubeconfig, tmp_path, gone) as (proxy, client):
            stream = client.watch(CONFIGMAPS, namespace=namespace, settings=settings)
            async with contextlib.aclosing(stream.__aiter__()) as events:
                assert (await anext(events)).type == watch.SYNC
                assert (await anext(events)).type == watch.SYNC  # 410 on the watch: a relist
            assert stream.relists >= 1
            assert proxy.counts["gone"] >= 1

        dropping = faultproxy.Faults(rate=0.0, watch_drop=1.0, watch_lifetime=(0.1, 0.1))
        async with (
            through(kubeconfig, tmp_path, dropping) as (proxy, client),
            await kube.Client.from_kubeconfig(kubeconfig) as direct,
        ):
            stream = client.watch(CONFIGMAPS, namespace=namespace, settings=settings)
            seen: list[watch.Event] = []

            async def follow() -> None:
                async for event in stream:
                    seen.append(event)

            async def dropped() -> bool:
                return proxy.counts["drop"] >= 3

            async def delivered() -> bool:
                return any(e.object["metadata"].get("name") == "after-drops" for e in seen)

            async with _aio.TaskGroup() as group:
                task = group.create_task(follow(), name="follow")
                await eventually(dropped, "the proxy cut the watch three times", timeout=10)
                await direct.create(CONFIGMAPS, configmap("after-drops"), namespace=namespace)
                await eventually(delivered, "the create was delivered after the cuts")
                task.cancel()
            assert [e.type for e in seen] == [watch.SYNC, watch.ADDED]
            assert stream.relists == 0  # resumed from its resourceVersion every time
            assert stream.restarts >= 3

    run(body())
