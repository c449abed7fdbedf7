"""A list in pages (``limit`` and ``continue``): every object once, in key order, each page
continued where the one before ended and showing the list as it was at the first page, also
when objects are written between pages; with a selector, each page holds ``limit`` objects
that match."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kubetrain.local.apiserver import queryoptions, registry, resources, store, watch

T = TypeVar("T")
OPTS = queryoptions.Options()
NAMES = [f"c-{i:03d}" for i in range(30)]


def configmap(name: str, value: str = "1") -> dict[str, Any]:
    even = "yes" if int(name[-3:]) % 2 == 0 else "no"
    return {"metadata": {"name": name, "labels": {"even": even}}, "data": {"v": value}}


def run(body: Callable[[registry.Registry], Awaitable[T]]) -> T:
    """``body`` on a registry over an in-memory store holding ConfigMaps ``NAMES`` in
    namespaces ``a`` and ``b``."""

    async def main() -> T:
        async with store.opened(None) as db:
            reg = registry.Registry(db, resources.Catalog(), watch.Hub(db))
            for ns in ("b", "a"):  # created out of order: the order of a list is the keys'
                await reg.create(find(reg, "namespaces"), None, {"metadata": {"name": ns}}, OPTS)
                for name in reversed(NAMES):
                    await reg.create(find(reg, "configmaps"), ns, configmap(name), OPTS)
            return await body(reg)

    return asyncio.run(main(), debug=True)


def find(reg: registry.Registry, plural: str) -> resources.Resource:
    found = reg.catalog.find("", "v1", plural)
    assert found is not None
    return found


async def page(
    reg: registry.Registry, namespace: str | None, limit: int, token: str = "", selector: str = ""
) -> dict[str, Any]:
    opts = queryoptions.ListOptions(label_selector=selector, limit=limit, continue_token=token)
    result = await reg.list(find(reg, "configmaps"), namespace, opts)
    assert result.raw is not None
    listed: dict[str, Any] = json.loads(bytes(result.raw))
    return listed


async def pages(
    reg: registry.Registry,
    namespace: str | None,
    limit: int,
    selector: str = "",
    between: Callable[[], Awaitable[None]] | None = None,
) -> list[dict[str, Any]]:
    """Every page of a list; ``between`` runs after the first page."""
    got = [await page(reg, namespace, limit, selector=selector)]
    if between is not None:
        await between()
    while token := got[-1]["metadata"].get("continue"):
        got.append(await page(reg, namespace, limit, token, selector))
    return got


def keys(listed: dict[str, Any]) -> list[str]:
    return [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in listed["items"]]


def test_a_namespaces_pages_hold_every_object_once_in_name_order() -> None:
    got = run(lambda reg: pages(reg, "a", 7))

    assert [len(p["items"]) for p in got] == [7, 7, 7, 7, 2]
    assert [k for p in got for k in keys(p)] == [f"a/{n}" for n in NAMES]
    assert [p["metadata"].get("remainingItemCount") for p in got] == [23, 16, 9, 2, None]
    assert len({p["metadata"]["resourceVersion"] for p in got}) == 1


def test_a_list_of_every_namespace_pages_across_them_in_namespace_then_name_order() -> None:
    got = run(lambda reg: pages(reg, None, 25))

    assert [len(p["items"]) for p in got] == [25, 25, 10]
    assert keys(got[1])[4:6] == ["a/c-029", "b/c-000"]  # the page goes on into namespace b
    assert [k for p in got for k in keys(p)] == [f"{ns}/{n}" for ns in "ab" for n in NAMES]


def test_with_a_selector_each_page_holds_limit_matching_objects() -> None:
    got = run(lambda reg: pages(reg, "a", 4, selector="even=yes"))

    assert [len(p["items"]) for p in got] == [4, 4, 4, 3]
    assert [k for p in got for k in keys(p)] == [f"a/{n}" for n in NAMES[::2]]
    assert all("remainingItemCount" not in p["metadata"] for p in got)  # kube counts none


def test_pages_after_the_first_show_the_list_as_it_was_despite_writes_between() -> None:
    async def body(reg: registry.Registry) -> tuple[list[dict[str, Any]], list[str]]:
        configmaps = find(reg, "configmaps")

        async def writes() -> None:
            await reg.create(configmaps, "a", configmap("c-100"), OPTS)
            await reg.delete(configmaps, "a", "c-020", {}, OPTS)
            await reg.update(configmaps, "a", "c-025", configmap("c-025", "2"), OPTS)
            await reg.create(configmaps, "b", configmap("c-101"), OPTS)  # another namespace

        got = await pages(reg, "a", 10, between=writes)
        now = await page(reg, "a", 100)
        return got, keys(now)

    got, now = run(body)

    assert [k for p in got for k in keys(p)] == [f"a/{n}" for n in NAMES]
    assert got[2]["items"][5]["data"] == {"v": "1"}  # c-025 as it was
    assert "a/c-100" in now
    assert "a/c-020" not in now
