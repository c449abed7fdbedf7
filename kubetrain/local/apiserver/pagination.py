"""Pages of a list: ``limit`` and the ``continue`` token that resumes after the last item.

A token says, as kube's does (``meta.k8s.io/v1`` JSON in URL-safe base64), at which
resourceVersion the list was taken and after which key it resumes, so every page of one list
is read from the same snapshot of the store. A token the store can no longer serve is a 410
Gone (the registry says so when it reads the snapshot).

What it must not do: read the store or decide which items match (the registry passes the
items it read and a predicate).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import json
from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.local.apiserver import errors, store

_VERSION = "meta.k8s.io/v1"


def encode(rv: int, start: tuple[str, str]) -> str:
    """The token of a page that ends at key ``start`` (namespace, name) of a list at ``rv``."""
    payload = {"v": _VERSION, "rv": rv, "start": f"{start[0]}/{start[1]}\u0000"}
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def decode(token: str) -> tuple[int, tuple[str, str]]:
    """The list's resourceVersion and the key the next page starts after; a 400 for a token
    this server did not write."""
    try:
        padded = token + "=" * (-len(token) % 4)
        payload = json.loads(base64.urlsafe_b64decode(padded.encode()))
        rv = int(payload["rv"])
        start = str(payload["start"]).rstrip("\u0000")
        namespace, _, name = start.partition("/")
        if payload.get("v") != _VERSION or rv < 0:
            raise ValueError(token)
        return rv, (namespace, name)
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise errors.bad_request(
            "continue key is not valid: continue key must be a valid base64 encoded JSON"
        ) from exc


def page(
    items: list[store.Item],
    list_rv: int,
    *,
    start_after: tuple[str, str] | None,
    predicate: Callable[[Mapping[str, Any]], bool] | None,
    limit: int,
) -> tuple[list[store.Item], dict[str, Any]]:
    """One page of ``items`` (in key order) and the list's metadata: its resourceVersion and,
    when more follow, the ``continue`` token and (unfiltered lists only, as kube) how many."""
    if start_after is not None:  # items are in key order: the page starts after it
        items = items[bisect.bisect_right(items, start_after, key=_namespace_name) :]
    if predicate is not None:
        matching = (i for i in items if predicate(i.obj))
        # one more than the page tells if there is more
        items = list(itertools.islice(matching, limit + 1) if limit > 0 else matching)
    meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if limit > 0 and len(items) > limit:
        rest = len(items) - limit
        items = items[:limit]
        last = items[-1].key
        meta["continue"] = encode(list_rv, (last.namespace, last.name))
        if predicate is None:
            meta["remainingItemCount"] = rest
    return items, meta


def _namespace_name(item: store.Item) -> tuple[str, str]:
    return (item.key.namespace, item.key.name)
