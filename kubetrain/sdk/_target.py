"""Which API server a client talks to: a cluster's kubeconfig, or the local control plane,
started when it is not running. The command line and the SDK follow the same rule:

1. a kubeconfig path given explicitly (``--kubeconfig``, ``KubernetesBackendConfig.config_file``);
2. ``KUBETRAIN_KUBECONFIG=PATH`` in the environment;
3. a context given alone: that context of ``$KUBECONFIG`` (its first file), else of
   ``~/.kube/config``, as kubectl reads them;
4. nothing: the local control plane of ``$KUBETRAIN_HOME`` (default ``~/.kubetrain``), started
   in the background when it is not running.

``KUBECONFIG`` alone does not move a client off the local control plane: a data scientist's
shell often has one set for some other cluster, and a job must not land there by surprise.

Owns: that rule and starting or waiting for the local control plane. Must not: print (the
caller says what it wants about a start), or read the environment itself: callers pass it.
Blocking (it may wait for the daemon to become ready): call it from a worker thread in async
code.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubetrain.local import daemon

ENV_KUBECONFIG: Final = "KUBETRAIN_KUBECONFIG"
POLL: Final = 0.1  # seconds between looks at a control plane that is starting


@dataclass(frozen=True)
class Local:
    """The local control plane's kubeconfig, and its status when this call started it."""

    kubeconfig: str
    started: dict[str, Any] | None = None


def default_kubeconfig(environ: Mapping[str, str]) -> str:
    """kubectl's default: the first file of ``$KUBECONFIG``, else ``~/.kube/config``."""
    listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return os.path.expanduser(listed[0])
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".kube", "config")


def kubeconfig_path(
    given: str | None, context: str | None, environ: Mapping[str, str]
) -> str | None:
    """The cluster kubeconfig the rule picks, or None for the local control plane."""
    chosen = given or environ.get(ENV_KUBECONFIG)
    if chosen:
        return os.path.expanduser(chosen)
    if context:
        return default_kubeconfig(environ)
    return None


def ensure_local(
    environ: Mapping[str, str],
    *,
    home: str | None = None,
    start: bool = True,
    timeout: float = daemon.READY_TIMEOUT,
) -> Local:
    """The local control plane of ``home`` (default from ``environ``), started when it does
    not run and ``start`` is true. Raises :class:`kubetrain.local.daemon.DaemonError` when it
    cannot be started or does not become ready."""
    config = daemon.Config(home=daemon.resolve_home(environ, home))
    paths = config.paths
    status = daemon.read_status(paths)
    if status is not None and status.get("url") and os.path.exists(paths.kubeconfig):
        return Local(paths.kubeconfig)
    if status is None:
        if not start:
            raise daemon.DaemonError(
                f"the local control plane of {paths.home} is not running; `kubetrain up` starts it"
            )
        try:
            started = daemon.start_background(config, timeout=timeout)
        except daemon.AlreadyRunning:
            pass  # another process started it a moment ago: wait for it below
        else:
            return Local(paths.kubeconfig, started)
    _wait_ready(paths, timeout)
    return Local(paths.kubeconfig)


def _wait_ready(paths: daemon.Paths, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = daemon.read_status(paths)
        if status is None:
            raise daemon.DaemonError(
                f"the local control plane stopped while starting; see {paths.log}"
            )
        if status.get("url") and daemon.probe_ready(paths, status["url"]):
            return
        time.sleep(POLL)
    raise daemon.DaemonError(
        f"the local control plane did not become ready within {timeout:.0f}s; see {paths.log}"
    )
