"""Fixtures for the bad-input and security suites: a whole local control plane started the way a
user starts it, one job run on it with a Secret, and the figures the suites report.

- ``plane``: ``kubetrain up`` (not ``--memory``: the state database is on disk) in a fresh
  ``KUBETRAIN_HOME`` that kubetrain creates itself, stopped with ``kubetrain down`` at the end
  of the session. Always local, whatever ``KUBETRAIN_TEST_KUBECONFIG`` says: the properties
  checked (token, TLS, loopback, file modes, logs) are the local control plane's.
- ``secret_run``: on that plane, a PyTorchJob whose container gets a Secret three ways (an env
  var from ``secretKeyRef``, ``envFrom`` the Secret, a Secret volume) and proves it got each
  by printing digests, run to Succeeded; then everything a user or an operator can read about
  it, collected: ``kubetrain get``/``describe``/``events``/``logs``, ``kubectl describe pod``
  and ``get events``, and the daemon's log (which holds the API server's, scheduler's, node
  agent's and operator's logs: they run in that one process).
- ``bad_input_figures``: counts of inputs tried, printed in the terminal summary as the
  issue asks.

Test modules import the fixtures they use by name (pytest finds them in the module).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

from kubetrain import kube
from kubetrain.cli import main
from kubetrain.local.node import runtime
from tests.apiserver.cascade import eventually, run

START_TIMEOUT: Final = 90.0
JOB_TIMEOUT: Final = 60.0
COMMAND_TIMEOUT: Final = 60.0
SECRET_KEY: Final = "token"
PYTORCHJOBS: Final = kube.Resource("kubeflow.org", "v1", "pytorchjobs", kind="PyTorchJob")
SECRETS: Final = kube.Resource("", "v1", "secrets", kind="Secret")
NAMESPACES: Final = kube.resource.NAMESPACES
# The container proves it was given the Secret each way without printing it: digests only.
PROBE: Final = (
    "import hashlib, os\n"
    "def digest(text):\n"
    "    return hashlib.sha256(text.encode()).hexdigest()\n"
    "print('env', digest(os.environ['FROM_KEY_REF']))\n"
    "print('envFrom', digest(os.environ['token']))\n"
    "print('volume', digest(open('/etc/creds/token').read()))\n"
    "import sys\n"
    "print('argv', repr(sys.argv[1:]))\n"
    "print('umask', oct(os.umask(0o022)))\n"
)
# An argument a shell would act on; passed as argv, it arrives as written. ``{marker}`` is a
# file that exists only if a shell ran the argument.
SHELL_BAIT: Final = "$(touch {marker}); `touch {marker}` | touch {marker} && echo $HOME"


@dataclass(frozen=True)
class Plane:
    """A running local control plane started by ``kubetrain up``."""

    home: Path
    kubeconfig: str
    url: str
    port: int
    token: str
    ca_cert: str
    env: dict[str, str]

    @property
    def log(self) -> Path:
        return self.home / "logs" / "daemon.log"

    def kubetrain(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubetrain ARGS`` against this plane, in this process (an interpreter's start per
        command would cost more than the command)."""
        saved = dict(os.environ)
        out, err = io.StringIO(), io.StringIO()
        try:
            os.environ.clear()
            os.environ.update(self.env)
            os.environ["KUBETRAIN_KUBECONFIG"] = self.kubeconfig
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main.main(list(args))
                except SystemExit as exc:  # argparse's usage errors
                    code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os.environ.clear()
            os.environ.update(saved)
        done = subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
        if check and done.returncode != 0:
            pytest.fail(f"kubetrain {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
        return done


def plane_environment(home: Path) -> dict[str, str]:
    """The environment of every command run on the plane: its home, and nothing of the
    developer's kubeconfigs."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KUBECONFIG", "KUBETRAIN_KUBECONFIG", "KUBETRAIN_TEST_KUBECONFIG")
    }
    env["KUBETRAIN_HOME"] = str(home)
    return env


@pytest.fixture(scope="session")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    home = tmp_path_factory.mktemp("kubetrain-up") / "home"  # created by kubetrain itself
    env = plane_environment(home)
    command = [sys.executable, "-m", "kubetrain", "up", "--timeout", str(START_TIMEOUT)]
    started = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=START_TIMEOUT + 30
    )
    try:
        if started.returncode != 0:
            log = home / "logs" / "daemon.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            pytest.fail(f"kubetrain up exited {started.returncode}: {started.stderr}\n{tail}")
        status = json.loads((home / "status.json").read_text())
        yield Plane(
            home=home,
            kubeconfig=started.stdout.strip(),
            url=status["url"],
            port=int(status["port"]),
            token=(home / "pki" / "token").read_text().strip(),
            ca_cert=str(home / "pki" / "ca.crt"),
            env=env,
        )
    finally:
        subprocess.run(
            [sys.executable, "-m", "kubetrain", "down"],
            env=env,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
        )


@dataclass(frozen=True)
class SecretRun:
    """A finished job that was given a Secret, and what can be read about it afterwards."""

    namespace: str
    job: str
    pod: str
    value: str
    pod_log: str
    bait: str  # the argument with shell syntax the container was given
    marker: Path  # exists only if a shell ran it
    outputs: dict[str, str] = field(default_factory=dict)  # what -> text shown

    @property
    def forms(self) -> tuple[str, ...]:
        """The value as written, and as the API shows it (base64 in ``data``)."""
        return (self.value, base64.b64encode(self.value.encode()).decode())


def secret_job(namespace: str, name: str, secret: str, bait: str) -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "image": "kubetrain.local/host-python:latest",
        "command": ["python3", "-c", PROBE],
        "args": [bait],
        "env": [
            {
                "name": "FROM_KEY_REF",
                "valueFrom": {"secretKeyRef": {"name": secret, "key": SECRET_KEY}},
            }
        ],
        "envFrom": [{"secretRef": {"name": secret}}],
        "volumeMounts": [{"name": "creds", "mountPath": "/etc/creds", "readOnly": True}],
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {
                            "containers": [container],
                            "volumes": [{"name": "creds", "secret": {"secretName": secret}}],
                        }
                    },
                }
            }
        },
    }


def _succeeded(job: dict[str, Any]) -> bool | None:
    """True once Succeeded, False once Failed, None before either."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Succeeded", "Failed"):
            return condition["type"] == "Succeeded"
    return None


async def _run_secret_job(kubeconfig: str, namespace: str, value: str, bait: str) -> dict[str, Any]:
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        await client.create(
            SECRETS,
            {"metadata": {"name": "creds"}, "type": "Opaque", "stringData": {SECRET_KEY: value}},
            namespace=namespace,
        )
        await client.create(
            PYTORCHJOBS, secret_job(namespace, "uses-secret", "creds", bait), namespace=namespace
        )

        async def ended() -> dict[str, Any] | None:
            job = await client.get(PYTORCHJOBS, "uses-secret", namespace=namespace)
            return job if _succeeded(job) is not None else None

        return await eventually(ended, "the job that uses a Secret ends", timeout=JOB_TIMEOUT)


def isolation_problem(root: Path) -> str:
    """Why this host's node cannot give a job's pods their /etc/hosts and volume mounts (a
    private mount namespace), or "" when it can."""
    probe = runtime.Runtime(runtime.Settings(root=str(root)))
    if probe.isolation == "namespace":
        return ""
    return (
        "this host gives pods no private mount namespace (needs root or unprivileged user "
        "namespaces), so a job's pods cannot run on its node"
    )


@pytest.fixture(scope="session")
def secret_run(plane: Plane, tmp_path_factory: pytest.TempPathFactory) -> SecretRun:
    problem = isolation_problem(tmp_path_factory.mktemp("isolation-probe"))
    if problem:
        pytest.skip(problem)
    namespace = "kt-secret-" + secrets.token_hex(3)
    value = "kt-secret-" + secrets.token_urlsafe(18)  # nothing else could contain it by chance
    marker = tmp_path_factory.mktemp("shell-bait") / "a-shell-ran"
    bait = SHELL_BAIT.format(marker=marker)
    job = run(_run_secret_job(plane.kubeconfig, namespace, value, bait))
    pod = "uses-secret-master-0"
    logs = plane.kubetrain("logs", "uses-secret", "-n", namespace, check=False)
    assert _succeeded(job), f"the job failed: {job.get('status')}\n{logs.stdout}{logs.stderr}"
    outputs: dict[str, str] = {}
    for args in (
        ("get", "uses-secret"),
        ("describe", "uses-secret"),
        ("get", "uses-secret", "-o", "yaml"),
        ("events", "uses-secret"),
        ("list",),
    ):
        shown = plane.kubetrain(*args, "-n", namespace)
        outputs["kubetrain " + " ".join(args)] = shown.stdout + shown.stderr
    kubectl = shutil.which("kubectl")
    if kubectl is not None:  # installed on CI and our machines; the rest is checked without it
        for args in (
            ("describe", "pod", pod),
            ("describe", "pytorchjob", "uses-secret"),
            ("get", "events", "-o", "yaml"),
            ("get", "pod", pod, "-o", "yaml"),
        ):
            shown = subprocess.run(
                [kubectl, "--kubeconfig", plane.kubeconfig, "-n", namespace, *args],
                env=plane.env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
            )
            assert shown.returncode == 0, shown.stderr
            outputs["kubectl " + " ".join(args)] = shown.stdout + shown.stderr
    return SecretRun(namespace, "uses-secret", pod, value, logs.stdout, bait, marker, outputs)


# --- figures --------------------------------------------------------------------------------


class Figures:
    """Counts the suites add to (``add("inputs: api requests")``), printed at the end. Apart
    from the fault suites' figures (fault_fixtures.py), whose fixture is also ``figures``."""

    TITLE: Final = "bad input and security"

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.started = time.monotonic()

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] += n

    def lines(self) -> Sequence[str]:
        total = sum(v for k, v in self.counts.items() if k.startswith("inputs:"))
        rows = [f"{k}: {v}" for k, v in sorted(self.counts.items())]
        return [f"inputs tried: {total}", *rows]

    # a pytest plugin hook, registered by the fixture below
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", self.TITLE)
        for line in self.lines():
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def bad_input_figures(request: pytest.FixtureRequest) -> Figures:
    found = Figures()
    request.config.pluginmanager.register(found, "kubetrain-bad-input-figures")
    return found
