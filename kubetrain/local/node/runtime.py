"""The node's container runtime: runs a pod's containers as local process groups, each under
its own shim, and reads back what happened to them from disk.

This is the one interface between the node agent (which knows the Kubernetes API) and the
processes (which do not): the agent resolves a Pod into a :class:`Sandbox` and
:class:`ContainerSpec` values and calls :class:`Runtime`; everything here works on those
resolved values and on the node's state directory only.

State lives on disk, never in this object: ``<root>/pods/<uid>/`` (see
:mod:`~kubetrain.local.node.sandbox`) and, per container attempt,
``<root>/pods/<uid>/containers/<name>/<attempt>/`` (see :mod:`~kubetrain.local.node.shim`).
A new :class:`Runtime` on the same root (after an agent restart, even after ``kill -9``) sees
every container through :meth:`Runtime.containers` and :meth:`Runtime.state` and can wait for
and stop the ones still running; :meth:`Runtime.start` of an attempt that already exists returns
that attempt instead of starting a second copy.

Behaviour worth knowing:

- **PATH.** ``Settings.path_prefix`` (by default the bin directory of the Python running
  kubetrain) is put first on the container's ``PATH`` (the env's own ``PATH``, or the usual
  default), so ``python3`` and ``torchrun`` resolve to kubetrain's environment; ``argv[0]`` is
  looked up on that PATH inside the container's mount namespace.
- **Working directory.** When the spec names none, ``<pod dir>/containers/<name>/work``: a
  scratch directory that goes with the pod, as a container's writable layer does. One the
  spec names that does not exist is made in the container's namespace only (see
  :class:`~kubetrain.local.node.sandbox.View`); without a namespace it refuses the container
  (``ContainerCannotRun``) rather than be made on the host.
- **GPUs.** ``gpus`` become ``CUDA_VISIBLE_DEVICES`` and ``NVIDIA_VISIBLE_DEVICES`` (and
  ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` unless set, so CUDA numbers devices as nvidia-smi does); a
  container without GPUs on a node that has some gets both set to "" and sees none. A GPU held
  by another running container is refused (``CreateContainerError``).
- **Isolation.** ``namespace``: each container runs in a private mount and UTS namespace with the
  pod's volumes at their mount paths and the pod's hosts file over /etc/hosts. ``none``: the
  host's view, so a pod that needs its own /etc/hosts, or a mount anywhere but at its own source
  path, is refused with a :class:`StartError` that says so (a read-only mount is then not
  enforced).
- **Memory limits**: a cgroup v2 memory controller where the node may write one, else the shim's
  watchdog over the container's process tree (see :mod:`~kubetrain.local.node.memory`).
- **CPU limits** are not the runtime's: the pod's worker enforces them on the processes
  :meth:`Runtime.processes` names (see :mod:`~kubetrain.local.node.cpulimit`). Because that
  may leave a container stopped (SIGSTOP) for a moment, :meth:`Runtime.stop` follows its
  SIGTERM with a SIGCONT.
- **Exit reasons**: ``Completed``, ``Error``, ``OOMKilled``, ``ContainerCannotRun`` (see the shim),
  and ``ContainerStatusUnknown`` (exit code 137) when the shim was killed and the container then
  ended unobserved, so its real status can no longer be known.

Must not: talk to the API server, know Pod objects, or keep in memory anything another Runtime
on the same root would need.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from kubetrain import _aio, timefmt
from kubetrain.errors import KubetrainError
from kubetrain.local.node import cri, memory, proctree, sandbox, shim

log = logging.getLogger(__name__)

CONTAINERS: Final = "containers"
WORK: Final = "work"
START_TIMEOUT: Final = 30.0  # seconds a shim may take to exec the container's process
POLL: Final = 0.05  # seconds between looks where no pidfd can be had
GPU_DEVICE: Final = re.compile(r"nvidia(\d+)")

COMPLETED: Final = shim.COMPLETED
ERROR: Final = shim.ERROR
OOM_KILLED: Final = shim.OOM_KILLED
CONTAINER_CANNOT_RUN: Final = shim.CANNOT_RUN
CONTAINER_STATUS_UNKNOWN: Final = "ContainerStatusUnknown"
CREATE_CONTAINER_ERROR: Final = "CreateContainerError"
RUN_CONTAINER_ERROR: Final = "RunContainerError"
UNKNOWN_EXIT: Final = 137  # what kubelet reports for a container it lost track of
# a container engine's image could not be had (:mod:`~kubetrain.local.node.engine`): the
# container waits with the first, and with the second while the pull backs off
ERR_IMAGE_PULL: Final = "ErrImagePull"
IMAGE_PULL_BACK_OFF: Final = "ImagePullBackOff"
ERR_IMAGE_NEVER_PULL: Final = "ErrImageNeverPull"


# The runtime's values live in .cri (the sandbox module names them without importing this
# one); here under their old names for the runtime's callers.
File = cri.File
Volume = cri.Volume
Mount = cri.Mount
Sandbox = cri.Sandbox
ContainerSpec = cri.ContainerSpec
ContainerId = cri.ContainerId
ContainerState = cri.ContainerState
Processes = cri.Processes


class StartError(KubetrainError):
    """A container could not be started; ``reason`` is kubelet's word for why.

    ``ContainerCannotRun``: the shim could not run the command (not found, not executable, a
    mount or the working directory could not be made). ``CreateContainerError``: the spec asks
    for something this node cannot give (isolation, GPUs, volumes). ``RunContainerError``: the
    shim itself failed.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class UnknownContainer(KubetrainError):
    """No attempt of that container is on this node's disk."""


@dataclass(frozen=True)
class Settings:
    root: str  # node state dir; pods live in <root>/pods/<uid>/
    path_prefix: tuple[str, ...] = ()  # first on PATH; () means the running Python's bin dir
    log_max_bytes: int = 10 * 1024 * 1024  # per container attempt; older half rotated away
    isolation: Literal["auto", "namespace", "none"] = "auto"
    node_gpus: tuple[str, ...] | None = None  # None: the /dev/nvidiaN devices of this host
    python: str = ""  # interpreter that runs the shim; "" is the one running kubetrain
    # A cgroup v2 hierarchy (or delegated subtree) for memory limits; None: /sys/fs/cgroup when
    # its memory controller is writable; "": never (the memory watchdog enforces limits).
    cgroup: str | None = None


class Runtime:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._python = settings.python or sys.executable
        self._prefix = settings.path_prefix or (os.path.dirname(sys.executable),)
        self._isolation: str | None = None if settings.isolation != "none" else "none"
        self._isolation_problem = ""
        self._cgroup: str | None = None if settings.cgroup != "" else ""
        self._shims: dict[int, subprocess.Popen[bytes]] = {}  # ours to reap, while we live
        self._lock = threading.Lock()
        self._planning = threading.Lock()

    # -- isolation ---------------------------------------------------------------------

    @property
    def isolation(self) -> str:
        """What is in use, "namespace" or "none" (probed once, on first need)."""
        if self._isolation is None:
            self._probe()
        assert self._isolation is not None
        return self._isolation

    def _probe(self) -> None:
        with self._lock:
            if self._isolation is not None:
                return
            try:
                done = subprocess.run(
                    shim.command(self._python, "probe"),
                    capture_output=True,
                    timeout=START_TIMEOUT,
                    check=False,
                )
                problem = (
                    "" if done.returncode == 0 else (done.stdout + done.stderr).decode().strip()
                )
            except (OSError, subprocess.TimeoutExpired) as e:
                problem = str(e)
            if problem:
                self._isolation_problem = (
                    f"this node cannot give a pod a private mount namespace ({problem}); "
                    f"it needs root, or unprivileged user namespaces"
                )
                log.warning("pods run without isolation: %s", self._isolation_problem)
            self._isolation = "namespace" if not problem else "none"

    @property
    def cgroup(self) -> str:
        """Where limited containers get a memory cgroup; "" where the watchdog is used."""
        if self._cgroup is None:
            base = memory.cgroup_base(self.settings.cgroup or memory.CGROUP_MOUNT)
            self._cgroup = base or ""
        return self._cgroup

    async def _probed(self) -> str:
        if self._isolation is None:
            await asyncio.to_thread(self._probe)
        if self._cgroup is None:
            await asyncio.to_thread(lambda: self.cgroup)
        if self.settings.isolation == "namespace" and self._isolation_problem:
            raise StartError(CREATE_CONTAINER_ERROR, self._isolation_problem)
        return self.isolation

    # -- pods --------------------------------------------------------------------------

    async def prepare(self, sandbox_: Sandbox) -> None:
        """Pod dir, volumes and hosts file, made or refreshed (idempotent)."""
        isolation = await self._probed()
        if isolation == "none" and sandbox_.hosts:
            host = await asyncio.to_thread(sandbox.host_hosts)
            if sandbox_.hosts != host:
                raise StartError(
                    CREATE_CONTAINER_ERROR,
                    "the pod needs its own /etc/hosts (the names of its services and pods), but "
                    "this node runs pods without a private mount namespace"
                    + (
                        f": {self._isolation_problem}"
                        if self._isolation_problem
                        else " (isolation none)"
                    ),
                )
        try:
            await asyncio.to_thread(sandbox.materialise, self.settings.root, sandbox_)
        except sandbox.SandboxError as e:
            raise StartError(CREATE_CONTAINER_ERROR, str(e)) from e
        except OSError as e:
            raise StartError(
                CREATE_CONTAINER_ERROR, f"cannot write the pod's directory: {e}"
            ) from e

    async def update_hosts(self, uid: str, hosts: str) -> None:
        """Rewrite the pod's hosts file in place (same inode): running processes see the names."""
        await asyncio.to_thread(sandbox.update_hosts, self.settings.root, uid, hosts)

    def pods(self) -> list[str]:
        return sandbox.pod_uids(self.settings.root)

    async def remove(self, uid: str, grace: float) -> None:
        """Stop whatever still runs in the pod, then delete its directory."""
        running = [s.id for s in self.containers(uid) if s.running]
        async with _aio.TaskGroup() as group:
            for id in running:
                group.create_task(self.stop(id, grace), name=f"stop {id.name}/{id.attempt}")
        await asyncio.to_thread(sandbox.remove, self.settings.root, uid)

    # -- containers --------------------------------------------------------------------

    def attempt_dir(self, id: ContainerId) -> str:
        return os.path.join(
            sandbox.pod_dir(self.settings.root, id.pod_uid), CONTAINERS, id.name, str(id.attempt)
        )

    def scratch_dir(self, id: ContainerId) -> str:
        """Where a container that names no working directory runs: a directory of its own
        that goes with the pod, as a container's filesystem would."""
        return os.path.join(
            sandbox.pod_dir(self.settings.root, id.pod_uid), CONTAINERS, id.name, WORK
        )

    def log_path(self, id: ContainerId) -> str:
        return os.path.join(self.attempt_dir(id), shim.LOG)

    async def start(self, sandbox_: Sandbox, spec: ContainerSpec, attempt: int) -> ContainerState:
        """Start one attempt; returns once its process has been exec'd, or raises StartError."""
        isolation = await self._probed()
        if not sandbox.prepared(self.settings.root, sandbox_.uid):
            await self.prepare(sandbox_)
        id = ContainerId(sandbox_.uid, spec.name, attempt)
        started = time.monotonic()
        state = await asyncio.to_thread(self._start, sandbox_, spec, id, isolation)
        log.debug(
            "started %s/%s#%d in %.1f ms",
            id.pod_uid,
            id.name,
            attempt,
            (time.monotonic() - started) * 1e3,
        )
        return state

    def _start(
        self, sb: Sandbox, spec: ContainerSpec, id: ContainerId, isolation: str
    ) -> ContainerState:
        directory = self.attempt_dir(id)
        os.makedirs(os.path.dirname(directory), exist_ok=True)
        try:
            os.mkdir(directory)
        except FileExistsError:
            return self._existing(id)  # never a second copy of one attempt
        try:
            with self._planning:  # two starts must not both take one GPU
                shim.write_spec(directory, self._plan(sb, spec, id, isolation))
        except StartError as e:
            self._refused(id, e)
            raise
        read_end, write_end = os.pipe()
        try:
            with open(os.path.join(directory, shim.SHIM_ERR), "wb") as err:
                proc = subprocess.Popen(
                    shim.command(self._python, "run", directory, str(write_end)),
                    pass_fds=(write_end,),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    start_new_session=True,
                    cwd="/",
                )
            with self._lock:
                self._shims[proc.pid] = proc
            os.close(write_end)
            write_end = -1
            _read_until_closed(read_end, START_TIMEOUT)
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        state = self.state(id)
        if state is None or (state.running and state.pid is None):
            problem = (
                f"the shim failed (exit code {proc.returncode})"
                if proc.poll() is not None
                else f"the shim did not start the container within {START_TIMEOUT:.0f} s"
            )
            error = StartError(
                RUN_CONTAINER_ERROR, problem + _tail(os.path.join(directory, shim.SHIM_ERR))
            )
            proctree.kill_group(proc.pid, signal.SIGKILL)
            self._refused(id, error)
            raise error
        return self._started(state)

    def _started(self, state: ContainerState) -> ContainerState:
        if state.reason == CONTAINER_CANNOT_RUN:
            raise StartError(CONTAINER_CANNOT_RUN, state.message)
        return state

    def _existing(self, id: ContainerId) -> ContainerState:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            state = self.state(id)
            if state is not None and (state.pid is not None or not state.running):
                return self._started(state)
            if time.monotonic() > deadline:
                raise StartError(RUN_CONTAINER_ERROR, "the container's shim did not start it")
            time.sleep(POLL)

    def _refused(self, id: ContainerId, error: StartError) -> None:
        now = shim.rfc3339(time.time_ns())
        shim.write_state(
            self.attempt_dir(id),
            {
                "startedAt": now,
                "finishedAt": now,
                "exitCode": shim.EXIT_CANNOT_RUN,
                "reason": CONTAINER_CANNOT_RUN,
                "message": error.message,
            },
        )

    def _plan(
        self, sb: Sandbox, spec: ContainerSpec, id: ContainerId, isolation: str
    ) -> dict[str, Any]:
        """What the shim runs, with everything the runtime can check checked."""
        if not spec.argv:
            raise StartError(
                CREATE_CONTAINER_ERROR,
                "no command: images are not pulled, so a local container needs command or args",
            )
        try:
            mounts = sandbox.resolve_mounts(self.settings.root, sb, spec.mounts)
        except sandbox.SandboxError as e:
            raise StartError(CREATE_CONTAINER_ERROR, str(e)) from e
        except OSError as e:
            raise StartError(CREATE_CONTAINER_ERROR, f"cannot prepare a mount: {e}") from e
        if isolation == "none":
            for m in mounts:
                if os.path.realpath(m["source"]) != os.path.realpath(m["target"]):
                    raise StartError(
                        CREATE_CONTAINER_ERROR,
                        f"cannot show {m['source']} at {m['target']}: this node runs pods without "
                        f"a private mount namespace, so a volume can only be used at its own path"
                        + (f" ({self._isolation_problem})" if self._isolation_problem else ""),
                    )
        self._check_gpus(spec, id)
        working_dir = spec.working_dir or self.scratch_dir(id)
        if not spec.working_dir:
            os.makedirs(working_dir, exist_ok=True)  # the node's own: the shim makes no other
        return {
            "argv": list(spec.argv),
            "env": list(self._environment(spec).items()),
            "workingDir": working_dir,
            "mounts": mounts,
            "hosts": sandbox.hosts_path(self.settings.root, sb.uid) if sb.hosts else "",
            "hostname": sb.hostname,
            "isolation": isolation,
            "userns": os.geteuid() != 0,
            "memoryLimit": spec.memory_limit,
            "cgroup": (
                self.attempt_cgroup(id, self.cgroup) if spec.memory_limit and self.cgroup else ""
            ),
            "gpus": list(spec.gpus),
            "logMaxBytes": self.settings.log_max_bytes,
        }

    @staticmethod
    def attempt_cgroup(id: ContainerId, base: str) -> str:
        """The cgroup of one attempt under ``base``: the memory limit's, and the CPU limit's
        (:mod:`~kubetrain.local.node.cpulimit`), one directory for both."""
        return os.path.join(base, f"{id.pod_uid}_{id.name}_{id.attempt}")

    def _environment(self, spec: ContainerSpec) -> dict[str, str]:
        env = dict(spec.env)
        rest = [p for p in env.get("PATH", shim.DEFAULT_PATH).split(":") if p not in self._prefix]
        env["PATH"] = ":".join([*self._prefix, *rest])
        if spec.gpus:
            env["CUDA_VISIBLE_DEVICES"] = env["NVIDIA_VISIBLE_DEVICES"] = ",".join(spec.gpus)
            env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        elif self.node_gpus():
            env["CUDA_VISIBLE_DEVICES"] = env["NVIDIA_VISIBLE_DEVICES"] = ""
        return env

    def node_gpus(self) -> tuple[str, ...]:
        """This node's GPU indices: the setting, else its /dev/nvidiaN devices."""
        if self.settings.node_gpus is not None:
            return self.settings.node_gpus
        try:
            names = os.listdir("/dev")
        except OSError:
            return ()
        found = sorted(int(m.group(1)) for n in names if (m := GPU_DEVICE.fullmatch(n)))
        return tuple(str(i) for i in found)

    def _check_gpus(self, spec: ContainerSpec, id: ContainerId) -> None:
        if not spec.gpus:
            return
        node = self.node_gpus()
        missing = [g for g in spec.gpus if g not in node]
        if missing:
            raise StartError(
                CREATE_CONTAINER_ERROR,
                f"GPU {', '.join(missing)} is not a GPU of this node; "
                f"accepted: {', '.join(node) or 'none'}",
            )
        for other in self.containers():
            if not other.running or other.id == id:
                continue
            taken = set(self.gpus(other.id)) & set(spec.gpus)
            if taken:
                raise StartError(
                    CREATE_CONTAINER_ERROR,
                    f"GPU {', '.join(sorted(taken))} is in use by container {other.id.name!r} of "
                    f"pod {other.id.pod_uid}",
                )

    def gpus(self, id: ContainerId) -> tuple[str, ...]:
        """The GPUs an attempt was started with, from its spec on disk (() if none)."""
        plan = shim.read_spec(self.attempt_dir(id)) or {}
        return tuple(str(g) for g in plan.get("gpus", ()))

    # -- what happened -----------------------------------------------------------------

    def state(self, id: ContainerId) -> ContainerState | None:
        """The attempt's state from disk (None if there is no such attempt)."""
        self._reap()
        directory = self.attempt_dir(id)
        raw = shim.read_state(directory)
        if raw is None:
            if not os.path.isdir(directory):
                return None
            raw = {}
        if "exitCode" not in raw and not _alive(raw, "shim"):
            # The shim is gone (or never came): its last word decides, else we do.
            raw = shim.read_state(directory) or raw
            if "exitCode" not in raw and not self._unobserved(directory, raw):
                raw = self._lost(directory, raw)
        return container_state(id, raw)

    def _unobserved(self, directory: str, raw: dict[str, Any]) -> bool:
        """An attempt without a live shim that still goes on: its container runs on after a
        killed shim, or its shim is about to be spawned (a fresh directory, no state yet)."""
        if raw.get("shimPid") or "pid" in raw:
            return "pid" in raw and _alive(raw, "")
        try:
            age = time.time() - os.stat(directory).st_mtime
        except FileNotFoundError:
            return False
        return age < START_TIMEOUT

    def _lost(self, directory: str, raw: dict[str, Any]) -> dict[str, Any]:
        """Record how an attempt ended whose shim died before saying so."""
        now = shim.rfc3339(time.time_ns())
        if "pid" in raw:
            fields = {
                "exitCode": UNKNOWN_EXIT,
                "reason": CONTAINER_STATUS_UNKNOWN,
                "message": "the container's shim ended before the container did, so its exit "
                "status is unknown",
            }
        else:
            fields = {
                "startedAt": now,
                "exitCode": shim.EXIT_CANNOT_RUN,
                "reason": CONTAINER_CANNOT_RUN,
                "message": "the container's shim ended before starting it"
                + _tail(os.path.join(directory, shim.SHIM_ERR)),
            }
        raw = {**raw, **fields, "finishedAt": now}
        with contextlib.suppress(OSError):
            shim.write_state(directory, raw)
        return raw

    def containers(self, uid: str | None = None) -> list[ContainerState]:
        """Every attempt on disk, of all pods or one, oldest attempt first per container."""
        pods = [uid] if uid is not None else self.pods()
        found = []
        for pod, name, attempt in sandbox.attempts(self.settings.root, pods, CONTAINERS):
            state = self.state(ContainerId(pod, name, attempt))
            if state is not None:
                found.append(state)
        return found

    def _known(self, id: ContainerId) -> ContainerState:
        """The attempt's state; :class:`UnknownContainer` where there is no such attempt."""
        state = self.state(id)
        if state is None:
            raise UnknownContainer(
                f"no container {id.name!r} attempt {id.attempt} in pod {id.pod_uid}"
            )
        return state

    async def wait(self, id: ContainerId) -> ContainerState:
        """Until the attempt has exited; works for attempts another Runtime started."""
        while True:
            state = self._known(id)
            if not state.running:
                return state
            raw = shim.read_state(self.attempt_dir(id)) or {}
            if _alive(raw, "shim"):
                await _exited(raw["shimPid"], raw["shimStart"])
            elif "pid" in raw:
                await _exited(raw["pid"], raw["start"])
            else:
                await asyncio.sleep(POLL)

    async def stop(self, id: ContainerId, grace: float) -> ContainerState:
        """SIGTERM to the container's process group, SIGKILL after ``grace`` seconds."""
        state = self._known(id)
        if not state.running:
            return state
        with contextlib.suppress(*_aio.TIMEOUT_ERRORS):
            async with _aio.timeout(START_TIMEOUT):
                # Still starting: it can be stopped once it has a pid.
                while (s := self.state(id)) is not None and s.running and s.pid is None:  # noqa: ASYNC110
                    await asyncio.sleep(POLL)
        if grace > 0:
            self._signal(id, signal.SIGTERM)
            with contextlib.suppress(*_aio.TIMEOUT_ERRORS):
                async with _aio.timeout(grace):
                    return await self.wait(id)
        self._signal(id, signal.SIGKILL)
        return await self.wait(id)

    def processes(self, id: ContainerId) -> Processes | None:
        """The processes of a running attempt (None once it has ended), for the node's usage
        statistics and CPU limits."""
        raw = shim.read_state(self.attempt_dir(id)) or {}
        if "exitCode" in raw or "pid" not in raw or not _alive(raw, ""):
            return None
        if _alive(raw, "shim"):
            return Processes(raw["pid"], raw["start"], raw["shimPid"], raw["shimStart"])
        return Processes(raw["pid"], raw["start"])

    def _signal(self, id: ContainerId, sig: int) -> None:
        raw = shim.read_state(self.attempt_dir(id)) or {}
        if "exitCode" in raw or "pid" not in raw or not _alive(raw, ""):
            return
        pid = raw["pid"]
        proctree.kill_group(pid, sig)
        if sig != signal.SIGKILL:  # a group the CPU throttler stopped must see the signal now
            proctree.kill_group(pid, signal.SIGCONT)
        if sig == signal.SIGKILL and not _alive(raw, "shim"):
            proctree.kill_all(proctree.descendants(pid), sig)  # no shim left to end the rest

    def _reap(self) -> None:
        with self._lock:
            done = [pid for pid, proc in self._shims.items() if proc.poll() is not None]
            for pid in done:
                del self._shims[pid]

    # -- exec --------------------------------------------------------------------------

    async def exec(
        self, uid: str, container: str, argv: Sequence[str], *, stdin: bool, tty: bool
    ) -> asyncio.subprocess.Process:
        """A new process in the running container's env, working dir and mount namespace.

        It leads its own process group; stdout and stderr are pipes (with ``tty`` the process
        gets a pty and its output, stderr included, comes on stdout), stdin a pipe if asked.
        """
        running = [
            s for s in self.containers(uid) if s.id.name == container and s.running and s.pid
        ]
        if not running:
            raise StartError(RUN_CONTAINER_ERROR, f'container "{container}" is not running')
        if not argv:
            raise StartError(CONTAINER_CANNOT_RUN, "no command to run")
        directory = self.attempt_dir(running[-1].id)
        read_end, write_end = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *shim.command(
                    self._python, "exec", directory, str(write_end), *(["--tty"] if tty else [])
                ),
                "--",
                *argv,
                pass_fds=(write_end,),
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                cwd="/",
            )
            os.close(write_end)
            write_end = -1
            problem = await asyncio.to_thread(_read_until_closed, read_end, START_TIMEOUT)
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        if problem:
            await proc.wait()
            raise StartError(CONTAINER_CANNOT_RUN, problem.decode(errors="replace"))
        return proc


# -- helpers -----------------------------------------------------------------------------


def _alive(raw: dict[str, Any], who: str) -> bool:
    """Is the shim (``who="shim"``) or the container (``""``) of a state record still there?"""
    pid, start = (
        (raw.get("shimPid"), raw.get("shimStart")) if who else (raw.get("pid"), raw.get("start"))
    )
    return bool(pid) and start is not None and proctree.alive(pid, start)


async def _exited(pid: int, start: int) -> None:
    """Until the process ends: a pidfd where the kernel has them, else polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (OSError, AttributeError):
        while proctree.alive(pid, start):  # noqa: ASYNC110 - no pidfd: nothing to wait on
            await asyncio.sleep(POLL)
        return
    try:
        if not proctree.alive(pid, start):  # the pid may already name another process
            return
        loop = asyncio.get_running_loop()
        ended = loop.create_future()
        loop.add_reader(fd, lambda: ended.done() or ended.set_result(None))
        try:
            await ended
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)


def _read_until_closed(fd: int, timeout: float) -> bytes:
    """Everything written to ``fd`` until its writers close it (blocking; run in a thread)."""
    data = b""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return data
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk


def _tail(path: str, size: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - size))
            text = f.read().decode(errors="replace").strip()
    except OSError:
        return ""
    return f": {text}" if text else ""


def _time(text: str | None) -> datetime | None:
    """An RFC 3339 time with up to nanoseconds (the shim's), to the microsecond."""
    return timefmt.parse(text)


def container_state(id: ContainerId, raw: Mapping[str, Any]) -> ContainerState:
    """A container's state from the record its runner keeps (the shim's, or an engine's),
    which both write with the same keys."""
    return ContainerState(
        id=id,
        pid=raw.get("pid"),
        started_at=_time(raw.get("startedAt")),
        finished_at=_time(raw.get("finishedAt")),
        exit_code=raw.get("exitCode"),
        reason=raw.get("reason", ""),
        message=raw.get("message", ""),
    )
