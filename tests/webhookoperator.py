"""``kubetrain operator --webhook-url`` run for tests against a real kube-apiserver: the
admission webhooks only (``--disable-controllers``, so no job it admits gets pods), on a free
loopback port, with its certificate in a Secret of a namespace every cluster has. One home for
the API behaviour tests' real target and the webhook's own tests."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubetrain import envtest
from tests import localapiserver, processes

READY_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0
SECRET_NAMESPACE = "kube-system"


@dataclass
class WebhookOperator:
    """One ``kubetrain operator`` serving the webhooks at ``url``; :meth:`start` it (again
    after a :meth:`kill`), :meth:`stop` it."""

    kubeconfig: str
    directory: Path
    port: int = field(default_factory=envtest.free_port)
    probes: int = field(default_factory=envtest.free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.directory / f"operator-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        command = [
            sys.executable, "-m", "kubetrain", "operator",
            "--kubeconfig", self.kubeconfig,
            "--webhook-url", self.url,
            "--webhook-namespace", SECRET_NAMESPACE,
            "--disable-controllers",
            "--metrics-bind-address", "0",
            "--health-probe-bind-address", f"127.0.0.1:{self.probes}",
            "--log-format", "text",
        ]  # fmt: skip
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=localapiserver.environment(self.directory),
            )
        deadline = time.monotonic() + READY_TIMEOUT
        while not self.ready():
            if self.process.poll() is not None:
                pytest.fail(f"the webhook operator exited:\n{self.tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the webhook operator was not ready in time:\n{self.tail()}")
            time.sleep(0.1)

    def ready(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.probes}/readyz"
            with urllib.request.urlopen(url, timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def kill(self) -> None:
        """SIGKILL: nothing is cleaned up, as when a node dies under it."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM, a clean stop: it unregisters its webhooks."""
        if self.process is not None:
            processes.stop(self.process, timeout=STOP_TIMEOUT)

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]
