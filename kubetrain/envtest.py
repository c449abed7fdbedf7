"""A real Kubernetes control plane on this machine, for tests and benchmarks: etcd,
kube-apiserver and, when asked, kube-controller-manager and kube-scheduler, on free loopback
ports, with certificates and tokens of their own, started and stopped by the caller.

The binaries are found the way controller-runtime's envtest finds them: ``KUBEBUILDER_ASSETS``
names a directory holding ``kube-apiserver`` and ``etcd`` (and, for a whole control plane,
``kube-controller-manager`` and ``kube-scheduler``); ``etcd`` may also come from ``PATH``.
``setup-envtest use 1.28 -p path`` prints such a directory on a machine with internet access;
``make test`` unpacks one when the binaries are at hand. Where they are not, :func:`find_assets`
says what is missing, in one line a test can skip with.

The control plane trusts one CA (:mod:`kubetrain.local.tls`): it signs the API
server's serving certificate, the client certificate the API server presents to kubelets
(``--kubelet-client-certificate``), and is the CA the API server checks kubelets' serving
certificates and clients' certificates against. A node agent given that CA (``kubetrain node
--ca-cert/--ca-key``, or the kubelet's TLS flags) is reachable for ``kubectl logs`` and
``exec``. Everyone else authenticates with the admin token of the written kubeconfig.

Owns: finding the binaries, their flags, ports, files and processes. Must not: know what a
test does with the control plane, or change anything outside the directory it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubetrain import kube
from kubetrain.local import tls

ASSETS_ENV = "KUBEBUILDER_ASSETS"
START_TIMEOUT = 90.0  # seconds: kube-apiserver on 2 busy cores takes 5-20 s to be ready
STOP_TIMEOUT = 20.0
KUBECTL_TIMEOUT = 90.0
ADMIN = "kubetrain-envtest-admin"
KUBELET_CLIENT = "kube-apiserver-kubelet-client"
SERVICE_CIDR = "10.96.0.0/16"
HOW_TO_GET = (
    f"set {ASSETS_ENV} to a directory with kube-apiserver, kube-controller-manager, "
    "kube-scheduler and etcd (`make test` unpacks one when the binaries are at hand; "
    "`setup-envtest use 1.28 -p path` prints one)"
)


class AssetsMissing(Exception):
    """The binaries are not there: the message names what to set."""


@dataclass(frozen=True)
class Assets:
    """Paths of the binaries."""

    etcd: str
    kube_apiserver: str
    kube_controller_manager: str
    kube_scheduler: str


def find_assets(environ: dict[str, str] | None = None) -> Assets:
    """The binaries named by ``KUBEBUILDER_ASSETS`` (etcd also from ``PATH``), or raise
    :class:`AssetsMissing` saying what is missing."""
    environ = dict(os.environ) if environ is None else environ
    directory = environ.get(ASSETS_ENV, "")
    if not directory:
        raise AssetsMissing(f"{ASSETS_ENV} is not set: {HOW_TO_GET}")

    def binary(name: str, *, from_path: bool = False) -> str:
        path = os.path.join(directory, name)
        if os.access(path, os.X_OK):
            return path
        found = shutil.which(name, path=environ.get("PATH")) if from_path else None
        if found:
            return found
        raise AssetsMissing(f"{ASSETS_ENV}={directory} has no {name}: {HOW_TO_GET}")

    return Assets(
        etcd=binary("etcd", from_path=True),
        kube_apiserver=binary("kube-apiserver"),
        kube_controller_manager=binary("kube-controller-manager"),
        kube_scheduler=binary("kube-scheduler"),
    )


def free_port() -> int:
    """A loopback port nobody listens on now (the OS's pick; a race with another binder is
    possible and shows as a start failure)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ControlPlane:
    """One control plane in ``directory``: :meth:`start`, use :attr:`kubeconfig`, :meth:`stop`
    (or ``with ControlPlane(...) as plane``).

    ``controllers`` adds kube-controller-manager (garbage collector, namespaces, service
    accounts, node lifecycle ...), ``scheduler`` kube-scheduler. ``apiserver_flags`` and
    ``controller_flags`` are appended to the defaults (a later flag wins). ``crds`` names
    kustomize directories of CustomResourceDefinitions installed at start, as envtest's
    ``CRDDirectoryPaths`` are, but the way users install them (``kubectl apply
    --server-side -k``), and waited for until Established."""

    assets: Assets
    directory: Path
    controllers: bool = True
    scheduler: bool = False
    apiserver_flags: Sequence[str] = ()
    controller_flags: Sequence[str] = ()
    crds: Sequence[Path] = ()
    url: str = ""
    _processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> str:
        """An admin's kubeconfig (a token in ``system:masters``)."""
        return str(self.directory / "kubeconfig")

    @property
    def pki(self) -> str:
        """The CA's directory: ``ca.crt`` and ``ca.key`` issue a node's serving certificate."""
        return str(self.directory / "pki")

    @property
    def ca_cert(self) -> str:
        return os.path.join(self.pki, tls.CA_CERT)

    @property
    def ca_key(self) -> str:
        return os.path.join(self.pki, tls.CA_KEY)

    def log(self, component: str) -> Path:
        return self.directory / f"{component}.log"

    def tail(self, component: str, chars: int = 4000) -> str:
        try:
            return self.log(component).read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start every component and return once the API server is ready; on failure stop what
        started and raise :class:`RuntimeError` with the failing component's log."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            self._start()
            for directory in self.crds:
                self.kubectl("apply", "--server-side", "-k", str(directory))
            if self.crds:
                self.kubectl("wait", "--for=condition=Established", "crd", "--all")
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        credentials = tls.ensure(self.pki)
        files = self._write_files(credentials)
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            "etcd",
            [
                self.assets.etcd,
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync=true",
            ],
        )
        self.url = f"https://127.0.0.1:{api_port}"
        self._spawn(
            "kube-apiserver",
            [
                self.assets.kube_apiserver,
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                f"--secure-port={api_port}",
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
                f"--cert-dir={self.directory / 'apiserver-certs'}",
                f"--tls-cert-file={credentials.serving_cert}",
                f"--tls-private-key-file={credentials.serving_key}",
                f"--client-ca-file={credentials.ca_cert}",
                f"--token-auth-file={files['tokens']}",
                "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={files['sa.pub']}",
                f"--service-account-signing-key-file={files['sa.key']}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                f"--kubelet-client-certificate={files['kubelet-client.crt']}",
                f"--kubelet-client-key={files['kubelet-client.key']}",
                f"--kubelet-certificate-authority={credentials.ca_cert}",
                *self.apiserver_flags,
            ],
        )
        tls.write_kubeconfig(self.kubeconfig, credentials, self.url)
        self._wait_ready()
        kubeconfig = self.kubeconfig
        if self.controllers:
            self._spawn(
                "kube-controller-manager",
                [
                    self.assets.kube_controller_manager,
                    f"--kubeconfig={kubeconfig}",
                    "--secure-port=0",
                    "--leader-elect=false",
                    f"--service-account-private-key-file={files['sa.key']}",
                    f"--root-ca-file={credentials.ca_cert}",
                    "--use-service-account-credentials=false",
                    *self.controller_flags,
                ],
            )
        if self.scheduler:
            self._spawn(
                "kube-scheduler",
                [
                    self.assets.kube_scheduler,
                    f"--kubeconfig={kubeconfig}",
                    "--secure-port=0",
                    "--leader-elect=false",
                ],
            )

    def _write_files(self, credentials: tls.Credentials) -> dict[str, str]:
        paths = {
            name: str(self.directory / name)
            for name in ("tokens", "sa.key", "sa.pub", "kubelet-client.crt", "kubelet-client.key")
        }
        admin = f'{credentials.token},{ADMIN},{ADMIN},"system:masters"\n'
        tls.write_private(paths["tokens"], admin.encode())
        if not os.path.exists(paths["sa.key"]):
            private, public = tls.signing_key()
            tls.write_private(paths["sa.key"], private)
            tls.write_private(paths["sa.pub"], public)
        cert, key = tls.issue_client_certificate(self.pki, KUBELET_CLIENT, ("system:masters",))
        tls.write_private(paths["kubelet-client.crt"], cert)
        tls.write_private(paths["kubelet-client.key"], key)
        return paths

    def _spawn(self, component: str, command: list[str]) -> None:
        with open(self.log(component), "ab") as out:
            self._processes[component] = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not asyncio.run(self._ready()):
            for component, process in self._processes.items():
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{component} exited ({process.returncode}):\n{self.tail(component)}"
                    )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"kube-apiserver was not ready within {START_TIMEOUT:.0f} s:\n"
                    + self.tail("kube-apiserver")
                )
            time.sleep(0.2)

    async def _ready(self) -> bool:
        try:
            async with await kube.Client.from_kubeconfig(self.kubeconfig) as client:
                await client.request("GET", "/readyz", timeout=2.0, decoded=False)
                return True
        except (kube.ApiError, OSError, kube.ConfigError):
            return False

    def kubectl(self, *args: str, timeout: float = KUBECTL_TIMEOUT) -> str:
        """Run kubectl (``KUBEBUILDER_ASSETS``'s, else ``PATH``'s) as the admin; its output,
        or :class:`RuntimeError` with its error output."""
        binary = os.path.join(os.path.dirname(self.assets.kube_apiserver), "kubectl")
        if not os.access(binary, os.X_OK):
            binary = shutil.which("kubectl") or ""
        if not binary:
            raise RuntimeError(f"kubectl {' '.join(args)}: kubectl is not installed")
        done = subprocess.run(
            [binary, "--kubeconfig", self.kubeconfig, f"--request-timeout={timeout:.0f}s", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout + 30,
        )
        if done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def stop(self) -> None:
        """SIGTERM every component, newest first, then SIGKILL what is left after
        :data:`STOP_TIMEOUT`; safe to call twice."""
        for process in reversed(list(self._processes.values())):
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        for process in reversed(list(self._processes.values())):
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._processes.clear()

    def running(self) -> Iterator[str]:
        """The components whose process is still alive."""
        return (name for name, p in self._processes.items() if p.poll() is None)

    def pid(self, component: str) -> int | None:
        """The process id of a running component (``etcd``, ``kube-apiserver``, ...), for a
        benchmark's CPU accounting; None when it is not running."""
        process = self._processes.get(component)
        return process.pid if process is not None and process.poll() is None else None
