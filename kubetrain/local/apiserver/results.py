"""What the registry answers: a :class:`Result` (an object, its stored encoding, or both) and
a list's :class:`ListBody`, spliced from the encodings the store already holds.

What it must not do: decide the answer (the registry does) or write HTTP (the server does).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetrain.local.apiserver import store

LIST_CHUNK = 64 * 1024  # bytes of a list's items sent at a time


@dataclass(frozen=True, slots=True)
class ListBody:
    """A list's JSON kept as the parts it is spliced from: the head's encoding, up to the
    items' opening bracket, and each item's encoding (the store's own bytes, where the
    served version is the stored one).

    A long list is sent part by part (:meth:`chunks`), not copied into one body first:
    deleting a namespace whose jobs left 9,000 Events answered about 9 MB, copied whole
    twice over before a byte went out and again into the connection's buffer, and the
    heap those copies grew held on to the freed room (docs/reliability.md)."""

    head: bytes
    items: Sequence[bytes]

    def __bytes__(self) -> bytes:
        return self.head + b",".join(self.items) + b"]}"

    def chunks(self, size: int = LIST_CHUNK) -> Iterator[bytes]:
        batch = [self.head]
        length = len(self.head)
        for number, item in enumerate(self.items):
            if number:
                batch.append(b",")
            batch.append(item)
            length += len(item) + 1
            if length >= size:
                yield b"".join(batch)
                batch, length = [], 0
        batch.append(b"]}")
        yield b"".join(batch)


@dataclass
class Result:
    """A response object: ``decoded``, ``raw`` (exactly the stored encoding, or a list's
    :class:`ListBody` spliced from the items' encodings), or both (a deletecollection's
    head alone is ``decoded``).

    ``obj`` decodes ``raw`` when only that is given, on first use: a list of objects the
    store keeps encoded (Events) is answered from their encodings without decoding them all,
    unless the caller reads it (a Table)."""

    code: int
    decoded: dict[str, Any] | None = None
    raw: bytes | ListBody | None = None

    @property
    def obj(self) -> dict[str, Any]:
        if self.decoded is None:
            if self.raw is None:
                raise ValueError("a result holds an object or its encoding")
            self.decoded = json.loads(self.body())
        return self.decoded

    def body(self) -> bytes:
        if self.raw is None:
            return store.encode(self.obj)
        return bytes(self.raw)


def list_body(head: Mapping[str, Any], items: Sequence[bytes]) -> ListBody:
    """A list's JSON from its head and its items' encodings, spliced rather than re-encoded:
    the items' bytes are what the store already holds."""
    return ListBody(store.encode(head)[:-1] + b',"items":[', items)


def success(code: int) -> Result:
    """A bare Success Status (a subresource that creates nothing to show, e.g. a binding)."""
    return Result(
        code,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": code,
        },
    )
