"""The values that pass between the pod side of the node (worker, podspec) and a container
runtime, as the CRI's messages do in the kubelet: a pod's sandbox and volumes, a container's
spec, id and state, and where a running attempt's processes are.

Kept apart from :mod:`.runtime` so that the modules a runtime uses (:mod:`.sandbox`, which
the shim loads outside the package) can name them without importing the runtime back;
:mod:`.runtime` re-exports them under their old names. Must not: do I/O, or import the
runtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class File:
    """One file of a configMap/secret/downwardAPI/projected volume."""

    path: str  # relative to the volume root, may contain subdirectories (items[].path)
    data: bytes
    mode: int = 0o644


@dataclass(frozen=True)
class Volume:
    name: str
    kind: Literal["empty", "host", "files"]
    host_path: str = ""
    files: tuple[File, ...] = ()


@dataclass(frozen=True)
class Mount:
    volume: str
    mount_path: str  # absolute path the process sees
    sub_path: str = ""
    read_only: bool = False


@dataclass(frozen=True)
class Sandbox:
    """One per pod."""

    uid: str
    namespace: str
    name: str
    hostname: str
    hosts: str  # full text of the pod's /etc/hosts ("" for the host's own)
    volumes: tuple[Volume, ...] = ()
    subdomain: str = ""  # spec.subdomain: with the hostname, the pod's DNS name
    engine: bool = False  # a container engine runs its containers (their images, not the host's)


@dataclass(frozen=True)
class ContainerSpec:
    name: str
    argv: tuple[str, ...]  # already $(VAR)-expanded; argv[0] looked up on the env's PATH
    env: tuple[tuple[str, str], ...]  # final environment, in order
    working_dir: str = ""
    mounts: tuple[Mount, ...] = ()
    memory_limit: int | None = None  # bytes; exceeded: whole group killed, 137, OOMKilled
    gpus: tuple[str, ...] = ()  # device indices
    init: bool = False
    # For a container engine (:mod:`~kubetrain.local.node.engine`); the process runtime runs
    # the host image and reads none of these.
    image: str = ""
    image_entrypoint: bool = False  # no command given: the image's entrypoint, argv its args
    pull_policy: str = ""  # imagePullPolicy; "": Always for :latest, else IfNotPresent
    cpu_limit: float | None = None  # cores; the process runtime's are the worker's (cpulimit)
    user: str = ""  # securityContext runAsUser[:runAsGroup]; "": the image's USER


@dataclass(frozen=True)
class ContainerId:
    pod_uid: str
    name: str
    attempt: int  # 0, 1, 2...: one per (re)start; the pod's restartCount for that container


@dataclass(frozen=True)
class ContainerState:
    id: ContainerId
    pid: int | None  # the container's main process (leader of its own process group)
    started_at: datetime | None  # UTC
    finished_at: datetime | None
    exit_code: int | None  # None while running; 128+n if killed by signal n
    reason: str = ""  # "" while running; Completed | Error | OOMKilled | ContainerCannotRun | ...
    message: str = ""

    @property
    def running(self) -> bool:
        return self.exit_code is None


@dataclass(frozen=True)
class Processes:
    """Where a running attempt's processes are: its main process, and the shim above it (the
    subreaper that adopts whatever the container orphans; None once the shim is gone), each
    with its start time (:func:`proctree.alive`)."""

    pid: int
    start: int
    shim_pid: int | None = None
    shim_start: int | None = None
