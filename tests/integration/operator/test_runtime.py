"""The controller runtime against a real API server: the informer cache follows the API, a toy
reconciler converges and is woken by its children's events, events are aggregated (written
directly, or in the background by a running manager, which still writes what is queued when
it stops), and the manager serves /metrics, /healthz and /readyz.

The toy reconciler, :class:`Mirror`: for each ConfigMap labelled ``kubetrain.test/mirror``,
a ConfigMap ``<name>-mirror`` that it controls (ownerReference with ``controller: true``)
holds the same data. ConfigMaps own ConfigMaps here, so one resource exercises both event
paths: an object's own key, and its controller owner's.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from kubetrain import _aio, kube
from kubetrain.kube import cache, informer
from kubetrain.kube import record as events
from kubetrain.operator.runtime import manager
from kubetrain.operator.runtime.controller import Key, Result
from tests.apiserver.cascade import eventually, fetch, run
from tests.fixtures.operator import FAST_WATCH

CONFIGMAPS = kube.resource.CONFIGMAPS
LABEL = "kubetrain.test/mirror"
MISSING = kube.Resource("kubetrain-test.example.com", "v1", "nothings", kind="Nothing")


def configmap(name: str, data: dict[str, str], *, mirrored: bool = True) -> dict[str, Any]:
    labels = {LABEL: "yes"} if mirrored else {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": data,
    }


class Mirror:
    """The toy reconciler (see the module docstring); counts its reconciles per key."""

    def __init__(self, client: kube.Client, store: cache.Store) -> None:
        self.client = client
        self.store = store
        self.calls: dict[Key, int] = {}

    async def reconcile(self, key: Key) -> Result:
        self.calls[key] = self.calls.get(key, 0) + 1
        parent = self.store.get(key.namespace, key.name)
        if parent is None or LABEL not in (parent["metadata"].get("labels") or {}):
            return Result()
        name = f"{key.name}-mirror"
        data = dict(parent.get("data") or {})
        child = self.store.get(key.namespace, name)
        if child is None:
            body = configmap(name, data, mirrored=False)
            body["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": key.name,
                    "uid": parent["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            with contextlib.suppress(kube.AlreadyExists):  # the cache had not seen it yet
                await self.client.create(CONFIGMAPS, body, namespace=key.namespace)
        elif child.get("data") != data:
            updated = copy.deepcopy(child)
            updated["data"] = data
            await self.client.replace(CONFIGMAPS, updated, namespace=key.namespace)
        return Result()


@contextlib.asynccontextmanager
async def running(m: manager.Manager) -> AsyncIterator[None]:
    """Run the manager beside the block; stop it after (a crash fails the test)."""
    async with _aio.TaskGroup() as group:
        task = group.create_task(m.run(), name="manager")
        try:
            yield
        finally:
            task.cancel()


def mirror_manager(
    client: kube.Client, settings: manager.Settings, name: str = "mirror"
) -> tuple[manager.Manager, Mirror]:
    m = manager.Manager(client, settings)
    reconciler = Mirror(client, m.store(CONFIGMAPS))
    m.controller(name, reconciler, for_=CONFIGMAPS, owns=[CONFIGMAPS])
    return m, reconciler


async def mirrored(client: kube.Client, ns: str, name: str, data: dict[str, str]) -> bool:
    child = await fetch(client, ns, f"{name}-mirror")
    return child is not None and child.get("data") == data


# -- the informer cache ------------------------------------------------------------------------


def test_the_cache_follows_creates_updates_and_deletes(kubeconfig: str, namespace: str) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(CONFIGMAPS, configmap("before", {"a": "1"}), namespace=namespace)
            store = cache.Store(CONFIGMAPS)
            heard: list[tuple[str, str]] = []
            store.subscribe(lambda type, obj, old: heard.append((type, obj["metadata"]["name"])))
            watcher = informer.Informer(client, store, namespace=namespace, settings=FAST_WATCH)
            async with _aio.TaskGroup() as group:
                task = group.create_task(watcher.run(), name="informer")
                async with _aio.timeout(10):
                    await store.synced.wait()
                assert store.get(namespace, "before") is not None, "the first list is in"

                created = await client.create(
                    CONFIGMAPS, configmap("cm", {"a": "1"}), namespace=namespace
                )
                await eventually(lambda: _now(store.get(namespace, "cm")), "cm is cached")
                created["data"] = {"a": "2"}
                await client.replace(CONFIGMAPS, created, namespace=namespace)

                async def updated() -> bool:
                    obj = store.get(namespace, "cm")
                    return obj is not None and obj["data"] == {"a": "2"}

                await eventually(updated, "the update reaches the cache")
                await client.delete(CONFIGMAPS, "cm", namespace=namespace)

                async def deleted() -> bool:
                    return store.get(namespace, "cm") is None

                await eventually(deleted, "the delete reaches the cache")
                task.cancel()
            assert heard[0] == ("ADDED", "before")
            assert [h for h in heard if h[1] == "cm"] == [
                ("ADDED", "cm"),
                ("MODIFIED", "cm"),
                ("DELETED", "cm"),
            ]

    run(body())


async def _now(value: Any) -> Any:
    return value


def test_the_owner_index_finds_children_by_their_controllers_uid(
    kubeconfig: str, namespace: str
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            parent = await client.create(CONFIGMAPS, configmap("p", {}), namespace=namespace)
            uid = parent["metadata"]["uid"]
            for i, controls in enumerate([True, True, False]):
                child = configmap(f"c{i}", {}, mirrored=False)
                child["metadata"]["ownerReferences"] = [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "p", "uid": uid}
                    | ({"controller": True} if controls else {})
                ]
                await client.create(CONFIGMAPS, child, namespace=namespace)
            store = cache.Store(CONFIGMAPS)
            watcher = informer.Informer(client, store, namespace=namespace, settings=FAST_WATCH)
            async with _aio.TaskGroup() as group:
                task = group.create_task(watcher.run(), name="informer")
                async with _aio.timeout(10):
                    await store.synced.wait()
                assert [o["metadata"]["name"] for o in store.owned_by(uid)] == ["c0", "c1"]
                await client.delete(CONFIGMAPS, "c0", namespace=namespace)

                async def one_left() -> bool:
                    return [o["metadata"]["name"] for o in store.owned_by(uid)] == ["c1"]

                await eventually(one_left, "the deleted child leaves the index")
                task.cancel()

    run(body())


# -- a controller ------------------------------------------------------------------------------


def test_a_reconciler_converges_and_its_childrens_events_requeue_it(
    kubeconfig: str, namespace: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            await client.create(CONFIGMAPS, configmap("early", {"k": "e"}), namespace=namespace)
            m, mirror = mirror_manager(client, manager_settings())
            async with running(m):
                # objects there before the start are reconciled from the first list
                await eventually(
                    lambda: mirrored(client, namespace, "early", {"k": "e"}), "early is mirrored"
                )
                await client.create(CONFIGMAPS, configmap("a", {"k": "1"}), namespace=namespace)
                await eventually(lambda: mirrored(client, namespace, "a", {"k": "1"}), "a mirror")
                child = await client.get(CONFIGMAPS, "a-mirror", namespace=namespace)
                [ref] = child["metadata"]["ownerReferences"]
                assert ref["controller"] is True
                assert ref["name"] == "a"
                unlabelled = configmap("plain", {"k": "p"}, mirrored=False)
                await client.create(CONFIGMAPS, unlabelled, namespace=namespace)

                # a child's event wakes its owner: tampering is undone, deletion recreated
                calls_before = m_calls(mirror, namespace, "a")
                child["data"] = {"k": "tampered"}
                await client.replace(CONFIGMAPS, child, namespace=namespace)
                await eventually(
                    lambda: mirrored(client, namespace, "a", {"k": "1"}), "the tampering is undone"
                )
                assert m_calls(mirror, namespace, "a") > calls_before
                await client.delete(CONFIGMAPS, "a-mirror", namespace=namespace)
                await eventually(
                    lambda: mirrored(client, namespace, "a", {"k": "1"}), "the child is recreated"
                )

                # the parent's own change
                parent = await client.get(CONFIGMAPS, "a", namespace=namespace)
                parent["data"] = {"k": "2"}
                await client.replace(CONFIGMAPS, parent, namespace=namespace)
                await eventually(
                    lambda: mirrored(client, namespace, "a", {"k": "2"}), "the change is mirrored"
                )
            assert await fetch(client, namespace, "plain-mirror") is None
            assert m.leading is False

    run(body())


def m_calls(mirror: Mirror, namespace: str, name: str) -> int:
    return mirror.calls.get(Key(namespace, name), 0)


def test_a_failing_reconcile_is_retried_until_it_succeeds(
    kubeconfig: str, namespace: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    class Flaky:
        def __init__(self) -> None:
            self.attempts = 0

        async def reconcile(self, key: Key) -> Result:
            if key.name != "flaky":
                return Result()
            self.attempts += 1
            if self.attempts < 3:
                raise RuntimeError(f"attempt {self.attempts} fails")
            return Result()

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            m = manager.Manager(client, manager_settings())
            flaky = Flaky()
            m.controller("flaky", flaky, for_=CONFIGMAPS)
            async with running(m):
                await client.create(CONFIGMAPS, configmap("flaky", {}), namespace=namespace)

                async def succeeded() -> bool:
                    return flaky.attempts >= 3

                await eventually(succeeded, "the third attempt")
                await asyncio.sleep(0.2)
                assert flaky.attempts == 3, "no retry after a success"

    run(body())


# -- events ------------------------------------------------------------------------------------


def test_the_same_event_twice_is_one_event_with_count_2(kubeconfig: str, namespace: str) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            obj = await client.create(CONFIGMAPS, configmap("job", {}), namespace=namespace)
            obj.setdefault("apiVersion", "v1")
            obj.setdefault("kind", "ConfigMap")
            recorder = events.Recorder(client, "test-controller")
            await recorder.event(obj, "Warning", "ExitedWithCode", "exit code 1")
            await recorder.event(obj, "Warning", "ExitedWithCode", "exit code 1")
            await recorder.event(obj, "Normal", "Other", "something else")
            listed = await client.list(
                events.EVENTS, namespace=namespace, field_selector="involvedObject.name=job"
            )
            by_reason = {e["reason"]: e for e in listed["items"]}
            assert len(listed["items"]) == 2
            repeated = by_reason["ExitedWithCode"]
            assert repeated["count"] == 2
            assert repeated["type"] == "Warning"
            assert repeated["message"] == "exit code 1"
            assert repeated["source"]["component"] == "test-controller"
            assert repeated["involvedObject"]["uid"] == obj["metadata"]["uid"]
            assert repeated["involvedObject"]["kind"] == "ConfigMap"
            assert by_reason["Other"]["count"] == 1

    run(body())


def test_a_managers_events_are_written_in_the_background_and_at_its_stop(
    kubeconfig: str, namespace: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            obj = await client.create(CONFIGMAPS, configmap("job", {}), namespace=namespace)
            obj.setdefault("apiVersion", "v1")
            obj.setdefault("kind", "ConfigMap")
            m = manager.Manager(client, manager_settings())
            recorder = m.recorder("test-controller")
            async with running(m):
                await eventually(lambda: _now(m.events.running), "the event writer runs")
                for _ in range(3):
                    await recorder.event(obj, "Warning", "ExitedWithCode", "exit code 1")
                await recorder.event(obj, "Normal", "Other", "something else")
                async with _aio.timeout(10):
                    await recorder.flush()
                listed = await reasons_and_counts(client, namespace)
                assert listed == {"ExitedWithCode": 3, "Other": 1}
                for i in range(10):
                    recorder.emit(obj, "Normal", f"Stopping{i}", "queued as the manager stops")
            assert not m.events.running
            listed = await reasons_and_counts(client, namespace)
            stopping = {reason: n for reason, n in listed.items() if reason.startswith("Stop")}
            assert stopping == {f"Stopping{i}": 1 for i in range(10)}, "the stop wrote them"

    run(body())


async def reasons_and_counts(client: kube.Client, namespace: str) -> dict[str, int]:
    listed = await client.list(
        events.EVENTS, namespace=namespace, field_selector="involvedObject.name=job"
    )
    return {e["reason"]: e["count"] for e in listed["items"]}


# -- the manager's endpoints -------------------------------------------------------------------


def test_metrics_and_probes_are_served(
    kubeconfig: str, namespace: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            m, _ = mirror_manager(client, manager_settings(), name="served")
            async with running(m), aiohttp.ClientSession() as http:

                async def ready() -> bool:
                    if m.probe_port is None:
                        return False
                    url = f"http://127.0.0.1:{m.probe_port}/readyz"
                    async with http.get(url) as response:
                        return response.status == 200

                await eventually(ready, "/readyz answers 200 once the caches synced")
                await client.create(CONFIGMAPS, configmap("x", {}), namespace=namespace)
                await eventually(lambda: mirrored(client, namespace, "x", {}), "x is mirrored")
                async with http.get(f"http://127.0.0.1:{m.probe_port}/healthz") as response:
                    assert response.status == 200
                    assert await response.text() == "ok"
                async with http.get(f"http://127.0.0.1:{m.metrics_port}/metrics") as response:
                    assert response.status == 200
                    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                    text = await response.text()
            lines = text.splitlines()
            assert any(
                line.startswith(
                    'controller_runtime_reconcile_total{controller="served",result="success"}'
                )
                for line in lines
            )
            assert any(line.startswith('workqueue_adds_total{name="served"}') for line in lines)
            assert "# TYPE training_operator_jobs_created_total counter" in lines

    run(body())


def test_readyz_fails_while_a_cache_has_not_synced(
    kubeconfig: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            m = manager.Manager(client, manager_settings())
            m.store(CONFIGMAPS)
            m.store(MISSING)  # no such resource is served: its informer keeps retrying
            async with running(m), aiohttp.ClientSession() as http:

                async def configmaps_synced() -> bool:
                    return m.probe_port is not None and m.unsynced() == [MISSING.group_resource]

                await eventually(configmaps_synced, "the configmaps cache syncs")
                async with http.get(f"http://127.0.0.1:{m.probe_port}/readyz") as response:
                    assert response.status == 500
                    assert f"[-]{MISSING.group_resource} not synced" in await response.text()

    run(body())


class Gate:
    """A runnable (as the admission webhook is) that becomes ready when the test says."""

    name = "gate"

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.open = asyncio.Event()

    async def run(self) -> None:
        await self.open.wait()
        self.ready.set()
        await asyncio.get_running_loop().create_future()


def test_controllers_and_readiness_wait_for_every_runnable(
    kubeconfig: str, namespace: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    """Upstream starts no controller before the webhook's certificates are ready, and its
    readyz waits for the webhook server: the caches sync meanwhile, nothing is reconciled."""

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            m, reconciler = mirror_manager(client, manager_settings())
            gate = Gate()
            m.add(gate)
            await client.create(CONFIGMAPS, configmap("a", {"k": "v"}), namespace=namespace)
            async with running(m), aiohttp.ClientSession() as http:

                async def readyz() -> tuple[int, str]:
                    url = f"http://127.0.0.1:{m.probe_port}/readyz"
                    async with http.get(url) as response:
                        return response.status, await response.text()

                async def synced_but_gated() -> bool:
                    return m.probe_port is not None and m.unready() == ["gate not ready"]

                await eventually(synced_but_gated, "the caches sync while the gate is shut")
                assert await readyz() == (500, "[-]gate not ready\nreadyz check failed\n")
                assert reconciler.calls == {}
                assert not m.leading
                gate.open.set()
                await eventually(
                    lambda: mirrored(client, namespace, "a", {"k": "v"}), "reconciled once open"
                )
                assert await readyz() == (200, "ok")

    run(body())


def test_endpoints_can_be_turned_off(
    kubeconfig: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            m = manager.Manager(client, manager_settings(metrics_address="0", probe_address=""))
            store = m.store(CONFIGMAPS)
            async with running(m):
                async with _aio.timeout(10):
                    await store.synced.wait()
                assert m.metrics_port is None
                assert m.probe_port is None

    run(body())


def test_controllers_are_registered_before_the_manager_runs(
    kubeconfig: str, manager_settings: Callable[..., manager.Settings]
) -> None:
    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            m, mirror = mirror_manager(client, manager_settings())
            with pytest.raises(ValueError, match="already registered"):
                m.controller("mirror", mirror, for_=CONFIGMAPS)
            async with running(m):
                await eventually(lambda: _now(m.probe_port), "the manager serves")
                with pytest.raises(RuntimeError, match="before the manager runs"):
                    m.controller("late", mirror, for_=CONFIGMAPS)

    run(body())
