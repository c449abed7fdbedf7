"""A store that cannot write (disk full, I/O error) is a 503 Status for every write that
reaches it, create, update, patch and both kinds of delete alike, since they share one write
path; the object stays as it was, and writes go through again once the store can write."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest

from kubetrain.local.apiserver import (
    bodies,
    errors,
    queryoptions,
    registry,
    resources,
    store,
    watch,
)

OPTS = queryoptions.Options()


def test_every_write_the_store_refuses_is_a_503_and_changes_nothing() -> None:
    async def main() -> None:
        async with store.opened(None) as db:
            reg = registry.Registry(db, resources.Catalog(), watch.Hub(db))
            namespaces = reg.catalog.find("", "v1", "namespaces")
            configmaps = reg.catalog.find("", "v1", "configmaps")
            assert namespaces is not None
            assert configmaps is not None
            await reg.create(namespaces, None, {"metadata": {"name": "ns"}}, OPTS)
            plain = {"metadata": {"name": "plain"}, "data": {"v": "1"}}
            await reg.create(configmaps, "ns", plain, OPTS)
            held = {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
            await reg.create(configmaps, "ns", held, OPTS)
            before = {item.key: item.raw for item in db.list("configmaps", "ns")}

            persist = db._persist

            def disk_full(*args: Any) -> None:
                raise sqlite3.OperationalError("database or disk is full")

            db._persist = disk_full  # type: ignore[method-assign]
            writes = {
                "create": lambda: reg.create(configmaps, "ns", {"metadata": {"name": "new"}}, OPTS),
                "update": lambda: reg.update(
                    configmaps, "ns", "plain", {**plain, "data": {"v": "2"}}, OPTS
                ),
                "patch": lambda: reg.patch(
                    configmaps,
                    "ns",
                    "plain",
                    bodies.MERGE_PATCH,
                    b'{"data": {"v": "3"}}',
                    OPTS,
                ),
                "delete": lambda: reg.delete(configmaps, "ns", "plain", {}, OPTS),
                "delete that marks": lambda: reg.delete(configmaps, "ns", "held", {}, OPTS),
            }
            for verb, write in writes.items():
                with pytest.raises(errors.ApiError) as refused:
                    await write()
                status = refused.value.status
                assert (status["code"], status["reason"]) == (503, "ServiceUnavailable"), verb
                assert "database or disk is full" in status["message"], verb
            assert {item.key: item.raw for item in db.list("configmaps", "ns")} == before

            db._persist = persist  # type: ignore[method-assign]
            await reg.delete(configmaps, "ns", "plain", {}, OPTS)
            assert db.get(store.Key("configmaps", "ns", "plain")) is None

    asyncio.run(main(), debug=True)
