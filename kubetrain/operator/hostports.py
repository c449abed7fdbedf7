"""The host-port book of the operator process: which ports on the host network are in use.

Pods on the host network listen on the host's own ports, so the operator gives each of them
a port from a range (the v1 controllers one per pod, :mod:`kubetrain.operator.jobs.ports`; the
TrainJob controller one per job, :mod:`kubetrain.operator.trainjob.hostport`) and records it on
a Service under :data:`HOST_PORT_ANNOTATION`. Both controllers draw from the same range on the
same host, so they must see each other's picks: a port handed out by one is in use for the
other as soon as it is handed out, not only once its Service reaches the cache.

:class:`Book` keeps that: the ports the cached Services record (it subscribes to the Services
store) and those just handed out whose Services have not shown yet (held for a while, then
forgotten, in case the Service is never created). :func:`book` gives every controller of one
manager the same book, created on first use, so no wiring can give two controllers two books.

Pure, like the TrainJob builders that read the annotation: no client, no cache module (the
manager and its Services resource come in as arguments).

Must not: pick ports (the controllers do, each with its own seed) or do I/O.
"""

from __future__ import annotations

import time
import weakref
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

HOST_PORT_ANNOTATION: Final = "kubetrain.io/host-port"
DEFAULT_RANGE: Final = (20000, 29999)
HOLD: Final = 60.0  # seconds a handed-out port stays reserved until its Service shows


def valid(value: Any) -> int | None:
    """``value`` as a port number, if it is one."""
    try:
        port = int(str(value))
    except ValueError:
        return None
    return port if 0 < port <= 65535 else None


def recorded(obj: Mapping[str, Any] | None) -> int | None:
    """The host port an object (a Service, a JobSet) records, if it records a valid one."""
    metadata = obj.get("metadata") if obj is not None else None
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return None
    return valid(annotations.get(HOST_PORT_ANNOTATION))


def taken(services: Iterable[Mapping[str, Any]]) -> set[int]:
    """Every port any of ``services`` records."""
    return {port for service in services if (port := recorded(service)) is not None}


def choose(seed: str, used: Iterable[int], low: int, high: int) -> int | None:
    """The first port of ``low..high`` not in ``used``, walking the range from a point fixed by
    ``seed`` (so picks do not depend on the order jobs arrive in); None if all are used."""
    used = set(used)
    size = high - low + 1
    start = zlib.crc32(seed.encode()) % size
    for step in range(size):
        port = low + (start + step) % size
        if port not in used:
            return port
    return None


def check_range(low: int, high: int) -> None:
    """ValueError unless ``low..high`` is a range of ports."""
    if not 0 < low <= high <= 65535:
        raise ValueError(
            f"host_port_range: {low}-{high} is not a port range; accepted: 1 <= low <= high"
            " <= 65535"
        )


class Book:
    """Host ports in use: those the cached Services record, and those just handed out whose
    Services the cache has not shown yet."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, hold: float = HOLD) -> None:
        self._clock = clock
        self._hold = hold
        self._recorded: dict[tuple[str, str], int] = {}
        self._reserved: dict[int, float] = {}

    def on_service(self, type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A Services store subscriber."""
        metadata = obj.get("metadata") or {}
        where = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
        port = None if type == "DELETED" else recorded(obj)
        if port is None:
            self._recorded.pop(where, None)
        else:
            self._recorded[where] = port
            self._reserved.pop(port, None)

    def taken(self) -> frozenset[int]:
        now = self._clock()
        self._reserved = {p: until for p, until in self._reserved.items() if until > now}
        return frozenset(self._recorded.values()) | frozenset(self._reserved)

    def reserve(self, ports: Iterable[int]) -> None:
        """Hold ``ports`` as taken until a Service records them, or for the hold at most.
        Call it with no await between :meth:`taken` and here, so no other pick comes between."""
        until = self._clock() + self._hold
        for port in ports:
            self._reserved[port] = until


Handler = Callable[[str, dict[str, Any], dict[str, Any] | None], None]


class _Store(Protocol):
    def list(self) -> Iterable[dict[str, Any]]: ...

    def subscribe(self, handler: Handler) -> None: ...


class _Manager(Protocol):
    """What :func:`book` needs of an operator manager."""

    def store(self, resource: Any) -> _Store: ...


_BOOKS: weakref.WeakKeyDictionary[Any, Book] = weakref.WeakKeyDictionary()


def book(mgr: _Manager, services: Any) -> Book:
    """The one book of ``mgr``'s controllers, subscribed on first use to the store of
    ``services`` (the Services resource)."""
    found = _BOOKS.get(mgr)
    if found is None:
        found = _BOOKS[mgr] = following(mgr.store(services))
    return found


def following(services: _Store) -> Book:
    """A new book that knows what the Services ``services`` holds records, and follows it."""
    made = Book()
    for service in services.list():
        made.on_service("ADDED", service, None)
    services.subscribe(made.on_service)
    return made
