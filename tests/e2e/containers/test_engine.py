"""The container engine runtime on its own, against the session's dockerd, without a control
plane: what a node restart relies on (a new Engine on the same root adopts a running container,
goes on with its log where it ended and starts no second copy of it), what only the engine
can say (OOMKilled), and a chatty container's log copied whole and in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from kubetrain.local import daemon
from kubetrain.local.node import engine as node_engine
from kubetrain.local.node import runtime, sandbox
from tests import engines
from tests.apiserver.cascade import eventually, run
from tests.fixtures import containers

TIMEOUT = 30.0
WAITS = r"""
echo one
while [ ! -f /scratch/go ]; do sleep 0.05; done
echo two >&2
exit 4
"""
GREEDY = "x=$(head -c 300000000 /dev/zero | tr '\\0' a); echo survived"


def test_a_new_engine_on_the_same_root_adopts_a_running_container_and_its_log(
    engine: engines.Engine, image: str, tmp_path: Path
) -> None:
    settings = runtime.Settings(root=str(tmp_path / "node"))
    pod = runtime.Sandbox(
        uid="adopted-uid",
        namespace="ns",
        name="adopted",
        hostname="adopted",
        hosts="127.0.0.1\tlocalhost adopted\n",
        volumes=(runtime.Volume("scratch", "empty"),),
        engine=True,
    )
    spec = runtime.ContainerSpec(
        name="main",
        argv=("sh", "-c", WAITS),
        env=(("GREETING", "hello"),),
        mounts=(runtime.Mount("scratch", "/scratch"),),
        image=image,
    )
    greedy = runtime.ContainerSpec(
        name="greedy", argv=("sh", "-c", GREEDY), env=(), memory_limit=32 * 1024 * 1024, image=image
    )
    cid = runtime.ContainerId(pod.uid, "main", 0)

    async def body() -> None:
        first = node_engine.Engine(settings, "docker", engine.host)
        started = await first.start(pod, spec, 0)
        assert started.running, started
        waiter = asyncio.ensure_future(first.wait(cid))
        modes = {
            "hosts": sandbox.hosts_path(settings.root, pod.uid),
            "emptyDir": sandbox.volume_dir(settings.root, pod.uid, "scratch"),
        }
        found = {k: os.stat(v).st_mode & 0o777 for k, v in modes.items()}
        assert found == {"hosts": 0o644, "emptyDir": 0o777}, found  # for an image's own USER
        log = Path(first.log_path(cid))

        async def logged() -> bool:
            return b" stdout F one\n" in await asyncio.to_thread(_read, log)

        await eventually(logged, "the first line copied into the log", timeout=TIMEOUT)
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
        await first.close()  # the node goes away; its container runs on

        second = node_engine.Engine(settings, "docker", engine.host)
        try:
            [adopted] = second.containers(pod.uid)
            assert adopted.running, adopted
            assert await second.start(pod, spec, 0) == adopted  # no second copy
            gate = Path(sandbox.volume_dir(settings.root, pod.uid, "scratch"), "go")
            await asyncio.to_thread(gate.touch)
            ended = await asyncio.wait_for(second.wait(cid), TIMEOUT)
            assert (ended.exit_code, ended.reason) == (4, runtime.ERROR), ended
            text = await asyncio.to_thread(_read, log)
            records = [line.split(b" ", 3)[1:] for line in text.splitlines()]
            assert records == [[b"stdout", b"F", b"one"], [b"stderr", b"F", b"two"]], records

            oom = runtime.ContainerId(pod.uid, "greedy", 0)
            await second.start(pod, greedy, 0)
            killed = await asyncio.wait_for(second.wait(oom), TIMEOUT)
            # Podman 4.3's Docker API never sets State.OOMKilled: there it reads as an Error
            podman = containers.kind() == "podman"
            reason = runtime.ERROR if podman else runtime.OOM_KILLED
            assert (killed.exit_code, killed.reason) == (137, reason), killed

            if podman:  # its 4.3 follow stream skips stretches of a writer this fast
                await second.remove(pod.uid, 0)
                return
            chatty = runtime.ContainerId(pod.uid, "chatty", 0)
            lines = runtime.ContainerSpec("chatty", ("seq", "1", "20000"), (), image=image)
            await second.start(pod, lines, 0)
            await asyncio.wait_for(second.wait(chatty), TIMEOUT)
            copied = await asyncio.to_thread(_read, Path(second.log_path(chatty)))
            numbers = [int(line.rsplit(b" ", 1)[1]) for line in copied.splitlines()]
            assert numbers == list(range(1, 20001)), "every line once, in order"

            await second.remove(pod.uid, 0)
        finally:
            await second.close()

    with daemon.private_files():  # as the node runs: its own files are private
        run(body())
    mine = f"label={node_engine.LABEL_ROOT}={node_engine.root_label(settings.root)}"
    left = engine.docker("ps", "-a", "-q", "--filter", mine)
    assert left == "", left
    assert os.path.isdir(sandbox.pod_dir(settings.root, pod.uid))  # the caller's to remove


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""
