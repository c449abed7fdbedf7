"""The watch's watchdog on the timeline of a real kube-apiserver, on a virtual clock: a watch
that sees no change gets nothing at all, not even a bookmark, until the server ends it at the
``timeoutSeconds`` it was asked for. That is normal and must not be logged as a problem; only
a connection the server fails to end (half-dead: the peer gone without a word) is abandoned,
once ``grace`` seconds past that end, and the watch goes on from where it was."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from kubetrain import _aio, kube
from kubetrain.kube import watch
from tests.unit.kube import virtualtime

CONFIGMAPS = kube.Resource("", "v1", "configmaps", kind="ConfigMap")
SETTINGS = watch.Settings(timeout_seconds=300, grace=30.0, jitter=0.0)  # the defaults, unjittered

Connection = Callable[[int], AsyncIterator[bytes]]  # timeoutSeconds -> the body's lines


async def quiet(seconds: int) -> AsyncIterator[bytes]:
    """What kube-apiserver sends on a watch that sees no change: nothing, then the end."""
    await asyncio.sleep(seconds)
    return
    yield b""  # an async generator that yields nothing


async def stalled(seconds: int) -> AsyncIterator[bytes]:
    """A half-dead connection: the server is gone without a word; nothing comes, ever."""
    await asyncio.Event().wait()
    yield b""


def added(name: str, rv: int) -> Connection:
    async def connection(seconds: int) -> AsyncIterator[bytes]:
        obj = {"kind": "ConfigMap", "metadata": {"name": name, "resourceVersion": str(rv)}}
        yield json.dumps({"type": "ADDED", "object": obj}).encode()
        await stalled(seconds).__anext__()

    return connection


@dataclass
class Server:
    """The two calls a Watch makes, answered in memory: a list at resourceVersion 10, and
    watch connections that follow ``connections`` in turn (the last one repeats)."""

    connections: list[Connection]
    opened: list[tuple[float, str]] = field(default_factory=list)  # (when, resourceVersion)

    async def list_all(self, resource: kube.Resource, **options: Any) -> dict[str, Any]:
        return {"kind": "ConfigMapList", "metadata": {"resourceVersion": "10"}, "items": []}

    @contextlib.asynccontextmanager
    async def stream(self, path: str, *, query: Mapping[str, Any]) -> AsyncIterator[Any]:
        self.opened.append((asyncio.get_running_loop().time(), str(query["resourceVersion"])))
        behave = self.connections.pop(0) if len(self.connections) > 1 else self.connections[0]
        lines = behave(int(query["timeoutSeconds"]))
        try:
            yield lines
        finally:
            await lines.aclose()


async def take(w: watch.Watch, count: int) -> list[watch.Event]:
    """The first ``count`` events, within a virtual hour."""
    got: list[watch.Event] = []
    async with _aio.timeout(3600), contextlib.aclosing(aiter(w)) as events:
        async for event in events:
            got.append(event)
            if len(got) == count:
                break
    return got


def watching(server: Server, settings: watch.Settings = SETTINGS) -> watch.Watch:
    return watch.Watch(cast(kube.Client, server), CONFIGMAPS, namespace="ns", settings=settings)


def from_watch(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == watch.__name__]


def test_a_quiet_watch_is_reconnected_when_the_server_ends_it_and_logs_no_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server([quiet, quiet, quiet, added("a", 11)])
    w = watching(server)
    caplog.set_level(logging.DEBUG)

    events = virtualtime.run(take(w, 2))

    assert [e.type for e in events] == ["SYNC", "ADDED"]
    # Silent for 300 s at a time, and re-opened exactly when the server ended each
    # connection: the watchdog never cut one short.
    assert server.opened == [(0.0, "10"), (300.0, "10"), (600.0, "10"), (900.0, "10")]
    assert (w.restarts, w.relists) == (3, 0)
    assert [r.getMessage() for r in from_watch(caplog) if r.levelno >= logging.INFO] == []
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_stalled_connection_is_abandoned_past_the_servers_end_and_resumed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server([added("a", 11), added("b", 12)])
    w = watching(server)
    caplog.set_level(logging.DEBUG)

    # The first connection delivers "a", then stalls: the server should end it at 300 s and
    # does not; the watchdog gives it up 30 s later and the watch resumes from "a"'s version.
    events = virtualtime.run(take(w, 3))

    assert [(e.type, e.object["metadata"]["name"]) for e in events[1:]] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]
    assert server.opened == [(0.0, "10"), (330.0, "11")]
    said = [(r.levelno, r.getMessage()) for r in from_watch(caplog) if r.levelno >= logging.INFO]
    assert said == [
        (
            logging.INFO,
            "watch configmaps in ns: the server did not end the connection 30s after the 300s "
            "asked for; taking it for dead and reconnecting from 11",
        )
    ]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_an_inactivity_bound_reconnects_a_silent_watch_early_and_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server([stalled, added("a", 11)])
    settings = watch.Settings(timeout_seconds=300, inactivity=60.0, jitter=0.0)
    caplog.set_level(logging.DEBUG)

    events = virtualtime.run(take(watching(server, settings), 2))

    assert [e.type for e in events] == ["SYNC", "ADDED"]
    assert server.opened == [(0.0, "10"), (60.0, "10")]
    said = [(r.levelno, r.getMessage()) for r in from_watch(caplog) if "nothing" in r.getMessage()]
    assert said == [(logging.DEBUG, "watch configmaps in ns: nothing received for 60s; "
                     "reconnecting from 10")]  # fmt: skip
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
