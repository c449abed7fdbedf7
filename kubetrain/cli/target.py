"""Which API server and namespace a command talks to, and the client for it.

The rule, in order:

1. ``--kubeconfig PATH`` (with ``--context NAME`` to pick a context): that cluster.
2. ``KUBETRAIN_KUBECONFIG=PATH`` in the environment: the same, for a whole shell session.
3. ``--context NAME`` alone: that context of ``$KUBECONFIG`` (its first file), else of
   ``~/.kube/config``, as kubectl reads them.
4. Nothing: the local control plane of ``$KUBETRAIN_HOME`` (default ``~/.kubetrain``),
   started in the background when it is not running, with one line on stderr saying so.

``KUBECONFIG`` alone does not move commands off the local control plane: a data scientist's
shell often has one set for some other cluster, and a job must not land there by surprise.

The namespace is ``-n/--namespace``, else the context's namespace, else ``default``;
``-A/--all-namespaces`` means every namespace where a command lists.

Owns: the target options of every command that talks to an API server, and turning them into
a :class:`Target`. Must not: print anything but the one start-up line, or know about jobs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

from kubetrain import kube
from kubetrain.cli.errors import UserError
from kubetrain.local import statedir

ENV_KUBECONFIG = "KUBETRAIN_KUBECONFIG"
USER_AGENT = "kubetrain-cli"


@dataclass
class Target:
    """A connected client, the namespace commands act in, and where it points (for messages)."""

    client: kube.Client
    namespace: str
    all_namespaces: bool
    local: bool  # the local control plane, found or started by this command
    kubeconfig: str

    @property
    def list_namespace(self) -> str | None:
        """The namespace to list in: None (every one) with ``-A``."""
        return None if self.all_namespaces else self.namespace


def add_arguments(parser: argparse.ArgumentParser, *, all_namespaces: bool = False) -> None:
    """The target options; ``all_namespaces`` adds ``-A`` for commands that list."""
    group = parser.add_argument_group("target")
    group.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help=f"kubeconfig of the cluster to use (default: ${ENV_KUBECONFIG}, else the local "
        "control plane, started if needed)",
    )
    group.add_argument("--context", help="context of the kubeconfig to use")
    group.add_argument("-n", "--namespace", help="namespace (default: the context's, else default)")
    if all_namespaces:
        group.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show tracebacks of errors",
    )


def kubeconfig_path(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    """The kubeconfig the options and environment name, or None for the local control plane."""
    given = getattr(args, "kubeconfig", None) or environ.get(ENV_KUBECONFIG)
    if given:
        return os.path.expanduser(given)
    if getattr(args, "context", None):
        listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        home = environ.get("HOME") or os.path.expanduser("~")
        return os.path.expanduser(listed[0]) if listed else os.path.join(home, ".kube", "config")
    return None


@contextlib.asynccontextmanager
async def connect(args: argparse.Namespace) -> AsyncIterator[Target]:
    """The target the options name, with an open client (closed on exit)."""
    path = kubeconfig_path(args, os.environ)
    local = path is None
    if path is None:
        path = await asyncio.to_thread(ensure_local, os.environ)
    cluster = await kube.from_kubeconfig(path, context=getattr(args, "context", None))
    async with kube.Client(cluster, user_agent=USER_AGENT) as client:
        yield Target(
            client=client,
            namespace=getattr(args, "namespace", None) or cluster.namespace,
            all_namespaces=bool(getattr(args, "all_namespaces", False)),
            local=local,
            kubeconfig=path,
        )


def ensure_local(environ: Mapping[str, str], *, timeout: float | None = None) -> str:
    """The local control plane's kubeconfig, starting the control plane if it does not run
    (waiting ``timeout`` seconds, default the daemon's, for it to become ready).

    Blocking (it may wait for the daemon to become ready): call it in a worker thread.
    """
    paths = statedir.Paths(statedir.resolve_home(environ))
    status = statedir.read_status(paths)
    if status is not None and status.get("url") and os.path.exists(paths.kubeconfig):
        return paths.kubeconfig
    # Starting or waiting for one takes the control plane's own code, which a command against
    # a running one never imports.
    from kubetrain.local import daemon

    timeout = daemon.READY_TIMEOUT if timeout is None else timeout
    config = daemon.Config(home=paths.home, workloads=True)
    if status is None:
        try:
            started = daemon.start_background(config, timeout=timeout)
        except daemon.AlreadyRunning:
            pass  # another command started it a moment ago: wait for it below
        else:
            print(
                f"kubetrain: started the local control plane at {started['url']} "
                f"(pid {started['pid']}); `kubetrain down` stops it",
                file=sys.stderr,
            )
            return paths.kubeconfig
    _wait_ready(paths, timeout)
    return paths.kubeconfig


def _wait_ready(paths: statedir.Paths, timeout: float) -> None:
    from kubetrain.local import daemon

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = statedir.read_status(paths)
        if status is None:
            raise UserError(f"the local control plane stopped while starting; see {paths.log}")
        if status.get("url") and daemon.probe_ready(paths, status["url"]):
            return
        time.sleep(0.1)
    raise UserError(
        f"the local control plane did not become ready within {timeout:.0f}s; see {paths.log}"
    )
