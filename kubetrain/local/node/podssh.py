"""``ssh`` to a pod of this node: the command runs inside that pod, as its sshd would run it.

An MPI launcher (a Trainer v2 TrainJob on an MPI runtime) starts its ranks with ``mpirun``,
which reaches every host of its hostfile by ``ssh <host> orted ...``; on a cluster each host
is a pod that runs sshd. On this node every pod shares one host, its network and its address,
so two things that a cluster gets for free are missing, and the node supplies them to every
container through its environment (:data:`ENVIRONMENT`; a pod's own env wins):

- **distinct hosts.** Open MPI takes a hostfile name for this very host when the name resolves
  to one of the host's interface addresses, and every pod name does here: the launcher would
  fold all the lines into one host and stop ("multiple definitions of the slot count").
  ``OMPI_MCA_if_base_do_not_resolve`` tells it not to judge hosts by their addresses, so each
  name is a host of its own, reached through the rsh agent (the launcher's own name too, which
  then runs its ranks in its own pod);
- **sshd in the pods.** ``OMPI_MCA_plm_rsh_agent`` names this program, which takes ssh's
  command line, finds the pod that ``<host>`` names in the caller's namespace (its hostname,
  or ``hostname.subdomain[.namespace[.svc[.<domain>]]]`` as the pod's hosts file lists it)
  and replaces itself with the shim's ``exec`` in that pod's running container (``node``
  first, the trainer's), so the command gets that pod's hostname, mounts and env.

The caller's pod is the one whose container shares the caller's mount namespace. The SSH keys
of the Secret stay mounted as upstream has them; nothing checks them, as nothing separates the
pods of one host anyway. Joining another pod's namespaces needs the node to run as root: with
user namespaces the shim says it cannot enter them.

Owns: reading ssh's command line, and finding a pod and its running container on disk. Must
not: import anything slow (it runs once per host at every mpirun), or write anything.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kubetrain.local.node import proctree, sandbox, shim

PROGRAM = "kubetrain-pod-ssh"
CONTAINERS = "containers"  # runtime.CONTAINERS: <pod dir>/containers/<name>/<attempt>/
PREFERRED_CONTAINER = "node"
EXIT_SSH_ERROR = 255  # what ssh exits with when it could not run the command at all
# ssh's options that take a value (ssh(1): -B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q
# -R -S -W -w); the others are flags.
WITH_VALUE = frozenset("BbcDEeFIiJLlmOopQRSWw")


def environment(program: str) -> tuple[tuple[str, str], ...]:
    """What every container gets so that Open MPI reaches pods through ``program``."""
    return (
        ("OMPI_MCA_if_base_do_not_resolve", "1"),
        ("OMPI_MCA_plm_rsh_agent", program),
    )


class Refused(Exception):
    """ssh's command line or its host cannot be served; the message says why."""


@dataclass(frozen=True)
class Call:
    host: str
    command: str  # ssh joins the remote arguments with spaces; the remote shell splits them


def parse(argv: Sequence[str]) -> Call:
    """ssh's ``[options] [user@]host command...``; options are accepted and ignored."""
    args = list(argv)
    while args and args[0].startswith("-") and args[0] != "-":
        option = args.pop(0)
        if option == "--":
            break
        letters = option[1:]
        for i, letter in enumerate(letters):
            if letter in WITH_VALUE:
                if i == len(letters) - 1:  # the value is the next argument
                    if not args:
                        raise Refused(f"option -{letter} needs a value")
                    args.pop(0)
                break  # the rest of this argument is the value
    if not args:
        raise Refused("no host given")
    host = args.pop(0).rsplit("@", 1)[-1]
    if not args:
        raise Refused(f"{host}: no command given (only commands run in pods, not logins)")
    return Call(host, " ".join(args))


@dataclass(frozen=True)
class Pod:
    uid: str
    namespace: str
    hostname: str
    subdomain: str

    def answers_to(self, host: str) -> bool:
        """Whether ``host`` is one of the names the pod's hosts file gives it."""
        if host == self.hostname:
            return True
        if not self.subdomain:
            return False
        fqdn = f"{self.hostname}.{self.subdomain}"
        names = (fqdn, f"{fqdn}.{self.namespace}", f"{fqdn}.{self.namespace}.svc")
        return host in names or host.startswith(f"{fqdn}.{self.namespace}.svc.")


@dataclass(frozen=True)
class Container:
    pod: Pod
    name: str
    directory: str  # the running attempt's
    pid: int


def pods(root: str) -> list[Pod]:
    base = os.path.join(root, sandbox.PODS)
    try:
        uids = sorted(os.listdir(base))
    except FileNotFoundError:
        return []
    found = []
    for uid in uids:
        try:
            with open(os.path.join(base, uid, sandbox.SANDBOX_FILE), encoding="utf-8") as f:
                about = json.load(f)
        except (FileNotFoundError, ValueError):
            continue  # being made or removed
        found.append(
            Pod(
                uid,
                str(about.get("namespace") or ""),
                str(about.get("hostname") or ""),
                str(about.get("subdomain") or ""),
            )
        )
    return found


def running(root: str, pod: Pod) -> list[Container]:
    """The pod's running containers (their latest attempts), by name."""
    base = os.path.join(sandbox.pod_dir(root, pod.uid), CONTAINERS)
    try:
        names = sorted(os.listdir(base))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        try:
            attempts = [int(a) for a in os.listdir(os.path.join(base, name)) if a.isdigit()]
        except FileNotFoundError:
            continue
        if not attempts:
            continue
        directory = os.path.join(base, name, str(max(attempts)))
        state = shim.read_state(directory) or {}
        pid, start = state.get("pid"), state.get("start")
        if pid and "exitCode" not in state and proctree.alive(pid, start):
            found.append(Container(pod, name, directory, int(pid)))
    return found


def _mount_namespace(pid: int | str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/mnt").st_ino
    except OSError:
        return None


def caller(root: str, everyone: Iterable[Pod]) -> Pod:
    """The pod whose container this process runs in (it shares that mount namespace)."""
    mine = _mount_namespace("self")
    for pod in everyone:
        if any(_mount_namespace(c.pid) == mine for c in running(root, pod)):
            return pod
    raise Refused("not run in a pod of this node (its mount namespace is no container's)")


def target(root: str, host: str) -> Container:
    """The running container that ``ssh host`` reaches, in the caller's namespace."""
    everyone = pods(root)
    namespace = caller(root, everyone).namespace
    named = [p for p in everyone if p.namespace == namespace and p.answers_to(host)]
    if not named:
        raise Refused(f"{host}: no pod of namespace {namespace} has this name")
    containers = running(root, named[0])
    if not containers:
        raise Refused(f"{host}: pod has no running container")
    preferred = [c for c in containers if c.name == PREFERRED_CONTAINER]
    return (preferred or containers)[0]


def main(root: str, python: str, argv: Sequence[str]) -> int:
    """Become the shim's ``exec`` of ssh's command in the pod ``argv`` names; or say why not."""
    try:
        call = parse(argv)
        container = target(root, call.host)
    except Refused as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return EXIT_SSH_ERROR
    notify = os.dup(2)  # the shim reports a failed exec here, then closes it at exec
    os.set_inheritable(notify, True)
    command = shim.command(python, "exec", container.directory, str(notify))
    os.execv(python, [*command, "--", "/bin/sh", "-c", call.command])
    return EXIT_SSH_ERROR  # not reached
