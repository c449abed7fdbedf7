"""Paths a pod needs that this host lacks (mount points, a working directory) exist in the
container's mount namespace only: the container and an ``exec`` into it see them, the host
keeps no trace of them; without a namespace nothing is made on the host and the container is
refused, saying why."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from pathlib import Path

import pytest

from kubetrain.local.node import podspec
from kubetrain.local.node import runtime as rt
from tests.integration.node.runtimes import PY, log_text, needs_namespace, run


def pod(*volumes: rt.Volume) -> rt.Sandbox:
    return rt.Sandbox(
        uid="pod-1", namespace="ns", name="p", hostname="p", hosts="", volumes=volumes
    )


def absent_paths(*paths: str) -> list[str]:
    """Those of ``paths`` and their ancestors that do not exist on the host now."""
    found = set()
    for path in paths:
        while path != "/":
            if not os.path.lexists(path):
                found.add(path)
            path = os.path.dirname(path)
    return sorted(found)


@needs_namespace
def test_missing_mount_points_and_working_dir_are_seen_inside_and_not_on_the_host(
    tmp_path: Path,
) -> None:
    """A root-level path (the namespace gets a root of its own), one under /etc, the
    ServiceAccount directory (under /var/run, a link to /run on Debian) and a working
    directory: the container and an exec see them and what is mounted there; the host does
    not, and its /etc lists the same entries after as before."""
    node = rt.Runtime(rt.Settings(root=str(tmp_path / "node"), node_gpus=()))
    token = secrets.token_hex(4)
    data = f"/kt-view-{token}/data"
    config = f"/etc/kt-view-{token}/config"
    work = f"/kt-view-{token}-work/run"
    credentials = podspec.API_ACCESS_PATH
    missing = absent_paths(data, config, work, credentials)
    etc_before = sorted(os.listdir("/etc"))
    hostname = socket.gethostname()
    volumes = (
        rt.Volume("scratch", "empty"),
        rt.Volume("cfg", "files", files=(rt.File("a.txt", b"config"),)),
        rt.Volume("sa", "files", files=(rt.File("namespace", b"ns"),)),
    )
    mounts = (
        rt.Mount("scratch", data),
        rt.Mount("cfg", config),
        rt.Mount("sa", credentials),
    )
    code = f"""
import os, time
print(os.getcwd(), open({config!r} + '/a.txt').read(), open({credentials!r} + '/namespace').read())
open({data!r} + '/out.txt', 'w').write('kept in the volume')
open('here.txt', 'w').write('kept in the working directory')
print('ready', flush=True)
time.sleep(60)
"""
    look = (
        "import os; print(os.getcwd(), sorted(os.listdir('.')), "
        f"open({credentials!r} + '/namespace').read(), sorted(os.listdir('/etc')) == "
        f"sorted({etc_before!r} + ['kt-view-{token}']))"
    )

    async def scenario() -> tuple[str, str]:
        sandbox = pod(*volumes)
        await node.prepare(sandbox)
        spec = rt.ContainerSpec(
            name="c", argv=(PY, "-c", code), env=(), working_dir=work, mounts=mounts
        )
        started = await node.start(sandbox, spec, 0)
        deadline = asyncio.get_running_loop().time() + 10
        while "ready" not in log_text(node, started.id):
            state = node.state(started.id)
            assert state is not None
            assert state.running, log_text(node, started.id)
            assert asyncio.get_running_loop().time() < deadline, "the container never got ready"
            await asyncio.sleep(0.02)
        proc = await node.exec("pod-1", "c", [PY, "-c", look], stdin=False, tty=False)
        seen, _ = await proc.communicate()
        await node.stop(started.id, grace=1)
        return log_text(node, started.id), seen.decode()

    inside, from_exec = run(scenario())
    assert inside.splitlines()[0] == f"{work} config ns"
    assert from_exec.strip() == f"{work} ['here.txt'] ns True"
    scratch = Path(node.settings.root) / "pods" / "pod-1" / "volumes" / "scratch" / "out.txt"
    assert scratch.read_text() == "kept in the volume"
    assert absent_paths(data, config, work, credentials) == missing
    assert sorted(os.listdir("/etc")) == etc_before
    assert socket.gethostname() == hostname


@needs_namespace
def test_a_mount_point_inside_a_volume_is_made_in_the_volume(tmp_path: Path) -> None:
    """As kubelet does: the nested mount's point is a directory of the outer volume."""
    node = rt.Runtime(rt.Settings(root=str(tmp_path / "node"), node_gpus=()))
    outer = tmp_path / "outer"
    volumes = (rt.Volume("outer", "empty"), rt.Volume("inner", "empty"))
    mounts = (rt.Mount("inner", str(outer / "in" / "side")), rt.Mount("outer", str(outer)))

    async def scenario() -> rt.ContainerState:
        sandbox = pod(*volumes)
        await node.prepare(sandbox)
        code = f"open({str(outer / 'in' / 'side' / 'f')!r}, 'w').write('inner')"
        started = await node.start(
            sandbox, rt.ContainerSpec("c", (PY, "-c", code), (), mounts=mounts), 0
        )
        return await node.wait(started.id)

    state = run(scenario())
    assert state.exit_code == 0, log_text(node, state.id)
    volumes_dir = Path(node.settings.root) / "pods" / "pod-1" / "volumes"
    assert (volumes_dir / "outer" / "in" / "side").is_dir()
    assert (volumes_dir / "inner" / "f").read_text() == "inner"
    assert not outer.exists()


def test_without_a_namespace_a_missing_working_dir_is_refused_not_made(tmp_path: Path) -> None:
    node = rt.Runtime(rt.Settings(root=str(tmp_path / "node"), isolation="none", node_gpus=()))
    work = tmp_path / "not" / "here"

    async def scenario() -> tuple[rt.StartError, rt.ContainerState]:
        spec = rt.ContainerSpec("c", (PY, "-c", "pass"), (), working_dir=str(work))
        with pytest.raises(rt.StartError) as refused:
            await node.start(pod(), spec, 0)
        default = await node.start(pod(), rt.ContainerSpec("d", (PY, "-c", "pass"), ()), 0)
        return refused.value, await node.wait(default.id)

    refused, default = run(scenario())
    assert refused.reason == rt.CONTAINER_CANNOT_RUN
    assert refused.message == (
        f"the working directory {work} does not exist on this node, and without a private "
        "mount namespace it could only be made on the host"
    )
    assert not (tmp_path / "not").exists()
    assert default.reason == "Completed"  # the node's own directory for it is made
