"""A Docker engine of the tests' own, and images built offline for it.

:func:`dockerd` starts Debian's ``dockerd`` with its own data root, exec root, pid file and a
socket in a temporary directory, on the host network only (no bridge, no iptables rules, no
masquerading), so it leaves this machine's networking as it was and another engine on it
alone; it stops it at the end. :func:`busybox_image` imports a root filesystem holding only a
static busybox (``docker import`` of a tar made here), so no registry is needed.

Skips, naming what to install, where ``dockerd`` or a static busybox is missing.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import tarfile
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
BUSYBOX = "/bin/busybox"
BUSYBOX_IMAGE = "kubetrain-test/busybox:1"
ELF_INTERP = 3  # PT_INTERP: a dynamically linked program names its loader


@dataclass(frozen=True)
class Engine:
    host: str  # unix://<socket>, as DOCKER_HOST takes it
    root: Path
    log: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "DOCKER_HOST": self.host}

    def docker(self, *args: str, input: bytes | None = None) -> str:
        """The docker CLI against this engine (the tests' checks; kubetrain uses the API)."""
        done = subprocess.run(
            ["docker", *args], env=self.env(), input=input, capture_output=True, timeout=120
        )
        if done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)}: {done.stderr.decode()}")
        return done.stdout.decode()

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""  # an engine the tests did not start


def _ping(socket: Path) -> bool:
    import http.client

    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            import socket as socket_

            self.sock = socket_.socket(socket_.AF_UNIX, socket_.SOCK_STREAM)
            self.sock.settimeout(2.0)
            self.sock.connect(str(socket))

    try:
        connection = UnixConnection("localhost")
        connection.request("GET", "/_ping")
        return connection.getresponse().status == 200
    except (OSError, urllib.error.URLError, http.client.HTTPException):
        return False


def missing() -> str:
    """Why the container tests cannot run here, or ""."""
    if shutil.which("dockerd") is None or shutil.which("docker") is None:
        return "dockerd is not installed (Debian: apt-get install docker.io; `make test` does)"
    if os.geteuid() != 0:
        return "dockerd needs root here (the tests start their own engine)"
    if not _static(BUSYBOX):
        return (
            f"no static busybox at {BUSYBOX} for the tests' offline image "
            "(Debian: apt-get install busybox-static; `make test` does)"
        )
    return ""


def _static(path: str) -> bool:
    """An ELF executable with no program interpreter: it runs in an empty root filesystem."""
    import struct

    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return False
            (phoff,) = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    kinds = [struct.unpack_from("<I", table, i * phentsize)[0] for i in range(phnum)]
    return ELF_INTERP not in kinds


@contextlib.contextmanager
def dockerd(directory: Path) -> Iterator[Engine]:
    """A dockerd of its own under ``directory`` (kept short: the socket path has a limit)."""
    directory.mkdir(parents=True, exist_ok=True)
    socket = directory / "docker.sock"
    log = directory / "dockerd.log"
    command = [
        "dockerd",
        "--data-root",
        str(directory / "data"),
        "--exec-root",
        str(directory / "exec"),
        "--pidfile",
        str(directory / "dockerd.pid"),
        "-H",
        f"unix://{socket}",
        "--bridge=none",
        "--iptables=false",
        "--ip-masq=false",
    ]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    engine = Engine(f"unix://{socket}", directory, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ping(socket):
            if process.poll() is not None:
                pytest.fail(f"dockerd exited ({process.returncode}):\n{engine.tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"dockerd did not answer /_ping in time:\n{engine.tail()}")
            time.sleep(0.05)
        yield engine
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        unmount_under(directory)  # dockerd leaves exec/netns/default mounted
        shutil.rmtree(directory, ignore_errors=True)


def unmount_under(directory: Path) -> None:
    """Unmount whatever is mounted below ``directory``, deepest first."""
    try:
        with open("/proc/self/mounts") as f:
            targets = [line.split()[1] for line in f]
    except OSError:
        return
    below = [t for t in targets if t.startswith(f"{directory}/")]
    for target in sorted(below, key=len, reverse=True):
        with contextlib.suppress(OSError):
            subprocess.run(["umount", "-l", target], capture_output=True, check=False)


def busybox_rootfs() -> bytes:
    """A tar of a root filesystem with a static busybox and a link for each of its applets."""
    applets = subprocess.run(
        [BUSYBOX, "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in ("bin", "etc", "tmp", "root", "proc", "sys", "dev", "work"):
            entry = tarfile.TarInfo(name)
            entry.type = tarfile.DIRTYPE
            entry.mode = 0o1777 if name == "tmp" else 0o755
            tar.addfile(entry)
        tar.add(BUSYBOX, "bin/busybox")
        for applet in applets:
            if applet == "busybox":
                continue
            entry = tarfile.TarInfo(f"bin/{applet}")
            entry.type = tarfile.SYMTYPE
            entry.linkname = "busybox"
            tar.addfile(entry)
        for name, text in (
            ("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n"),
            ("etc/group", b"root:x:0:\n"),
        ):
            entry = tarfile.TarInfo(name)
            entry.size = len(text)
            tar.addfile(entry, io.BytesIO(text))
    return buffer.getvalue()


def busybox_image(engine: Engine, name: str = BUSYBOX_IMAGE) -> str:
    """``name`` in ``engine``: busybox, ``PATH=/bin``, ``CMD ["sh"]``, ``WORKDIR /work``."""
    engine.docker(
        "import",
        "-c",
        "ENV PATH=/bin",
        "-c",
        "WORKDIR /work",
        "-c",
        'CMD ["sh"]',
        "-",
        name,
        input=busybox_rootfs(),
    )
    return name
