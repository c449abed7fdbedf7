"""The shim: one small process per container attempt that starts the container's process, stays
with it until it ends, and writes down how it ended. It is to the node agent what
containerd-shim and conmon are to a kubelet.

Why a separate process: the agent may crash, be upgraded or be killed with -9; the containers
must go on running, their output must still be captured, their memory limit still enforced,
and their exit status still recorded where a restarted agent finds it. So the shim runs in its
own session, knows nothing of the agent, and talks to it only through the attempt directory::

    <root>/pods/<uid>/containers/<name>/<attempt>/
        spec.marshal what to run (written by the runtime; mode 0600: it holds the env)
        state.json   written by the shim, atomically (temp file + rename), three times:
                     {shimPid, shimStart}, then + {pid, start, startedAt} once the command was
                     exec'd, then + {exitCode, reason, message, finishedAt}
        log, log.1   the CRI-format log ("<RFC3339Nano> stdout|stderr F|P <text>"), rotated
                     when the current file passes half of logMaxBytes (0600: a log may print
                     the Secrets the container was given; so is state.json)
        shim.err     the shim's own stderr (a traceback, should the shim itself fail)
        layers/      the directories laid over host directories in the container's namespace,
                     holding the mount points and working directory the host lacks

``start`` (pid's start time in clock ticks) guards against pid reuse: anyone who signals the
container checks that ``/proc/<pid>/stat`` still names the same process.

What the shim does, in order: make itself a child subreaper (orphans of the container's tree
come back to it, so nothing escapes the kill at the end or the memory count), enter a private
mount and UTS namespace with the pod's mounts and /etc/hosts when asked
(:mod:`~kubetrain.local.node.sandbox`), look ``argv[0]`` up on the container's ``PATH``, fork,
and in the child start a new session (the container's process leads its own process group, which
the agent signals to stop it) and exec. Then it pumps stdout and stderr into the log, samples
memory every 100 ms when a limit is set and no cgroup enforces it
(:mod:`~kubetrain.local.node.memory`), and reaps.
When the main process has exited, whatever is left of its tree is killed (as the end of a
container's PID namespace does), output is drained, and the exit state is written.

Exit codes and reasons: the process's own code (reason ``Completed`` for 0, else ``Error``);
128+n when killed by signal n (``Error``); ``OOMKilled`` (137) when the memory limit was passed;
and when the process could not be started at all, reason ``ContainerCannotRun`` with 127 (command
not found), 126 (found but not executable) or 128 (anything else: a mount, the working directory)
and a message saying exactly what.

Two more modes serve the runtime: ``exec`` (a process in a running container's namespaces, env
and working directory, with a pty when asked) and ``probe`` (can this host make the namespace?).

Must not: import anything outside the standard library, or any module of the kubetrain package
other than its sibling helpers, or anything slow. Its start time is part of every pod's start
latency, so the runtime starts it as ``python -I -S -c BOOT`` (:func:`command`): no site-packages,
none of the package's ``__init__`` modules, cached bytecode, and neither ``typing``, ``json``,
``re`` nor ``enum`` on the way (the spec is read with marshal, the state written by
:func:`dumps`). That is about 5 ms over a bare interpreter's start. ``python shim.py`` and
``python -m kubetrain.local.node.shim`` work too, more slowly.
"""

from __future__ import annotations

import _signal as signal  # the C core of signal: the module adds enums, ~2 ms more to start
import marshal
import os
import selectors
import sys
import time

TYPE_CHECKING = False  # typing itself takes ~8 ms to import
if TYPE_CHECKING:
    from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if __package__:
    from kubetrain.local.node import memory, proctree, sandbox
else:  # loaded outside the package (see BOOT): the sibling helpers likewise
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import memory  # type: ignore[no-redef]
    import proctree  # type: ignore[no-redef]
    import sandbox  # type: ignore[no-redef]

# How the runtime starts the shim: a module import, so that its bytecode is cached (a script
# run by path is compiled anew each time), with sys.argv = ["-c", HERE, mode, ...].
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); import shim; sys.exit(shim.main(sys.argv[2:]))"
FLAGS = ("-I", "-S")  # isolated, no site: the standard library only, the fastest start

SPEC = "spec.marshal"  # marshal: read with no import at all; one interpreter writes and reads it
STATE = "state.json"
LOG = "log"
ROTATED_SUFFIX = ".1"
SHIM_ERR = "shim.err"
LAYERS = "layers"  # what the container's namespace shows that the host has not (sandbox.View)
PARTIAL_MAX = 16 * 1024  # a longer line is split into P records, as containerd splits at 16 KiB
READ_SIZE = 64 * 1024
DRAIN_SECONDS = 2.0  # after the main process ends: how long its pipes may take to close
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
EXIT_CANNOT_RUN = 128
EXIT_OOM = 137
COMPLETED, ERROR, OOM_KILLED, CANNOT_RUN = "Completed", "Error", "OOMKilled", "ContainerCannotRun"
PR_SET_CHILD_SUBREAPER = 36
RESET_SIGNALS = ("SIGPIPE", "SIGXFSZ", "SIGHUP", "SIGINT", "SIGTERM", "SIGCHLD")
CONTAINER_UMASK = 0o022  # containerd's and Docker's default for a container's process


class CannotRun(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# -- state and time ----------------------------------------------------------------------


def rfc3339(ns: int) -> str:
    """A record's time: RFC 3339 in UTC with nine fraction digits, fixed width so that times
    compare as text. Written here, not through :mod:`kubetrain.timefmt`, because the shim
    starts as its own small process and imports nothing of kubetrain."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"


def command(python: str, *args: str) -> list[str]:
    """The command line that runs the shim with ``args`` under ``python``."""
    return [python, *FLAGS, "-c", BOOT, HERE, *args]


def read_spec(directory: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(directory, SPEC), "rb") as f:
            return marshal.loads(f.read())
    except (FileNotFoundError, EOFError, ValueError, TypeError):
        return None


def write_spec(directory: str, spec: dict[str, Any]) -> None:
    sandbox.write_atomic(os.path.join(directory, SPEC), marshal.dumps(spec), 0o600)  # env inside


def read_state(directory: str) -> dict[str, Any] | None:
    import json  # not at the top: the shim's own start never reads JSON

    try:
        with open(os.path.join(directory, STATE), "rb") as f:
            return json.loads(f.read())
    except (FileNotFoundError, ValueError):
        return None


def read_json(path: str) -> dict[str, Any] | None:
    """An attempt's file by path: its spec (marshal) or its state (JSON). Prefer
    :func:`read_spec`, :func:`read_state` or ``Runtime.gpus``; this one is kept for callers
    written when the spec was JSON."""
    directory, name = os.path.split(path)
    return read_spec(directory) if name in (SPEC, "spec.json") else read_state(directory)


def write_state(directory: str, state: dict[str, Any]) -> None:
    data = dumps(state).encode(errors="backslashreplace")
    sandbox.write_atomic(os.path.join(directory, STATE), data, 0o600)


_ESCAPES = {**{i: f"\\u{i:04x}" for i in range(32)}, ord('"'): '\\"', ord("\\"): "\\\\"}


def dumps(value: object) -> str:
    """JSON for the state's flat values (the json module would cost ~6 ms of imports)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(str(k))}: {dumps(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a state value: {value!r}")


# -- the log -----------------------------------------------------------------------------


class LogWriter:
    """CRI-format records, rotated to ``<log>.1`` when the file passes half the cap."""

    def __init__(self, path: str, max_bytes: int) -> None:
        self.path = path
        self.half = max(max_bytes // 2, 1)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.size = os.fstat(self.fd).st_size
        self.pending = {"stdout": b"", "stderr": b""}

    def feed(self, stream: str, data: bytes, *, final: bool = False) -> None:
        stamp = rfc3339(time.time_ns()).encode() + b" " + stream.encode() + b" "
        lines = (self.pending[stream] + data).split(b"\n")
        rest = lines.pop()
        out = []
        for line in lines:
            while len(line) > PARTIAL_MAX:
                out.append(stamp + b"P " + line[:PARTIAL_MAX] + b"\n")
                line = line[PARTIAL_MAX:]
            out.append(stamp + b"F " + line + b"\n")
        while len(rest) >= PARTIAL_MAX:
            out.append(stamp + b"P " + rest[:PARTIAL_MAX] + b"\n")
            rest = rest[PARTIAL_MAX:]
        if final and rest:
            out.append(stamp + b"F " + rest + b"\n")  # a last line without newline, as containerd
            rest = b""
        self.pending[stream] = rest
        if out:
            self.write(b"".join(out))

    def write(self, data: bytes) -> None:
        if self.size and self.size + len(data) > self.half:
            os.close(self.fd)
            os.replace(self.path, self.path + ROTATED_SUFFIX)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self.size = 0
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        self.size += len(data)


# -- starting ----------------------------------------------------------------------------


def resolve(command: str, path: str, cwd: str) -> str:
    """``command`` as execve needs it: looked up on ``path`` unless it holds a slash."""
    if "/" in command:
        found = os.path.join(cwd, command)
        if not os.path.isfile(found):
            raise CannotRun(EXIT_NOT_FOUND, f'command "{command}" not found on this node')
        if not os.access(found, os.X_OK):
            raise CannotRun(EXIT_NOT_EXECUTABLE, f'command "{command}" is not executable')
        return found
    denied = ""
    for entry in path.split(":"):
        found = os.path.join(entry or cwd, command)
        if os.path.isfile(found):
            if os.access(found, os.X_OK):
                return found
            denied = denied or found
    if denied:
        raise CannotRun(EXIT_NOT_EXECUTABLE, f'command "{command}" ({denied}) is not executable')
    raise CannotRun(
        EXIT_NOT_FOUND,
        f'command "{command}" not found on this node (images are not pulled: a local pod runs '
        f"its command on the host; PATH={path})",
    )


def as_container() -> None:
    """What a container's process starts with, whatever the node runs with: default signal
    dispositions, and a container runtime's umask (the node's own is 077: its files are
    private)."""
    for name in RESET_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.umask(CONTAINER_UMASK)


def subreaper() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def setup(spec: dict[str, Any], directory: str) -> tuple[str, list[str], dict[str, str], str]:
    """Namespace, mounts, working dir and command: everything that may fail before the fork."""
    view = None
    if spec["isolation"] == "namespace":
        view = sandbox.View(os.path.join(directory, LAYERS))
        try:
            sandbox.enter(userns=spec["userns"], hostname=spec["hostname"])
            sandbox.mount_all(spec["mounts"], spec["hosts"], view)
        except sandbox.SandboxError as e:
            raise CannotRun(EXIT_CANNOT_RUN, str(e)) from e
    env = dict(spec["env"])
    cwd = spec["workingDir"]
    if not os.path.lexists(cwd):  # runc makes it in the container's filesystem: so do we
        if view is None:
            raise CannotRun(
                EXIT_CANNOT_RUN,
                f"the working directory {cwd} does not exist on this node, and without a "
                "private mount namespace it could only be made on the host",
            )
        try:
            view.ensure(cwd, directory=True)
        except sandbox.SandboxError as e:
            raise CannotRun(
                EXIT_CANNOT_RUN, f"cannot create the working directory {cwd}: {e}"
            ) from e
    argv = list(spec["argv"])
    return resolve(argv[0], env.get("PATH", DEFAULT_PATH), cwd), argv, env, cwd


def spawn(
    path: str,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    stdio: tuple[int, int, int],
    cgroup: memory.Cgroup | None,
) -> int:
    """Fork and exec in a new session; CannotRun if the exec itself failed."""
    fail_r, fail_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, gone at exec
        try:
            os.setsid()
            if cgroup is not None:
                cgroup.join()  # before exec: everything the container forks is charged there
            as_container()
            for target, fd in enumerate(stdio):
                os.dup2(fd, target)
            os.chdir(cwd)
            os.execve(path, argv, env)
        except BaseException as e:
            os.write(fail_w, f"{getattr(e, 'errno', 0) or 0} {e}".encode())
        finally:
            os._exit(EXIT_CANNOT_RUN)
    os.close(fail_w)
    failure = b""
    while chunk := os.read(fail_r, 4096):
        failure += chunk
    os.close(fail_r)
    if failure:
        os.waitpid(pid, 0)
        errno, _, text = failure.decode(errors="replace").partition(" ")
        code = EXIT_NOT_EXECUTABLE if errno == "13" else EXIT_CANNOT_RUN
        raise CannotRun(code, f'cannot run command "{argv[0]}" ({path}): {text}')
    return pid


def run(directory: str, notify: int) -> int:
    """The container's whole life; the exit state is always written, whatever happens."""
    os.set_inheritable(notify, False)
    spec = read_spec(directory)
    if spec is None:
        raise SystemExit(f"shim: no readable {SPEC} in {directory}")
    me = os.getpid()
    state: dict[str, Any] = {"shimPid": me, "shimStart": proctree.stat(me).starttime}  # type: ignore[union-attr]
    write_state(directory, state)
    # Only SIGKILL ends the shim: a signal meant for the agent's session or cgroup must not
    # leave the container unobserved (the container resets these before exec).
    for name in ("SIGHUP", "SIGINT", "SIGTERM"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    subreaper()
    log = LogWriter(os.path.join(directory, LOG), spec["logMaxBytes"])
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    devnull = os.open(os.devnull, os.O_RDONLY)
    limit = spec.get("memoryLimit")
    cgroup = None
    try:
        path, argv, env, cwd = setup(spec, directory)
        if limit and spec.get("cgroup"):
            cgroup = memory.Cgroup(spec["cgroup"], limit)
            try:
                cgroup.create()
            except OSError as e:
                print(
                    f"shim: cgroup {cgroup.path}: {e}; the memory watchdog is used", file=sys.stderr
                )
                cgroup = None
        pid = spawn(path, argv, env, cwd, (devnull, out_w, err_w), cgroup)
    except CannotRun as e:
        if cgroup is not None:
            cgroup.remove()
        log.feed("stderr", f"{e}\n".encode())
        now = rfc3339(time.time_ns())
        state.update(
            startedAt=now, exitCode=e.code, reason=CANNOT_RUN, message=str(e), finishedAt=now
        )
        write_state(directory, state)
        os.close(notify)
        return 0
    for fd in (devnull, out_w, err_w):
        os.close(fd)
    state.update(pid=pid, start=proctree.stat(pid).starttime, startedAt=rfc3339(time.time_ns()))  # type: ignore[union-attr]
    write_state(directory, state)
    os.close(notify)
    streams = {out_r: "stdout", err_r: "stderr"}
    state.update(watch(me, pid, limit, cgroup, log, streams, wake_r))
    write_state(directory, state)
    if cgroup is not None:
        cgroup.remove()
    return 0


def watch(
    me: int,
    pid: int,
    limit: int | None,
    cgroup: memory.Cgroup | None,
    log: LogWriter,
    streams: dict[int, str],
    wake: int,
) -> dict[str, Any]:
    """Pump output and sample memory until the main process ends; its exit fields."""
    sel = selectors.DefaultSelector()
    for fd, name in streams.items():
        sel.register(fd, selectors.EVENT_READ, name)
    sel.register(wake, selectors.EVENT_READ, None)
    watchdog = memory.Watchdog(limit, me) if limit and cgroup is None else None
    status: int | None = None
    oom: int | None = None
    finished = 0
    deadline = None
    while True:
        if status is not None:
            if not streams or (deadline is not None and time.monotonic() > deadline):
                break
            timeout: float | None = 0.1
        else:
            timeout = memory.INTERVAL if watchdog else None
        for key, _ in sel.select(timeout):
            if key.data is None:
                try:
                    while os.read(wake, 4096):
                        pass
                except BlockingIOError:
                    pass
                continue
            data = os.read(key.fd, READ_SIZE)
            if data:
                log.feed(key.data, data)
            else:
                log.feed(key.data, b"", final=True)
                sel.unregister(key.fd)
                os.close(key.fd)
                del streams[key.fd]
        if status is None:
            status = reap(pid)
            if status is not None:
                finished = time.time_ns()
                deadline = time.monotonic() + DRAIN_SECONDS
                kill_tree(me, pid)
            elif watchdog is not None and oom is None:
                used = watchdog.exceeded()
                if used is not None:
                    oom = used
                    kill_tree(me, pid)
        else:
            reap(pid)
    for name in streams.values():
        log.feed(name, b"", final=True)
    kill_tree(me, pid)
    reap(pid)
    assert status is not None
    code = os.waitstatus_to_exitcode(status)
    code = code if code >= 0 else 128 - code  # killed by signal n: 128+n
    fields: dict[str, Any] = {
        "finishedAt": rfc3339(finished),
        "exitCode": code,
        "reason": COMPLETED if code == 0 else ERROR,
        "message": "",
    }
    if oom is not None:  # the watchdog killed the tree
        fields.update(
            exitCode=EXIT_OOM, reason=OOM_KILLED, message=memory.describe(limit or 0, oom)
        )
    elif cgroup is not None and cgroup.oom_killed():  # the kernel did; the exit code is its
        fields.update(reason=OOM_KILLED, message=memory.describe(limit or 0, -1))
    return fields


def reap(main: int) -> int | None:
    """Reap every exited child (orphans come to the subreaper too); the main one's status."""
    result = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        if pid == main:
            result = status
    return result


def kill_tree(me: int, pid: int) -> None:
    proctree.kill_group(pid, signal.SIGKILL)
    proctree.kill_all(proctree.descendants(me), signal.SIGKILL)


# -- exec --------------------------------------------------------------------------------


def exec_in(directory: str, notify: int, tty: bool, argv: list[str]) -> int:
    """Become ``argv`` inside the running container's world; errors go to ``notify``."""
    os.set_inheritable(notify, False)
    try:
        spec = read_spec(directory) or {}
        state = read_state(directory) or {}
        pid, start = state.get("pid"), state.get("start")
        if not pid or "exitCode" in state or not proctree.alive(pid, start):
            raise CannotRun(EXIT_CANNOT_RUN, "container is not running")
        if spec["isolation"] == "namespace":
            try:
                sandbox.join(pid)
            except sandbox.SandboxError as e:
                raise CannotRun(EXIT_CANNOT_RUN, str(e)) from e
        env = dict(spec["env"])
        cwd = spec["workingDir"]
        path = resolve(argv[0], env.get("PATH", DEFAULT_PATH), cwd)
        if tty:
            child, master = start_tty(path, argv, env, cwd)
        else:
            os.chdir(cwd)
            as_container()
            os.execve(path, argv, env)
    except CannotRun as e:
        os.write(notify, str(e).encode())
        return e.code
    except OSError as e:
        os.write(notify, f'cannot run command "{argv[0]}": {e}'.encode())
        return EXIT_CANNOT_RUN
    os.close(notify)
    return relay_tty(child, master)


def start_tty(path: str, argv: list[str], env: dict[str, str], cwd: str) -> tuple[int, int]:
    """``argv`` running on a new pty, as its session's controlling terminal; (pid, master)."""
    import fcntl
    import termios

    master, slave = os.openpty()
    fail_r, fail_w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child, gone at exec
        try:
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            as_container()
            for target in (0, 1, 2):
                os.dup2(slave, target)
            os.chdir(cwd)
            os.execve(path, argv, env)
        except BaseException as e:
            os.write(fail_w, str(e).encode())
        finally:
            os._exit(EXIT_CANNOT_RUN)
    os.close(slave)
    os.close(fail_w)
    failure = os.read(fail_r, 4096)
    os.close(fail_r)
    if failure:
        os.waitpid(child, 0)
        raise CannotRun(EXIT_CANNOT_RUN, f'cannot run command "{argv[0]}": {failure.decode()}')
    return child, master


def relay_tty(child: int, master: int) -> int:
    """Our stdin to the pty, the pty to our stdout, until the child ends; its exit code."""
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        signal.signal(getattr(signal, name), lambda sig, _: proctree.kill_group(child, sig))
    sel = selectors.DefaultSelector()
    sel.register(master, selectors.EVENT_READ)
    try:  # noqa: SIM105 - no contextlib in the shim
        sel.register(0, selectors.EVENT_READ)
    except (PermissionError, ValueError):  # /dev/null when no stdin was asked for: nothing to relay
        pass
    while True:
        for key, _ in sel.select():
            if key.fd == master:
                try:
                    data = os.read(master, READ_SIZE)
                except OSError:  # EIO: the pty's other side is closed
                    data = b""
                if not data:
                    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
                    return code if code >= 0 else 128 - code  # killed by signal n: 128+n
                os.write(1, data)
            else:
                data = os.read(0, READ_SIZE)
                if not data:
                    sel.unregister(0)
                    os.write(master, b"\x04")  # end of input, as a terminal's ^D
                else:
                    os.write(master, data)


# -- probe -------------------------------------------------------------------------------


def probe() -> int:
    """Can this host give a pod its own mount namespace? Prints what cannot be done, if not."""
    try:
        sandbox.enter(userns=os.geteuid() != 0, hostname="probe")
        sandbox.bind(sandbox.ETC_HOSTS, sandbox.ETC_HOSTS, read_only=True)
    except sandbox.SandboxError as e:
        print(e)
        return 1
    return 0


def main(args: list[str]) -> int:
    usage = "usage: shim run DIR FD | exec DIR FD [--tty] -- ARGV... | probe"
    if args[:1] == ["probe"]:
        return probe()
    if len(args) >= 3 and args[0] == "run":
        return run(args[1], int(args[2]))
    if len(args) >= 5 and args[0] == "exec" and "--" in args:
        split = args.index("--")
        return exec_in(args[1], int(args[2]), "--tty" in args[3:split], args[split + 1 :])
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
