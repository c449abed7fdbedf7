"""Event expiry against an API server: a sweep deletes Events whose last occurrence is older
than the TTL and keeps the others."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from kubernetes import client

from kubetrain import kube
from kubetrain.local import eventttl
from tests.apiserver.cascade import run


def event(namespace: str, name: str, last: datetime) -> dict:
    stamp = last.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
        "reason": "Tested",
        "message": name,
        "type": "Normal",
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "source": {"component": "test"},
    }


def test_a_sweep_deletes_expired_events_only(
    kubeconfig: str, namespace: str, core: client.CoreV1Api
) -> None:
    now = datetime.now(timezone.utc)

    async def body() -> int:
        async with kube.Client(await kube.from_kubeconfig(kubeconfig)) as api:
            await api.create(
                eventttl.EVENTS,
                event(namespace, "old", now - timedelta(hours=2)),
                namespace=namespace,
            )
            await api.create(
                eventttl.EVENTS,
                event(namespace, "fresh", now - timedelta(minutes=5)),
                namespace=namespace,
            )
            return await eventttl.sweep(api, eventttl.Settings(ttl=3600.0))

    assert run(body()) >= 1
    names = {e.metadata.name for e in core.list_namespaced_event(namespace).items}
    assert "old" not in names
    assert "fresh" in names
