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

A mount point or working directory that does not exist is never made on the host: a
:class:`View` makes it in a *layer* over its nearest existing directory, seen only in the
namespace (the class says how). So the host keeps no trace of a pod's mounts (an empty
``/var/run/secrets/kubernetes.io/serviceaccount`` would tell in-cluster detectors that the
host is a pod). Without a namespace (``isolation none``) nothing is made: a mount is only used
at its own path and a missing working directory refuses the container.

Must not: import anything outside the standard library, or anything slow (the shim imports this
module as a plain sibling for a fast start; ``ctypes`` is loaded only when a namespace is
made), or know about the Kubernetes API: it gets resolved volumes and mounts. Failures are
:class:`SandboxError` with a message that says what could not be done; the runtime turns them
into its ``StartError``.
"""

from __future__ import annotations

import os
import stat  # os imports it already: free

TYPE_CHECKING = False  # typing itself takes ~8 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from kubetrain.local.node import cri

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


def pod_uids(root: str) -> list[str]:
    """The pods that have a directory under ``root``, by uid."""
    try:
        return sorted(os.listdir(os.path.join(root, PODS)))
    except FileNotFoundError:
        return []


def attempts(root: str, uids: Iterable[str], folder: str) -> list[tuple[str, str, int]]:
    """Every container attempt kept under ``folder`` of the pods' directories, as (pod uid,
    container name, attempt), oldest attempt first per container: the runtime and a
    container engine keep theirs in folders of their own, laid out alike."""
    found = []
    for uid in uids:
        base = os.path.join(pod_dir(root, uid), folder)
        try:
            names = sorted(os.listdir(base))
        except FileNotFoundError:
            continue
        for name in names:
            try:
                numbers = sorted(
                    int(a) for a in os.listdir(os.path.join(base, name)) if a.isdigit()
                )
            except FileNotFoundError:
                continue  # removed while we looked
            found += [(uid, name, n) for n in numbers]
    return found


def hosts_path(root: str, uid: str) -> str:
    return os.path.join(pod_dir(root, uid), HOSTS_FILE)


def volume_dir(root: str, uid: str, name: str) -> str:
    return os.path.join(pod_dir(root, uid), VOLUMES, name)


def prepared(root: str, uid: str) -> bool:
    return os.path.exists(os.path.join(pod_dir(root, uid), SANDBOX_FILE))


def materialise(root: str, sandbox: cri.Sandbox) -> None:
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


def write_files(directory: str, files: Iterable[cri.File]) -> None:
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
    root: str, sandbox: cri.Sandbox, mounts: Sequence[cri.Mount]
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


def mount_all(mounts: Sequence[dict[str, Any]], hosts: str, view: View) -> None:
    """Bind each mount at its target, shallow paths first, then the hosts file on /etc/hosts."""
    ordered = sorted(mounts, key=lambda m: m["target"].rstrip("/").count("/"))
    for m in ordered:
        view.ensure(m["target"], directory=os.path.isdir(m["source"]))
        bind(m["source"], m["target"], read_only=m["readOnly"])
        view.volume(m["target"])
    if hosts and not any(m["target"] == ETC_HOSTS for m in mounts):
        if not os.path.exists(ETC_HOSTS):
            raise SandboxError("cannot bind the pod's hosts file: this host has no /etc/hosts")
        bind(hosts, ETC_HOSTS, read_only=False)


def bind(source: str, target: str, *, read_only: bool) -> None:
    """Bind ``source`` (with what is mounted under it) at ``target``, which must exist."""
    libc = _syscalls()
    if not os.path.exists(source):
        raise SandboxError(f"cannot mount {source} at {target}: the source does not exist")
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


class View:
    """What a container's mount namespace shows that the host does not have: the paths it was
    asked for that do not exist here (a mount point, a working directory).

    Such a path is never made on the host. Its nearest existing directory gets a *layer*: an
    empty directory of the node's (under ``layers``, in the attempt's directory) bound over it
    in the namespace, holding the directory's own entries bound back one by one (with what is
    mounted under them), so the directory shows what it showed, and the missing path is made
    inside the layer. The root directory is layered by making the layer the namespace's root
    (``pivot_root``), so ``exec`` (which enters the namespace) sees it too. What a container
    writes directly into a layered directory lands in the layer, as in a container's own
    filesystem, and goes with the pod's directory.
    """

    def __init__(self, layers: str) -> None:
        self.layers = layers  # "" where no layer may be made (the probe)
        self.made: set[str] = set()  # directories that are a layer or were made in one
        self.volumes: list[str] = []  # mount targets: a path under one is the volume's own
        self.count = 0  # layers laid so far

    def volume(self, target: str) -> None:
        self.volumes.append(os.path.realpath(target))

    def ensure(self, path: str, *, directory: bool) -> None:
        """Make ``path`` (a directory, or an empty file) exist in the namespace only."""
        if os.path.lexists(path):
            return
        missing: list[str] = []
        existing = path
        while not os.path.lexists(existing):
            existing, name = os.path.split(existing)
            missing.append(name)
        base = os.path.realpath(existing)
        if not os.path.isdir(base):
            raise SandboxError(f"cannot create {path}: {existing} is not a directory")
        if not self._writable(base):
            self._lay(base)
        current = base
        try:
            for name in reversed(missing[1:]):
                current = os.path.join(current, name)
                _directory(current)
                self.made.add(current)
            current = os.path.join(current, missing[0])
            if directory:
                _directory(current)
                self.made.add(current)
            else:
                os.close(os.open(current, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except OSError as e:
            raise SandboxError(f"cannot create {path} in the pod's view: {e.strerror}") from e

    def _writable(self, directory: str) -> bool:
        """Whether a new entry in ``directory`` stays out of the host's own directories: one
        made in a layer, or inside a volume (kubelet makes such mount points in the volume)."""
        return directory in self.made or any(
            directory == v or directory.startswith(v.rstrip("/") + "/") for v in self.volumes
        )

    def _lay(self, directory: str) -> None:
        if not self.layers:
            raise SandboxError(f"cannot create a path in {directory}: no layer directory given")
        libc = _syscalls()
        st = os.stat(directory)
        layer = os.path.join(self.layers, str(self.count))
        self.count += 1
        try:
            os.makedirs(self.layers, exist_ok=True)
            os.mkdir(layer)
            os.chmod(layer, st.st_mode & 0o7777)
            if os.geteuid() == 0:
                os.chown(layer, st.st_uid, st.st_gid)
            names = sorted(os.listdir(directory))
            original = os.open(directory, os.O_PATH | os.O_DIRECTORY)
        except OSError as e:
            raise SandboxError(f"cannot lay a layer over {directory}: {e}") from e
        root = directory == "/"
        try:
            # over the directory itself; the root is layered at its new place and then pivoted
            target = layer if root else directory
            _check(
                libc.mount(layer.encode(), target.encode(), None, MS_BIND, None),
                f"cannot lay a layer over {directory}",
            )
            for name in names:
                _bind_back(f"/proc/self/fd/{original}/{name}", os.path.join(target, name))
        finally:
            os.close(original)
        if root:
            _pivot(layer)
        self.made.add(directory)


def _directory(path: str) -> None:
    os.mkdir(path)
    os.chmod(path, 0o755)  # as runc makes a missing mount point, whatever the node's umask


def _bind_back(source: str, target: str) -> None:
    """One entry of a layered directory, shown again at its place in the layer."""
    mode = os.lstat(source).st_mode
    try:
        if stat.S_ISLNK(mode):
            os.symlink(os.readlink(source), target)
            return
        if stat.S_ISDIR(mode):
            os.mkdir(target, 0o700)
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError as e:
        raise SandboxError(f"cannot show {target} in the layer over its directory: {e}") from e
    _check(
        _syscalls().mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None),
        f"cannot show {target} in the layer over its directory",
    )


# pivot_root(2) has no libc wrapper: its number on each architecture the node runs on
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
MNT_DETACH = 2
OLD_ROOT = ".old-root"


def _pivot(layer: str) -> None:
    """Make ``layer`` (a mount holding the old root's entries) the namespace's root."""
    libc = _syscalls()
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise SandboxError(
            f"cannot make a root of the pod's own on {os.uname().machine}: "
            "a path it needs at / does not exist on this host"
        )
    old = os.path.join(layer, OLD_ROOT)
    os.mkdir(old, 0o700)
    _check(libc.syscall(number, layer.encode(), old.encode()), "cannot pivot to the pod's root")
    os.chdir("/")
    _check(libc.umount2(f"/{OLD_ROOT}".encode(), MNT_DETACH), "cannot detach the old root")
    os.rmdir(f"/{OLD_ROOT}")


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
