"""A watch resumed from a version etcd has compacted away, on a real kube-apiserver: the
server answers 410 Gone, and the watch lists again and hands its caller the current objects,
so the caller learns of what was created and deleted while it was away.

kube-apiserver is started with ``--etcd-compaction-interval=5s``, so that history goes within
seconds, and without a watch cache for configmaps (``--watch-cache-sizes=configmaps#0``):
its watch cache keeps serving a version from its own window (at least 100 events and 75 s)
after etcd has compacted it, so with it the 410 would come only once the window has moved
on; without it the watch is answered by etcd, as it is for a version that has left the
window. The test waits for the compaction itself: a list asking for exactly the old version
is refused with 410 once it has happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

import pytest

from kubetrain import _aio, envtest, kube
from kubetrain.kube import resource, watch
from tests import realcluster

CONFIGMAPS = kube.Resource("", "v1", "configmaps", kind="ConfigMap")
NAMESPACE = "compaction"
COMPACTION_TIMEOUT = 60.0  # seconds for etcd to compact past a version (5 s ticks, 2 busy cores)


@pytest.fixture(scope="module")
def compacting_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[envtest.ControlPlane]:
    try:
        assets = envtest.find_assets()
    except envtest.AssetsMissing as exc:
        realcluster.missing.add(str(exc))
        pytest.skip(f"no real Kubernetes control plane: {exc}")
    plane = envtest.ControlPlane(
        assets,
        tmp_path_factory.mktemp("compacting-apiserver"),
        controllers=False,
        apiserver_flags=("--etcd-compaction-interval=5s", "--watch-cache-sizes=configmaps#0"),
    )
    try:
        plane.start()
    except RuntimeError as exc:
        pytest.fail(f"the real control plane did not start: {exc}")
    try:
        yield plane
    finally:
        plane.stop()


async def compacted(client: kube.Client, version: str) -> None:
    """Wait until etcd no longer has ``version``: an exact list at it is refused with 410."""
    deadline = time.monotonic() + COMPACTION_TIMEOUT
    query = {"resourceVersion": version, "resourceVersionMatch": "Exact"}
    while True:
        try:
            await client.request("GET", CONFIGMAPS.path(NAMESPACE), query=query)
        except kube.Gone:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"version {version} not compacted within {COMPACTION_TIMEOUT:.0f}s")
        await asyncio.sleep(0.5)


def test_a_watch_resumed_from_a_compacted_version_lists_again_and_syncs_what_exists_now(
    compacting_plane: envtest.ControlPlane,
) -> None:
    async def scenario() -> tuple[list[watch.Event], watch.Watch]:
        async with await kube.Client.from_kubeconfig(compacting_plane.kubeconfig) as client:
            await client.create(resource.NAMESPACES, {"metadata": {"name": NAMESPACE}})
            for name in ("kept", "deleted"):
                await client.create(CONFIGMAPS, {"metadata": {"name": name}}, namespace=NAMESPACE)
            listed = await client.list(CONFIGMAPS, namespace=NAMESPACE)
            old = listed["metadata"]["resourceVersion"]
            # While the watcher is away: one object created, one deleted.
            await client.create(CONFIGMAPS, {"metadata": {"name": "created"}}, namespace=NAMESPACE)
            await client.delete(CONFIGMAPS, "deleted", namespace=NAMESPACE)
            await compacted(client, old)

            w = client.watch(
                CONFIGMAPS,
                namespace=NAMESPACE,
                resource_version=old,
                settings=watch.Settings(timeout_seconds=30, jitter=0.0),
            )
            got: list[watch.Event] = []
            async with _aio.timeout(60), contextlib.aclosing(aiter(w)) as events:
                async for event in events:
                    got.append(event)
                    if event.type == watch.SYNC:
                        break
            return got, w

    events, w = asyncio.run(scenario(), debug=True)

    assert [e.type for e in events] == [watch.SYNC]  # nothing from the lost history
    items = events[0].object["items"]
    assert sorted(i["metadata"]["name"] for i in items) == ["created", "kept"]
    assert w.relists == 1
    assert w.resource_version == events[0].object["metadata"]["resourceVersion"]
