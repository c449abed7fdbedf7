"""The local control plane as a process: ``kubetrain up`` / ``status`` / ``kubeconfig`` /
``down``, persistence across restarts, and crash safety (kill -9 in the middle of a stream of
writes loses no acknowledged write, and watches resume from their last resourceVersion).

These test kubetrain's own daemon, so they do not run against another API server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from kubetrain.local import daemon
from kubetrain.operator.trainjob import builtin

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("KUBETRAIN_TEST_KUBECONFIG")),
    reason="tests the local control plane's own process, not the API server under test",
)


def cli(home: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBETRAIN_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "kubetrain", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "kubetrain"
    try:
        yield home
    finally:
        cli(home, "down", "--grace", "5")


def status(home: Path) -> dict:
    return json.loads(cli(home, "status", "-o", "json").stdout)


def core_api(home: Path) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(home / "kubeconfig")))


def test_up_status_kubeconfig_down(home: Path) -> None:
    up = cli(home, "up")
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip() == str(home / "kubeconfig")
    assert "ready at https://127.0.0.1:" in up.stderr
    assert oct((home / "kubeconfig").stat().st_mode & 0o777) == "0o600"
    again = cli(home, "up")
    assert again.returncode == 0
    assert "already running" in again.stderr
    assert again.stdout.strip() == str(home / "kubeconfig")
    state = status(home)
    assert state["running"]
    assert state["ready"]
    assert state["url"].startswith("https://127.0.0.1:")
    text = cli(home, "status")
    assert text.returncode == 0
    assert f"pid:         {state['pid']}" in text.stdout
    assert "since:" in text.stdout
    assert cli(home, "kubeconfig").stdout.strip() == str(home / "kubeconfig")
    assert [n.metadata.name for n in core_api(home).list_namespace().items]
    # ready means every built-in runtime is there: a first `submit trainjob` finds its runtime
    runtimes = client.CustomObjectsApi(core_api(home).api_client).list_cluster_custom_object(
        "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"
    )
    installed = {r["metadata"]["name"] for r in runtimes["items"]}
    assert {r["metadata"]["name"] for r in builtin.runtimes()} <= installed
    down = cli(home, "down")
    assert down.returncode == 0
    assert f"pid {state['pid']}" in down.stderr
    assert not alive(state["pid"])
    after = cli(home, "status")
    assert after.returncode == 1
    assert "not running" in after.stdout
    assert "not running" in cli(home, "down").stderr


def test_state_survives_a_restart_and_versions_keep_increasing(home: Path) -> None:
    assert cli(home, "up").returncode == 0
    core = core_api(home)
    created = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "kept"}, "data": {"a": "1"}}
    )
    url = status(home)["url"]
    assert cli(home, "down").returncode == 0
    assert cli(home, "up").returncode == 0
    assert status(home)["url"] == url, "the port is kept so kubeconfigs stay valid"
    core = core_api(home)
    kept = core.read_namespaced_config_map("kept", "default")
    assert kept.metadata.uid == created.metadata.uid
    newer = core.create_namespaced_config_map("default", {"metadata": {"name": "newer"}})
    assert int(newer.metadata.resource_version) > int(created.metadata.resource_version)


def test_kill_9_loses_no_acknowledged_write_and_watches_resume(home: Path) -> None:
    assert cli(home, "up").returncode == 0
    core = core_api(home)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    acknowledged: list[tuple[str, str]] = []
    stop = threading.Event()

    def write() -> None:
        writer = core_api(home)
        i = 0
        while not stop.is_set():
            try:
                made = writer.create_namespaced_config_map(
                    "default", {"metadata": {"name": f"w-{i}"}, "data": {"i": str(i)}}
                )
            except Exception:  # the server died under us: that write was not acknowledged
                return
            acknowledged.append((made.metadata.name, made.metadata.resource_version))
            i += 1

    thread = threading.Thread(target=write)
    thread.start()
    deadline = time.monotonic() + 30
    while len(acknowledged) < 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    pid = status(home)["pid"]
    os.kill(pid, signal.SIGKILL)
    stop.set()
    thread.join(timeout=30)
    assert len(acknowledged) >= 50
    while alive(pid):
        time.sleep(0.01)

    assert cli(home, "up").returncode == 0
    core = core_api(home)
    stored = {i.metadata.name: i for i in core.list_namespaced_config_map("default").items}
    for name, rv in acknowledged:
        assert name in stored, f"acknowledged write {name} was lost"
        assert stored[name].metadata.resource_version == rv
        assert stored[name].data == {"i": name.removeprefix("w-")}

    seen = []
    for event in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=2
    ):
        seen.append((event["type"], event["object"].metadata.name))
    added = [name for kind, name in seen if kind == "ADDED"]
    assert added[: len(acknowledged)] == [name for name, _ in acknowledged]


def test_logs_of_a_pod_from_before_a_restart_are_served_as_soon_as_up_returns(
    home: Path,
) -> None:
    """The Node keeps the port of the agent that ran before ``down``; ``up`` reports ready only
    once the new agent has written its own, or ``kubectl logs`` right after it is refused."""
    assert cli(home, "up").returncode == 0
    core = core_api(home)
    core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "said"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "python:3.11",
                        "command": [sys.executable, "-c", "print('said before the restart')"],
                    }
                ],
            },
        },
    )
    deadline = time.monotonic() + 60
    while core.read_namespaced_pod("said", "default").status.phase != "Succeeded":
        assert time.monotonic() < deadline, "the pod did not run to completion"
        time.sleep(0.1)
    assert cli(home, "down").returncode == 0

    assert cli(home, "up").returncode == 0
    env = {**os.environ, "KUBECONFIG": str(home / "kubeconfig")}
    logs = subprocess.run(
        ["kubectl", "logs", "said"], capture_output=True, text=True, timeout=30, env=env
    )
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == "said before the restart\n"


def test_a_second_daemon_on_the_same_home_refuses_to_start(home: Path) -> None:
    assert cli(home, "up").returncode == 0
    foreground = cli(home, "apiserver", "--port", "0", timeout=30)
    assert foreground.returncode == 1
    assert "already running" in foreground.stderr


def test_watch_gone_after_restart_is_not_reported_for_kept_history(home: Path) -> None:
    assert cli(home, "up").returncode == 0
    core = core_api(home)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "before"}})
    assert cli(home, "down").returncode == 0
    assert cli(home, "up").returncode == 0
    core = core_api(home)
    try:
        events = list(
            watch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=start,
                timeout_seconds=1,
            )
        )
    except ApiException as exc:  # pragma: no cover - the failure we guard against
        pytest.fail(f"resuming after a restart failed: {exc}")
    assert [e["object"].metadata.name for e in events] == ["before"]


def test_down_stops_a_server_with_open_watches_within_its_grace_period(home: Path) -> None:
    """Open watches, one of them to a client that stopped reading while events kept coming,
    hold no one up: SIGTERM ends them, so ``down`` never has to wait out its grace period and
    fall back to SIGKILL."""
    assert cli(home, "up").returncode == 0
    api = config.new_client_from_config(config_file=str(home / "kubeconfig"))
    core = client.CoreV1Api(api)
    seen: list[str] = []

    def reading() -> None:
        with contextlib.suppress(Exception):  # the server goes away under it
            for event in watch.Watch().stream(
                core.list_namespaced_config_map, "default", timeout_seconds=120
            ):
                seen.append(event["object"].metadata.name)

    threading.Thread(target=reading, daemon=True).start()
    configuration = api.configuration
    stalled = api.rest_client.pool_manager.request(
        "GET",
        f"{configuration.host}/api/v1/namespaces/default/configmaps?watch=true",
        headers={"Authorization": configuration.auth_settings()["BearerToken"]["value"]},
        preload_content=False,  # the headers came, so the watch is open; its body is never read
        timeout=30,
    )
    assert stalled.status == 200
    try:
        # far more than the socket buffers hold: the server's writes to the stalled watch block
        for i in range(24):
            core.create_namespaced_config_map(
                "default", {"metadata": {"name": f"big-{i}"}, "data": {"x": "x" * 900_000}}
            )
        deadline = time.monotonic() + 30
        while "big-23" not in seen:
            assert time.monotonic() < deadline, "the reading watch did not see the writes"
            time.sleep(0.05)
        pid = status(home)["pid"]
        grace = daemon.STOP_GRACE
        started = time.monotonic()
        down = cli(home, "down", "--grace", str(grace))
        elapsed = time.monotonic() - started
    finally:
        stalled.release_conn()
    assert down.returncode == 0, down.stderr
    assert f"pid {pid}" in down.stderr
    assert elapsed < grace, f"down took {elapsed:.1f}s, its whole grace period"
    assert not alive(pid)
