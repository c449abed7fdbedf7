"""A list of objects the store keeps encoded (Events) is answered from their encodings: the
items are not decoded unless the caller reads the result (a Table does), and a version served
in another shape (events.k8s.io) is still converted."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kubetrain.local.apiserver import registry, resources, store, watch


def event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns"},
        "reason": "Started",
        "message": f"started {name}",
        "type": "Normal",
    }


def test_a_list_of_encoded_events_is_spliced_from_their_encodings() -> None:
    async def main() -> None:
        async with store.opened(None, encoded=["events"]) as db:
            catalog = resources.Catalog()
            reg = registry.Registry(db, catalog, watch.Hub(db))
            namespaces = catalog.find("", "v1", "namespaces")
            core = catalog.find("", "v1", "events")
            assert namespaces is not None
            assert core is not None
            await reg.create(namespaces, None, {"metadata": {"name": "ns"}}, registry.Options())
            for name in ("a", "b"):
                await reg.create(core, "ns", event(name), registry.Options())
            listed = await reg.list(core, "ns", registry.ListOptions())
            assert listed.decoded is None  # nothing decoded to answer it
            body = json.loads(listed.body())
            assert [e["message"] for e in body["items"]] == ["started a", "started b"]
            assert listed.obj["items"] == body["items"]  # decoded when asked for
            newer = catalog.find("events.k8s.io", "v1", "events")
            assert newer is not None
            converted = json.loads((await reg.list(newer, "ns", registry.ListOptions())).body())
            assert [e["note"] for e in converted["items"]] == ["started a", "started b"]
            assert {e["apiVersion"] for e in converted["items"]} == {"events.k8s.io/v1"}

    asyncio.run(main(), debug=True)
