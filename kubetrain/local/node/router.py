"""The node's choice of runtime per container: the host image runs as host processes
(:mod:`~kubetrain.local.node.runtime`), every other image in a container engine
(:mod:`~kubetrain.local.node.engine`), when the node was given one.

:class:`Router` has the process runtime's interface, so the agent, its workers, the node's
server and statistics use it unchanged. A container is the engine's when the engine keeps an
attempt directory for it (``<pod dir>/engine/...``), which is what decides after a restart too;
a new attempt goes where its spec's image says.

Must not: run or inspect containers itself, or keep in memory which runtime has what.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kubetrain.local.node import engine as engine_
from kubetrain.local.node import runtime


class Router:
    """The process runtime (``host``) and a container engine behind one interface."""

    def __init__(self, host: runtime.Runtime, engine: engine_.Engine) -> None:
        self.host = host
        self.engine = engine

    def __getattr__(self, name: str) -> Any:
        # What only the process runtime has (isolation, cgroup, settings, node_gpus...).
        return getattr(self.host, name)

    def _for(self, id: runtime.ContainerId) -> runtime.Runtime | engine_.Engine:
        return self.engine if self.engine.owns(id) else self.host

    # -- pods --------------------------------------------------------------------------

    async def prepare(self, sb: runtime.Sandbox) -> None:
        await (self.engine if sb.engine else self.host).prepare(sb)

    async def remove(self, uid: str, grace: float) -> None:
        await self.engine.remove(uid, grace)
        await self.host.remove(uid, grace)  # and the pod's directory

    # -- containers --------------------------------------------------------------------

    async def start(
        self, sb: runtime.Sandbox, spec: runtime.ContainerSpec, attempt: int
    ) -> runtime.ContainerState:
        if spec.image:
            return await self.engine.start(sb, spec, attempt)
        return await self.host.start(sb, spec, attempt)

    def containers(self, uid: str | None = None) -> list[runtime.ContainerState]:
        return [*self.host.containers(uid), *self.engine.containers(uid)]

    def state(self, id: runtime.ContainerId) -> runtime.ContainerState | None:
        return self._for(id).state(id)

    def log_path(self, id: runtime.ContainerId) -> str:
        return self._for(id).log_path(id)

    def attempt_dir(self, id: runtime.ContainerId) -> str:
        return self._for(id).attempt_dir(id)

    def gpus(self, id: runtime.ContainerId) -> tuple[str, ...]:
        return self._for(id).gpus(id)

    def processes(self, id: runtime.ContainerId) -> runtime.Processes | None:
        return self._for(id).processes(id)

    async def wait(self, id: runtime.ContainerId) -> runtime.ContainerState:
        return await self._for(id).wait(id)

    async def stop(self, id: runtime.ContainerId, grace: float) -> runtime.ContainerState:
        return await self._for(id).stop(id, grace)

    async def exec(
        self, uid: str, container: str, argv: Sequence[str], *, stdin: bool, tty: bool
    ) -> Any:
        mine = await asyncio.to_thread(self.engine.containers, uid)
        if any(s.id.name == container and s.running for s in mine):
            return await self.engine.exec(uid, container, argv, stdin=stdin, tty=tty)
        return await self.host.exec(uid, container, argv, stdin=stdin, tty=tty)

    async def release(self, grace: float) -> None:
        """Leave nothing in the engine: the control plane goes down."""
        await self.engine.release(grace)

    async def close(self) -> None:
        await self.engine.close()
