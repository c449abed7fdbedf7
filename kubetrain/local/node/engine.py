"""The container engine runtime: runs a pod's containers in a Docker Engine API (Docker, or
Podman's compatible service), each in a container of its own image, with the contract of the
process runtime (:mod:`~kubetrain.local.node.runtime`).

The agent resolves a Pod into the same :class:`~kubetrain.local.node.runtime.Sandbox` and
``ContainerSpec`` values for both runtimes; :mod:`~kubetrain.local.node.router` sends a
container here when its image is not the host image. What a container gets:

- **network**: the host's (``NetworkMode: host``), so the per-pod ports and every peer's
  address work as for host processes; the pod's hosts file (made by
  :mod:`~kubetrain.local.node.sandbox`, updated in place) is bind-mounted over /etc/hosts;
- **volumes**: the pod's volume directories (and hostPath, PVC directories) as bind mounts,
  resolved by :func:`~kubetrain.local.node.sandbox.resolve_mounts`;
- **command**: ``command`` as the entrypoint and ``args`` after it; without ``command`` the
  image's entrypoint with ``args`` (or the image's ``CMD``); ``workingDir``, or the image's;
- **limits**: memory as ``Memory``, CPU as ``NanoCpus``, GPUs as ``DeviceRequests`` (the
  engine's NVIDIA runtime shows those devices only);
- **images**: ``imagePullPolicy`` (``Always`` pulls each start, ``IfNotPresent`` when the
  engine lacks the image, ``Never`` never); a failed pull is a :class:`StartError` with reason
  ``ErrImagePull`` and the engine's message, which the worker keeps as a waiting reason.

State lives on disk, as the process runtime's: ``<pod dir>/engine/<name>/<attempt>/`` holds
``record.json`` (the engine's container id, start and end) and ``log``, the container's output
in CRI format (:mod:`~kubetrain.local.node.logs` reads it), copied from the engine's log
stream by :meth:`Engine.wait`. Containers carry labels with the pod uid, container name,
attempt and this node's root, so a new Engine on the same root (after a restart) finds and
adopts them, and :meth:`Engine.remove_all` can leave the engine as it found it.

Must not: talk to the Kubernetes API, know Pod objects, or keep in memory what another Engine
on the same root would need (the only memory is of log copies under way).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import os
import struct
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

import aiodocker
import aiohttp

from kubetrain import _aio
from kubetrain.local.node import runtime, sandbox, shim

log = logging.getLogger(__name__)

ENGINE: Final = "engine"  # <pod dir>/engine/<name>/<attempt>/
RECORD: Final = "record.json"
LABEL: Final = "io.kubetrain"
LABEL_ROOT: Final = f"{LABEL}.node"  # a digest of the node's root: its containers, no other's
LABEL_POD: Final = f"{LABEL}.pod-uid"
LABEL_NAMESPACE: Final = f"{LABEL}.pod-namespace"
LABEL_NAME: Final = f"{LABEL}.pod-name"
LABEL_CONTAINER: Final = f"{LABEL}.container"
LABEL_ATTEMPT: Final = f"{LABEL}.attempt"
REQUEST_TIMEOUT: Final = 60.0  # seconds for one engine call that is not a stream
PULL_TIMEOUT: Final = 600.0
FRAME: Final = struct.Struct(">BxxxI")  # the engine's multiplexed stream: kind, size
STREAMS: Final = {1: "stdout", 2: "stderr"}
# What a call to the engine may raise besides StartError: its answer, or no answer at all.
ERRORS: Final = (aiodocker.DockerError, aiohttp.ClientError)
ENV_NAMES: Final = ("DOCKER_HOST", "CONTAINER_HOST")  # where docker's, podman's clients look first
DOCKER_SOCKETS: Final = ("/run/docker.sock", "/var/run/docker.sock")


class EngineNotFound(runtime.StartError):
    """No engine answers where its clients would look."""

    def __init__(self, message: str) -> None:
        super().__init__(runtime.CREATE_CONTAINER_ERROR, message)


def find(kind: str, environ: Mapping[str, str] | None = None) -> str:
    """The engine's address as its own clients find it: ``DOCKER_HOST`` (docker) or
    ``CONTAINER_HOST`` (podman), either as a fallback for the other, then the default sockets
    (rootful, then the user's). "" when none is there."""
    env = os.environ if environ is None else environ
    names = ENV_NAMES if kind == "docker" else ENV_NAMES[::-1]
    for name in names:
        if env.get(name):
            return env[name]
    runtime_dir = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    docker = [*DOCKER_SOCKETS, str(Path.home() / ".docker/run/docker.sock")]
    podman = ["/run/podman/podman.sock", os.path.join(runtime_dir, "podman", "podman.sock")]
    for path in docker + podman if kind == "docker" else podman + docker:
        with contextlib.suppress(OSError):
            if Path(path).is_socket():
                return "unix://" + path
    return ""


def root_label(root: str) -> str:
    return hashlib.sha256(os.path.abspath(root).encode()).hexdigest()[:16]


class Engine:
    """One node's containers in one engine. ``url`` as :func:`find` gives it."""

    def __init__(self, settings: runtime.Settings, kind: str, url: str) -> None:
        self.settings = settings
        self.kind = kind
        self.url = url
        self._docker: aiodocker.Docker | None = None
        self._copies: dict[runtime.ContainerId, asyncio.Task[runtime.ContainerState]] = {}
        self._label = root_label(settings.root)

    @property
    def docker(self) -> aiodocker.Docker:
        if not self.url:
            raise EngineNotFound(
                f"no {self.kind} engine found: set "
                f"{ENV_NAMES[0] if self.kind == 'docker' else ENV_NAMES[1]} or start its service"
            )
        if self._docker is None:
            self._docker = aiodocker.Docker(url=self.url)
        return self._docker

    async def close(self) -> None:
        """Stop copying logs (the containers run on) and close the client."""
        copies = list(self._copies.values())
        for task in copies:
            task.cancel()
        await asyncio.gather(*copies, return_exceptions=True)  # each closes its stream
        if self._docker is not None:
            await self._docker.close()
            self._docker = None

    # -- where things are on disk ------------------------------------------------------

    def attempt_dir(self, id: runtime.ContainerId) -> str:
        return os.path.join(
            sandbox.pod_dir(self.settings.root, id.pod_uid), ENGINE, id.name, str(id.attempt)
        )

    def owns(self, id: runtime.ContainerId) -> bool:
        return os.path.isdir(self.attempt_dir(id))

    def log_path(self, id: runtime.ContainerId) -> str:
        return os.path.join(self.attempt_dir(id), shim.LOG)

    def _record(self, id: runtime.ContainerId) -> dict[str, Any] | None:
        try:
            with open(os.path.join(self.attempt_dir(id), RECORD), "rb") as f:
                return json.loads(f.read())
        except (FileNotFoundError, ValueError):
            return None

    def _write(self, id: runtime.ContainerId, record: Mapping[str, Any]) -> None:
        sandbox.write_atomic(
            os.path.join(self.attempt_dir(id), RECORD), json.dumps(record).encode(), 0o600
        )

    # -- what is -----------------------------------------------------------------------

    def state(self, id: runtime.ContainerId) -> runtime.ContainerState | None:
        record = self._record(id)
        return None if record is None else runtime.container_state(id, record)

    def containers(self, uid: str | None = None) -> list[runtime.ContainerState]:
        """Every attempt this engine ran, of all pods or one, oldest first per container."""
        root = self.settings.root
        pods = [uid] if uid is not None else sandbox.pod_uids(root)
        found = []
        for pod, name, attempt in sandbox.attempts(root, pods, ENGINE):
            state = self.state(runtime.ContainerId(pod, name, attempt))
            if state is not None:
                found.append(state)
        return found

    def gpus(self, id: runtime.ContainerId) -> tuple[str, ...]:
        return tuple((self._record(id) or {}).get("gpus") or ())

    def processes(self, id: runtime.ContainerId) -> runtime.Processes | None:
        """None: the engine accounts for and limits its containers itself."""
        return None

    # -- starting ----------------------------------------------------------------------

    async def prepare(self, sb: runtime.Sandbox) -> None:
        """Pod dir, volumes and hosts file (idempotent): no namespace is needed, the engine
        bind-mounts them, with the modes the kubelet gives them (:func:`_shared`)."""
        try:
            await asyncio.to_thread(sandbox.materialise, self.settings.root, sb)
            await asyncio.to_thread(_shared, self.settings.root, sb)
        except sandbox.SandboxError as e:
            raise runtime.StartError(runtime.CREATE_CONTAINER_ERROR, str(e)) from e
        except OSError as e:
            raise runtime.StartError(
                runtime.CREATE_CONTAINER_ERROR, f"cannot write the pod's directory: {e}"
            ) from e

    async def start(
        self, sb: runtime.Sandbox, spec: runtime.ContainerSpec, attempt: int
    ) -> runtime.ContainerState:
        """Pull as the policy says, create and start one attempt; a second start of an
        attempt that exists returns it. A command the engine cannot run is a terminated
        attempt (``ContainerCannotRun``), as in the process runtime."""
        if not sandbox.prepared(self.settings.root, sb.uid):
            await self.prepare(sb)
        id = runtime.ContainerId(sb.uid, spec.name, attempt)
        existing = await asyncio.to_thread(self.state, id)
        if existing is not None:
            return existing
        await self._image(spec)
        try:
            mounts = await asyncio.to_thread(
                sandbox.resolve_mounts, self.settings.root, sb, spec.mounts
            )
        except (sandbox.SandboxError, OSError) as e:
            raise runtime.StartError(runtime.CREATE_CONTAINER_ERROR, str(e)) from e
        config = self._config(sb, spec, id, mounts)
        directory = self.attempt_dir(id)
        await asyncio.to_thread(os.makedirs, directory, exist_ok=True)
        try:
            container = await self.docker.containers.create(
                config, name=_container_name(sb, spec.name, attempt, self._label)
            )
        except aiodocker.DockerError as e:
            await asyncio.to_thread(_remove_dir, directory)
            raise runtime.StartError(runtime.CREATE_CONTAINER_ERROR, _message(e)) from e
        record: dict[str, Any] = {"containerId": container.id, "gpus": list(spec.gpus)}
        await asyncio.to_thread(self._write, id, record)
        try:
            await container.start()
        except aiodocker.DockerError as e:
            now = shim.rfc3339(time.time_ns())
            record.update(
                startedAt=now,
                finishedAt=now,
                exitCode=shim.EXIT_CANNOT_RUN,
                reason=runtime.CONTAINER_CANNOT_RUN,
                message=_message(e),
            )
            await asyncio.to_thread(self._write, id, record)
            raise runtime.StartError(runtime.CONTAINER_CANNOT_RUN, _message(e)) from e
        info = await container.show()
        state = info["State"]
        record.update(startedAt=_rfc3339(state.get("StartedAt")), pid=state.get("Pid"))
        await asyncio.to_thread(self._write, id, record)
        started = await asyncio.to_thread(self.state, id)
        assert started is not None
        return started

    async def _image(self, spec: runtime.ContainerSpec) -> None:
        policy = spec.pull_policy or ("Always" if _latest(spec.image) else "IfNotPresent")
        present = True
        try:
            await self.docker.images.inspect(spec.image)
        except aiodocker.DockerError as e:
            if e.status != 404:
                raise runtime.StartError(runtime.ERR_IMAGE_PULL, _message(e)) from e
            present = False
        if policy == "Never":
            if not present:
                raise runtime.StartError(
                    runtime.ERR_IMAGE_NEVER_PULL,
                    f'Container image "{spec.image}" is not present with pull policy of Never',
                )
            return
        if present and policy != "Always":
            return
        try:
            async with _aio.timeout(PULL_TIMEOUT):
                answer = await self.docker.images.pull(spec.image)
        except aiodocker.DockerError as e:
            if present:  # Always, but the registry is out of reach: the copy here runs
                log.warning("image %s: pull failed, the local copy runs: %s", spec.image, e)
                return
            raise runtime.StartError(
                runtime.ERR_IMAGE_PULL,
                f'failed to pull and unpack image "{spec.image}": {_message(e)}',
            ) from e
        failed = [m.get("error") for m in answer if isinstance(m, Mapping) and m.get("error")]
        if failed and not present:
            raise runtime.StartError(
                runtime.ERR_IMAGE_PULL,
                f'failed to pull and unpack image "{spec.image}": {failed[-1]}',
            )

    def _config(
        self,
        sb: runtime.Sandbox,
        spec: runtime.ContainerSpec,
        id: runtime.ContainerId,
        mounts: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        binds = [
            {"Type": "bind", "Source": m["source"], "Target": m["target"]}
            | {"ReadOnly": m["readOnly"]}
            for m in mounts
        ]
        if sb.hosts:
            binds.append(
                {
                    "Type": "bind",
                    "Source": sandbox.hosts_path(self.settings.root, sb.uid),
                    "Target": sandbox.ETC_HOSTS,
                    "ReadOnly": True,
                }
            )
        host: dict[str, Any] = {"NetworkMode": "host", "Mounts": binds}
        if spec.memory_limit:
            host["Memory"] = spec.memory_limit
        if spec.cpu_limit:
            host["NanoCpus"] = int(spec.cpu_limit * 1e9)
        if spec.gpus:
            host["DeviceRequests"] = [
                {"Driver": "nvidia", "DeviceIDs": list(spec.gpus), "Capabilities": [["gpu"]]}
            ]
        config: dict[str, Any] = {
            "Image": spec.image,
            "Env": [f"{k}={v}" for k, v in spec.env],
            "Labels": {
                LABEL_ROOT: self._label,
                LABEL_POD: sb.uid,
                LABEL_NAMESPACE: sb.namespace,
                LABEL_NAME: sb.name,
                LABEL_CONTAINER: spec.name,
                LABEL_ATTEMPT: str(id.attempt),
            },
            "HostConfig": host,
        }
        if spec.image_entrypoint:
            if spec.argv:
                config["Cmd"] = list(spec.argv)
        else:
            config["Entrypoint"] = list(spec.argv)
            config["Cmd"] = []
        if spec.working_dir:
            config["WorkingDir"] = spec.working_dir
        if spec.user:
            config["User"] = spec.user
        return config

    # -- waiting, logs, stopping -------------------------------------------------------

    async def wait(self, id: runtime.ContainerId) -> runtime.ContainerState:
        """Until the attempt has exited, copying its output into its log meanwhile; works for
        attempts another Engine started (adoption: the copy goes on where the log ends)."""
        task = self._copies.get(id)
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(
                self._follow(id), name=f"engine log {id.pod_uid}/{id.name}/{id.attempt}"
            )
            self._copies[id] = task
            task.add_done_callback(lambda _: self._copies.pop(id, None))
        return await asyncio.shield(task)

    async def _follow(self, id: runtime.ContainerId) -> runtime.ContainerState:
        record = await asyncio.to_thread(self._record, id)
        if record is None:
            raise runtime.UnknownContainer(
                f"no container {id.name!r} attempt {id.attempt} in pod {id.pod_uid}"
            )
        if "exitCode" not in record:
            await self._copy_log(id, record["containerId"])
            await self._finish(id, record)
        state = await asyncio.to_thread(self.state, id)
        assert state is not None
        return state

    async def _copy_log(self, id: runtime.ContainerId, container: str) -> None:
        """The engine's log stream into the attempt's CRI log: followed until the container
        ends, then read once more from the last line copied, since a follow may end before
        the last lines (Docker 20.10 did, under a fast writer). A copy that resumes (after a
        restart, or that second read) skips what the log has: the lines before its last time
        and as many at that time as it had (an engine may stamp to the second only)."""
        path = self.log_path(id)
        seen, seen_count = await asyncio.to_thread(_last_time, path)
        writer = await asyncio.to_thread(shim.LogWriter, path, self.settings.log_max_bytes)
        pending: list[bytes] = []  # records read, not yet written
        writing: asyncio.Future[None] | None = None

        async def drain() -> None:
            """What came meanwhile, in one write per turn: a chatty container costs one
            thread hop per batch, not per line, and no line waits for the next to come."""
            while pending:
                batch = b"".join(pending)
                pending.clear()
                await asyncio.to_thread(writer.write, batch)

        def record(stream: str, when: int, text: bytes) -> None:
            nonlocal writing, seen, seen_count
            head = shim.rfc3339(when).encode() + b" " + stream.encode() + b" F "
            pending.append(head + text.rstrip(b"\n") + b"\n")
            if seen is None or when > seen:
                seen, seen_count = when, 1
            elif when == seen:
                seen_count += 1
            if writing is None or writing.done():
                if writing is not None:
                    writing.result()  # a failed write stops the copy
                writing = asyncio.ensure_future(drain())

        try:
            for follow in (1, 0):
                mark, skip = seen, seen_count
                pieces: dict[str, tuple[int, bytes]] = {}  # per stream: a line begun, its time
                params: dict[str, Any] = {"stdout": 1, "stderr": 1, "timestamps": 1}
                params["follow"] = follow
                if mark:
                    params["since"] = f"{mark // 1_000_000_000}.{mark % 1_000_000_000:09d}"
                async with self.docker._query(
                    f"containers/{container}/logs", params=params, timeout=None
                ) as response:
                    async for stream, line in _frames(response.content):
                        stamp, _, text = line.partition(b" ")
                        when = _ns(stamp.decode(errors="replace"))
                        if when is None:
                            continue
                        held = pieces.pop(stream, None)
                        if held is not None:  # the rest of a line the engine sent in pieces
                            when, text = held[0], held[1] + text
                        if not text.endswith(b"\n"):
                            pieces[stream] = (when, text)  # Podman: a line over 8 KiB, say
                            continue
                        if mark and when < mark:
                            continue
                        if mark and when == mark and skip:  # the log has it already
                            skip -= 1
                            continue
                        record(stream, when, text)
                if not follow:  # a last line without its newline, as containerd keeps it
                    for stream, (when, text) in pieces.items():
                        record(stream, when, text)
            if writing is not None:
                await writing
            await drain()
        except aiodocker.DockerError as e:
            if e.status != 404:
                raise
        finally:
            if writing is not None and not writing.done():
                writing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await writing
            os.close(writer.fd)

    async def _finish(self, id: runtime.ContainerId, record: dict[str, Any]) -> None:
        """Record how the attempt ended, from the engine's own account of it."""
        container = self.docker.containers.container(record["containerId"])
        try:
            await container.wait()
            info = (await container.show())["State"]
        except aiodocker.DockerError as e:
            if e.status != 404:
                raise
            now = shim.rfc3339(time.time_ns())
            record.update(
                startedAt=record.get("startedAt") or now,
                finishedAt=now,
                exitCode=runtime.UNKNOWN_EXIT,
                reason=runtime.CONTAINER_STATUS_UNKNOWN,
                message="the container is gone from the engine, so its exit status is unknown",
            )
        else:
            code = int(info.get("ExitCode") or 0)
            reason = (
                runtime.OOM_KILLED
                if info.get("OOMKilled")
                else runtime.COMPLETED
                if code == 0
                else runtime.ERROR
            )
            record.update(
                startedAt=_rfc3339(info.get("StartedAt")) or record.get("startedAt"),
                finishedAt=_rfc3339(info.get("FinishedAt")) or shim.rfc3339(time.time_ns()),
                exitCode=code,
                reason=reason,
                message=str(info.get("Error") or ""),
            )
        record.pop("pid", None)
        await asyncio.to_thread(self._write, id, record)

    async def stop(self, id: runtime.ContainerId, grace: float) -> runtime.ContainerState:
        """The image's stop signal (SIGTERM by default), SIGKILL after ``grace`` seconds."""
        record = await asyncio.to_thread(self._record, id)
        if record is None:
            raise runtime.UnknownContainer(
                f"no container {id.name!r} attempt {id.attempt} in pod {id.pod_uid}"
            )
        if "exitCode" in record:
            return await self.wait(id)
        container = self.docker.containers.container(record["containerId"])
        with contextlib.suppress(aiodocker.DockerError):
            if grace > 0:
                await container.stop(t=math.ceil(grace), timeout=grace + REQUEST_TIMEOUT)
            else:
                await container.kill()
        return await self.wait(id)

    async def remove(self, uid: str, grace: float) -> None:
        """Stop the pod's containers, then delete them from the engine (its directory is the
        caller's)."""
        running = [s.id for s in await asyncio.to_thread(self.containers, uid) if s.running]
        await asyncio.gather(*(self.stop(id, grace) for id in running), return_exceptions=True)
        await self._delete({LABEL_POD: uid})

    async def remove_all(self, grace: float) -> None:
        """Stop and delete every container of this node: the control plane goes down and
        leaves nothing in the engine."""
        running = [s.id for s in await asyncio.to_thread(self.containers) if s.running]
        await asyncio.gather(*(self.stop(id, grace) for id in running), return_exceptions=True)
        await self._delete({})

    async def release(self, grace: float) -> None:
        """:meth:`remove_all`, then the client closed; what the engine refuses is logged, since
        the control plane goes down either way."""
        try:
            async with _aio.timeout(grace + REQUEST_TIMEOUT):
                await self.remove_all(grace)
        except (*_aio.TIMEOUT_ERRORS, *ERRORS, runtime.StartError) as exc:
            log.warning("containers may be left in the %s engine: %s", self.kind, exc)
        finally:
            await self.close()

    async def _delete(self, labels: Mapping[str, str]) -> None:
        wanted = [f"{LABEL_ROOT}={self._label}", *(f"{k}={v}" for k, v in labels.items())]
        found = await self.docker.containers.list(all=True, filters=json.dumps({"label": wanted}))
        for container in found:
            with contextlib.suppress(aiodocker.DockerError):
                await container.delete(force=True)

    # -- exec --------------------------------------------------------------------------

    async def exec(
        self, uid: str, container: str, argv: Sequence[str], *, stdin: bool, tty: bool
    ) -> Execution:
        running = [
            s
            for s in await asyncio.to_thread(self.containers, uid)
            if s.id.name == container and s.running
        ]
        if not running:
            raise runtime.StartError(
                runtime.RUN_CONTAINER_ERROR, f'container "{container}" is not running'
            )
        record = await asyncio.to_thread(self._record, running[-1].id) or {}
        try:
            made = await self.docker.containers.container(record["containerId"]).exec(
                list(argv), stdin=stdin, tty=tty
            )
            execution = Execution(made, stdin=stdin)
            await execution.begin()
        except aiodocker.DockerError as e:
            raise runtime.StartError(runtime.CONTAINER_CANNOT_RUN, _message(e)) from e
        return execution


class _Input:
    """The stdin of an :class:`Execution`, as much of ``asyncio.StreamWriter`` as the node's
    exec relay uses."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._pending: list[bytes] = []
        self._closed = False

    def write(self, data: bytes) -> None:
        self._pending.append(data)

    async def drain(self) -> None:
        while self._pending:
            await self._stream.write_in(self._pending.pop(0))

    def is_closing(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        transport = getattr(getattr(self._stream, "_resp", None), "connection", None)
        transport = getattr(transport, "transport", None)
        if transport is not None and transport.can_write_eof():
            transport.write_eof()


class Execution:
    """A command run in a container through the engine, with the parts of
    ``asyncio.subprocess.Process`` the node's exec relay uses: ``stdin``, ``stdout``,
    ``stderr``, :meth:`wait`, ``returncode`` and :meth:`kill`."""

    pid = 0  # no process of this host: the engine owns it

    def __init__(self, made: Any, *, stdin: bool) -> None:
        self._exec = made
        self._stream = made.start(detach=False)
        self.stdin: _Input | None = _Input(self._stream) if stdin else None
        self.stdout = asyncio.StreamReader()
        self.stderr = asyncio.StreamReader()
        self.returncode: int | None = None
        self._pump: asyncio.Task[None] | None = None

    async def begin(self) -> None:
        await self._stream._init()
        self._pump = asyncio.get_running_loop().create_task(self._relay(), name="engine exec")

    async def _relay(self) -> None:
        try:
            while (message := await self._stream.read_out()) is not None:
                (self.stderr if message.stream == 2 else self.stdout).feed_data(message.data)
        finally:
            self.stdout.feed_eof()
            self.stderr.feed_eof()

    async def wait(self) -> int:
        if self.returncode is None:
            assert self._pump is not None
            with contextlib.suppress(Exception):
                await asyncio.shield(self._pump)
            info = await self._exec.inspect()
            self.returncode = int(info.get("ExitCode") or 0)
        return self.returncode

    def kill(self) -> None:
        """Ends the relay; the engine has no call to kill an exec's process."""
        if self._pump is not None:
            self._pump.cancel()
        if self.returncode is None:
            self.returncode = 137


# -- helpers -----------------------------------------------------------------------------


async def _frames(content: aiohttp.StreamReader) -> AsyncIterator[tuple[str, bytes]]:
    """The engine's multiplexed log stream as (stream, line) pairs."""
    while True:
        try:
            header = await content.readexactly(FRAME.size)
        except asyncio.IncompleteReadError:
            return
        kind, size = FRAME.unpack(header)
        payload = await content.readexactly(size)
        for line in payload.splitlines(keepends=True):
            yield STREAMS.get(kind, "stdout"), line


def _shared(root: str, sb: runtime.Sandbox) -> None:
    """The modes a container's own user (an image's ``USER``, often not root) needs, where the
    node writes its files private to itself: the hosts file readable, an emptyDir writable by
    all (as the kubelet makes it), a ConfigMap's or Secret's directory readable with each file
    at its ``defaultMode``/``mode``."""
    os.chmod(sandbox.hosts_path(root, sb.uid), 0o644)
    for volume in sb.volumes:
        path = sandbox.volume_dir(root, sb.uid, volume.name)
        if volume.kind == "empty":
            os.chmod(path, 0o777)
        elif volume.kind == "files":
            for directory, _, _ in os.walk(path):
                os.chmod(directory, 0o755)
            for item in volume.files:
                with contextlib.suppress(FileNotFoundError):
                    os.chmod(os.path.join(path, item.path), item.mode)


def _container_name(sb: runtime.Sandbox, container: str, attempt: int, label: str) -> str:
    """kubelet's dockershim naming: ``k8s_<container>_<pod>_<namespace>_<uid>_<attempt>``,
    with this node's label so two nodes on one engine never clash."""
    return f"k8s_{container}_{sb.name}_{sb.namespace}_{sb.uid}_{attempt}_{label[:8]}"


def _message(error: aiodocker.DockerError) -> str:
    return str(error.message or error).strip()


def _latest(image: str) -> bool:
    last = image.rsplit("/", 1)[-1]
    return "@" not in last and (":" not in last or last.endswith(":latest"))


def _ns(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time with up to nanoseconds."""
    if not text:
        return None
    whole, _, fraction = text.rstrip("Z").partition(".")
    fraction, _, _ = fraction.partition("+")
    try:
        moment = datetime.strptime(whole[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    digits = "".join(c for c in fraction if c.isdigit())
    return int(moment.timestamp()) * 1_000_000_000 + int((digits + "000000000")[:9])


def _rfc3339(text: Any) -> str:
    """The engine's time (Go's RFC 3339 with trimmed nanoseconds) as the shim writes it; ""
    for Go's zero time."""
    when = _ns(str(text or ""))
    if when is None or when <= 0:
        return ""
    return shim.rfc3339(when)


def _last_time(path: str) -> tuple[int | None, int]:
    """The time of the last record of a log (None: empty or missing) and how many records
    have that time: an engine may stamp to the second only (Podman), so a copy that resumes
    from that time skips as many as it had, not every line of that second."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 65536))
            lines = f.read().splitlines()
    except OSError:
        return None, 0
    last, count = None, 0
    for line in reversed(lines):
        when = _ns(line.split(b" ", 1)[0].decode(errors="replace"))
        if when is None:
            continue
        if last is not None and when != last:
            break
        last, count = when, count + 1
    return last, count


def _remove_dir(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
