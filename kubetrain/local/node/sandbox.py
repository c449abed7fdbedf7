"""A pod's world on this node: its directory, volumes and /etc/hosts, and the private mount
namespace that shows them to its processes at the paths the pod spec names.

Two halves, one module, because both must agree on the layout:

- **On the host** (called by the runtime): ``<root>/pods/<uid>/`` holds ``sandbox.json``
  (who the pod is, for a person reading the node's disk), ``hosts`` (the pod's /etc/hosts,
  rewritten in place so that a bind mount of it sees every change) and ``volumes/<name>/`` for
  ``empty`` and ``files`` volumes. ``files`` volumes (configMap, secret, downwardAPI,
  projected) are rewritten file by file (temporary file, then rename) when their content
  changes, and files no longer listed are removed. A ``host`` volume whose path does not exist
  is created as a directory, as containerd does for a missing hostPath.
- **Inside the shim** (before the container's process starts): a private mount namespace
  (``unshare(CLONE_NEWNS)``, plus ``CLONE_NEWUSER`` with an identity uid/gid map when not
  root), ``/`` made recursively private so nothing leaks back to the host, a UTS namespace with
  the pod's hostname, each mount bind-mounted at its ``mount_path`` (read-only by a remount when
  asked), then the pod's hosts file bind-mounted over ``/etc/hosts`` (unless a mount targets
  /etc/hosts itself, as kubelet leaves such a pod's file alone). Each container gets its own
  namespace, as in Kubernetes, built from the same pod directory; ``exec`` joins it.

A mount point that does not exist yet is created first (a directory, or an empty file when
the source is a file). The namespace is private but the filesystem is the host's, so **this
leaves an empty directory (or file) at that path on the host** once the pod is gone.

Must not: import anything outside the standard library, or anything slow (the shim imports this
module as a plain sibling for a fast start; ``ctypes`` is loaded only when a namespace is
made), or know about the Kubernetes API: it gets resolved volumes and mounts. Failures are
:class:`SandboxError` with a message that says what could not be done; the runtime turns them
into its ``StartError``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing itself takes ~8 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from kubetrain.local.node import runtime

PODS = "pods"
SANDBOX_FILE = "sandbox.json"
HOSTS_FILE = "hosts"
VOLUMES = "volumes"
ETC_HOSTS = "/etc/hosts"

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
# Flags a read-only remount of a bind must keep (a user namespace may not drop locked ones):
# statvfs's ST_* bit → mount's MS_* bit.
KEPT_FLAGS = ((0x2, 0x2), (0x4, 0x4), (0x8, 0x8), (0x400, 0x400), (0x800, 0x800), (0x1000, 1 << 21))


class SandboxError(Exception):
    """Something the pod needs could not be set up; the message says what and why."""


# -- on the host -------------------------------------------------------------------------


def pod_dir(root: str, uid: str) -> str:
    return os.path.join(root, PODS, uid)


def hosts_path(root: str, uid: str) -> str:
    return os.path.join(pod_dir(root, uid), HOSTS_FILE)


def volume_dir(root: str, uid: str, name: str) -> str:
    return os.path.join(pod_dir(root, uid), VOLUMES, name)


def prepared(root: str, uid: str) -> bool:
    return os.path.exists(os.path.join(pod_dir(root, uid), SANDBOX_FILE))


def materialise(root: str, sandbox: runtime.Sandbox) -> None:
    """Create or refresh the pod's directory, hosts file and volumes (idempotent)."""
    import json  # not at the top: the shim never needs it

    base = pod_dir(root, sandbox.uid)
    os.makedirs(os.path.join(base, VOLUMES), exist_ok=True)
    write_hosts(os.path.join(base, HOSTS_FILE), sandbox.hosts)
    for volume in sandbox.volumes:
        _check_name("volume", volume.name)
        if volume.kind == "empty":
            os.makedirs(volume_dir(root, sandbox.uid, volume.name), exist_ok=True)
        elif volume.kind == "host":
            _host_volume(volume.name, volume.host_path)
        elif volume.kind == "files":
            write_files(volume_dir(root, sandbox.uid, volume.name), volume.files)
        else:
            raise SandboxError(
                f'volume "{volume.name}": unknown kind {volume.kind!r}; '
                f"accepted: empty, host, files"
            )
    about = {
        "uid": sandbox.uid,
        "namespace": sandbox.namespace,
        "name": sandbox.name,
        "hostname": sandbox.hostname,
        "subdomain": sandbox.subdomain,  # with the hostname, what ssh to a pod looks for
        "volumes": [
            {"name": v.name, "kind": v.kind, "hostPath": v.host_path} for v in sandbox.volumes
        ],
    }
    write_atomic(os.path.join(base, SANDBOX_FILE), json.dumps(about, indent=1).encode(), 0o600)


def _host_volume(name: str, path: str) -> None:
    if not os.path.isabs(path):
        raise SandboxError(f'volume "{name}": host path {path!r} is not absolute')
    if os.path.exists(path):
        return
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise SandboxError(
            f'volume "{name}": host path {path} does not exist and cannot be created: {e.strerror}'
        ) from e


def update_hosts(root: str, uid: str, text: str) -> None:
    """The pod's hosts file rewritten; a pod whose directory is gone is left alone."""
    if os.path.isdir(pod_dir(root, uid)):
        write_hosts(hosts_path(root, uid), text)


def write_hosts(path: str, text: str) -> None:
    """Rewrite the hosts file in place: same inode, so bind mounts of it see the new text.

    The new text is written over the old one and the file then cut to its length, so a reader
    sees either the old or the new names except, for an instant, when the file shrinks.
    """
    data = text.encode()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.pread(fd, len(data) + 1, 0) == data:
            return
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes, mode: int) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_files(directory: str, files: Iterable[runtime.File]) -> None:
    """Make ``directory`` hold exactly ``files``: changed ones renamed into place, others gone."""
    os.makedirs(directory, exist_ok=True)
    wanted: set[str] = set()
    for f in files:
        rel = _relative(f"file {f.path!r}", f.path)
        wanted.add(rel)
        path = os.path.join(directory, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            st = os.stat(path)
            with open(path, "rb") as current:
                same = current.read() == f.data and (st.st_mode & 0o7777) == f.mode
        except FileNotFoundError:
            same = False
        if not same:
            write_atomic(path, f.data, f.mode)
    for dirpath, dirnames, filenames in os.walk(directory, topdown=False):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.relpath(path, directory) not in wanted:
                os.unlink(path)
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if not os.listdir(path):
                os.rmdir(path)


def resolve_mounts(
    root: str, sandbox: runtime.Sandbox, mounts: Sequence[runtime.Mount]
) -> list[dict[str, Any]]:
    """Each mount as ``{"source", "target", "readOnly"}`` host paths, sub paths made.

    ``files`` volumes are always read-only, as Kubernetes mounts configMap, secret,
    downwardAPI and projected volumes.
    """
    volumes = {v.name: v for v in sandbox.volumes}
    resolved = []
    for m in mounts:
        volume = volumes.get(m.volume)
        if volume is None:
            raise SandboxError(
                f'mount at {m.mount_path}: volume "{m.volume}" is not a volume of the pod; '
                f"accepted: {', '.join(sorted(volumes)) or 'none'}"
            )
        if not os.path.isabs(m.mount_path):
            raise SandboxError(
                f'mount of volume "{m.volume}": mountPath {m.mount_path!r} is not absolute'
            )
        base = (
            volume.host_path
            if volume.kind == "host"
            else volume_dir(root, sandbox.uid, volume.name)
        )
        source = base
        if m.sub_path:
            source = os.path.join(
                base, _relative(f'mount of volume "{m.volume}": subPath', m.sub_path)
            )
            if not os.path.lexists(source):
                if volume.kind == "files":
                    raise SandboxError(
                        f'mount of volume "{m.volume}": subPath {m.sub_path!r} is not in the volume'
                    )
                os.makedirs(source, exist_ok=True)  # as kubelet makes a missing subPath
        resolved.append(
            {
                "source": source,
                "target": os.path.normpath(m.mount_path),
                "readOnly": m.read_only or volume.kind == "files",
            }
        )
    return resolved


def _relative(what: str, path: str) -> str:
    norm = os.path.normpath(path)
    if not path or os.path.isabs(path) or norm == ".." or norm.startswith("../") or norm == ".":
        raise SandboxError(f"{what} must be a relative path inside the volume, not {path!r}")
    return norm


def _check_name(what: str, name: str) -> None:
    if not name or "/" in name or name in (".", ".."):
        raise SandboxError(f"{what} name {name!r} is not a valid name")


def remove(root: str, uid: str) -> None:
    """Delete the pod's directory. Volumes of kind host live elsewhere and are left alone."""
    import shutil  # not at the top: the shim never needs it

    shutil.rmtree(pod_dir(root, uid), ignore_errors=True)


def host_hosts() -> str:
    try:
        with open(ETC_HOSTS) as f:
            return f.read()
    except OSError:
        return ""


# -- inside the shim ---------------------------------------------------------------------

_libc: Any = None


def _syscalls() -> Any:
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        err = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(err)}")


def enter(*, userns: bool, hostname: str) -> None:
    """Move this (single-threaded) process into a new private mount and UTS namespace."""
    libc = _syscalls()
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWUTS | (CLONE_NEWUSER if userns else 0)
    _check(libc.unshare(flags), "cannot make a private mount namespace (unshare)")
    if userns:
        for path, text in (
            ("/proc/self/setgroups", "deny"),
            ("/proc/self/uid_map", f"{uid} {uid} 1"),
            ("/proc/self/gid_map", f"{gid} {gid} 1"),
        ):
            try:
                with open(path, "w") as f:
                    f.write(text)
            except OSError as e:
                raise SandboxError(f"cannot map ids in the user namespace ({path}): {e}") from e
    _check(
        libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None),
        "cannot make / private in the pod's mount namespace",
    )
    if hostname:
        name = hostname.encode()
        _check(libc.sethostname(name, len(name)), f"cannot set the hostname {hostname!r}")


def mount_all(mounts: Sequence[dict[str, Any]], hosts: str) -> None:
    """Bind each mount at its target, shallow paths first, then the hosts file on /etc/hosts."""
    ordered = sorted(mounts, key=lambda m: m["target"].rstrip("/").count("/"))
    for m in ordered:
        bind(m["source"], m["target"], read_only=m["readOnly"])
    if hosts and not any(m["target"] == ETC_HOSTS for m in mounts):
        if not os.path.exists(ETC_HOSTS):
            raise SandboxError("cannot bind the pod's hosts file: this host has no /etc/hosts")
        bind(hosts, ETC_HOSTS, read_only=False)


def bind(source: str, target: str, *, read_only: bool) -> None:
    libc = _syscalls()
    if not os.path.exists(source):
        raise SandboxError(f"cannot mount {source} at {target}: the source does not exist")
    _mount_point(target, directory=os.path.isdir(source))
    _check(
        libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None),
        f"cannot bind-mount {source} at {target}",
    )
    if read_only:
        st = os.statvfs(target)
        kept = 0
        for st_bit, ms_bit in KEPT_FLAGS:
            if st.f_flag & st_bit:
                kept |= ms_bit
        _check(
            libc.mount(None, target.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept, None),
            f"cannot make the mount at {target} read-only",
        )


def _mount_point(target: str, *, directory: bool) -> None:
    if os.path.lexists(target):
        return
    try:
        if directory:
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError as e:
        raise SandboxError(
            f"cannot create the mount point {target} on this host: {e.strerror}"
        ) from e


def join(pid: int) -> None:
    """Enter the user (if another), mount and UTS namespaces of process ``pid``."""
    libc = _syscalls()
    for kind, flag in (("user", CLONE_NEWUSER), ("mnt", CLONE_NEWNS), ("uts", CLONE_NEWUTS)):
        path = f"/proc/{pid}/ns/{kind}"
        try:
            if os.stat(path).st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino:
                continue
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise SandboxError(f"cannot open the container's {kind} namespace: {e.strerror}") from e
        try:
            _check(libc.setns(fd, flag), f"cannot enter the container's {kind} namespace")
        finally:
            os.close(fd)
