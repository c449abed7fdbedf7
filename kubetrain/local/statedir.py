"""A local control plane's state directory (``$KUBETRAIN_HOME``, default ``~/.kubetrain``): where
each file lies, and what a running daemon wrote about itself there.

Apart from :mod:`kubetrain.local.daemon`, which runs the control plane and lays the directory
out (its docstring lists every file), because a command such as ``kubetrain list`` only has to
find the running one's kubeconfig: with nothing here but the standard library, it does so
without importing the API server, the controllers and TLS that starting one needs.

Owns: the paths and the pid lock's reading. Must not: start, stop or write anything.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def resolve_home(environ: Mapping[str, str], given: str | None = None) -> str:
    """The state directory: ``given``, else ``$KUBETRAIN_HOME``, else ``~/.kubetrain``."""
    home = (
        given
        or environ.get("KUBETRAIN_HOME")
        or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".kubetrain")
    )
    return os.path.abspath(os.path.expanduser(home))


@dataclass(frozen=True)
class Paths:
    """Where a control plane keeps its state."""

    home: str

    @property
    def kubeconfig(self) -> str:
        return os.path.join(self.home, "kubeconfig")

    @property
    def database(self) -> str:
        return os.path.join(self.home, "state.db")

    @property
    def pki(self) -> str:
        return os.path.join(self.home, "pki")

    @property
    def pid(self) -> str:
        return os.path.join(self.home, "kubetrain.pid")

    @property
    def status(self) -> str:
        return os.path.join(self.home, "status.json")

    @property
    def port(self) -> str:
        return os.path.join(self.home, "port")

    @property
    def volumes(self) -> str:
        return os.path.join(self.home, "volumes")

    @property
    def log(self) -> str:
        return os.path.join(self.home, "logs", "daemon.log")


def read_pid(paths: Paths) -> int | None:
    """The pid the pid file names, whether or not that process still runs."""
    try:
        with open(paths.pid, encoding="utf-8") as f:
            return int(f.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def running_pid(paths: Paths) -> int | None:
    """The daemon's pid if one holds the lock, else None."""
    if not os.path.exists(paths.pid):
        return None
    fd = os.open(paths.pid, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return read_pid(paths)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def read_status(paths: Paths) -> dict[str, Any] | None:
    """What the running daemon wrote about itself, or None if none runs."""
    pid = running_pid(paths)
    if pid is None:
        return None
    try:
        with open(paths.status, encoding="utf-8") as f:
            status = json.load(f)
    except (OSError, ValueError):
        return {"pid": pid, "home": paths.home, "starting": True}
    if status.get("pid") != pid:
        return {"pid": pid, "home": paths.home, "starting": True}
    return status
