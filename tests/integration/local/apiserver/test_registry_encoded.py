"""A list of Events the store keeps encoded, served over HTTP on a loopback port: a long list
goes out in chunks as the connection takes them and arrives whole, and only a Table decodes
the items. The store's side is tested in tests/unit/local/apiserver/test_registry_encoded.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import test_utils

from kubetrain.local.apiserver import (
    registry,
    results,
    server,
)
from tests.unit.local.apiserver.test_registry_encoded import events_registry

TOKEN = "test-token"


EVENTS = "/api/v1/namespaces/ns/events"


HEADERS = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}


@contextlib.asynccontextmanager
async def served(reg: registry.Registry) -> AsyncIterator[test_utils.TestClient[Any, Any]]:
    api = server.ApiServer(reg, token=TOKEN)
    async with test_utils.TestClient(test_utils.TestServer(api.app())) as client:
        yield client


def test_a_long_list_is_sent_in_chunks_and_arrives_whole() -> None:
    names = [f"e{n:04d}" for n in range(600)]

    async def main() -> None:
        async with events_registry(names, "x" * 200) as reg, served(reg) as client:
            response = await client.get(EVENTS, headers=HEADERS)  # about 200 KB
            assert response.status == 200
            assert response.headers.get("Transfer-Encoding") == "chunked"
            body = json.loads(await response.read())
            assert [e["metadata"]["name"] for e in body["items"]] == names
            response = await client.delete(EVENTS, headers=HEADERS)
            assert response.status == 200
            deleted = json.loads(await response.read())
            assert [e["metadata"]["name"] for e in deleted["items"]] == names
            assert reg.store.list("events", "ns") == []

    asyncio.run(main())


def test_only_a_table_decodes_a_list_kept_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[int] = []
    original = results.Result.obj.fget
    assert original is not None

    def counting(result: results.Result) -> dict[str, Any]:
        if result.decoded is None:
            decoded.append(1)
        return original(result)

    monkeypatch.setattr(results.Result, "obj", property(counting))

    async def main() -> None:
        async with events_registry(["a", "b", "c"]) as reg, served(reg) as client:
            response = await client.get(EVENTS, headers=HEADERS)
            assert len(json.loads(await response.read())["items"]) == 3
            assert decoded == []
            table = {**HEADERS, "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
            response = await client.get(EVENTS, headers=table)
            assert len(json.loads(await response.read())["rows"]) == 3
            assert decoded == [1]

    asyncio.run(main())
