"""This machine as the node offers it: its CPUs, memory, storage and GPUs, looked up once at
start (:class:`Machine`), and which GPU indices each pod's containers hold (:class:`Devices`),
as the kubelet's device manager assigns them.

Owns: the capacity the Node reports and the GPU assignments. Must not: write anything to the
API server, or keep assignments anywhere but in memory (a restarted agent reads them back
from the containers still running).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Mapping
from typing import Any

from kubetrain import _aio
from kubetrain.local.node import podspec, runtime
from kubetrain.local.node import settings as node_settings

log = logging.getLogger(__name__)


def memory_bytes(meminfo: str = "/proc/meminfo") -> int:
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


async def count_gpus() -> int:
    """GPUs ``nvidia-smi -L`` lists (one ``GPU n: ...`` line each); 0 without the tool."""
    try:
        process = await asyncio.create_subprocess_exec(
            "nvidia-smi",
            "-L",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            stdin=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return 0
    try:
        async with _aio.timeout(10):
            out, _ = await process.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        log.warning("nvidia-smi -L did not answer within 10s; reporting no GPUs")
        return 0
    if process.returncode != 0:
        return 0
    return sum(1 for line in out.decode(errors="replace").splitlines() if line.startswith("GPU "))


class Machine:
    """What this machine offers, looked up once at start."""

    def __init__(self, cpus: int, memory: int, storage: int, gpus: int) -> None:
        self.cpus = cpus
        self.memory = memory
        self.storage = storage
        self.gpus = gpus

    @classmethod
    async def probe(cls, config: node_settings.Settings) -> Machine:
        gpus = config.gpus if config.gpus is not None else await count_gpus()
        os.makedirs(config.root, exist_ok=True)
        storage = (await asyncio.to_thread(shutil.disk_usage, config.root)).total
        memory = await asyncio.to_thread(memory_bytes)
        return cls(os.cpu_count() or 1, memory, storage, gpus)

    def capacity(self, max_pods: int) -> dict[str, str]:
        out = {
            "cpu": str(self.cpus),
            "memory": f"{self.memory // 1024}Ki",
            "ephemeral-storage": f"{self.storage // 1024}Ki",
            "pods": str(max_pods),
        }
        if self.gpus:
            out[podspec.GPU] = str(self.gpus)
        return out


class DeviceShortage(podspec.SpecError):
    """Fewer free GPUs than a container needs (the scheduler should not have bound it here)."""


class Devices:
    """Which GPU indices each pod's containers hold, exclusively.

    A container gets its devices when it first starts and keeps them across restarts while
    its pod is here. Init containers run alone, before the app containers, so they may take
    devices their own pod holds, and app containers those of their pod's init containers. The
    assignment is not written anywhere of ours: a restarted agent reads it back from the specs
    of the containers still running (:meth:`recover`)."""

    def __init__(self, count: int) -> None:
        self.ids = tuple(str(i) for i in range(count))
        self.assigned: dict[str, dict[str, tuple[str, ...]]] = {}

    def recover(self, node_runtime: runtime.Runtime) -> None:
        """Take back what running containers hold (blocking: reads the runtime's disk)."""
        for state in node_runtime.containers():
            if not state.running:
                continue
            gpus = node_runtime.gpus(state.id)
            if gpus:
                held = self.assigned.setdefault(state.id.pod_uid, {})
                held[state.id.name] = tuple(str(g) for g in gpus)

    def assign(self, uid: str, pod: Mapping[str, Any], name: str) -> tuple[str, ...]:
        """The devices of container ``name`` of pod ``uid``; chosen on its first start."""
        wanted = {
            str(c.get("name") or ""): podspec.gpu_limit(c) for c in podspec.all_containers(pod)
        }
        count = wanted.get(name, 0)
        if not count:
            return ()
        held = self.assigned.setdefault(uid, {})
        if len(held.get(name, ())) == count:
            return held[name]
        inits = {str(c.get("name") or "") for c in podspec.init_containers(pod)}
        shareable = set()  # devices of this pod this container may take too
        busy = set()
        for owner, by_name in self.assigned.items():
            for other, ids in by_name.items():
                if owner == uid and (other == name or name in inits or other in inits):
                    shareable.update(ids)
                else:
                    busy.update(ids)
        free = [i for i in self.ids if i not in busy]
        free.sort(key=lambda i: i not in shareable)  # this pod's own first
        if len(free) < count:
            raise DeviceShortage(
                "UnexpectedAdmissionError",
                "Allocate failed due to requested number of devices unavailable for "
                f"{podspec.GPU}. Requested: {count}, Available: {len(free)}, which is unexpected",
            )
        held[name] = tuple(sorted(free[:count], key=int))
        return held[name]

    def release(self, uid: str) -> None:
        self.assigned.pop(uid, None)
