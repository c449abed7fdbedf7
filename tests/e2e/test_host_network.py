"""One host, one network: what a kubetrain node says when two of its pods listen on one port.

Every pod on a kubetrain node shares the host's network. On a cluster each pod has its own, so
manifests give every replica the framework's fixed port; here the second pod to bind it dies
of "Address already in use". The operator avoids that when run with ``--host-network`` (both
planes of these tests run it so; docs/cluster.md says why); pods created some other way, or
by an operator without the flag, get the node's explanation instead: the failed container's
termination message names the port, the other pod and the flag.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubetrain import envtest, kube
from kubetrain.local.node import portclash
from tests.apiserver.cascade import eventually, run
from tests.integration.operator.jobs_fixtures import PODS, get

TIMEOUT = 60.0
LISTEN = """
import pathlib, socket, sys, time
port, ready, release = int(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
server = socket.create_server(("", port))
ready.touch()
while not release.exists():
    time.sleep(0.1)
"""


def listener(name: str, port: int, ready: Path, release: Path) -> dict[str, Any]:
    """A pod that listens on ``port`` (declared as its containerPort, as a job's replica does)
    until ``release`` exists."""
    container = {
        "name": "server",
        "image": "example/server:1",
        "command": ["python3", "-c", LISTEN, str(port), str(ready), str(release)],
        "ports": [{"name": "serving", "containerPort": port}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }


def test_the_second_pod_listening_on_a_taken_port_fails_saying_which_pod_and_what_to_set(
    kubeconfig: str, namespace: str, tmp_path: Path
) -> None:
    port = envtest.free_port()
    release = tmp_path / "release"

    async def body() -> None:
        async with await kube.Client.from_kubeconfig(kubeconfig) as client:
            ready = tmp_path / "first.ready"
            await client.create(PODS, listener("first", port, ready, release), namespace=namespace)
            await eventually(lambda: _exists(ready), "the first pod listens", timeout=TIMEOUT)
            second = listener("second", port, tmp_path / "second.ready", release)
            await client.create(PODS, second, namespace=namespace)

            async def failed() -> dict[str, Any] | None:
                pod = await get(client, PODS, namespace, "second")
                phase = ((pod or {}).get("status") or {}).get("phase")
                return pod if phase == "Failed" else None

            pod = await eventually(failed, "the second pod failed", timeout=TIMEOUT)
            terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
            assert terminated["exitCode"] == 1, terminated
            message = terminated.get("message", "")
            assert f"port {port} is also declared by pod {namespace}/first" in message, message
            assert f"Run the operator with {portclash.OPERATOR_FLAG}" in message, message
            first = await get(client, PODS, namespace, "first")
            assert first is not None
            assert first["status"]["phase"] == "Running", first["status"]
            release.touch()

    try:
        run(body())
    finally:
        release.touch()


async def _exists(path: Path) -> bool:
    return await asyncio.to_thread(path.exists)
