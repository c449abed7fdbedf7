"""What the node runtime's integration tests share: whether this host lets the node make a
private mount namespace (probed once), the mark that skips a test needing one, a runner for a
test's coroutine, and a container's log without the CRI prefixes."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest

from kubetrain.local.node import runtime as rt

T = TypeVar("T")
PY = "python"  # resolves on the runtime's PATH prefix: the Python running the tests

with tempfile.TemporaryDirectory() as _probe_root:
    ISOLATION = rt.Runtime(rt.Settings(root=_probe_root)).isolation
needs_namespace = pytest.mark.skipif(
    ISOLATION != "namespace",
    reason="this host does not let the node make a private mount namespace (unshare refused)",
)


def run(coro: Awaitable[T]) -> T:
    """``coro`` to its end on a new loop in debug mode, so that a callback that blocks the loop
    or a task never awaited is reported."""

    async def main() -> T:
        return await coro

    return asyncio.run(main(), debug=True)


def log_text(node: rt.Runtime, id: rt.ContainerId) -> str:
    """The log's content without the CRI prefixes (time, stream, tag)."""
    lines = Path(node.log_path(id)).read_text().splitlines()
    return "".join(line.split(" ", 3)[3] + "\n" for line in lines)
