"""Helpers of the port-forward tests: a pod that echoes, ``kubectl port-forward`` run in the
background, and connections through it that must get their own bytes back.

The echo server answers each connection on a thread of its own, so two connections at once
are served at once; it prints ``listening`` once its socket accepts.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

ECHO_CODE = (
    "import socket, sys, threading\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "print('listening', flush=True)\n"
    "def serve(c):\n"
    "    while data := c.recv(65536): c.sendall(data)\n"
    "    c.close()\n"
    "while True:\n"
    "    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()\n"
)
ERROR = re.compile(r"an error occurred forwarding \d+ -> \d+: [^\n]*\n")
FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)\r?\n")


def free_port() -> int:
    """A port nothing listens on now (the pod's, chosen by the test)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def echo_command(port: int) -> list[str]:
    return ["python3", "-c", ECHO_CODE, str(port)]


class Text:
    """A child's pipe read on a thread, so a test can wait for a pattern with a deadline."""

    def __init__(self, pipe: Any) -> None:
        self.text = ""
        self._lock = threading.Condition()
        threading.Thread(target=self._read, args=(pipe,), daemon=True).start()

    def _read(self, pipe: Any) -> None:
        for chunk in iter(lambda: os.read(pipe.fileno(), 4096), b""):
            with self._lock:
                self.text += chunk.decode(errors="replace")
                self._lock.notify_all()

    def wait_for(self, pattern: re.Pattern[str], timeout: float = 30.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._lock:
            while (match := pattern.search(self.text)) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    pytest.fail(f"{pattern.pattern!r} not within {timeout}s; got {self.text!r}")
                self._lock.wait(remaining)
            return match


@contextmanager
def forwarding(command: Sequence[str], env: dict[str, str] | None = None) -> Iterator[Forward]:
    """Run ``command`` (a ``kubectl port-forward ... :PORT``, or ``kubetrain port-forward``)
    until the block ends; yields once it said which local port it listens on."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    process = subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        out, err = Text(process.stdout), Text(process.stderr)
        try:
            match = out.wait_for(FORWARDING)
        except pytest.fail.Exception:
            process.kill()
            pytest.fail(f"{' '.join(command[:3])} did not forward; stderr: {err.text}")
        yield Forward(process, int(match[1]), int(match[2]), out, err)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Forward:
    """A running port-forward: its local port, the pod port it forwards to, its output."""

    def __init__(
        self, process: subprocess.Popen[bytes], local: int, remote: int, out: Text, err: Text
    ) -> None:
        self.process = process
        self.local = local
        self.remote = remote
        self.out = out
        self.err = err

    def connect(self) -> socket.socket:
        conn = socket.create_connection(("127.0.0.1", self.local), timeout=20)
        conn.settimeout(20)
        return conn


def read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def echoes_concurrently(forward: Forward, payloads: Sequence[bytes]) -> list[bytes]:
    """Open one connection per payload, all at once; send each its payload in two halves
    interleaved with the others', and read each echo back: what each connection got."""
    conns = [forward.connect() for _ in payloads]
    try:
        for conn, data in zip(conns, payloads, strict=True):
            conn.sendall(data[: len(data) // 2])
        for conn, data in zip(conns, payloads, strict=True):
            conn.sendall(data[len(data) // 2 :])
        results: list[Any] = [None] * len(payloads)

        def read(i: int) -> None:
            results[i] = read_exactly(conns[i], len(payloads[i]))

        readers = [threading.Thread(target=read, args=(i,)) for i in range(len(payloads))]
        for t in readers:
            t.start()
        for t in readers:
            t.join(30)
        return results
    finally:
        for conn in conns:
            conn.close()


def closed_without_data(forward: Forward) -> bool:
    """A connection to a port nothing listens on: the forward closes it and sends nothing."""
    with forward.connect() as conn:
        conn.sendall(b"anyone?")
        try:
            return conn.recv(100) == b""
        except ConnectionResetError:
            return True
