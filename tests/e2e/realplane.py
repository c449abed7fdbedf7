"""The end-to-end scenarios' real cluster: the session's real control plane
(:mod:`tests.realcluster`: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, with
kubetrain's CRDs) with kubetrain installed on it as docs/cluster.md tells a user who runs the
operator next to a kubetrain node on one host:

- the built-in runtimes, ``kubectl apply -k deploy/runtimes``;
- ``kubetrain operator --kubeconfig ... --host-network``: every pod on the host network with a
  port of its own, since all the node's pods share this one host;
- ``kubetrain node --kubeconfig ...`` registered as a Node, with the kubelet's TLS flags: a
  serving certificate for its address issued by the CA kube-apiserver checks kubelets against
  (``--tls-cert-file``, ``--tls-private-key-file``), and that CA for the client certificate
  kube-apiserver presents (``--client-ca-file``), so ``kubectl logs`` and ``exec`` reach it;
- statically provisioned storage, as an administrator without a provisioner gives it: a few
  hostPath PersistentVolumes, which kube-controller-manager binds to the scenarios' claims.

Operator and node are subprocesses, started once per session and stopped at its end; their
logs stay in the session's directory, and a failed test shows their last lines. Everything
else a test sees (scheduling, garbage collection, namespace deletion, the node's taints) is
Kubernetes' own.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubetrain import envtest, kube
from kubetrain.cli import controlplane as local_controlplane
from kubetrain.local import tls
from kubetrain.local.node import settings as node_settings
from tests import processes
from tests.apiserver.cascade import eventually, run

REPOSITORY = Path(__file__).resolve().parents[2]
RUNTIMES = REPOSITORY / "deploy" / "runtimes"
START_TIMEOUT = 90.0  # seconds for the operator and the node: two Python processes, 2 cores
STOP_TIMEOUT = 30.0
NODE_BACKOFF = ("0.2", "6")  # the node's crash back-off, first and longest (the local plane's)
VOLUMES = 8  # PersistentVolumes for the session: one per claim a scenario makes
VOLUME_SIZE = "10Gi"
NODES = kube.Resource("", "v1", "nodes", namespaced=False, kind="Node")
PERSISTENT_VOLUMES = kube.Resource(
    "", "v1", "persistentvolumes", namespaced=False, kind="PersistentVolume"
)
COMPONENTS = ("operator", "node")


@dataclass
class RealCluster:
    """kubetrain on the real control plane: the plane, and the logs of what runs on it."""

    plane: envtest.ControlPlane
    directory: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> str:
        return self.plane.kubeconfig

    @property
    def node_root(self) -> Path:
        return self.directory / "node"

    def log(self, component: str) -> Path:
        return self.directory / f"{component}.log"

    def tail(self, component: str, chars: int = 4000) -> str:
        """The last of a component's log: ``operator``, ``node``, or one of the plane's."""
        if component not in COMPONENTS:
            return self.plane.tail(component, chars)
        try:
            return self.log(component).read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def spawn(self, component: str, arguments: list[str], environ: dict[str, str]) -> None:
        with open(self.log(component), "ab") as out:
            self.processes[component] = subprocess.Popen(
                [sys.executable, "-m", "kubetrain", *arguments],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=environ,
                start_new_session=True,
            )

    def exited(self) -> str:
        """What exited of the operator and node, with its log; "" while both run."""
        for component, process in self.processes.items():
            if process.poll() is not None:
                return f"{component} exited ({process.returncode}):\n{self.tail(component)}"
        return ""

    def stop(self) -> None:
        """Stop the node, then the containers it leaves running (a node agent that stops
        leaves its pods to adopt them), then the operator."""
        for component in ("node", "operator"):
            process = self.processes.pop(component, None)
            if process is None:
                continue
            processes.stop(process, timeout=STOP_TIMEOUT)
            if component == "node":
                settings = node_settings.Settings(root=str(self.node_root))
                asyncio.run(local_controlplane.stop_pods(settings))


def _volume(name: str, path: Path) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": VOLUME_SIZE},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
        },
    }


async def _provision(kubeconfig: str, directory: Path) -> None:
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:
        for index in range(VOLUMES):
            path = directory / f"pv-{index}"
            path.mkdir(parents=True, exist_ok=True)
            await client.create(PERSISTENT_VOLUMES, _volume(f"e2e-{index}", path))


async def _node_ready(kubeconfig: str, cluster: RealCluster) -> None:
    """The node is Ready, and untainted: kube-scheduler places pods on it."""
    async with await kube.Client.from_kubeconfig(kubeconfig) as client:

        async def ready() -> bool:
            problem = cluster.exited()
            if problem:
                raise AssertionError(problem)
            for node in (await client.list(NODES)).get("items") or []:
                conditions = (node.get("status") or {}).get("conditions") or []
                taints = (node.get("spec") or {}).get("taints") or []
                if not taints and any(
                    c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
                ):
                    return True
            return False

        await eventually(ready, "the kubetrain node is Ready and untainted", timeout=START_TIMEOUT)


async def _operator_ready(port: int, cluster: RealCluster) -> None:
    async def ready() -> bool:
        problem = cluster.exited()
        if problem:
            raise AssertionError(problem)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return False
        writer.write(b"GET /readyz HTTP/1.0\r\nHost: operator\r\n\r\n")
        answer = await reader.read()
        writer.close()
        return answer.startswith(b"HTTP/1.0 200") or answer.startswith(b"HTTP/1.1 200")

    await eventually(ready, "the operator's caches synced (/readyz)", timeout=START_TIMEOUT)


def _serving_certificate(plane: envtest.ControlPlane, directory: Path) -> tuple[str, str]:
    """The node's serving certificate and key, issued by the plane's CA for the node's name
    and address, as an administrator issues a kubelet's."""
    name = node_settings.default_name()
    cert, key = tls.issue_certificate(
        plane.pki, name, [name, "localhost"], [node_settings.DEFAULT_ADDRESS]
    )
    directory.mkdir(parents=True, exist_ok=True)
    paths = (str(directory / "kubelet.crt"), str(directory / "kubelet.key"))
    for path, data in zip(paths, (cert, key), strict=True):
        tls.write_private(path, data)
    return paths


def start(plane: envtest.ControlPlane, directory: Path) -> RealCluster:
    """Install kubetrain on ``plane`` and start its operator and node; stopped with
    :meth:`RealCluster.stop`."""
    cluster = RealCluster(plane, directory)
    environ = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environ["KUBETRAIN_HOME"] = str(directory / "home")
    try:
        plane.kubectl("apply", "-k", str(RUNTIMES))
    except RuntimeError as exc:
        pytest.fail(str(exc))
    run(_provision(plane.kubeconfig, directory / "volumes"))
    serving_cert, serving_key = _serving_certificate(plane, directory / "pki")
    probe = envtest.free_port()
    cluster.spawn(
        "operator",
        [
            "operator",
            "--kubeconfig",
            plane.kubeconfig,
            "--host-network",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            f"127.0.0.1:{probe}",
            "--log-format",
            "text",
        ],
        environ,
    )
    cluster.spawn(
        "node",
        [
            "node",
            "--kubeconfig",
            plane.kubeconfig,
            "--root",
            str(cluster.node_root),
            "--tls-cert-file",
            serving_cert,
            "--tls-private-key-file",
            serving_key,
            "--client-ca-file",
            plane.ca_cert,
            "--backoff-initial",
            NODE_BACKOFF[0],
            "--backoff-max",
            NODE_BACKOFF[1],
        ],
        environ,
    )
    try:
        run(_node_ready(plane.kubeconfig, cluster))
        run(_operator_ready(probe, cluster))
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def real_cluster(
    real_control_plane: envtest.ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealCluster]:
    """kubetrain's operator and node on the session's real control plane, ready."""
    try:
        cluster = start(real_control_plane, tmp_path_factory.mktemp("kubetrain-on-kube"))
    except AssertionError as exc:
        pytest.fail(f"kubetrain did not start on the real control plane: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
