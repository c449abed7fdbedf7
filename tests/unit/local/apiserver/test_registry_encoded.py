"""A list of objects the store keeps encoded (Events) is answered from their encodings: the
items are not decoded unless the caller reads the result (a Table does), a version served in
another shape (events.k8s.io) is still converted, and a long list goes out in chunks as the
connection takes them."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from kubetrain.local.apiserver import (
    queryoptions,
    registry,
    resources,
    results,
    store,
    watch,
)

OPTS = queryoptions.Options()


def event(name: str, message: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns"},
        "reason": "Started",
        "message": message or f"started {name}",
        "type": "Normal",
    }


@contextlib.asynccontextmanager
async def events_registry(names: list[str], message: str = "") -> AsyncIterator[registry.Registry]:
    """A registry over an in-memory store that keeps Events encoded, holding an Event of
    each name in namespace ``ns``."""
    async with store.opened(None, encoded=["events"]) as db:
        catalog = resources.Catalog()
        reg = registry.Registry(db, catalog, watch.Hub(db))
        await reg.create(resource(reg, "namespaces"), None, {"metadata": {"name": "ns"}}, OPTS)
        for name in names:
            await reg.create(resource(reg, "events"), "ns", event(name, message), OPTS)
        yield reg


def resource(reg: registry.Registry, plural: str, group: str = "") -> resources.Resource:
    found = reg.catalog.find(group, "v1", plural)
    assert found is not None
    return found


def test_a_list_of_encoded_events_is_spliced_from_their_encodings() -> None:
    async def main() -> None:
        async with events_registry(["a", "b"]) as reg:
            listed = await reg.list(resource(reg, "events"), "ns", queryoptions.ListOptions())
            assert listed.decoded is None  # nothing decoded to answer it
            body = json.loads(listed.body())
            assert [e["message"] for e in body["items"]] == ["started a", "started b"]
            assert listed.obj["items"] == body["items"]  # decoded when asked for
            newer = resource(reg, "events", "events.k8s.io")
            converted = json.loads((await reg.list(newer, "ns", queryoptions.ListOptions())).body())
            assert [e["note"] for e in converted["items"]] == ["started a", "started b"]
            assert {e["apiVersion"] for e in converted["items"]} == {"events.k8s.io/v1"}

    asyncio.run(main(), debug=True)


def test_a_list_body_sent_in_chunks_is_the_list_it_splices() -> None:
    items = [json.dumps({"n": n, "pad": "x" * (n * 7 % 50)}).encode() for n in range(40)]
    for parts in ([], items[:1], items):
        body = results.ListBody(b'{"kind":"EventList","items":[', parts)
        chunks = list(body.chunks(size=100))
        assert b"".join(chunks) == bytes(body)
        assert json.loads(bytes(body))["items"] == [json.loads(p) for p in parts]
        assert all(len(c) < 100 + max((len(p) for p in parts), default=0) + 2 for c in chunks)
    assert len(list(results.ListBody(b"{", items).chunks(size=100))) > 5


def test_a_deletecollection_answers_with_the_encodings_the_store_held() -> None:
    """The answer is the objects as listed before, spliced from the store's encodings, which
    the event log keeps for watches anyway: no second encoding of each object is made."""

    async def main() -> None:
        async with events_registry(["a", "b", "c"]) as reg:
            since = reg.store.resource_version
            result = await reg.delete_collection(
                resource(reg, "events"), "ns", queryoptions.ListOptions(), {}, OPTS
            )
            assert isinstance(result.raw, results.ListBody)
            logged = [e.prev.raw for e in reg.store.events_since(since) if e.prev is not None]
            assert len(logged) == 3
            assert all(part is raw for part, raw in zip(result.raw.items, logged, strict=True))
            body = json.loads(result.body())
            assert [e["message"] for e in body["items"]] == ["started a", "started b", "started c"]
            listed = [int(e["metadata"]["resourceVersion"]) for e in body["items"]]
            assert max(listed) <= since  # as listed, not as deleted
            assert reg.store.list("events", "ns") == []

    asyncio.run(main(), debug=True)
