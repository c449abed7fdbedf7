"""The node endpoint's ``GET /stats/summary`` (kubetrain.local.node.server): the kubelet's
Summary of the latest sample, behind the token, naming the node and its pods. The one running
"container" is this test process; served on the loopback by aiohttp's test server."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import test_utils

from kubetrain.local.node import proctree, runtime, sandbox, server, settings

TOKEN = "s3cret"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)


class OwnProcess:
    """A runtime on ``root`` whose one running container is this process."""

    def __init__(self, root: Path) -> None:
        self.settings = runtime.Settings(root=str(root))
        self.id = runtime.ContainerId("uid-1", "main", 0)
        pod_dir = Path(sandbox.pod_dir(str(root), "uid-1"))
        pod_dir.mkdir(parents=True)
        about = {"uid": "uid-1", "namespace": "ns", "name": "p"}
        (pod_dir / sandbox.SANDBOX_FILE).write_text(json.dumps(about))

    def containers(self, uid: str | None = None) -> list[runtime.ContainerState]:
        started = NOW - timedelta(seconds=30)
        return [runtime.ContainerState(self.id, os.getpid(), started, None, None)]

    def processes(self, id: runtime.ContainerId) -> runtime.Processes:
        start = proctree.starttime(os.getpid())
        assert start is not None
        return runtime.Processes(os.getpid(), start)


class Agent:
    """What the agent shows the server: its pods, its node's name and its settings."""

    def __init__(self, root: Path) -> None:
        self.name = "node-a"
        self.settings = settings.Settings(root=str(root), stats_interval=60.0)

    def pod_by_name(self, namespace: str, name: str) -> dict[str, Any] | None:
        return None


def test_the_summary_names_the_node_and_measures_its_running_pods(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    endpoint = server.NodeServer(
        OwnProcess(tmp_path),  # type: ignore[arg-type]
        agent,
        token=TOKEN,
        clock=lambda: NOW,
    )
    assert endpoint.stats.interval == 60.0  # the agent's setting

    async def main() -> dict[str, Any]:
        async with (
            test_utils.TestServer(endpoint.app()) as site,
            aiohttp.ClientSession() as anonymous,
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as session,
        ):
            async with anonymous.get(site.make_url("/stats/summary")) as refused:
                assert refused.status == 401
            async with session.get(site.make_url("/stats/summary")) as response:
                assert response.status == 200
                assert response.content_type == "application/json"
                return dict(await response.json())

    summary = asyncio.run(main())
    assert summary["node"]["nodeName"] == "node-a"
    assert summary["node"]["memory"]["workingSetBytes"] > 0
    (pod,) = summary["pods"]
    assert pod["podRef"] == {"name": "p", "namespace": "ns", "uid": "uid-1"}
    (main_container,) = pod["containers"]
    assert main_container["name"] == "main"
    assert main_container["cpu"]["usageCoreNanoSeconds"] > 0
    assert main_container["cpu"]["usageNanoCores"] >= 0  # since its start, on a first look
    assert main_container["memory"]["workingSetBytes"] > 10 * 2**20
