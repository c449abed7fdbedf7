"""Event expiry a page at a time: a sweep goes through every page of the Events, deleting the
expired ones of each page before it lists the next, and keeps the fresh ones."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from kubernetes import client

from kubetrain import kube
from kubetrain.local import eventttl
from tests.apiserver.cascade import run
from tests.integration.local.test_eventttl import event


def test_a_paged_sweep_reaches_every_page(
    kubeconfig: str, namespace: str, core: client.CoreV1Api
) -> None:
    now = datetime.now(timezone.utc)
    old = [f"old-{i}" for i in range(5)]
    fresh = [f"fresh-{i}" for i in range(3)]

    async def body() -> int:
        async with kube.Client(await kube.from_kubeconfig(kubeconfig)) as api:
            for name in old:
                created = event(namespace, name, now - timedelta(hours=2))
                await api.create(eventttl.EVENTS, created, namespace=namespace)
            for name in fresh:
                created = event(namespace, name, now - timedelta(minutes=5))
                await api.create(eventttl.EVENTS, created, namespace=namespace)
            return await eventttl.sweep(api, eventttl.Settings(ttl=3600.0, page=2))

    assert run(body()) >= len(old)
    names = {e.metadata.name for e in core.list_namespaced_event(namespace).items}
    assert names == set(fresh)
